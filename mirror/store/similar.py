"""The ``image_hashes`` table: each image's perceptual hashes, by kind, for finding its copies.

Hashes are unsigned 64-bit values; SQLite's integers are signed, so they are stored as the
signed integer of the same bits and turned back on the way out. A search reads them all at once
(:func:`load_hashes`), as one numpy array, and compares them in memory.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from sqlite_utils import Database

from ..dates import utc_text

__all__ = ["save_hashes", "load_hashes", "delete_hashes"]

_SIGN = 1 << 63


def save_hashes(db: Database, image_id: int, hashes: Mapping[str, int], source_representation: str) -> None:
    """Keep (or replace) an image's hashes, ``{kind: unsigned 64-bit value}``, read from its
    ``source_representation`` file."""
    now = utc_text()
    rows = [(image_id, kind, _signed(value), source_representation, now) for kind, value in hashes.items()]
    with db.atomic():
        db.conn.executemany("INSERT OR REPLACE INTO image_hashes (image_id, kind, value, source_representation, "
                            "computed_at) VALUES (?, ?, ?, ?, ?)", rows)


def delete_hashes(db: Database, image_id: int) -> None:
    with db.atomic():
        db.execute("DELETE FROM image_hashes WHERE image_id = ?", [image_id])


def load_hashes(db: Database, kinds: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Every image that has all of ``kinds``: its ids (int64, ascending) and its hashes (uint64,
    one row an image, one column a kind in the order given)."""
    columns = ", ".join("max(CASE kind WHEN ? THEN value END)" for _ in kinds)
    marks = ", ".join("?" for _ in kinds)
    rows = db.execute(f"SELECT image_id, {columns} FROM image_hashes WHERE kind IN ({marks}) "
                      f"GROUP BY image_id HAVING count(*) = ? ORDER BY image_id",
                      [*kinds, *kinds, len(kinds)]).fetchall()
    table = np.array(rows, dtype=np.int64).reshape(len(rows), len(kinds) + 1)
    return table[:, 0].copy(), table[:, 1:].view(np.uint64).copy()


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= _SIGN else value
