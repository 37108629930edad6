"""A run that fills an empty table keeps its first sightings as one count, not a history row per
record; records first seen later keep their own rows; a killed import resumed counts on; and
migration 0041 turns an archive made the old way into the same thing, its first-seen counts
unchanged."""

from __future__ import annotations

import asyncio

import pytest

from mirror.commands.import_dump import run_import
from mirror.config import make_config
from mirror.localsite.dump.whole_board import write_whole_board
from mirror.store import open_database
from mirror.store.history_read import first_seen
from mirror.store.schema import migrations
from mirror.store.state import start_run
from sqlite_utils import Database

from .test_raw_rebuilt import REAL, save

IMAGES = 1_000
RESOURCES = ("users", "tags", "images", "comments", "posts", "galleries", "forums", "topics")


def counted(db, resource: str) -> list[tuple[int, int]]:
    return db.execute("SELECT run_id, count FROM history_first_seen WHERE resource = ? AND counted = 1 "
                      "ORDER BY run_id", [resource]).fetchall()


def rows_of(db, resource: str) -> int:
    return db.execute("SELECT count(*) FROM history WHERE resource = ? AND event = 'first_seen'",
                      [resource]).fetchone()[0]


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("first-sightings")
    dump = tmp / "board.pgdump"
    write_whole_board(dump, IMAGES, seed=5, processes=1)
    config = make_config({"store": {"database": str(tmp / "mirror.db"), "files": str(tmp / "files")}})
    db = open_database(config.database)
    asyncio.run(run_import(config, db, str(dump)))
    return db


def test_an_import_into_an_empty_archive_writes_no_first_seen_row_but_one_count_per_resource(imported):
    db = imported
    (run_id,) = db.execute("SELECT id FROM sync_runs WHERE resource = 'import-dump'").fetchone()
    assert db.execute("SELECT count(*) FROM history WHERE event = 'first_seen'").fetchone()[0] == 0
    assert db.execute("SELECT count(*) FROM history WHERE event = 'site_tags'").fetchone()[0] > 0  # the rest stays
    for resource in RESOURCES:
        held = db.execute(f"SELECT count(*) FROM {resource} WHERE raw IS NOT NULL").fetchone()[0]
        assert counted(db, resource) == [(run_id, held)] and held > 0, resource
    summary = {seen.resource: seen.count for seen in first_seen(db.conn)}
    assert summary["images"] == IMAGES


def test_records_first_seen_after_the_table_was_filled_keep_their_own_rows(tmp_path):
    db = open_database(tmp_path / "m.db")
    images = REAL["images"]
    first = start_run(db, "images")
    save(db, "images", images[:3])
    first.finish(db, status="ok")
    second = start_run(db, "images")
    save(db, "images", images[3:5])
    second.finish(db, status="ok")
    assert counted(db, "images") == [(first.id, 3)]
    assert db.execute("SELECT record_key, run_id FROM history WHERE event = 'first_seen' ORDER BY id").fetchall() \
        == [(str(images[3]["id"]), second.id), (str(images[4]["id"]), second.id)]
    assert [s.count for s in first_seen(db.conn, resources=["images"])] == [5]


def test_a_killed_run_resumed_by_its_own_kind_counts_on_and_another_kind_does_not(tmp_path):
    db = open_database(tmp_path / "m.db")
    images = REAL["images"]
    killed = start_run(db, "import-dump")  # never finished: killed
    save(db, "images", images[:2])
    resumed = start_run(db, "import-dump")
    save(db, "images", images[2:4])
    resumed.finish(db, status="done")
    night = start_run(db, "images")
    save(db, "images", images[4:5])
    night.finish(db, status="ok")
    assert counted(db, "images") == [(killed.id, 2), (resumed.id, 2)]
    assert rows_of(db, "images") == 1


def old_archive(path) -> Database:
    """An archive as the version before 0041 kept it: every first sighting a history row (the
    first run's filling the tables; a second run's new image; a tag kept from before history)."""
    db = Database(path)
    migrations.apply(db, stop_before="0041_first_sightings_counted")
    save(db, "images", REAL["images"][:5])
    save(db, "posts", REAL["posts"][:12])
    db.execute("INSERT INTO sync_runs (id, resource, started_at, status) VALUES (1, 'import-dump', "
               "'2026-01-01T00:00:00Z', 'done'), (2, 'images', '2026-01-02T00:00:00Z', 'ok')")
    sightings = [("images", str(r["id"]), 1, "2026-01-01T00:00:0%dZ" % n) for n, r in enumerate(REAL["images"][:4])]
    sightings += [("images", str(REAL["images"][4]["id"]), 2, "2026-01-02T00:00:00Z")]
    sightings += [("posts", str(r["id"]), 1, "2026-01-01T00:01:00Z") for r in REAL["posts"][:6]]
    sightings += [("posts", str(r["id"]), 2, "2026-01-02T00:00:00Z") for r in REAL["posts"][6:11]]  # one before
    db.conn.executemany("INSERT INTO history (resource, record_key, run_id, seen_at, event) "
                        "VALUES (?, ?, ?, ?, 'first_seen')", sightings)
    db.conn.commit()
    return db


def test_the_migration_counts_the_first_runs_that_filled_empty_tables_and_answers_the_same(tmp_path, capsys):
    db = old_archive(tmp_path / "old.db")
    before = first_seen(db.conn)
    since = first_seen(db.conn, since="2026-01-01T12:00:00Z")
    migrations.apply(db)
    assert counted(db, "images") == [(1, 4)]
    assert counted(db, "posts") == []  # a post was kept with no sighting (before history): not an empty table
    assert db.execute("SELECT resource, record_key, run_id FROM history ORDER BY id").fetchall() == [
        ("images", str(REAL["images"][4]["id"]), 2),
        *(("posts", str(r["id"]), 1) for r in REAL["posts"][:6]),
        *(("posts", str(r["id"]), 2) for r in REAL["posts"][6:11])]
    assert first_seen(db.conn) == before
    assert first_seen(db.conn, since="2026-01-01T12:00:00Z") == since
    # since a moment within the run's span: its counted images are first seen at the span's end
    assert [(s.resource, s.count) for s in first_seen(db.conn, since="2026-01-01T00:00:03Z")][:1] == [("images", 5)]
    assert capsys.readouterr().err == ""  # a small table says nothing as it goes


def test_a_large_run_is_counted_a_range_at_a_time_saying_how_far_it_got(tmp_path, capsys):
    db = Database(tmp_path / "old.db")
    migrations.apply(db, stop_before="0041_first_sightings_counted")
    db.execute("INSERT INTO sync_runs (id, resource, started_at, status) VALUES (1, 'import-dump', "
               "'2026-01-01T00:00:00Z', 'done')")
    n = 60_000  # rows with no record: nothing but the history to count (a table empty of them)
    db.conn.executemany("INSERT INTO history (resource, record_key, run_id, seen_at, event) "
                        "VALUES ('filters', ?, 1, '2026-01-01T00:00:00Z', 'first_seen')", [(str(i),) for i in range(n)])
    db.conn.commit()
    migrations.apply(db)
    said = capsys.readouterr().err.splitlines()
    assert len(said) == 10
    assert said[-1] == f"history: {n:,} of {n:,} first sightings of filters counted, not kept as rows"
    assert counted(db, "filters") == [(1, n)] and db.execute("SELECT count(*) FROM history").fetchone()[0] == 0


def test_the_migration_counts_a_killed_import_and_the_run_that_resumed_it_but_not_the_night_after(tmp_path):
    db = Database(tmp_path / "old.db")
    migrations.apply(db, stop_before="0041_first_sightings_counted")
    images = REAL["images"][:6]
    save(db, "images", images)
    db.execute("INSERT INTO sync_runs (id, resource, started_at, status) VALUES "
               "(1, 'import-dump', '2026-01-01T00:00:00Z', 'running'), "  # killed: never finished
               "(2, 'import-dump', '2026-01-01T01:00:00Z', 'done'), (3, 'images', '2026-01-02T00:00:00Z', 'ok')")
    runs = (1, 1, 2, 2, 2, 3)
    db.conn.executemany("INSERT INTO history (resource, record_key, run_id, seen_at, event) "
                        "VALUES ('images', ?, ?, '2026-01-01T00:00:00Z', 'first_seen')",
                        [(str(r["id"]), run) for r, run in zip(images, runs)])
    db.conn.commit()
    migrations.apply(db)
    assert counted(db, "images") == [(1, 2), (2, 3)]
    assert db.execute("SELECT record_key, run_id FROM history").fetchall() == [(str(images[5]["id"]), 3)]
