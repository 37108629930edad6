"""What the store does to its database besides migrating it: the planner's statistics, kept as
a mirror grows, and trigram indexes for substring searches.

Kept apart from :mod:`.schema`, which holds the migrations only (each applied once, never
edited): these run again whenever the data calls for it, and the migrations call them too.
"""

from __future__ import annotations

from sqlite_utils import Database

__all__ = ["STATISTICS_FROM", "refresh_statistics", "refresh_statistics_if_grown", "substring_index"]


def refresh_statistics(db: Database) -> None:
    """Let SQLite's planner know how big the tables and how selective the indexes are.

    Without these statistics it guesses, and looks images up by id in the table (reading each
    whole record) rather than in ``images_search``, which holds all a search's total needs.
    ``analysis_limit`` samples each index instead of reading it all: milliseconds, at any size.
    """
    db.execute("PRAGMA analysis_limit=1000")
    db.execute("ANALYZE")


# Below this many images the planner's guesses do as well as statistics.
STATISTICS_FROM = 10_000


def refresh_statistics_if_grown(db: Database) -> None:
    """Refresh the statistics once the images have doubled since they were taken (from
    :data:`STATISTICS_FROM` images on): a mirror grows by syncs, from empty, and its first
    statistics are those of an empty database."""
    images = db.execute("SELECT count(*) FROM images").fetchone()[0]
    if images < STATISTICS_FROM:
        return
    stat = db.execute("SELECT stat FROM sqlite_stat1 WHERE tbl = 'images' LIMIT 1").fetchone() \
        if db["sqlite_stat1"].exists() else None
    if stat is None or images >= 2 * int(stat[0].split()[0]):
        refresh_statistics(db)


def substring_index(db: Database, table: str, column: str) -> None:
    """``{table}_{column}``: FTS5 trigrams of ``column``, kept in step by triggers, filled now."""
    fts = f"{table}_{column}"
    db.execute(f"""CREATE VIRTUAL TABLE "{fts}" USING fts5("{column}", content='{table}', content_rowid='rowid',
                   tokenize='trigram')""")
    insert = f'INSERT INTO "{fts}" (rowid, "{column}") VALUES (new.rowid, new."{column}");'
    delete = f'INSERT INTO "{fts}" ("{fts}", rowid, "{column}") VALUES (\'delete\', old.rowid, old."{column}");'
    db.execute(f'CREATE TRIGGER "{fts}_ai" AFTER INSERT ON "{table}" BEGIN {insert} END')
    db.execute(f'CREATE TRIGGER "{fts}_ad" AFTER DELETE ON "{table}" BEGIN {delete} END')
    db.execute(f'CREATE TRIGGER "{fts}_au" AFTER UPDATE ON "{table}" WHEN old."{column}" IS NOT new."{column}" '
               f"BEGIN {delete} {insert} END")
    db.execute(f"INSERT INTO \"{fts}\" (\"{fts}\") VALUES ('rebuild')")
