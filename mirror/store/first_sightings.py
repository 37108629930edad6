"""The records a run first sees, kept as one count when the run fills an empty table.

A first sync or a dump's import writes every record of the board once, and each used to leave a
``first_seen`` history row saying no more than "this record was first seen then": half the
history of a whole board (16 million of 33.6 million rows at 3.5 million images), some 3 GB
with their indexes. So the first sightings of a run that fills an empty table are kept as one row
of ``history_first_seen``, the count of them, not a history row each; the records first seen
later (a night's new images) keep their own rows, dated each to the second.

``history_first_seen(resource, run_id, counted, count, first_at, last_at)``
    One row per run and resource. ``counted = 0``: the summary of the run's ``first_seen`` rows
    in the history, kept by a trigger as they are written. ``counted = 1``: the run's first
    sightings themselves, kept as this count only (``first_at`` the first batch's time,
    ``last_at`` the last's).

A run counts its first sightings of a resource when the table held no record as the run first
wrote to it, or when every record it holds was counted by earlier runs of the same kind that did
not finish (a killed import, resumed). A record with no ``first_seen`` row of its own, of a
resource whose first sightings were counted, was first seen by such a run: it is answered as
first seen at the latest ``last_at`` of those counts (:func:`first_seen_counted_at`), the end of the
run's span as far as it went. Never earlier than the mirror had the record; up to the run's length
later (the minutes of an import) than its own row said.

Migration ``0041`` (:func:`count_first_runs`) turns an archive made the old way into this one.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from sqlite_utils import Database

from .raw_rebuilt import is_rebuilt
from .stderr_lines import say_to_stderr

__all__ = ["TABLE", "COUNTED_AT_SQL", "RECORD_COUNTED_AT_SQL", "create_table", "fills_empty_table", "count_sightings",
           "first_seen_counted_at", "count_first_runs"]

TABLE = "history_first_seen"
# Runs that ended as they should; a run of another status (failed, or still 'running' after a kill)
# is resumed by the next run of its kind.
_FINISHED = ("ok", "done")
# The history rows deleted at once by the migration, and the number from which it says how far it got.
_CHUNK = 200_000
LOUD_FROM = 50_000

# When a record of resource ``:resource`` with no ``first_seen`` row of its own was first seen: the
# end of the counted runs (NULL where its first sightings were never counted).
COUNTED_AT_SQL = f"(SELECT max(last_at) FROM {TABLE} WHERE resource = :resource AND counted = 1)"
# The same for the record ``:key``: NULL where it has a first_seen row of its own.
RECORD_COUNTED_AT_SQL = (f"(SELECT CASE WHEN EXISTS (SELECT 1 FROM history WHERE resource = :resource "
                         f"AND record_key = :key AND event = 'first_seen') THEN NULL ELSE {COUNTED_AT_SQL} END)")


def create_table(db: Database) -> None:
    """``history_first_seen`` as this module keeps it, with the trigger that sums up each run's rows."""
    db.execute(f"""CREATE TABLE {TABLE} (
        resource TEXT NOT NULL, run_id INTEGER NOT NULL, counted INTEGER NOT NULL CHECK (counted IN (0, 1)),
        count INTEGER NOT NULL, first_at TEXT NOT NULL, last_at TEXT NOT NULL,
        PRIMARY KEY (resource, run_id, counted))""")
    db.execute(f"""CREATE TRIGGER history_first_seen_counted AFTER INSERT ON history WHEN NEW.event = 'first_seen'
                  BEGIN
                    INSERT INTO {TABLE} (resource, run_id, counted, count, first_at, last_at)
                    VALUES (NEW.resource, coalesce(NEW.run_id, 0), 0, 1, NEW.seen_at, NEW.seen_at)
                    ON CONFLICT (resource, run_id, counted) DO UPDATE SET count = count + 1,
                      first_at = min(first_at, excluded.first_at), last_at = max(last_at, excluded.last_at);
                  END""")


def fills_empty_table(db: Database, run_id: int, resource: str, batch: int | None) -> bool:
    """Whether run ``run_id`` counts its first sightings of ``resource``, asked as its first batch of
    them is written (``batch`` records, all new; None: some were kept before): the table held no
    record before the batch, or only records counted by unfinished earlier runs of the run's own
    kind (a killed import resumed), and no record of it has a ``first_seen`` row."""
    if db.execute(f"SELECT 1 FROM {TABLE} WHERE resource = ? AND counted = 0 LIMIT 1", [resource]).fetchone():
        return False
    earlier = db.execute(f"SELECT r.resource, r.status FROM {TABLE} f LEFT JOIN sync_runs r ON r.id = f.run_id "
                         "WHERE f.resource = ? AND f.counted = 1 AND f.run_id != ?", [resource, run_id]).fetchall()
    if earlier:
        (kind,) = db.execute("SELECT resource FROM sync_runs WHERE id = ?", [run_id]).fetchone() or (None,)
        return all(of == kind and status not in _FINISHED for of, status in earlier)
    if batch is None:
        return False
    try:  # no more records than the batch's: at most batch + 1 rows read, however large the table
        (held,) = db.execute(f'SELECT count(*) FROM (SELECT 1 FROM "{resource}" WHERE raw IS NOT NULL LIMIT ?)',
                             [batch + 1]).fetchone()
    except sqlite3.OperationalError:  # no such table: nothing kept
        return True
    return held <= batch


def count_sightings(db: Database, run_id: int, resource: str, count: int, now: str) -> None:
    """Add ``count`` first sightings of ``resource`` at ``now`` to the run's count."""
    db.execute(f"""INSERT INTO {TABLE} (resource, run_id, counted, count, first_at, last_at) VALUES (?, ?, 1, ?, ?, ?)
                   ON CONFLICT (resource, run_id, counted) DO UPDATE SET count = count + excluded.count,
                   first_at = min(first_at, excluded.first_at), last_at = max(last_at, excluded.last_at)""",
               [resource, run_id, count, now, now])


def first_seen_counted_at(conn: sqlite3.Connection, resource: str, key: str) -> str | None:
    """When the record ``key`` of ``resource`` was first seen, if a counted run saw it first (it has
    no ``first_seen`` row of its own): the end of the counted runs. None otherwise, or for a mirror
    made before history was kept."""
    try:
        return conn.execute(f"SELECT {RECORD_COUNTED_AT_SQL}", {"resource": resource, "key": key}).fetchone()[0]
    except sqlite3.OperationalError as error:
        if "no such table" in str(error) or "no such column" in str(error):  # not migrated yet: rows only
            return None
        raise


def count_first_runs(db: Database, say: Callable[[str], None] | None = None) -> None:
    """Turn each resource's first run's ``first_seen`` rows into its count, where that run filled an
    empty table: every row of the table was first seen by a run (none kept from before history was,
    nor written outside a run), so none was there before the first. So too the runs that resumed it,
    one after the other, while the one before did not finish (a killed import). Their rows are
    deleted a range of ids at a time (a run's sightings of a resource are written together), a line
    said every tenth of a large one."""
    say = say or say_to_stderr
    runs = db.execute("""SELECT resource, coalesce(run_id, 0), count(*), min(seen_at), max(seen_at), min(id), max(id)
                         FROM history NOT INDEXED WHERE event = 'first_seen' GROUP BY resource, coalesce(run_id, 0)
                         ORDER BY resource, coalesce(run_id, 0)""").fetchall()
    db.execute("DROP TRIGGER IF EXISTS history_first_seen_counted")
    db.execute(f"DROP TABLE IF EXISTS {TABLE}")
    create_table(db)
    db.conn.executemany(f"INSERT INTO {TABLE} (resource, run_id, counted, count, first_at, last_at) "
                        "VALUES (?, ?, 0, ?, ?, ?)", [run[:5] for run in runs])
    kinds = {run_id: (kind, status) for run_id, kind, status in db.execute(
        "SELECT id, resource, status FROM sync_runs")}
    for resource in dict.fromkeys(run[0] for run in runs):
        mine = [run for run in runs if run[0] == resource]
        if not mine[0][1] or not _all_first_seen(db, resource, sum(run[2] for run in mine)):
            continue
        _count_run(db, *mine[0], say)
        for before, run in zip(mine, mine[1:]):
            kind, status = kinds.get(before[1], (None, None))
            if status in _FINISHED or kind is None or kinds.get(run[1], (None,))[0] != kind:
                break
            _count_run(db, *run, say)


def _all_first_seen(db: Database, resource: str, sightings: int) -> bool:
    # A tag or a user may be a row holding only a name (raw NULL), never seen as a record; the large
    # tables rebuild raw from their columns (reading it for every row would take minutes) and hold none.
    records = "" if is_rebuilt(resource) else " WHERE raw IS NOT NULL"
    try:
        (rows,) = db.execute(f'SELECT count(*) FROM "{resource}"{records}').fetchone()
    except sqlite3.OperationalError:
        return False
    return rows <= sightings


def _count_run(db: Database, resource: str, run_id: int, count: int, first_at: str, last_at: str,
               low: int, high: int, say: Callable[[str], None]) -> None:
    tenth, done, said = max(1, count // 10), 0, 0
    chunk = min(_CHUNK, max(1, (high - low + 1) // 10))
    for start in range(low, high + 1, chunk):
        done += db.execute("DELETE FROM history WHERE id >= ? AND id < ? AND resource = ? AND run_id = ? "
                           "AND event = 'first_seen'", [start, start + chunk, resource, run_id]).rowcount
        if count >= LOUD_FROM and done // tenth > said:
            said = done // tenth
            say(f"history: {done:,} of {count:,} first sightings of {resource} counted, not kept as rows")
    db.execute(f"UPDATE {TABLE} SET counted = 1 WHERE resource = ? AND run_id = ? AND counted = 0", [resource, run_id])
