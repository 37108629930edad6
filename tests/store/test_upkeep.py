"""The indexes and full-text triggers a first import leaves to its end come back as they were, and
answer the same: the archive after :func:`build` is the archive that kept them all along."""

from __future__ import annotations

import json

from mirror.store import open_database
from mirror.store.history import HistoryRecorder, Seen
from mirror.store.upkeep import BULK_TABLES, archive_is_empty, build, defer, deferred

from .test_raw_rebuilt import real_records, save


def upkeep(db) -> set[tuple[str, str, str]]:
    return {tuple(row) for row in db.execute(
        "SELECT type, name, sql FROM sqlite_master WHERE type IN ('index', 'trigger') AND sql IS NOT NULL")}


def searches(db) -> dict[str, list[int]]:
    asked = {"images": "pony", "comments": "the"}
    return {table: [row[0] for row in db.execute(
        f"SELECT rowid FROM {table}_fts WHERE {table}_fts MATCH ? ORDER BY rowid", [words])]
        for table, words in asked.items()}


def test_an_archive_with_no_record_is_empty_and_one_with_records_is_not(tmp_path):
    db = open_database(tmp_path / "m.db")
    assert archive_is_empty(db)
    save(db, "images", real_records()["images"][:1])
    assert not archive_is_empty(db)


def test_what_is_left_out_while_writing_is_built_back_the_same_and_answers_the_same(tmp_path):
    kept_along = open_database(tmp_path / "along.db")
    left_out = open_database(tmp_path / "left-out.db")
    schema = upkeep(left_out)
    dropped = defer(left_out)
    assert dropped > 20 and deferred(left_out) == dropped
    marks = ",".join("?" * len(BULK_TABLES))
    assert [sql for (sql,) in left_out.execute(
        f"SELECT sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL AND tbl_name IN ({marks})",
        BULK_TABLES) if not sql.startswith("CREATE UNIQUE")] == []
    assert "images_ai" not in {name for _, name, _ in upkeep(left_out)}
    for table, records in real_records().items():
        for db in (kept_along, left_out):
            save(db, table, records)
    # written with nothing to keep up to date, the full-text index knows nothing yet
    assert searches(left_out)["images"] == []
    assert build(left_out) == dropped
    assert deferred(left_out) == 0 and build(left_out) == 0
    assert upkeep(left_out) == schema == upkeep(kept_along)
    assert searches(left_out) == searches(kept_along)
    assert searches(kept_along)["images"]
    assert left_out.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_a_build_cut_short_leaves_each_index_built_or_still_listed(tmp_path):
    db = open_database(tmp_path / "m.db")
    schema = upkeep(db)
    defer(db)
    first = db.execute("SELECT name, sql FROM deferred_upkeep WHERE kind = 'index' ORDER BY name LIMIT 1").fetchone()
    with db.atomic():  # as build does for one index, then killed before the rest
        db.execute(first[1])
        db.execute("DELETE FROM deferred_upkeep WHERE name = ?", [first[0]])
    db.close()
    db = open_database(tmp_path / "m.db")
    assert build(db) > 0
    assert upkeep(db) == schema


def test_counters_kept_once_a_day_without_the_history_index_read_none_of_the_history(tmp_path):
    """A first import leaves ``history_by_record_time`` to its end; asking whether a record's counters
    were kept today must not then read the whole history for each record (at 3.5 M images, a topic
    seen twice by the import stopped it for good), and still keeps them once a day."""
    db = open_database(tmp_path / "m.db")
    with db.atomic():
        db.conn.executemany("INSERT INTO history (resource, record_key, seen_at, event) VALUES ('tags', ?, ?, 'first_seen')",
                            [(str(n), "2026-01-01T00:00:00Z") for n in range(30_000)])
    defer(db)
    recorder = HistoryRecorder(db, None, "daily")
    steps = []
    db.conn.set_progress_handler(lambda: steps.append(1), 1_000)
    for score in (5, 6, 7):
        recorder.saw("topics", [Seen(("f", "t"), {"slug": "t", "post_count": score}, known=True,
                                     old_raw=json.dumps({"slug": "t", "post_count": score - 1}))],
                     now="2026-11-28T03:00:00Z")
    db.conn.set_progress_handler(None, 0)
    kept = db.execute("SELECT count(*) FROM history WHERE resource = 'topics' AND event = 'counters'").fetchone()[0]
    assert kept == 1
    assert len(steps) < 30  # a scan of the 30,000 rows is some 300 thousand steps per question
    recorder.saw("topics", [Seen(("f", "t"), {"slug": "t", "post_count": 9}, known=True,
                                 old_raw=json.dumps({"slug": "t", "post_count": 8}))], now="2026-11-29T03:00:00Z")
    assert db.execute("SELECT count(*) FROM history WHERE event = 'counters'").fetchone()[0] == 2  # the next day's


def test_the_build_gives_the_connection_back_as_it_found_it(tmp_path):
    """The build sorts with helper threads, a cache shared out between them and temporary files;
    the writing that follows it on the same connection keeps its own settings."""
    db = open_database(tmp_path / "m.db")
    save(db, "images", real_records()["images"][:3])
    before = [db.execute(f"PRAGMA {name}").fetchone()[0] for name in ("temp_store", "cache_size", "threads")]
    defer(db)
    assert build(db) > 0
    assert [db.execute(f"PRAGMA {name}").fetchone()[0] for name in ("temp_store", "cache_size", "threads")] == before
