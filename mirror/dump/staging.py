"""The dump's tables, copied as they are into a scratch SQLite file beside the mirror.

An image record joins six of the dump's tables (its tags, sources, intensities, hide reason,
merge target and uploader's name), and a dump lists its tables in its own order, not in the
order records need them. So each table is first copied here, row for row, with its own column
names (``dump_images``, ``dump_image_taggings``...), and indexed for the joins; records are then
built from these copies in id order, a batch at a time (:mod:`.records`). Memory stays flat
whatever the dump's size; the disk holds the tables once more, until the import is done and the
file is deleted.

A table is copied in one transaction and then marked done, so a killed import copies again only
the table it was in; one asked to stop (:data:`Stopping`) stops between two batches of rows.
Rows that cannot be kept as they are (a row with too many or too few columns, bytes that are not
UTF-8, a line past the longest read, an id that is not a whole number such as ``1e5``) are set
aside in ``dump_rejects`` with the reason, for the importer to keep in the mirror's ``rejects``;
an id the dump holds twice keeps its last row, and the earlier ones go there too. A table with
more such rows than :data:`MOST_SET_ASIDE` (or bytes than :data:`MOST_SET_ASIDE_BYTES`) is not a
table with a few bad rows but a damaged one: the import stops with a :class:`DumpError`.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from ..store.errors import store_error
from .archive import Archive, BadRow, DumpError

__all__ = ["Staging", "StagedTable", "INDEXES", "Stopped", "Stopping", "MOST_SET_ASIDE", "MOST_SET_ASIDE_BYTES"]

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
_BATCH_BYTES = 32 << 20
MOST_SET_ASIDE = 10_000
MOST_SET_ASIDE_BYTES = 64 << 20
_STEPS_BETWEEN_CHECKS = 100_000  # SQLite VM steps between two looks at whether to stop

Stopping = Callable[[], bool]  # true once the import is asked to stop (SIGTERM, Ctrl-C)


class Stopped(KeyboardInterrupt):
    """The import stopped between two batches, as asked; what was committed is kept, and the next
    run resumes. A KeyboardInterrupt, so that it ends the run as an interrupted run does."""


def _never() -> bool:
    return False


@dataclass(frozen=True)
class StagedTable:
    name: str
    rows: int
    set_aside: int


class Staging:
    """The scratch file: one ``dump_<table>`` per table copied, and which are complete."""

    def __init__(self, path: str | Path, stopping: Stopping = _never) -> None:
        self.path, self.stopping = Path(path), stopping
        self.conn = sqlite3.connect(self.path, isolation_level=None)
        # A statement that runs long (an index on a large table) is cut short when the import is
        # asked to stop: SQLite calls this every so many steps, and a true answer interrupts it.
        self.conn.set_progress_handler(stopping, _STEPS_BETWEEN_CHECKS)
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
        if not columns:
            raise DumpError(f"{archive.path}: table {table}: its data names no columns; the dump is damaged; "
                            "fetch it again and check its SHA-256")
        name = f"dump_{table}"
        conn = self.conn
        aside = _SetAside(conn, archive, table)
        conn.execute("BEGIN")
        try:
            conn.execute(f'DROP TABLE IF EXISTS "{name}"')
            conn.execute("DELETE FROM dump_rejects WHERE table_name = ?", [table])
            conn.execute(f'CREATE TABLE "{name}" ({", ".join(_column(c) for c in columns)})')
            rows = self._copy(archive.rows(table), name, columns, aside)
            self._index(table, name, columns, aside)
            aside.flush()
            conn.execute("INSERT OR REPLACE INTO staged (name, columns, rows, set_aside) VALUES (?, ?, ?, ?)",
                         [table, json.dumps(columns), rows - aside.moved, aside.count])
            conn.execute("COMMIT")
        except BaseException as error:
            if conn.in_transaction:  # SQLite rolls back by itself on some errors (a full disk)
                conn.execute("ROLLBACK")
            if self.stopping():
                raise Stopped() from None
            if isinstance(error, sqlite3.Error):
                raise store_error(error, f"the dump's scratch copy {self.path}", 0) from None
            raise
        return StagedTable(table, rows - aside.moved, aside.count)

    def _copy(self, rows: Iterable[list[str | None]], name: str, columns: tuple[str, ...], aside: _SetAside) -> int:
        """Copy ``rows`` into the table ``name``, a batch at a time; how many were copied."""
        width = len(columns)
        insert = f'INSERT INTO "{name}" VALUES ({", ".join("?" * width)})'
        keys = [i for i, column in enumerate(columns) if _is_key(column)]
        batch: list[list[str | None]] = []
        count = read = size = 0
        for row in rows:
            read += 1
            if read % _BATCH == 0 and self.stopping():
                raise Stopped()
            if isinstance(row, BadRow):
                aside.add(row.reason, row)
            elif len(row) != width:
                aside.add(f"{len(row)} values where the table has {width} columns", row)
            elif not_whole := [columns[i] for i in keys if row[i] is not None and not _whole(row[i])]:
                aside.add(f"{', '.join(not_whole)}: not a whole number where the table needs one", row)
            else:
                batch.append(row)
                size += sum(map(len, filter(None, row)))
                if len(batch) == _BATCH or size > _BATCH_BYTES:  # long rows: fewer of them at once
                    self.conn.executemany(insert, batch)
                    count, batch, size = count + len(batch), [], 0
        self.conn.executemany(insert, batch)
        return count + len(batch)

    def _index(self, table: str, name: str, columns: tuple[str, ...], aside: _SetAside) -> None:
        """Index the copy for its joins. A row whose id or join key is not a whole number (a
        ``\\N`` where the site's schema allows none) is set aside, and so are all but the last
        row of an id held twice."""
        indexes = INDEXES.get(table, ())
        keys = sorted({c for c in ("id", *(c for index in indexes for c in index)) if c in columns})
        not_whole = " OR ".join(f"typeof(\"{c}\") != 'integer'" for c in keys)
        self._set_aside_where(name, columns, not_whole,
                              f"{', '.join(keys)}: null or not a whole number where the table needs one", aside)
        if "id" in columns:
            self._set_aside_where(name, columns, f'rowid NOT IN (SELECT max(rowid) FROM "{name}" GROUP BY id)',
                                  "the dump holds this id twice: its last row is kept", aside)
            indexes = (("id",), *indexes)
        for indexed in indexes:
            if all(c in columns for c in indexed):
                self.conn.execute(f'CREATE INDEX "{name}_by_{"_".join(indexed)}" ON "{name}" ({", ".join(indexed)})')

    def _set_aside_where(self, name: str, columns: tuple[str, ...], where: str, reason: str,
                         aside: _SetAside) -> None:
        """Move the rows of the copy that match ``where`` to ``dump_rejects``, a batch at a time."""
        if not where:
            return
        moved = 0
        for row in self.conn.execute(f'SELECT * FROM "{name}" WHERE {where}'):  # a row at a time: rows may be long
            aside.add(reason, dict(zip(columns, row)))
            moved += 1
        if moved:
            self.conn.execute(f'DELETE FROM "{name}" WHERE {where}')
            aside.moved += moved

    def rejects(self) -> sqlite3.Cursor:
        """Every row set aside: (table, reason, the row as JSON), a cursor to read them as they are used."""
        return self.conn.execute("SELECT table_name, reason, row FROM dump_rejects ORDER BY id")


class _SetAside:
    """The rows of one table set aside, written to ``dump_rejects`` a batch at a time; past
    :data:`MOST_SET_ASIDE` rows (or :data:`MOST_SET_ASIDE_BYTES`) the table is called damaged."""

    def __init__(self, conn: sqlite3.Connection, archive: Archive, table: str) -> None:
        self.conn, self.archive, self.table = conn, archive, table
        self.batch: list[tuple[str, str, str]] = []
        self.count = self.size = 0
        self.moved = 0  # of them, rows copied before and moved out of the copy

    def add(self, reason: str, row: list[str | None] | dict) -> None:
        kept = json.dumps(row, ensure_ascii=False)
        self.count, self.size = self.count + 1, self.size + len(kept)
        if self.count > MOST_SET_ASIDE or self.size > MOST_SET_ASIDE_BYTES:
            raise DumpError(f"{self.archive.path}: table {self.table}: more than {MOST_SET_ASIDE:,} rows (or "
                            f"{MOST_SET_ASIDE_BYTES >> 20} MB) cannot be read as its rows (the last: {reason}); "
                            "the dump is damaged; fetch it again and check its SHA-256")
        self.batch.append((self.table, reason, kept))
        if len(self.batch) == _BATCH:
            self.flush()

    def flush(self) -> None:
        self.conn.executemany("INSERT INTO dump_rejects (table_name, reason, row) VALUES (?, ?, ?)", self.batch)
        self.batch = []


def _is_key(name: str) -> bool:
    """An id, or what joins go by: a value SQLite must not convert from a text that is no whole
    number (``1e5`` would become the id 100000)."""
    return name == "id" or name.endswith("_id") or any(name in index for indexes in INDEXES.values()
                                                       for index in indexes)


def _whole(text: str) -> bool:
    digits = text[1:] if text[:1] == "-" else text
    return digits.isascii() and digits.isdigit()


def _column(name: str) -> str:
    kind = "INTEGER" if name == "id" or name.endswith("_id") or name in _INTEGERS else (
        "REAL" if name in _REALS else "TEXT")
    quoted = name.replace('"', '""')
    return f'"{quoted}" {kind}'
