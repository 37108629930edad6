"""A mark for each table a reader compares whole, moved by every write that changes the table.

No column says which rows of the site's dump tables (favourites, duplicate reports, badges, artist
links) or of a gallery's images changed: the export finds its new versions of them by comparing
every row with the digest of what it wrote before. On the whole board that is 19 million rows a
night, some two minutes of CPU, for tables that only a dump import, or a gallery walk that found
the gallery changed, ever writes. Those writers move the table's mark in the transaction of their
write (kept in ``sync_state`` as ``written:TABLE``, a count); a reader that keeps the marks it saw
skips a table whose mark has not moved since.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlite_utils import Database

__all__ = ["mark_written", "written_marks"]

_PREFIX = "written:"


def mark_written(db: Database, table: str) -> None:
    """Say that ``table`` changed (within the caller's transaction)."""
    db.execute("INSERT INTO sync_state (name, cursor, updated_at) VALUES (?, '1', strftime('%Y-%m-%dT%H:%M:%SZ')) "
               "ON CONFLICT (name) DO UPDATE SET cursor = CAST(CAST(cursor AS INTEGER) + 1 AS TEXT), "
               "updated_at = excluded.updated_at", [_PREFIX + table])


def written_marks(db: Database, tables: Iterable[str]) -> dict[str, int]:
    """Each table's mark now: 0 for one no writer has marked."""
    names = list(tables)
    kept = dict(db.execute(f"SELECT name, CAST(cursor AS INTEGER) FROM sync_state WHERE name IN "
                           f"({', '.join('?' * len(names))})", [_PREFIX + n for n in names]).fetchall())
    return {name: kept.get(_PREFIX + name, 0) for name in names}
