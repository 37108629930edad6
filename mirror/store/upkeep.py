"""The indexes and full-text triggers a first import leaves out while it writes, built once at its end.

An archive keeps every secondary index and full-text index up to date as each batch is written:
right for a nightly sync, ruinous for a first import of a whole board, where each of some 35
B-trees takes a hundred million rows in an order of its own and, once larger than the page cache,
reads a page from disk for nearly every row (the import's images slowed from 1,136 to 733 a second
between 350,000 and a million). Built afterwards, an index is one sort of its table and its pages
are written full; a full-text index is one FTS5 ``rebuild``, merged once. On a board of
Derpibooru's shape at 100,000 images that wrote the same archive in some 60% of the time, 4%
smaller (``docs/performance.md``).

So an import into an archive that holds no records drops them first (:func:`defer`), keeping
their SQL in ``deferred_upkeep`` in the same transaction, and builds them when it has written
everything (:func:`build`), each in a transaction of its own that also removes its row: a kill at
any instant leaves every one either built or still listed. A killed import builds them at the end
of the run that resumes it; any other command that writes finds them listed and builds them first.
Only the import may write with them left out: its batches look nothing up by a dropped index
(the keys it reads by are primary keys, and an empty archive holds no site history to match).

The tag changes, a table clustered by image (:mod:`.tag_changes`), are left out the same way: the
import appends them to a plain table in the order the dump gives them, sorted into their layout
once, first of all at the end (``kind`` ``table``): 34.6 -> 9.7 s of the 100,000-image import's
tag-change step, the sort under a second of the end's.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence

from sqlite_utils import Database

from . import tag_changes

__all__ = ["BULK_TABLES", "archive_is_empty", "defer", "deferred", "build"]

# The tables a whole board's rows go to: together nearly all its indexes' bytes and work.
BULK_TABLES = ("images", "comments", "posts", "history", "image_tag_changes", "image_tags", "image_faves")
# A record in any of these and the archive is not empty: the import then writes as a sync does.
_RECORD_TABLES = ("images", "comments", "posts", "tags", "users", "history")
BUILD_CACHE_KIB = 64 * 1024
# Helper threads SQLite's sorter may start for each index built (PRAGMA threads), each sorting its
# share of the rows before they are merged; the cache is shared out between them, so memory stays
# what one sorter used. Measured on 2 cores, a 12-million-row index: 44.9 s -> 24.1 s of wall, the
# same CPU and peak memory (145 MB).
SORT_THREADS = 2
_FTS_TARGET = re.compile(r'INSERT\s+INTO\s+"?([A-Za-z_][A-Za-z0-9_]*)"?', re.IGNORECASE)


def archive_is_empty(db: Database) -> bool:
    """Whether no record has been written yet: a first import may leave its upkeep to its end."""
    return not any(db.execute(f'SELECT 1 FROM "{table}" LIMIT 1').fetchone() for table in _RECORD_TABLES)


def deferred(db: Database) -> int:
    """How many indexes and full-text triggers are left out, waiting for :func:`build`."""
    return db.execute("SELECT count(*) FROM deferred_upkeep").fetchone()[0]


def defer(db: Database, tables: Sequence[str] = BULK_TABLES) -> int:
    """Drop the secondary indexes of ``tables`` and their full-text triggers, keeping their SQL to
    build them again; the number dropped. Indexes that enforce uniqueness stay: they are checks."""
    marks = ",".join("?" * len(tables))
    indexes = db.execute(f"SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL "
                         f"AND tbl_name IN ({marks})", list(tables)).fetchall()
    indexes = [(name, sql) for name, sql in indexes if not re.match(r"\s*CREATE\s+UNIQUE", sql, re.IGNORECASE)]
    triggers = [(name, sql, fts) for name, sql in db.execute(
        f"SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name IN ({marks})", list(tables))
        if (fts := _full_text_target(db, sql))]
    with db.atomic():
        for name, sql in indexes:
            db.execute("INSERT OR IGNORE INTO deferred_upkeep (name, kind, sql) VALUES (?, 'index', ?)", [name, sql])
            db.execute(f'DROP INDEX "{name}"')
        for name, sql, fts in triggers:
            db.execute("INSERT OR IGNORE INTO deferred_upkeep (name, kind, sql, rebuild) VALUES (?, 'trigger', ?, ?)",
                       [name, sql, fts])
            db.execute(f'DROP TRIGGER "{name}"')
        unsorted = _unsorted_tag_changes(db) if tag_changes.TABLE in tables else 0
    return len(indexes) + len(triggers) + unsorted


def _unsorted_tag_changes(db: Database) -> int:
    """Put a plain table in place of the empty tag changes, its triggers kept, to be sorted into
    their layout by :func:`build` (:mod:`.tag_changes`: a table clustered by image, filled in the
    order a dump's changes come, would split pages all over it); 1 where it did."""
    if not tag_changes.clustered(db) or db.execute(f"SELECT 1 FROM {tag_changes.TABLE} LIMIT 1").fetchone():
        return 0
    triggers = [row[0] for row in db.execute("SELECT sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = ?",
                                             [tag_changes.TABLE])]
    db.execute("INSERT OR IGNORE INTO deferred_upkeep (name, kind, sql) VALUES (?, 'table', ?)",
               [tag_changes.TABLE, tag_changes.LAYOUT])
    db.execute(f"DROP TABLE {tag_changes.TABLE}")
    db.execute(tag_changes.UNSORTED)
    for sql in triggers:
        db.execute(sql)
    return 1


def build(db: Database, say: Callable[[str], None] | None = None) -> int:
    """Build every index and full-text index :func:`defer` left out; the number built. Each is
    committed with its row's removal, so a kill loses at most the one being built."""
    # A table before the indexes on it; the full-text triggers last.
    listed = db.execute("SELECT name, kind, sql, rebuild FROM deferred_upkeep "
                        "ORDER BY kind != 'table', kind, name").fetchall()
    if not listed:
        return 0
    if say:
        say(f"building {len(listed)} indexes and full-text triggers left to the import's end")
    started = time.perf_counter()
    # The sorts spill to temporary files: held in memory, a hundred-million-row index would not fit.
    # SQLite's sorter holds as much as the page cache before it spills, on top of the cache itself:
    # with an import's 200 MB cache that took the import past its 500 MB (562 MB at 350,000 images).
    temp_store, cache, threads = (db.execute(f"PRAGMA {name}").fetchone()[0]
                                  for name in ("temp_store", "cache_size", "threads"))
    db.execute("PRAGMA temp_store=FILE")
    db.execute(f"PRAGMA cache_size=-{BUILD_CACHE_KIB // SORT_THREADS}")
    db.execute(f"PRAGMA threads={SORT_THREADS}")
    try:
        for name, kind, sql, _ in listed:
            if kind == "table":
                with db.atomic():
                    tag_changes.cluster(db, say)
                    db.execute("DELETE FROM deferred_upkeep WHERE name = ?", [name])
            if kind == "index":
                with db.atomic():
                    db.execute(sql)
                    db.execute("DELETE FROM deferred_upkeep WHERE name = ?", [name])
        for fts in dict.fromkeys(row[3] for row in listed if row[1] == "trigger"):
            with db.atomic():
                for name, _, sql, _ in (row for row in listed if row[3] == fts):
                    db.execute(sql)
                    db.execute("DELETE FROM deferred_upkeep WHERE name = ?", [name])
                db.execute(f"INSERT INTO \"{fts}\" (\"{fts}\") VALUES ('rebuild')")
    finally:
        db.execute(f"PRAGMA temp_store={temp_store}")
        db.execute(f"PRAGMA cache_size={cache}")
        db.execute(f"PRAGMA threads={threads}")
    if say:
        say(f"built {len(listed)} indexes and full-text triggers in {time.perf_counter() - started:.1f} s")
    return len(listed)


def _full_text_target(db: Database, trigger_sql: str) -> str | None:
    """The FTS5 table a trigger keeps up to date, if that is what it does."""
    for name in _FTS_TARGET.findall(trigger_sql):
        row = db.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", [name]).fetchone()
        if row and re.search(r"USING\s+FTS5", row[0] or "", re.IGNORECASE):
            return name
    return None
