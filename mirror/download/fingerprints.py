"""Perceptual fingerprints of kept files, for finding copies the site's rule misses.

An image's fingerprint (:mod:`mirror.imaging.similar`) is read from the first of its files the
mirror keeps, a thumbnail if there is one (quick to decode, and enough: a thumbnail's hashes
match the full picture's), right after the file is kept, and by ``mirror verify`` for kept files
of images that have none yet. A file that cannot be read simply gets no fingerprint.
"""

from __future__ import annotations

import asyncio

from sqlite_utils import Database

from ..imaging import MediaError
from ..imaging.similar import fingerprint_of
from ..store.similar import save_hashes
from .storage import Storage

__all__ = ["SOURCES", "keep_fingerprint", "backfill_fingerprints"]

# The files a fingerprint is read from, the preferred (the quickest to decode) first.
SOURCES = ("thumb", "small", "thumb_small", "medium", "large", "tall", "full")


async def keep_fingerprint(db: Database, storage: Storage, image_id: int, representation: str, path: str) -> bool:
    """Read the kept file and store the image's fingerprint, unless it has one; False if not stored."""
    if representation not in SOURCES or _has_fingerprint(db, image_id):
        return False
    data = await asyncio.to_thread(storage.read, path)
    if data is None:
        return False
    try:
        fingerprint = await asyncio.to_thread(fingerprint_of, data)
    except MediaError:
        return False
    save_hashes(db, image_id, fingerprint.hashes(), representation)
    return True


async def backfill_fingerprints(db: Database, storage: Storage) -> int:
    """Fingerprints for the images with kept files and none yet; returns how many were stored."""
    marks = ", ".join("?" for _ in SOURCES)
    order = " ".join(f"WHEN '{name}' THEN {rank}" for rank, name in enumerate(SOURCES))
    rows = db.execute(f"SELECT image_id, representation, path FROM downloads WHERE status = 'done' "
                      f"AND representation IN ({marks}) AND image_id NOT IN (SELECT image_id FROM image_hashes) "
                      f"ORDER BY image_id, CASE representation {order} END", list(SOURCES)).fetchall()
    stored, done = 0, set()
    for image_id, representation, path in rows:
        if image_id not in done and await keep_fingerprint(db, storage, image_id, representation, path):
            stored += 1
            done.add(image_id)
    return stored


def _has_fingerprint(db: Database, image_id: int) -> bool:
    return db.execute("SELECT 1 FROM image_hashes WHERE image_id = ? LIMIT 1", [image_id]).fetchone() is not None
