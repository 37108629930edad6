"""Real drawn artwork for the local site: what it serves as an image's picture by default, and
the corpus the near-duplicate finder is measured on (``bench/similar.py``).

Painted portraits from Battle for Wesnoth, nearly all on transparent backgrounds, and opaque
painted scenes, GPL-2.0-or-later (``README.md`` here says where each comes from and how
``scripts/make_art_corpus.py`` rebuilds them). ``archived`` pictures go on boards; ``unseen``
ones never do, so a search with one must match nothing.
"""

from __future__ import annotations

import csv
import functools
from dataclasses import dataclass
from pathlib import Path

from PIL import Image

__all__ = ["FOLDER", "MANIFEST_FIELDS", "Artwork", "artworks", "write_manifest"]

FOLDER = Path(__file__).parent
MANIFEST_FIELDS = ("file", "role", "transparent", "source", "licence")


@dataclass(frozen=True)
class Artwork:
    name: str  # the file's name, without the folder
    role: str  # archived or unseen
    transparent: bool
    source: str  # its path in the program or library it comes from
    folder: Path = FOLDER

    @property
    def path(self) -> Path:
        return self.folder / self.name

    def picture(self) -> Image.Image:
        """The picture, RGBA when it has transparency, else RGB."""
        with Image.open(self.path) as picture:
            return picture.convert("RGBA" if self.transparent else "RGB")


@functools.cache
def artworks(role: str | None = None, folder: Path = FOLDER) -> tuple[Artwork, ...]:
    """Every picture of the corpus in ``folder`` (this one, or another with a ``manifest.csv``
    alike) in its manifest's order, or those of one ``role``."""
    with open(folder / "manifest.csv", newline="") as manifest:
        rows = list(csv.DictReader(manifest))
    every = tuple(Artwork(row["file"], row["role"], row["transparent"] == "1", row["source"], folder) for row in rows)
    return every if role is None else tuple(art for art in every if art.role == role)


def write_manifest(folder: Path, rows: list[dict[str, object]]) -> None:
    """Write the ``manifest.csv`` :func:`artworks` reads (one row a picture, :data:`MANIFEST_FIELDS`),
    for the scripts that build a corpus."""
    with open(folder / "manifest.csv", "w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=MANIFEST_FIELDS)
        writer.writeheader()
        writer.writerows(rows)
