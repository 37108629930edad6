"""Make the golden intensities the tests compare ours with: files, and what the site's programs print.

The site stores what ``image-intensities`` (philomena-dev/cli_intensities) prints for a picture,
after ``mediathumb`` (philomena-dev/mediatools) has taken a GIF's or a video's frame at half its
duration; an SVG is rendered by ``rsvg-convert`` first. This script writes a small set of files
covering what changes how pixels are read (even and odd sides, alpha, palettes with tRNS, 16-bit
grey, gAMA and sRGB chunks, JPEG subsampling, progressive and grey JPEG, animated GIF, WebM, SVG)
into ``tests/fixtures/golden/``, runs the programs on each, and writes their four values to
``golden.json`` there. The tests never run it: it needs the programs, built from their sources::

    apt-get install -y libpng-dev libturbojpeg0-dev libmagic-dev libavformat-dev libavcodec-dev \\
        libswscale-dev librsvg2-bin
    # image-intensities: make, in a clone of philomena-dev/cli_intensities
    # mediathumb: make build/mediathumb LIBS="-lavformat -lavutil -lavcodec -lswscale", in mediatools
    .venv/bin/python scripts/golden_intensities.py --image-intensities PATH --mediathumb PATH

Files are made deterministically, so running it again gives the same files and values.
"""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from PIL import Image, PngImagePlugin

from mirror.imaging import analyze
from mirror.localsite.files.pictures import picture

GOLDEN = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "golden"


def _png(image: Image.Image, **info: object) -> bytes:
    out = io.BytesIO()
    chunks = PngImagePlugin.PngInfo()
    if "gamma" in info:
        chunks.add(b"gAMA", round(float(info.pop("gamma")) * 100000).to_bytes(4, "big"))
    if info.pop("srgb", False):
        chunks.add(b"sRGB", b"\x00")
    image.save(out, "PNG", pnginfo=chunks, **info)
    return out.getvalue()


def _jpeg(image: Image.Image, **options: object) -> bytes:
    out = io.BytesIO()
    image.save(out, "JPEG", **options)
    return out.getvalue()


def _gradient(width: int, height: int, mode: str = "RGB") -> Image.Image:
    """Every pixel different: a picture whose quadrants and edges all count."""
    image = Image.new("RGBA", (width, height))
    image.putdata([((x * 255) // max(1, width - 1), (y * 255) // max(1, height - 1), (x * y * 7) % 256,
                    (x * 31 + y * 17) % 256) for y in range(height) for x in range(width)])
    return image.convert(mode) if mode != "RGBA" else image


def _palette_with_trns() -> bytes:
    image = _gradient(33, 20).quantize(16)
    image.info["transparency"] = bytes([0, 64, 128, 255] * 4)
    return _png(image, transparency=bytes([0, 64, 128, 255] * 4))


def _grey16() -> bytes:
    image = Image.new("I;16", (30, 21))
    image.putdata([(x * 2200 + y * 900) % 65536 for y in range(21) for x in range(30)])
    return _png(image)


FILES: dict[str, Callable[[], bytes]] = {
    "rgb-even-40x30.png": lambda: _png(_gradient(40, 30)),
    "rgb-odd-41x31.png": lambda: _png(_gradient(41, 31)),
    "rgb-1x1.png": lambda: _png(Image.new("RGB", (1, 1), (200, 30, 90))),
    "rgb-2x2.png": lambda: _png(_gradient(2, 2)),
    "rgb-3x2.png": lambda: _png(_gradient(3, 2)),
    "rgba-soft-alpha-36x24.png": lambda: _png(_gradient(36, 24, "RGBA")),
    "la-25x18.png": lambda: _png(_gradient(25, 18, "RGBA").convert("LA")),
    "palette-trns-33x20.png": _palette_with_trns,
    "grey16-30x21.png": _grey16,
    "gamma-1.0-32x32.png": lambda: _png(_gradient(32, 32), gamma=1.0),
    "srgb-32x17.png": lambda: _png(_gradient(32, 17), srgb=True),
    "picture-250x188.png": lambda: picture("golden-png", "png", 250, 188, "golden"),
    "jpeg-q90-444-64x48.jpg": lambda: _jpeg(_gradient(64, 48), quality=90, subsampling=0),
    "jpeg-q75-420-63x47.jpg": lambda: _jpeg(_gradient(63, 47), quality=75, subsampling=2),
    "jpeg-progressive-80x60.jpg": lambda: _jpeg(_gradient(80, 60), quality=85, progressive=True),
    "jpeg-grey-50x40.jpg": lambda: _jpeg(_gradient(50, 40, "L"), quality=80),
    "picture-300x200.jpg": lambda: picture("golden-jpg", "jpg", 300, 200, "golden"),
    "still-40x30.gif": lambda: picture("golden-gif", "gif", 40, 30, "golden"),
    "animated-64x48.gif": lambda: picture("golden-anim", "gif", 64, 48, "golden", animated=True),
    "video-64x48.webm": lambda: picture("golden-webm", "webm", 64, 48, "golden", animated=True),
    "drawing-120x90.svg": lambda: picture("golden-svg", "svg", 120, 90, "golden"),
}


def program_values(tools: argparse.Namespace, path: Path, work: Path) -> list[float]:
    """What the site stores for the file at ``path``."""
    data = path.read_bytes()
    analysis = analyze(data)
    if analysis.format in ("gif", "webm"):
        frame = work / "frame.png"
        subprocess.run([tools.mediathumb, str(path), repr(analysis.duration / 2), str(frame)], check=True,
                       capture_output=True)
        path = frame
    elif analysis.format == "svg":
        rendered = work / "rendered.png"
        subprocess.run([tools.rsvg_convert, str(path), "-o", str(rendered)], check=True)
        path = rendered
    out = subprocess.run([tools.image_intensities, str(path)], check=True, capture_output=True, text=True).stdout
    return [float(value) for value in out.split()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--image-intensities", required=True)
    parser.add_argument("--mediathumb", required=True)
    parser.add_argument("--rsvg-convert", default="rsvg-convert")
    tools = parser.parse_args()
    GOLDEN.mkdir(parents=True, exist_ok=True)
    values = {}
    with tempfile.TemporaryDirectory(prefix="golden-") as tmp:
        for name, make in FILES.items():
            path = GOLDEN / name
            path.write_bytes(make())
            values[name] = program_values(tools, path, Path(tmp))
            print(name, values[name])
    (GOLDEN / "golden.json").write_text(json.dumps(values, indent=1) + "\n")


if __name__ == "__main__":
    main()
