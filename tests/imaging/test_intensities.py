"""Intensities read as the site's own programs read them: BT.709 luma per quadrant, libpng's
compositing and gamma, the frame mediathumb keeps, one file decoded at a time."""

from __future__ import annotations

import io

import httpx
import pytest
from PIL import Image

from mirror.imaging import intensities_of, intensities_of_picture

from ..support.uploads import Overlap, at_once, png, post


def test_intensities_are_bt709_luma_per_quadrant_overlapping_on_odd_sides_on_black():
    image = Image.new("RGBA", (3, 3), (0, 0, 0, 255))
    image.putpixel((1, 1), (255, 255, 255, 255))  # the middle pixel belongs to every quadrant
    image.putpixel((0, 0), (255, 0, 0, 255))
    image.putpixel((2, 2), (0, 255, 0, 128))  # half transparent: composited on black in linear light
    got = intensities_of_picture(image)
    assert got.nw == pytest.approx((255 + 0.2126 * 255) / 4)
    assert got.ne == pytest.approx(255 / 4)
    assert got.se == pytest.approx((255 + 0.7152 * 186) / 4)  # the site's program: 97.0068


# What the site's image-intensities program reads from 5x5 PNGs of one value, with and without a
# gAMA chunk (read with the program built from its source): libpng composites partly transparent
# pixels in linear light, and corrects opaque ones only for a gAMA far from 1/2.2.
LIBPNG_READS = [
    (None, "L", 100, 100), (None, "L", 200, 200), (None, "LA", (100, 128), 74), (None, "LA", (200, 64), 106),
    (None, "RGBA", (200, 100, 50, 255), 117.65),
    (100000, "L", 100, 167), (100000, "L", 200, 228), (100000, "LA", (100, 128), 122),
    (100000, "LA", (200, 64), 122), (100000, "RGBA", (200, 100, 50, 255), 176.7196),
    (55555, "L", 100, 119), (55555, "LA", (100, 128), 87), (55555, "RGBA", (200, 100, 50, 255), 134.3796),
    (45000, "L", 100, 100), (45000, "LA", (100, 128), 72), (45000, "LA", (200, 64), 106),
    (20000, "L", 200, 147), (20000, "LA", (100, 128), 21), (20000, "LA", (200, 64), 78),
]


@pytest.mark.parametrize(("gamma", "mode", "value", "read"), LIBPNG_READS)
def test_a_png_is_read_as_libpng_hands_it_to_the_sites_program(gamma, mode, value, read):
    import struct

    from PIL import PngImagePlugin

    info = PngImagePlugin.PngInfo()
    if gamma is not None:
        info.add(b"gAMA", struct.pack(">I", gamma))
    out = io.BytesIO()
    Image.new(mode, (5, 5), value).save(out, "PNG", pnginfo=info)
    values, _ = intensities_of(out.getvalue())
    assert values.as_tuple() == pytest.approx([read] * 4, abs=1e-3)


RED, GREEN, BLUE, WHITE = (255, 0, 0), (0, 255, 0), (0, 0, 255), (255, 255, 255)




def test_large_files_are_decoded_one_at_a_time(monkeypatch):
    """A picture the site accepts can take over a gigabyte decoded: four download workers (or
    reverse searches sent to `mirror serve`) must not hold four large ones at once (small ones,
    a few megabytes decoded, need not wait: see mirror.imaging.bounds)."""
    import time

    from mirror.imaging import intensities as module

    overlap, real = Overlap(), module.still_frame

    def counted(*args):
        with overlap:
            time.sleep(0.05)
            return real(*args)

    monkeypatch.setattr(module, "still_frame", counted)
    large = png("t", 2400, 1800)  # 4.3 megapixels
    at_once(4, lambda: intensities_of(large))
    assert overlap.most == 1


def luma(colour: tuple[int, int, int]) -> float:
    return sum(w * c for w, c in zip((0.2126, 0.7152, 0.0722), colour))


def animation(fmt: str, colours: list[tuple[int, int, int]], delay_ms: int, *, bt709: bool = False,
              size: tuple[int, int] = (33, 25)) -> bytes:
    """Solid-colour frames, each shown ``delay_ms`` (a WebM plays them at 1000/``delay_ms`` fps;
    with ``bt709`` it is VP9 encoded and tagged BT.709)."""
    frames = [Image.new("RGB", size, colour) for colour in colours]
    out = io.BytesIO()
    if fmt == "gif":
        frames[0].save(out, "GIF", save_all=True, append_images=frames[1:], duration=delay_ms, loop=0)
        return out.getvalue()
    import av
    container = av.open(out, mode="w", format="webm")
    stream = container.add_stream("libvpx-vp9" if bt709 else "libvpx", rate=1000 // delay_ms)
    (stream.width, stream.height), stream.pix_fmt = size, "yuv420p"
    if bt709:
        stream.codec_context.colorspace = av.video.reformatter.Colorspace.ITU709
    for frame in frames:
        yuv = av.VideoFrame.from_image(frame).reformat(format="yuv420p", dst_colorspace="ITU709" if bt709 else None)
        container.mux(stream.encode(yuv))
    container.mux(stream.encode())
    container.close()
    return out.getvalue()


def processed(site, image_id: int) -> dict:
    import time
    for _ in range(300):  # the board's processing delay, and a busy machine
        image = httpx.get(f"{site.api_url}/images/{image_id}").json()["image"]
        if image["intensities"] is not None:
            return image
        time.sleep(0.05)
    raise AssertionError(f"image {image_id} was never processed")


@pytest.mark.parametrize(("fmt", "colours", "delay_ms", "duration", "shown"), [
    # Half of 0.6 s is the boundary between the two frames: mediathumb keeps the earlier one.
    ("gif", [RED, BLUE], 300, 0.6, RED),
    # ffmpeg plays a GIF delay under 20 ms as 100 ms: 0.4 s in all, green showing at 0.2 s.
    ("gif", [RED, GREEN, BLUE, WHITE], 0, 0.4, GREEN),
    # 4 fps: the frame from 0.25 s to 0.5 s is the one showing at half the second.
    ("webm", [RED, GREEN, BLUE, WHITE], 250, 1.0, GREEN),
    # A still GIF lasts its frame's delay, as mediastat reports it (not a still PNG's 1/25 s).
    ("gif", [RED], 300, 0.3, RED),
    ("gif", [BLUE], 0, 0.1, BLUE),
])
def test_an_animation_is_read_at_the_frame_mediathumb_keeps_at_half_its_duration(upload_site, fmt, colours, delay_ms,
                                                                                  duration, shown):
    uploaded = post(upload_site, tag_input="safe, pony, solo", file=animation(fmt, colours, delay_ms), name=f"a.{fmt}")
    image = processed(upload_site, uploaded.json()["image"]["id"])
    assert image["duration"] == pytest.approx(duration)
    assert list(image["intensities"].values()) == pytest.approx([luma(shown)] * 4, abs=3)


@pytest.mark.parametrize("width", [20, 100, 900])
def test_a_video_frame_is_read_to_its_last_column(width):
    """swscale's fast path to RGBA leaves the last columns of each row unset for some widths (these
    three among them: zeros, or whatever the memory held, so the same video read twice differed);
    to RGB it converts them all."""
    grey = (128, 128, 128)
    values, _ = intensities_of(animation("webm", [grey, grey], 500, size=(width, 16)))
    assert values.as_tuple() == pytest.approx(solid(width, 16, luma(grey)), abs=0.5)


def solid(width: int, height: int, value: float) -> list[float]:
    """What the site's program reads from a picture of one luma ``value``: each quadrant, middle
    row and column included, over a quarter of the sides rounded up to even (high for even sides)."""
    west, east = width // 2 + 1, width - width // 2
    north, south = height // 2 + 1, height - height // 2
    quarter = ((width + 1) & ~1) * ((height + 1) & ~1) // 4
    return [value * pixels / quarter for pixels in (west * north, east * north, west * south, east * south)]


def test_an_even_sided_picture_reads_high_in_the_north_and_west_as_on_the_site():
    """Rows height/2 and columns width/2 count in both halves (intensities.c), for even sides too."""
    grey = Image.new("RGB", (4, 2), (100, 100, 100))
    assert intensities_of_picture(grey).as_tuple() == pytest.approx(solid(4, 2, 100.0))
    assert intensities_of_picture(grey).nw == pytest.approx(100 * 6 / 2)  # 3x2 pixels over a quarter of 8


def read_as_bt601(colour: tuple[int, int, int]) -> tuple[float, float, float]:
    """What a colour encoded with BT.709's matrix becomes when decoded with BT.601's."""
    r, g, b = (c / 255 for c in colour)
    y = 0.2126 * r + 0.7152 * g + 0.0722 * b
    cb, cr = (b - y) / (2 * (1 - 0.0722)), (r - y) / (2 * (1 - 0.2126))
    r, b = y + 2 * (1 - 0.299) * cr, y + 2 * (1 - 0.114) * cb
    g = (y - 0.299 * r - 0.114 * b) / 0.587
    return tuple(min(255.0, max(0.0, c * 255)) for c in (r, g, b))  # type: ignore[return-value]


def test_a_video_tagged_bt709_is_read_as_mediathumb_converts_it_at_bt601(upload_site):
    """mediathumb's swscale call takes every video as BT.601: green encoded as BT.709 comes out
    with red and blue in it, which raises its luma by about 5."""
    data = animation("webm", [GREEN, GREEN], 250, bt709=True)
    image = processed(upload_site, post(upload_site, tag_input="safe, pony, solo", file=data, name="a.webm").json()["image"]["id"])
    assert luma(read_as_bt601(GREEN)) - luma(GREEN) > 4
    assert list(image["intensities"].values()) == pytest.approx([luma(read_as_bt601(GREEN))] * 4, abs=1.5)


def test_a_16_bit_grey_png_is_read_at_8_bits_as_libpng_rounds_it(upload_site):
    for value, transparent in ((0x8000, None), (0x3000, None), (0x3000, 0x3000)):
        out = io.BytesIO()
        Image.new("I;16", (21, 11), value).save(out, "PNG", **({} if transparent is None else {"transparency": transparent}))
        image = processed(upload_site, post(upload_site, tag_input="safe, pony, solo", file=out.getvalue()).json()["image"]["id"])
        expected = 0 if value == transparent else (value * 255 + 32895) >> 16
        assert list(image["intensities"].values()) == pytest.approx([expected] * 4)
