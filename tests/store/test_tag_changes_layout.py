"""The tag changes kept clustered by image (:mod:`mirror.store.tag_changes`, migration 0045): the
table has no row id and no index by image or by history row, and an archive of the old layout is
moved with every change, every cursor and every answer about the past as it was."""

from __future__ import annotations

import json
import sqlite3

import pytest
from pyroaring import BitMap
from sqlite_utils import Database

from mirror.asof import Moment, record_as_of
from mirror.store import checkpoints, open_database, tag_changes
from mirror.store.history import SiteChange, save_site_changes
from mirror.store.history_read import record_history
from mirror.store.schema import migrations

from .test_raw_rebuilt import REAL, save

CLUSTERED = "0045_tag_changes_clustered_by_image"
MOMENTS = ("2019-12-31T00:00:00Z", "2020-01-01T00:00:00Z", "2020-01-02T12:00:00Z", "2020-01-03T00:00:00Z",
           "2020-01-05T00:00:00Z", "2030-01-01T00:00:00Z")
ROWS = "SELECT image_id, history_id, tag_id, change, tag_name, seen_at FROM image_tag_changes"


def test_the_tag_changes_have_no_row_id_and_only_the_index_by_tag(tmp_path):
    db = open_database(tmp_path / "m.db")
    table = db.execute("SELECT sql FROM sqlite_master WHERE name = 'image_tag_changes'").fetchone()[0]
    assert "WITHOUT ROWID" in table and "PRIMARY KEY (image_id, history_id, tag_id, change)" in table
    with pytest.raises(sqlite3.OperationalError, match="rowid"):
        db.execute("SELECT rowid FROM image_tag_changes")
    assert "id" not in db["image_tag_changes"].columns_dict
    indexes = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'index' "
                                              "AND tbl_name = 'image_tag_changes'")}
    assert indexes == {"image_tag_changes_by_tag"}


def old_archive(path) -> tuple[Database, list[int]]:
    """Six real images, their tags changed by the site over some days (several tags a change, one
    tag added and removed again, one change naming a tag renamed since), and a checkpoint build
    and an export that went halfway through the changes."""
    db = Database(path)
    migrations.apply(db, stop_before=CLUSTERED)
    images = REAL["images"][:6]
    save(db, "images", images)
    changes = []
    for n, image in enumerate(images):
        tags = [t for t in image["tag_ids"] if type(t) is int][:4] or [1, 2]
        day = f"2020-01-0{1 + n % 3}T00:00:00Z"
        changes.append(SiteChange(image["id"], day, 7, "site_tags", tuple(("+", t, f"old name {t}") for t in tags)))
        changes.append(SiteChange(image["id"], f"2020-01-04T0{n}:00:00Z", None, "site_tags",
                                  (("-", tags[0], None), ("+", 99_000 + n, "a tag gone"))))
        changes.append(SiteChange(image["id"], "2020-01-04T23:00:00Z", None, "site_tags", (("+", tags[0], None),)))
    save_site_changes(db, None, changes[:9])
    halfway = db.execute("SELECT max(id) FROM image_tag_changes").fetchone()[0]
    save_site_changes(db, None, changes[9:])
    db.execute("INSERT INTO sync_state (name, cursor) VALUES ('tag_checkpoints', ?)",
               [json.dumps({"after_change": halfway})])
    db.execute("INSERT INTO export_dests (url, cursor) VALUES ('/dest', ?)",
               [json.dumps({"dest": "/dest", "ids": {"history": 9, "image_tag_changes": halfway}})])
    db.conn.commit()
    return db, [image["id"] for image in images]


def answers(db: Database, ids: list[int]) -> dict:
    """Every change kept, each image as of each moment, its history page's tags, and each tag's images then."""
    conn = db.conn
    found: dict = {"rows": sorted(conn.execute(ROWS).fetchall())}
    for image_id in ids:
        row = dict(zip(("raw", "stub", "hidden_from_users"), conn.execute(
            "SELECT raw, stub, hidden_from_users FROM images WHERE id = ?", [image_id]).fetchone()))
        found[image_id] = {
            "as_of": [then.record["tag_ids"] if (then := record_as_of(conn, "images", str(image_id), row, Moment(m)))
                      else None for m in MOMENTS],
            "history": [(c.seen_at, sorted(c.tags_added), sorted(c.tags_removed))
                        for c in record_history(conn, "images", str(image_id))],
        }
    tags = sorted({row[2] for row in found["rows"]})
    now = {t: BitMap(i for (i,) in conn.execute("SELECT image_id FROM image_tags WHERE tag_id = ?", [t])) for t in tags}
    found["tags then"] = [[sorted(checkpoints.undone(conn, t, now[t], m)) for t in tags] for m in MOMENTS]
    return found


def test_an_old_archive_is_moved_with_every_change_and_every_answer_about_the_past(tmp_path, monkeypatch, capsys):
    old, ids = old_archive(tmp_path / "m.db")
    before = answers(old, ids)
    old.close()
    monkeypatch.setattr(tag_changes, "LOUD_FROM", 1)  # a tenth at a time, said, as on a large archive

    db = open_database(tmp_path / "m.db")

    said = [line for line in capsys.readouterr().err.splitlines() if "clustered by image" in line]
    assert len(said) >= 5 and said[-1].startswith(f"image_tag_changes: {len(before['rows'])} of {len(before['rows'])}")
    assert answers(db, ids) == before
    assert len(before["rows"]) == 6 * 7 and before[ids[0]]["as_of"][0] != before[ids[0]]["as_of"][-1]
    assert any(r[4] == "a tag gone" for r in before["rows"]) and before[ids[0]]["history"][0][1]
    # the cursors that named the last change of the first nine history rows name the ninth
    cursor = json.loads(db.execute("SELECT cursor FROM sync_state WHERE name = 'tag_checkpoints'").fetchone()[0])
    assert cursor == {"after_history": 9}
    export = json.loads(db.execute("SELECT cursor FROM export_dests WHERE url = '/dest'").fetchone()[0])
    assert export["ids"] == {"history": 9, "image_tag_changes": 9}
    table = db.execute("SELECT sql FROM sqlite_master WHERE name = 'image_tag_changes'").fetchone()[0]
    assert "WITHOUT ROWID" in table
    # the trigger that keeps the checkpoints right reads the new key
    trigger = db.execute("SELECT sql FROM sqlite_master WHERE name = 'tag_change_undoes_checkpoints'").fetchone()[0]
    assert "c.history_id < NEW.history_id" in trigger and "c.id" not in trigger


def test_a_first_import_appends_to_a_plain_table_sorted_into_the_layout_at_its_end(tmp_path):
    from mirror.store import upkeep

    db = open_database(tmp_path / "m.db")
    upkeep.defer(db)
    assert not tag_changes.clustered(db)
    changes = [SiteChange(image_id, f"2020-01-0{1 + image_id % 5}T00:00:00Z", None, "site_tags",
                          (("+", 3, "c"), ("+", 1, "a"), ("-", 2, "b"))) for image_id in (50, 7, 31, 7, 2)]
    with db.atomic():
        save_site_changes(db, None, changes)
    written = sorted(db.execute(ROWS).fetchall())
    upkeep.build(db)
    assert tag_changes.clustered(db) and upkeep.deferred(db) == 0
    assert db.execute(ROWS).fetchall() == written  # read in the key's order: as written, sorted
    assert {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE tbl_name = 'image_tag_changes'")} == {
        "image_tag_changes", "image_tag_changes_by_tag", "tag_change_undoes_checkpoints"}


def test_a_range_of_history_rows_seeks_each_rows_changes_by_their_key(tmp_path):
    """A bound on the history's ids must not become a range of ``history_id`` for each row's changes
    (every change of the image in the bounds, for each of its rows): each is one seek of the key."""
    from mirror.export.tables import EXPORT_TABLES

    db = open_database(tmp_path / "mirror.db")
    ranged = (f"SELECT c.tag_id FROM history h JOIN image_tag_changes c ON {tag_changes.of_history_row()} "
              "WHERE h.id > ? AND h.id <= ? AND h.resource = 'images'")
    exported = EXPORT_TABLES["image_tag_changes"]
    columns = ", ".join(column.source for column in exported.columns)
    plans = {sql: " | ".join(row[3] for row in db.execute(f"EXPLAIN QUERY PLAN {sql}", [1, 2]))
             for sql in (ranged, checkpoints._CHANGED_SINCE, f"SELECT {columns} {exported.appended_sql}")}
    for plan in plans.values():
        assert "(image_id=? AND history_id=?)" in plan, plan
    assert "TEMP B-TREE" not in plans[f"SELECT {columns} {exported.appended_sql}"]  # in the history's order: no sort
    db.conn.close()
