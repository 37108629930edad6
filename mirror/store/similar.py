"""The ``image_hashes`` table: each image's perceptual hashes, by view and kind, for finding its
copies; and ``image_sketches``, each view's sketch, read one image at a time (:func:`load_sketches`).

Hashes are unsigned 64-bit values; SQLite's integers are signed, so they are stored as the
signed integer of the same bits and turned back on the way out. A search reads them all at once
(:func:`load_hashes`), as one numpy array, one row a view, and compares them in memory. Each
image's rows carry the ``version`` of the finder that computed them, so a newer finder knows which
to compute again (:func:`outdated_fingerprint`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from sqlite_utils import Database

from ..dates import utc_text

__all__ = ["delete_hashes", "fingerprint_source", "load_crops", "load_hashes", "load_sketches", "save_hashes"]

_SIGN = 1 << 63


def save_hashes(db: Database, image_id: int, views: Sequence[Mapping[str, int]] | Mapping[str, int],
                source_representation: str, version: int, sketches: Sequence[bytes] = (),
                crops: Sequence[Sequence[Sequence[int]]] = ()) -> None:
    """Keep (or replace) an image's hashes, one ``{kind: unsigned 64-bit value}`` per view, the
    views' ``sketches`` (as many, or none) and the words of their ``crops`` (for each view, each
    crop's pHash twice, colour words and hue, as a view's), read from its
    ``source_representation`` file by the finder's ``version``."""
    views = [views] if isinstance(views, Mapping) else list(views)
    now = utc_text()
    rows = [(image_id, number, kind, _signed(value), source_representation, now, version)
            for number, hashes in enumerate(views) for kind, value in hashes.items()]
    with db.atomic():
        delete_hashes(db, image_id)
        db.conn.executemany("INSERT INTO image_hashes (image_id, view, kind, value, source_representation, "
                            "computed_at, version) VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
        db.conn.executemany("INSERT INTO image_sketches (image_id, view, sketch) VALUES (?, ?, ?)",
                            [(image_id, number, sketch) for number, sketch in enumerate(sketches) if sketch])
        db.conn.executemany("INSERT INTO image_crops (image_id, view, crop, phash, red, green, blue, hue) "
                            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                            [(image_id, number, place, *(_signed(value) for value in words[1:]))
                             for number, view_crops in enumerate(crops) for place, words in enumerate(view_crops)])


def delete_hashes(db: Database, image_id: int) -> None:
    with db.atomic():
        db.execute("DELETE FROM image_hashes WHERE image_id = ?", [image_id])
        db.execute("DELETE FROM image_sketches WHERE image_id = ?", [image_id])
        db.execute("DELETE FROM image_crops WHERE image_id = ?", [image_id])


def load_sketches(db: Database, image_id: int) -> list[bytes]:
    """An image's sketches, one per view in view order (b"" for a view without one)."""
    rows = db.execute("SELECT view, sketch FROM image_sketches WHERE image_id = ? ORDER BY view", [image_id]).fetchall()
    found = dict(rows)
    return [found.get(view, b"") for view in range(max(found, default=-1) + 1)]


def fingerprint_source(db: Database, image_id: int) -> tuple[str, int] | None:
    """The file an image's fingerprint was read from and the finder's version, or None when it has none."""
    row = db.execute("SELECT source_representation, version FROM image_hashes WHERE image_id = ? LIMIT 1",
                     [image_id]).fetchone()
    return (row[0], row[1]) if row else None


def load_hashes(db: Database, kinds: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Every view that has all of ``kinds``: its image's id (int64, ascending; an image with
    several views has several rows, side by side) and its hashes (uint64, one column a kind in
    the order given)."""
    columns = ", ".join("max(CASE kind WHEN ? THEN value END)" for _ in kinds)
    marks = ", ".join("?" for _ in kinds)
    rows = db.execute(f"SELECT image_id, {columns} FROM image_hashes WHERE kind IN ({marks}) "
                      f"GROUP BY image_id, view HAVING count(*) = ? ORDER BY image_id, view",
                      [*kinds, *kinds, len(kinds)]).fetchall()
    table = np.array(rows, dtype=np.int64).reshape(len(rows), len(kinds) + 1)
    return table[:, 0].copy(), table[:, 1:].view(np.uint64).copy()


def load_crops(db: Database) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every crop's words: its image's id and view (int64, ascending) and its words (uint64, one
    column a kind of ``mirror.imaging.similar.KINDS``, its pHash in the first two)."""
    rows = db.execute("SELECT image_id, view, phash, phash, red, green, blue, hue FROM image_crops "
                      "ORDER BY image_id, view, crop").fetchall()
    table = np.array(rows, dtype=np.int64).reshape(len(rows), 8)
    return table[:, 0].copy(), table[:, 1].copy(), table[:, 2:].view(np.uint64).copy()


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= _SIGN else value
