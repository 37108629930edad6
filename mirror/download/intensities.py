"""Corner intensities of kept files, for the images whose records carry none.

The site's own values, from the records, come first (:mod:`mirror.store.intensities`). For an
image without them they are read from its ``full`` file (for an SVG image that is the PNG
rendering; the ``svg`` original serves when only it is kept), right after the file is kept, and
by ``mirror verify`` for kept files that have none yet. A file that cannot be read (a video this
machine cannot decode) simply gets no row, as on the site.
"""

from __future__ import annotations

import asyncio

from sqlite_utils import Database

from ..imaging import MediaError, intensities_of
from ..store.intensities import RECORD, save_intensities, without_intensities
from .storage import Storage

__all__ = ["SOURCES", "keep_intensities", "backfill_intensities"]

SOURCES = ("full", "svg")


async def keep_intensities(db: Database, storage: Storage, image_id: int, representation: str, path: str) -> bool:
    """Read the kept file and store its intensities; False when it could not be read."""
    if representation not in SOURCES or _has_better_row(db, image_id, representation):
        return False
    data = await asyncio.to_thread(storage.read, path)
    if data is None:
        return False
    try:
        values, file_aspect = await asyncio.to_thread(intensities_of, data)
    except MediaError:
        return False
    save_intensities(db, image_id, values.as_tuple(), _record_aspect(db, image_id, file_aspect), representation)
    return True


async def backfill_intensities(db: Database, storage: Storage) -> int:
    """Intensities for every kept file that has none yet; returns how many were stored."""
    stored = 0
    for row in list(without_intensities(db, SOURCES)):
        stored += await keep_intensities(db, storage, row["image_id"], row["representation"], row["path"])
    return stored


def _has_better_row(db: Database, image_id: int, representation: str) -> bool:
    """The site's own values (the record's) are never replaced by ours; nor are those read from
    ``full``, the site's rendering of an SVG, by values read from its original."""
    row = db.execute("SELECT computed_from FROM image_intensities WHERE image_id = ?", [image_id]).fetchone()
    if row is None:
        return False
    return row[0] == RECORD or (representation != "full" and row[0] == "full")


def _record_aspect(db: Database, image_id: int, fallback: float) -> float:
    """The record's aspect ratio, which the site matches on (a file's own may be a rendering's)."""
    row = db.execute("SELECT aspect_ratio FROM images WHERE id = ?", [image_id]).fetchone()
    return float(row[0]) if row and row[0] is not None else fallback
