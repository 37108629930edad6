"""Compare our intensities with the ones the site's own programs compute, file by file.

The site reads intensities with ``image-intensities`` (philomena-dev/cli_intensities), after
``mediathumb`` (philomena-dev/mediatools) has taken a GIF's or video's frame at half its duration
and ``rsvg-convert`` has rendered an SVG. Built from their sources on this machine, they are the
ground truth for what the site stores; this script mirrors a local site with pictures and, for
every kept file, compares the program's four values with ours (which follow the program's rule,
not the reference's, for even sides), so that any difference left comes from how pixels are read.
``scripts/golden_intensities.py`` makes the golden files the tests compare with. It needs the programs, so neither the
tests nor ``bench/run_all.py`` run it::

    apt-get install -y libpng-dev libturbojpeg0-dev libmagic-dev libavformat-dev libavcodec-dev \\
        libswscale-dev librsvg2-bin
    # build image-intensities (make) and mediathumb (make build/mediathumb LIBS="-lavformat
    # -lavutil -lavcodec -lswscale") from their repositories, then:
    .venv/bin/python scripts/compare_site_tools.py --image-intensities PATH --mediathumb PATH

Last run (2026-11-24, Debian 12's libpng 1.6.39, libjpeg-turbo 2.1.5, ffmpeg 5.1): PNG, GIF, WebM
and JPEG exactly equal (0.000 at most; JPEG is read with libjpeg-turbo's fast IDCT through
simplejpeg, as the program reads it); SVG up to 8.5 (cairosvg renders text and edges unlike
librsvg; 1.2 on the golden drawing).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

from reverse import mirror_of_site  # noqa: E402

from mirror.imaging import analyze, intensities_of_picture, still_frame  # noqa: E402
from mirror.imaging.svg import render_svg  # noqa: E402


def program_values(tools: argparse.Namespace, path: Path, fmt: str, duration: float, work: Path) -> tuple[float, ...]:
    """The four values the site stores for the file at ``path``."""
    if fmt in ("gif", "webm"):
        frame = work / "frame.png"
        subprocess.run([tools.mediathumb, str(path), repr(duration / 2), str(frame)], check=True, capture_output=True)
        path = frame
    elif fmt == "svg":
        rendered = work / "rendered.png"
        subprocess.run([tools.rsvg_convert, str(path), "-o", str(rendered)], check=True)
        path = rendered
    out = subprocess.run([tools.image_intensities, str(path)], check=True, capture_output=True, text=True).stdout
    return tuple(float(value) for value in out.split())


def our_values(path: Path) -> tuple[float, ...]:
    data = path.read_bytes()
    picture = render_svg(data) if path.suffix == ".svg" else still_frame(data, analyze(data))
    return intensities_of_picture(picture).as_tuple()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--image-intensities", required=True)
    parser.add_argument("--mediathumb", required=True)
    parser.add_argument("--rsvg-convert", default="rsvg-convert")
    parser.add_argument("--images", type=int, default=260)
    tools = parser.parse_args()
    differences: dict[str, list[float]] = defaultdict(list)
    with tempfile.TemporaryDirectory(prefix="compare-site-tools-") as tmp:
        work = Path(tmp)
        conn, files = mirror_of_site(work, tools.images)
        rows = conn.execute("SELECT path FROM downloads WHERE status = 'done' AND representation IN ('full', 'svg') "
                            "ORDER BY image_id").fetchall()
        for (path,) in rows:
            kind = path.rpartition(".")[2]  # an SVG image's "full" is the site's PNG rendering
            # The file's own duration: a generated record's is not the drawn file's.
            duration = analyze((files / path).read_bytes()).duration
            theirs = program_values(tools, files / path, kind, duration, work)
            ours = our_values(files / path)
            differences[kind].append(max(abs(a - b) for a, b in zip(ours, theirs)))
    for kind, found in sorted(differences.items()):
        print(f"{kind:5s} {len(found):4d} files: largest corner difference median {statistics.median(found):.3f}, "
              f"max {max(found):.3f}")


if __name__ == "__main__":
    main()
