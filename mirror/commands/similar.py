"""`mirror reverse --similar` and `mirror duplicates`: copies the site's rule misses, found by
perceptual fingerprints of the files the archive keeps (:mod:`mirror.search.similar`).

The site's reverse search compares four corner intensities within a box: a copy re-encoded,
resized, lightly cropped or given a border can fall outside it, and the site never looks for
near-duplicates inside the archive at all. These compare fingerprints instead, nearest first.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from sqlite_utils import Database

from ..imaging import MediaError
from ..imaging.similar import fingerprint_of
from ..search.similar import GROUP_DISTANCE, HashIndex, groups
from .reverse import SourceError, record_line

__all__ = ["similar_to", "duplicate_groups", "describe_similar", "describe_groups", "NEAREST", "GROUP_DISTANCE"]

NEAREST = 20


def _index(db: Database) -> HashIndex:
    try:
        index = HashIndex.load(db)
    except sqlite3.OperationalError:  # a mirror from before fingerprints: no table yet
        index = None
    if index is None or not len(index):
        raise SourceError("the archive has no fingerprints to compare with: they are read from the files "
                          "`mirror download` keeps (thumbnails are enough), and `mirror verify` reads them "
                          "for files kept before")
    return index


def similar_to(db: Database, data: bytes, limit: int = NEAREST) -> list[tuple[dict[str, Any], int]]:
    """The ``limit`` archived images nearest the picture in ``data``: (record as kept, distance)."""
    index = _index(db)
    try:
        fingerprint = fingerprint_of(data)
    except MediaError as e:
        raise SourceError(f"cannot search with this file: {e}") from None
    return [(_record(db, near.image_id), near.distance) for near in index.nearest(fingerprint, limit)]


def duplicate_groups(db: Database, max_distance: int = GROUP_DISTANCE) -> list[list[int]]:
    """Groups of near-duplicate images in the archive, each group's ids ascending."""
    return groups(_index(db), max_distance)


def describe_similar(found: list[tuple[dict[str, Any], int]]) -> str:
    """One line per image, nearest first, with its distance (0: the same picture)."""
    return "\n".join(f"{record_line(record)} (distance {distance})" for record, distance in found)


def describe_groups(db: Database, found: list[list[int]], as_json: bool = False) -> str:
    """Each group on a line of its own, its images with their sizes, for a curator to review."""
    if as_json:
        return json.dumps(found)
    if not found:
        return "no near-duplicates found"
    lines = [f"{len(found)} group{'s' * (len(found) != 1)} of near-duplicates"]
    for group in found:
        sizes = [f"{image_id} ({_size(db, image_id)})" for image_id in group]
        lines.append("  " + ", ".join(sizes))
    return "\n".join(lines)


def _record(db: Database, image_id: int) -> dict[str, Any]:
    row = db.execute("SELECT coalesce(stub, raw) FROM images WHERE id = ?", [image_id]).fetchone()
    return json.loads(row[0]) if row and row[0] else {"id": image_id}


def _size(db: Database, image_id: int) -> str:
    row = db.execute("SELECT width, height, format FROM images WHERE id = ?", [image_id]).fetchone()
    return f"{row[0]}x{row[1]} {row[2]}" if row and row[0] else "not kept"
