"""Build the flat clip-art corpus in ``tests/fixtures/clipart/`` from the Open Clip Art Library.

The painted corpus (``mirror/localsite/art``, ``scripts/make_art_corpus.py``) is shaded with a
brush; most of a pony booru is vector art: flat colours, hard outlines, black line art and
silhouettes on transparent backgrounds, and sets of one template in other colours or faces. This
corpus is such drawings, characters and animals from the Open Clip Art Library as Debian packages
it (``openclipart-svg``, every file dedicated to the public domain), so ``bench/similar.py`` can
say how the finder does on them too::

    cd /tmp && apt-get download openclipart-svg && dpkg-deb -x openclipart-svg_*.deb openclipart
    .venv/bin/python scripts/make_clipart_corpus.py /tmp/openclipart/usr/share/openclipart/svg

Each drawing is rendered by cairosvg (as the mirror renders an SVG), trimmed to what it draws
(vector art is mostly exported so), scaled to fit 320x320 and saved as lossless WebP with its
alpha. Drawings too thin to be a picture (a line, a strip), or mostly empty outlines, are skipped;
a drawing the library holds twice (the same rendering, pixel for pixel at 64x64, under two names)
is kept once. The draw is from a fixed seed, so a rebuild gives the same corpus.
"""

from __future__ import annotations

import argparse
import io
import random
from pathlib import Path

import cairosvg
import numpy as np
from PIL import Image

from mirror.localsite.art import write_manifest

SIDE = 320
RENDER_WIDTH = 640
CATEGORIES = ("animals", "people")
ARCHIVED, UNSEEN = 150, 50
MIN_SIDE = 120  # of the trimmed rendering: thinner is a line or a strip, not a picture
MIN_COVER = 0.15  # of the trimmed rendering drawn opaque: less is an empty outline
SAME_LEVELS = 8  # two renderings this close everywhere, at 64x64, are the same drawing
LICENCE = "public-domain"


def render(path: Path) -> Image.Image | None:
    """The drawing trimmed to what it draws, or None when it is not one the corpus takes."""
    try:
        picture = Image.open(io.BytesIO(cairosvg.svg2png(url=str(path), output_width=RENDER_WIDTH)))
        picture = picture.convert("RGBA")
    except Exception:  # noqa: BLE001 - the library has drawings cairosvg cannot read (each its own error): left out
        return None
    box = picture.getchannel("A").getbbox()
    if box is None:
        return None
    picture = picture.crop(box)
    if min(picture.size) < MIN_SIDE:
        return None
    alpha = np.asarray(picture.getchannel("A").resize((64, 64)))
    return picture if (alpha > 128).mean() >= MIN_COVER else None


def signature(picture: Image.Image) -> np.ndarray:
    return np.asarray(picture.resize((64, 64), Image.Resampling.BOX), dtype=np.int16)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("svg", type=Path, help="openclipart's svg folder (…/share/openclipart/svg)")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent.parent / "tests/fixtures/clipart")
    args = parser.parse_args()
    files = sorted(path for category in CATEGORIES for path in (args.svg / category).rglob("*.svg"))
    random.Random(28).shuffle(files)
    args.out.mkdir(parents=True, exist_ok=True)
    rows, kept = [], []
    for path in files:
        if len(rows) == ARCHIVED + UNSEEN:
            break
        picture = render(path)
        if picture is None:
            continue
        mark = signature(picture)
        if any(np.abs(mark - other).max() <= SAME_LEVELS for other in kept):
            continue
        kept.append(mark)
        picture.thumbnail((SIDE, SIDE), Image.Resampling.LANCZOS)
        name = f"{len(rows) + 1:03d}-{path.stem.lower().replace('_', '-')[:40].strip('-')}.webp"
        transparent = int(picture.getchannel("A").getextrema()[0] < 255)
        if not transparent:
            picture = picture.convert("RGB")
        picture.save(args.out / name, "WEBP", lossless=True, method=6)
        rows.append({"file": name, "role": "archived" if len(rows) < ARCHIVED else "unseen", "transparent": transparent,
                     "source": str(path.relative_to(args.svg)), "licence": LICENCE})
    write_manifest(args.out, rows)
    print(f"{len(rows)} drawings in {args.out}")


if __name__ == "__main__":
    main()
