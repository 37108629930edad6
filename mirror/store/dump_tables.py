"""Writing what only the site's dump holds: favourites, duplicate reports, badges, artist links.

The API has no endpoint for these (a profile lists a user's verified links and awards, nothing
else), so they have tables of their own, in the dump's column names (migration 0025). A row of a
later dump replaces the row of an earlier one with the same key.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlite_utils import Database

from .rows import quoted
from .table_marks import mark_written

__all__ = ["DUMP_TABLES", "save_dump_rows", "save_features"]

# Each table's columns, its key first.
DUMP_TABLES: Mapping[str, tuple[str, ...]] = {
    "image_faves": ("image_id", "user_id", "created_at"),
    "duplicate_reports": ("id", "image_id", "duplicate_of_image_id", "created_at", "updated_at", "user_id", "state",
                          "reason"),
    "badges": ("id", "title", "description", "image_url"),
    "badge_awards": ("id", "user_id", "badge_id", "created_at", "label"),
    "artist_links": ("id", "user_id", "tag_id", "url"),
}


def save_dump_rows(db: Database, table: str, rows: Sequence[Mapping[str, Any]]) -> int:
    """Insert or replace ``rows`` (dicts by column name; a column missing is null) in ``table``."""
    columns = DUMP_TABLES[table]
    db.conn.executemany(f'INSERT OR REPLACE INTO "{table}" ({quoted(columns)}) VALUES ({", ".join("?" * len(columns))})',
                        [tuple(row.get(c) for c in columns) for row in rows])
    if rows:
        mark_written(db, table)
    return len(rows)


def save_features(db: Database, features: Sequence[tuple[str, int]]) -> None:
    """The site's featured images, ``(featured at, image id)``: one a day, as the featured crawler
    keeps them; a day already recorded keeps what it has."""
    db.conn.executemany("INSERT INTO featured_images (day, image_id, seen_at) VALUES (?, ?, ?) "
                        "ON CONFLICT (day) DO NOTHING", [(at[:10], image_id, at) for at, image_id in features])
