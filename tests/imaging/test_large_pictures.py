"""Large pictures are read within bounded memory, give it back, and past the site's own bound are
refused with a clear message (reverse search and downloads both read intensities)."""

from __future__ import annotations

import io
import sys
import textwrap

import pytest
from PIL import Image, ImageStat

from mirror.imaging import MediaError, intensities, intensities_of
from mirror.imaging.libpng import on_black

from ..support.memory import run_measured


def png(picture: Image.Image) -> bytes:
    out = io.BytesIO()
    picture.save(out, "PNG")
    return out.getvalue()


def whole_picture_intensities(picture: Image.Image) -> tuple[float, ...]:
    """The site program's values from the picture turned into RGB on black in one piece."""
    rgb = on_black(picture)
    w, h = rgb.size
    boxes = [(0, 0, w // 2 + 1, h // 2 + 1), (w // 2, 0, w, h // 2 + 1), (0, h // 2, w // 2 + 1, h), (w // 2, h // 2, w, h)]
    quarter = ((w + 1) & ~1) * ((h + 1) & ~1) // 4
    return tuple(sum(s / quarter * k for k, s in zip(intensities.BT709, ImageStat.Stat(rgb.crop(box)).sum))
                 for box in boxes)


@pytest.mark.parametrize("size", [(37, 29), (40, 40), (7, 100)])
def test_strip_by_strip_gives_exactly_what_one_piece_gives(monkeypatch, size):
    width, height = size
    picture = Image.new("RGBA", size)
    picture.putdata([((x * 7) % 256, (y * 11) % 256, (x * y) % 256, (x + 3 * y) % 256)
                     for y in range(height) for x in range(width)])
    picture.info["gamma"] = 1.0
    picture = Image.open(io.BytesIO(png(picture)))
    picture.load()
    monkeypatch.setattr(intensities, "STRIP_ROWS", 6)  # strips that cut the quadrants' edges
    assert intensities.intensities_of_picture(picture).as_tuple() == whole_picture_intensities(picture)


def test_a_picture_past_the_sites_bound_is_refused_by_its_dimensions():
    data = png(Image.new("L", (32000, 9000)))
    with pytest.warns(Image.DecompressionBombWarning), pytest.raises(MediaError) as refused:
        intensities_of(data)
    assert "32000x9000" in str(refused.value) and "too large to process" in str(refused.value)


def test_a_12000_by_9000_transparent_png_reads_in_under_a_gigabyte_and_gives_it_back():
    """It took 3.2 GB turned into RGB on black in one piece; a server kept 113 MB after each."""
    script = textwrap.dedent("""
        import io, resource
        from PIL import Image
        from mirror.imaging import intensities_of
        out = io.BytesIO()
        Image.new("RGBA", (12000, 9000), (200, 100, 50, 128)).save(out, "PNG", compress_level=1)
        data = out.getvalue()
        def rss():
            with open("/proc/self/statm") as f:
                return int(f.read().split()[1]) * 4096 // 2**20
        before = rss()
        values, _ = intensities_of(data)
        print(round(values.nw, 4), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024, rss() - before)
    """)
    done, peak_mb = run_measured([sys.executable, "-W", "ignore", "-c", script], timeout=120)
    assert done.returncode == 0, done.stderr
    nw, _, kept_mb = done.stdout.split()
    assert float(nw) == round(86.7802 * (6001 * 4501) / (6000 * 4500), 4)  # libpng's compositing; the site's rule
    assert int(peak_mb) < 1024, f"peak {peak_mb} MB"
    assert int(kept_mb) < 50, f"kept {kept_mb} MB after reading"
