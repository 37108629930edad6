"""Build the drawn-art corpus in ``mirror/localsite/art/`` from Battle for Wesnoth's artwork.

The near-duplicate finder is measured on real drawings (``bench/similar.py``, the tests in
``tests/imaging/``), not on generated shapes: painted character portraits, nearly all on a
transparent background, as a booru's vector and character art is, and opaque painted scenes.
Wesnoth's art is free to ship (GPL-2.0-or-later, the licence of the Debian packages it comes
from) and Debian carries it, so the corpus can be rebuilt on any Debian machine::

    cd /tmp && apt-get download wesnoth-1.16-data wesnoth-1.16-httt ... (every campaign package)
    for deb in wesnoth-1.16-*.deb; do dpkg-deb -x "$deb" wesnoth; done
    .venv/bin/python scripts/make_art_corpus.py /tmp/wesnoth/usr/share/games/wesnoth/1.16/data

Each picture is scaled to fit 320x320 (a thumbnail is 250 px; 32x32 is what a pHash reads) and
saved as lossy WebP with its alpha, some 20 KB each. The choice of which pictures are archived and
which are kept unseen (never stored: the finder must match them with nothing) is drawn from a
fixed seed, so a rebuild gives the same corpus. ``manifest.csv`` names each file's source.
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

from PIL import Image

from mirror.localsite.art import write_manifest

SIDE = 320
QUALITY = 80
MIN_SIDE = 300  # smaller files are sprites and icons, not pictures a person uploads
LICENCE = "GPL-2.0-or-later"
ARCHIVED_PORTRAITS, ARCHIVED_SCENES = 200, 45
UNSEEN_PORTRAITS, UNSEEN_SCENES = 45, 15
# The same picture twice in Wesnoth (a portrait flattened on black for a story screen, a scene
# two campaigns share): a copy, not a different picture, so left out after the draw.
SAME_PICTURE_AGAIN = ("campaigns/Legend_of_Wesmere/images/story/characters/highlord.png",
                      "campaigns/Legend_of_Wesmere/images/story/characters/lord.png",
                      "campaigns/Delfadors_Memoirs/images/story/httt_story3.jpg")


def has_transparency(picture: Image.Image) -> bool:
    if picture.mode not in ("RGBA", "LA", "PA") and "transparency" not in picture.info:
        return False
    return picture.convert("RGBA").getchannel("A").getextrema()[0] < 255


def pictures(data: Path) -> tuple[list[Path], list[Path], list[Path]]:
    """Core portraits, campaign portraits and opaque painted scenes, each sorted by path."""
    core = sorted((data / "core/images/portraits").rglob("*.png"))
    campaign = sorted(p for p in (data / "campaigns").glob("*/images/portraits/**/*.png"))
    scenes = sorted(p for p in (data / "campaigns").glob("*/images/story/**/*")
                    if p.suffix in (".jpg", ".png", ".webp") and "l10n" not in p.parts
                    and "black-background" not in p.name)
    big = [p for p in core + campaign + scenes if min(Image.open(p).size) >= MIN_SIDE]
    keep = set(big)
    return ([p for p in core if p in keep], [p for p in campaign if p in keep],
            [p for p in scenes if p in keep and not has_transparency(Image.open(p))])


def choose(core: list[Path], campaign: list[Path], scenes: list[Path]) -> list[tuple[str, Path]]:
    rng = random.Random(28)
    core, campaign, scenes = core[:], campaign[:], scenes[:]
    for group in (core, campaign, scenes):
        rng.shuffle(group)
    archived = core[:ARCHIVED_PORTRAITS] + scenes[:ARCHIVED_SCENES]
    unseen = (core[ARCHIVED_PORTRAITS:] + campaign)[:UNSEEN_PORTRAITS]
    unseen += scenes[ARCHIVED_SCENES:ARCHIVED_SCENES + UNSEEN_SCENES]
    return [("archived", p) for p in archived] + [("unseen", p) for p in unseen]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path, help="wesnoth's data folder (…/games/wesnoth/1.16/data)")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent.parent / "mirror/localsite/art")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for number, (role, path) in enumerate(choose(*pictures(args.data)), 1):
        if str(path.relative_to(args.data)) in SAME_PICTURE_AGAIN:
            continue
        picture = Image.open(path)
        transparent = has_transparency(picture)
        picture = picture.convert("RGBA" if transparent else "RGB")
        picture.thumbnail((SIDE, SIDE), Image.Resampling.LANCZOS)
        name = f"{number:03d}-{path.stem.lower().replace('_', '-')}.webp"
        picture.save(args.out / name, "WEBP", quality=QUALITY, method=6)
        rows.append({"file": name, "role": role, "transparent": int(transparent),
                     "source": str(path.relative_to(args.data)), "licence": LICENCE})
    write_manifest(args.out, rows)
    print(f"{len(rows)} pictures in {args.out}")


if __name__ == "__main__":
    main()
