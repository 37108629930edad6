"""Build the stamp corpus in ``tests/fixtures/stamps/`` from Battle for Wesnoth's small pictures.

Boards hold small drawn pictures on transparency besides emotes: stamps, stickers, an item drawn
for a game, 60-100 pixels a side, painted with soft shading rather than flat vector colours. A
perceptual hash reads 32x32, and a crop of a 72 px drawing or its half-size JPEG is where it has
least to read. Wesnoth's items (``data/core/images/items``: 72x72, a small object drawn in the
middle of a transparent ground) and every other of its attack icons (``attacks``: 60x60, a
weapon drawn to fill the canvas, its corners transparent), GPL-2.0-or-later as the art corpus,
are such pictures, and Debian carries them::

    cd /tmp && apt-get download wesnoth-1.16-data && dpkg-deb -x wesnoth-1.16-data_*.deb wesnoth
    .venv/bin/python scripts/make_stamp_corpus.py /tmp/wesnoth/usr/share/games/wesnoth/1.16/data

Frames of one animation (the lit brazier's 2 to 8, each its first frame a flicker apart) and the
blank attack icons are left out: a copy is not a different picture. Recolours (the potions, the balls, the rings) stay:
a booru has recolours, and the finder must tell them from copies. Every fourth, in name order,
is ``unseen`` (never stored: a search with one must match nothing); the files are copied as
they are, in PNG.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from PIL import Image

from mirror.localsite.art import write_manifest

LICENCE = "GPL-2.0-or-later"
LEFT_OUT = re.compile(r"-lit[2-9]\.png$|^blank-")
UNSEEN_EVERY = 4


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path, help="Wesnoth's data folder (.../wesnoth/1.16/data)")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent.parent / "tests/fixtures/stamps")
    args = parser.parse_args()
    images = args.data / "core/images"
    items = [p for p in sorted((images / "items").glob("*.png")) if not LEFT_OUT.search(p.name)]
    attacks = [p for p in sorted((images / "attacks").glob("*.png")) if not LEFT_OUT.search(p.name)][::2]
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for number, path in enumerate(items + attacks, 1):
        file = f"{number:03d}-{path.parent.name}-{path.name}"
        with Image.open(path) as picture:
            picture.convert("RGBA").save(args.out / file, "PNG", optimize=True)
        rows.append({"file": file, "role": "unseen" if number % UNSEEN_EVERY == 0 else "archived", "transparent": 1,
                     "source": f"wesnoth-1.16-data data/core/images/{path.parent.name}/{path.name}", "licence": LICENCE})
    write_manifest(args.out, rows)
    print(f"{len(rows)} stamps in {args.out}")


if __name__ == "__main__":
    main()
