"""The dump's tables, copied as they are into a scratch SQLite file beside the mirror.

An image record joins six of the dump's tables (its tags, sources, intensities, hide reason,
merge target and uploader's name), and a dump lists its tables in its own order, not in the
order records need them. So each table is first copied here, row for row, with its own column
names (``dump_images``, ``dump_image_taggings``...), and indexed for the joins; records are then
built from these copies in id order, a batch at a time (:mod:`.records`). Memory stays flat
whatever the dump's size; the disk holds the tables once more, until the import is done and the
file is deleted.

A table is copied in one transaction and then marked done, so a killed import copies again only
the table it was in. Rows that cannot be kept as they are (a row with too many or too few columns,
bytes that are not UTF-8) are set aside in ``dump_rejects`` with the reason, for the importer to
keep in the mirror's ``rejects``; an id the dump holds twice keeps its last row, and the earlier
ones go there too.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from .archive import Archive, BadRow

__all__ = ["Staging", "StagedTable", "INDEXES"]

# Columns whose values are whole numbers (ids, counts, positions) or fractions, so that SQLite
# stores them as numbers (the COPY text is "123") and joins compare them as such.
_INTEGERS = {"image_width", "image_height", "image_size", "comment_count", "score", "favorites", "upvotes",
             "downvotes", "hides", "image_count", "topic_count", "post_count", "view_count", "position"}
_REALS = {"image_aspect_ratio", "nw_intensity", "ne_intensity", "sw_intensity", "se_intensity"}

# The indexes the joins need, made once a table is copied (tables with an ``id`` are also
# indexed by it, and keep one row per id).
INDEXES: dict[str, tuple[tuple[str, ...], ...]] = {
    "image_taggings": (("image_id", "tag_id"),), "image_sources": (("image_id",),),
    "image_intensities": (("image_id",),), "image_hides": (("image_id",),), "image_duplicates": (("image_id",),),
    "gallery_interactions": (("gallery_id", "position"),), "tag_aliases": (("tag_id",), ("target_tag_id",)),
    "tag_implications": (("tag_id",), ("target_tag_id",)), "tag_change_tags": (("tag_change_id",),),
    "image_faves": (("image_id", "user_id"),), "image_features": (("image_id",),),
    "posts": (("topic_id",),),
}
_BATCH = 5000


@dataclass(frozen=True)
class StagedTable:
    name: str
    rows: int
    set_aside: int


class Staging:
    """The scratch file: one ``dump_<table>`` per table copied, and which are complete."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.conn = sqlite3.connect(self.path, isolation_level=None)
        self.conn.execute("PRAGMA journal_mode = WAL")
        self.conn.execute("PRAGMA synchronous = OFF")  # a scratch copy: a crash re-copies the table
        self.conn.execute("CREATE TABLE IF NOT EXISTS staged (name TEXT PRIMARY KEY, columns TEXT NOT NULL, "
                          "rows INTEGER NOT NULL, set_aside INTEGER NOT NULL)")
        self.conn.execute("CREATE TABLE IF NOT EXISTS dump_rejects (id INTEGER PRIMARY KEY, table_name TEXT NOT NULL, "
                          "reason TEXT NOT NULL, row TEXT NOT NULL)")

    def close(self) -> None:
        self.conn.close()

    def staged(self) -> dict[str, tuple[str, ...]]:
        """The tables copied in full, with their columns."""
        rows = self.conn.execute("SELECT name, columns FROM staged")
        return {name: tuple(json.loads(columns)) for name, columns in rows}

    def has(self, table: str) -> bool:
        return table in self.staged()

    def columns(self, table: str) -> tuple[str, ...]:
        return self.staged().get(table, ())

    def stage(self, archive: Archive, table: str) -> StagedTable:
        """Copy ``table``'s rows from ``archive``, replacing any half-made copy, in one transaction."""
        columns = archive.tables[table].columns
        name = f"dump_{table}"
        conn = self.conn
        conn.execute("BEGIN")
        try:
            conn.execute(f'DROP TABLE IF EXISTS "{name}"')
            conn.execute("DELETE FROM dump_rejects WHERE table_name = ?", [table])
            conn.execute(f'CREATE TABLE "{name}" ({", ".join(_column(c) for c in columns)})')
            rows, set_aside = self._copy(archive.rows(table), table, name, len(columns))
            set_aside += self._index(table, name, columns)
            conn.execute("INSERT OR REPLACE INTO staged (name, columns, rows, set_aside) VALUES (?, ?, ?, ?)",
                         [table, json.dumps(columns), rows, set_aside])
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return StagedTable(table, rows, set_aside)

    def _copy(self, rows: Iterable[list[str | None]], table: str, name: str, width: int) -> tuple[int, int]:
        insert = f'INSERT INTO "{name}" VALUES ({", ".join("?" * width)})'
        batch: list[list[str | None]] = []
        count = set_aside = 0
        for row in rows:
            if len(row) != width or isinstance(row, BadRow):
                reason = ("not valid UTF-8 (kept with U+FFFD in place of the bad bytes)" if isinstance(row, BadRow)
                          else f"{len(row)} values where the table has {width} columns")
                self.set_aside(table, reason, row)
                set_aside += 1
                continue
            batch.append(row)
            if len(batch) == _BATCH:
                self.conn.executemany(insert, batch)
                count, batch = count + len(batch), []
        self.conn.executemany(insert, batch)
        return count + len(batch), set_aside

    def set_aside(self, table: str, reason: str, row: list[str | None] | dict) -> None:
        self.conn.execute("INSERT INTO dump_rejects (table_name, reason, row) VALUES (?, ?, ?)",
                          [table, reason, json.dumps(row, ensure_ascii=False)])

    def _index(self, table: str, name: str, columns: tuple[str, ...]) -> int:
        """Index the copy for its joins. A row whose id or join key is not a whole number (a
        ``\\N`` where the site's schema allows none) is set aside, and so are all but the last
        row of an id held twice."""
        indexes = INDEXES.get(table, ())
        keys = sorted({c for c in ("id", *(c for index in indexes for c in index)) if c in columns})
        not_whole = " OR ".join(f"typeof(\"{c}\") != 'integer'" for c in keys)
        set_aside = self._set_aside_where(table, name, columns, not_whole,
                                          f"{', '.join(keys)}: null or not a whole number where the table needs one")
        if "id" in columns:
            set_aside += self._set_aside_where(
                table, name, columns, f'rowid NOT IN (SELECT max(rowid) FROM "{name}" GROUP BY id)',
                "the dump holds this id twice: its last row is kept")
            indexes = (("id",), *indexes)
        for indexed in indexes:
            if all(c in columns for c in indexed):
                self.conn.execute(f'CREATE INDEX "{name}_by_{"_".join(indexed)}" ON "{name}" ({", ".join(indexed)})')
        return set_aside

    def _set_aside_where(self, table: str, name: str, columns: tuple[str, ...], where: str, reason: str) -> int:
        """Move the rows of the copy that match ``where`` to ``dump_rejects``; how many."""
        if not where:
            return 0
        rows = self.conn.execute(f'SELECT * FROM "{name}" WHERE {where}').fetchall()
        for row in rows:
            self.set_aside(table, reason, dict(zip(columns, row)))
        if rows:
            self.conn.execute(f'DELETE FROM "{name}" WHERE {where}')
        return len(rows)

    def rejects(self) -> list[tuple[str, str, str]]:
        """Every row set aside: (table, reason, the row as JSON)."""
        return self.conn.execute("SELECT table_name, reason, row FROM dump_rejects ORDER BY id").fetchall()


def _column(name: str) -> str:
    kind = "INTEGER" if name == "id" or name.endswith("_id") or name in _INTEGERS else (
        "REAL" if name in _REALS else "TEXT")
    return f'"{name}" {kind}'
