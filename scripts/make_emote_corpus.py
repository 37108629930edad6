"""Build the emote corpus in ``tests/fixtures/emotes/`` from Twemoji (``@iconify-json/twemoji``).

Boards are full of small flat pictures: emotes, icons, stickers, a few flat shapes on a flat or
transparent ground, 50 to 150 pixels a side, and their copies (a half-size JPEG, a crop, a
border) are where a perceptual hash has least to read. This corpus is such pictures: Twitter's
emoji (CC BY 4.0), as the npm registry packages them in one JSON file of SVG bodies::

    cd /tmp && npm pack @iconify-json/twemoji && tar xzf iconify-json-twemoji-*.tgz
    .venv/bin/python scripts/make_emote_corpus.py /tmp/package/icons.json

Skin-tone variants, flags, keycaps and letters are left out (each a set of one template with
another colour or character: the painted and clip-art corpora say how the finder does on such
sets). Of the rest, every Nth in name order is rendered by cairosvg at a side from 64 to 128
pixels (from the name, so a rebuild gives the same corpus) on a transparent ground, as an emote
is uploaded, and saved as PNG.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
from pathlib import Path

import cairosvg
from PIL import Image

from mirror.localsite.art import write_manifest

ARCHIVED, UNSEEN = 110, 40
SKIPPED = ("skin-tone", "flag", "keycap", "button", "letter", "regional-indicator", "input", "symbol", "sign")
LICENCE = "CC-BY-4.0"


def render(body: str, width: int, height: int, side: int) -> Image.Image:
    svg = f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}">{body}</svg>'
    return Image.open(io.BytesIO(cairosvg.svg2png(bytestring=svg.encode(), output_width=side,
                                                  output_height=side))).convert("RGBA")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("icons", type=Path, help="the package's icons.json")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent.parent / "tests/fixtures/emotes")
    args = parser.parse_args()
    found = json.loads(args.icons.read_text())
    names = sorted(name for name in found["icons"] if not any(word in name for word in SKIPPED))
    every = len(names) // (ARCHIVED + UNSEEN)
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for number, name in enumerate(names[::every][:ARCHIVED + UNSEEN], 1):
        icon = found["icons"][name]
        side = 64 + hashlib.sha256(name.encode()).digest()[0] % 65
        picture = render(icon["body"], icon.get("width", found["width"]), icon.get("height", found["height"]), side)
        file = f"{number:03d}-{name}.png"
        picture.save(args.out / file, "PNG", optimize=True)
        rows.append({"file": file, "role": "archived" if number <= ARCHIVED else "unseen", "transparent": 1,
                     "source": f"@iconify-json/twemoji {name}", "licence": LICENCE})
    write_manifest(args.out, rows)
    print(f"{len(rows)} emotes in {args.out}")


if __name__ == "__main__":
    main()
