"""The board as of a moment answers the same whether a record's first sighting is its own history
row or a run's count (:mod:`mirror.store.first_sightings`): the same archive, made the old way
(a row per sighting, every sighting of the filling run in one second), migrated by 0041 with and
without counting, gives every reader of the past the same answer, at moments before, at and
after the run: a record as of then, its versions and TimeMap, when its version began, the
undated images a search as of then leaves out, the tags' table as of then, and a record's history
page."""

from __future__ import annotations

import shutil
import sqlite3

import pytest

from mirror.asof import Moment, record_as_of, versions_around, versions_of, versions_page
from mirror.asof.records import latest_began
from mirror.asof.search import Changes
from mirror.asof.tables import tables_as_of
from mirror.store import first_sightings
from mirror.store.history_read import record_history
from mirror.store.schema import migrations
from sqlite_utils import Database

from ..store.test_raw_rebuilt import REAL, save

RUN = "2026-01-01T00:00:05Z"  # every first sighting of the filling run
TAGS = (987_654_321, 987_654_322)  # the first filled the tags' table, the second came later
EDITED = "2026-01-03T00:00:00Z"
MOMENTS = ("2020-01-01T00:00:00Z", "2026-01-01T00:00:04Z", RUN, "2026-01-02T00:00:00Z", EDITED,
           "2027-01-01T00:00:00Z")


def old_archive(path) -> tuple[Database, list[int], int]:
    """Images and tags filled by one run, a row per sighting in one second; an image edited later;
    one with no upload time (a record the mirror dates by its first sighting, as it dates a tag);
    a tag first seen later."""
    db = Database(path)
    migrations.apply(db, stop_before="0041_first_sightings_counted")
    images = REAL["images"][:6]
    save(db, "images", images)
    ids = [r["id"] for r in images]
    undated = ids[2]
    db.execute("UPDATE images SET created_at = NULL WHERE id = ?", [undated])
    db.execute("INSERT INTO sync_runs (id, resource, started_at, finished_at, status) VALUES "
               f"(1, 'import-dump', '{RUN}', '{RUN}', 'done'), (2, 'images', '{EDITED}', '{EDITED}', 'ok')")
    save(db, "tags", [{"id": tag, "name": f"tag {tag}", "slug": f"tag-{tag}", "images": 1} for tag in TAGS])
    db.conn.executemany("INSERT INTO history (resource, record_key, run_id, seen_at, event) "
                        "VALUES (?, ?, ?, ?, 'first_seen')", [*(("images", str(i), 1, RUN) for i in ids),
                                                              ("tags", str(TAGS[0]), 1, RUN),
                                                              ("tags", str(TAGS[1]), 2, EDITED)])
    db.execute("INSERT INTO history (resource, record_key, run_id, seen_at, event, changes) VALUES "
               "('images', ?, 2, ?, 'changed', ?)", [str(ids[0]), EDITED, '{"description":["before","after"]}'])
    db.conn.commit()
    return db, ids, undated


@pytest.fixture
def archives(tmp_path, monkeypatch):
    """The same old archive migrated twice: its sightings counted, and (0041 told to count none)
    kept as rows."""
    counted, ids, undated = old_archive(tmp_path / "counted.db")
    counted.close()
    shutil.copy(tmp_path / "counted.db", tmp_path / "rows.db")
    counted = Database(tmp_path / "counted.db")
    migrations.apply(counted)
    rows = Database(tmp_path / "rows.db")
    with monkeypatch.context() as patched:
        patched.setattr(first_sightings, "_count_run", lambda *args: None)
        migrations.apply(rows)
    later = [("tags", str(TAGS[1]))]  # first seen by a later run: its own row either way
    assert counted.execute("SELECT resource, record_key FROM history WHERE event = 'first_seen'").fetchall() == later
    assert rows.execute("SELECT count(*) FROM history WHERE event = 'first_seen'").fetchone()[0] == len(ids) + 2
    return counted, rows, ids, undated


def answers(db: Database, ids: list[int]) -> dict:
    conn, found = db.conn, {}
    for image_id in ids:
        key = str(image_id)
        row = dict(zip(("raw", "stub", "hidden_from_users", "mirrored_at"), conn.execute(
            "SELECT raw, stub, hidden_from_users, mirrored_at FROM images WHERE id = ?", [image_id]).fetchone()))
        row["mirrored_at"] = None  # when each copy wrote it, not what it answers
        found[image_id] = {
            "as_of": [record_as_of(conn, "images", key, row, Moment(m)) for m in MOMENTS],
            "around": [versions_around(conn, "images", key, row, Moment(m)) for m in MOMENTS],
            "page": versions_page(conn, "images", key, row),
            "versions": list(versions_of(conn, "images", key, row)),
            "began": latest_began(conn, "images", key, row),
            "history": [(c.seen_at, c.event, c.changes) for c in record_history(conn, "images", key)],
        }
    found["undated_after"] = [sorted(Changes(conn, Moment(m)).undated_after()) for m in MOMENTS]
    found["tags"] = []
    reader = sqlite3.connect(conn.execute("PRAGMA database_list").fetchone()[2])
    reader.row_factory = sqlite3.Row  # as mirror serve reads
    for m in MOMENTS:
        then = tables_as_of(reader, Moment(m), ("tags",))
        found["tags"].append([row[0] for row in then.execute("SELECT id FROM tags WHERE raw IS NOT NULL ORDER BY id")])
        then.close()
    reader.close()
    return found


def test_every_reader_of_the_past_answers_the_same_from_the_count_as_from_the_rows(archives):
    counted, rows, ids, undated = archives
    from_rows, from_count = answers(rows, ids), answers(counted, ids)
    assert from_count == from_rows
    # and they say something: the undated image is out of a search before the run, in after it
    assert from_rows["undated_after"][1] == [undated] and from_rows["undated_after"][3] == []
    assert from_rows[undated]["as_of"][1] is None and from_rows[undated]["as_of"][2] is not None
    assert RUN in from_rows[ids[1]]["page"][0] and from_rows[ids[0]]["began"] == EDITED
    assert ("2026-01-01T00:00:05Z", "first_seen", None) in from_count[ids[1]]["history"]
    assert from_rows["tags"][1] == [] and from_rows["tags"][2] == [TAGS[0]] and from_rows["tags"][-1] == list(TAGS)
