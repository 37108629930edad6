"""The store keeps image records losslessly, marks stubs without wiping, and stays searchable."""

from __future__ import annotations

import json

import pytest

from mirror.store.history import tag_name_sql
from mirror.store import ImageWriter, open_database
from mirror.store.schema import IMAGE_FIELDS

from ..support.mirrored import BASE, expected_column, stored_column
from ..support.real_fixtures import image_records


@pytest.fixture
def db(tmp_path):
    return open_database(tmp_path / "mirror.db")


def test_every_real_image_record_is_stored_losslessly(db):
    writer = ImageWriter(db, BASE)
    records = image_records()
    assert len(records) >= 17
    for path, record in records:
        writer.save_page([record])
        row = db["images"].get(record["id"])
        assert json.loads(row["raw"]) == record, path
        for field, kind in IMAGE_FIELDS.items():
            assert stored_column(kind, row[field]) == expected_column(kind, record.get(field)), (path, field)
        links = {r[0] for r in db.execute("SELECT tag_id FROM image_tags WHERE image_id = ?", [record["id"]])}
        assert links == set(record["tag_ids"])
        for tag_id, name in zip(record["tag_ids"], record["tags"]):
            assert db["tags"].get(tag_id)["name"] == name


def test_typed_columns_have_sqlite_types(db):
    ImageWriter(db, BASE).save_page([r for _, r in image_records()])
    row = db.execute("SELECT typeof(width), typeof(aspect_ratio), typeof(wilson_score), typeof(animated), "
                     "typeof(tags) FROM images WHERE id = 0").fetchone()
    assert row == ("integer", "real", "real", "integer", "text")


def test_protocol_relative_urls_become_https(db):
    _, record = image_records()[0]
    record = json.loads(json.dumps(record))
    record["view_url"] = "//derpicdn.net/img/view/1.png"
    record["representations"] = {"full": "http://derpicdn.net/img/view/1.png"}
    ImageWriter(db, BASE).save_page([record])
    row = db["images"].get(record["id"])
    assert row["view_url"] == "https://derpicdn.net/img/view/1.png"
    assert json.loads(row["representations"]) == {"full": "https://derpicdn.net/img/view/1.png"}
    assert json.loads(row["raw"])["view_url"] == "//derpicdn.net/img/view/1.png"


def stub_of(record, **changes):
    stub = {k: record[k] for k in ("id", "created_at", "updated_at", "first_seen_at")}
    stub.update({"duplicate_of": None, "deletion_reason": None, "hidden_from_users": True, **changes})
    return stub


def test_a_stub_marks_the_kept_record_and_never_wipes_it(db):
    writer = ImageWriter(db, BASE)
    (_, full), (_, other) = image_records()[:2]
    writer.save_page([full, other])
    stub = stub_of(full, duplicate_of=other["id"], updated_at="2030-01-01T00:00:00Z")
    # A stub in the same page as a full record must not null the full record's columns.
    result = writer.save_page([stub, other])
    assert result.hidden == 1 and result.updated == 1  # the stubbed one; `other` came again unchanged
    row = db["images"].get(full["id"])
    assert row["hidden_from_users"] == 1
    assert row["duplicate_of"] == other["id"]
    assert row["updated_at"] == "2030-01-01T00:00:00Z"
    assert json.loads(row["raw"]) == full
    assert json.loads(row["stub"]) == stub
    assert row["score"] == full["score"] and json.loads(row["tags"]) == full["tags"]
    assert {r[0] for r in db.execute("SELECT tag_id FROM image_tags WHERE image_id = ?", [full["id"]])} == set(
        full["tag_ids"])


def test_a_stub_for_an_unknown_image_is_kept_as_all_there_is(db):
    stub = {"id": 99, "created_at": "2020-01-01T00:00:00Z", "updated_at": "2020-01-02T00:00:00Z",
            "first_seen_at": "2020-01-01T00:00:00Z", "duplicate_of": None, "deletion_reason": "Rule #1",
            "hidden_from_users": True}
    assert ImageWriter(db, BASE).save_page([stub]).new == 1
    row = db["images"].get(99)
    assert json.loads(row["raw"]) == stub and row["deletion_reason"] == "Rule #1" and row["tags"] is None


@pytest.mark.parametrize("stored", [False, True], ids=["not yet stored", "already stored"])
@pytest.mark.parametrize("stub_first", [True, False], ids=["stub then full", "full then stub"])
def test_a_page_with_an_image_both_full_and_as_a_stub_keeps_the_full_record_marked(db, stub_first, stored):
    """A record hidden while the site built a page comes in it twice: in full and as a stub. The
    page is stored (no UNIQUE failure, nothing rejected) the way a stored image meeting the two
    copies is: the full record is kept and the stub marks it, whichever comes first."""
    writer = ImageWriter(db, BASE)
    (_, older), (_, other) = image_records()[:2]
    if stored:
        writer.save_page([older])
    full = {**older, "score": older["score"] + 5}  # the page's own full copy, newer than any kept
    stub = stub_of(full, deletion_reason="Rule #1", updated_at="2030-01-01T00:00:00Z")
    page = [stub, other, full] if stub_first else [full, other, stub]
    result = writer.save_page(page)
    assert result.rejected == 0 and result.hidden == 1
    assert db["images"].count == 2 and db["rejects"].count == 0
    row = db["images"].get(full["id"])
    assert json.loads(row["raw"]) == full and json.loads(row["stub"]) == stub
    assert row["hidden_from_users"] == 1 and row["deletion_reason"] == "Rule #1"
    assert row["updated_at"] == "2030-01-01T00:00:00Z"
    assert row["score"] == full["score"] and json.loads(row["tags"]) == full["tags"]
    assert {r[0] for r in db.execute("SELECT tag_id FROM image_tags WHERE image_id = ?", [full["id"]])} == set(
        full["tag_ids"])
    assert json.loads(db["images"].get(other["id"])["raw"]) == other


@pytest.mark.parametrize("stored", [False, True], ids=["not yet stored", "already stored"])
def test_a_page_with_two_stubs_of_one_image_keeps_the_later(db, stored):
    """Two stubs of one id in a page: the later wins, as between two full copies."""
    writer = ImageWriter(db, BASE)
    _, full = image_records()[0]
    if stored:
        writer.save_page([full])
    first = stub_of(full, deletion_reason="Rule #1")
    later = stub_of(full, deletion_reason="Rule #2", updated_at="2030-01-01T00:00:00Z")
    assert writer.save_page([first, later]).hidden == 1  # one image, counted once
    row = db["images"].get(full["id"])
    assert json.loads(row["stub"]) == later and json.loads(row["raw"]) == (full if stored else later)
    assert row["deletion_reason"] == "Rule #2" and row["updated_at"] == "2030-01-01T00:00:00Z"
    assert row["hidden_from_users"] == 1 and db["rejects"].count == 0


def test_records_that_cannot_be_stored_are_kept_in_rejects(db):
    result = ImageWriter(db, BASE).save_page([{"id": "abc", "tags": []}, ["not", "an", "object"]])
    assert result.rejected == 2
    rows = list(db["rejects"].rows)
    assert [json.loads(r["raw"]) for r in rows] == [{"id": "abc", "tags": []}, ["not", "an", "object"]]
    assert all(r["resource"] == "images" and r["reason"] for r in rows)


def test_unknown_fields_survive_in_raw(db):
    _, record = image_records()[0]
    record = {**record, "field_from_the_future": {"x": [1, 2]}}
    ImageWriter(db, BASE).save_page([record])
    assert json.loads(db["images"].get(record["id"])["raw"])["field_from_the_future"] == {"x": [1, 2]}


def test_fts_finds_descriptions_and_tag_names_and_follows_edits(db):
    writer = ImageWriter(db, BASE)
    record = next(r for _, r in image_records() if r["id"] == 0)
    writer.save_page([record])

    def search(term):
        return [r["id"] for r in db["images"].search(term, quote=True)]

    assert record["id"] in search("derpy hooves")
    assert record["id"] in search("ten different ways")
    edited = {**record, "description": "completely rewritten zanzibar", "tags": ["zanzibar pony"], "tag_ids": [1]}
    writer.save_page([edited])
    assert search("ten different ways") == []
    assert search("zanzibar") == [record["id"]]
    assert [r["name"] for r in db["tags"].search("hooves", quote=True)] == ["derpy hooves"]
    assert db.execute("INSERT INTO images_fts(images_fts) VALUES('integrity-check')") is not None


def test_schema_is_versioned_and_reopening_migrates_nothing(tmp_path):
    from mirror.store.schema import migrations

    db = open_database(tmp_path / "m.db")
    applied = [r["name"] for r in db["_sqlite_migrations"].rows]
    assert applied[0] == "0001_images_tags_state" and "0003_resources" in applied
    assert migrations.pending(db) == []
    db.close()
    db = open_database(tmp_path / "m.db")
    assert [r["name"] for r in db["_sqlite_migrations"].rows] == applied
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_page_writes_only_the_links_that_changed(db):
    writer = ImageWriter(db, BASE)
    (_, edited), (_, unchanged) = [(p, json.loads(json.dumps(r))) for p, r in image_records()[:2]]
    writer.save_page([edited, unchanged])
    db.execute("CREATE TEMP TABLE link_writes (kind TEXT, image_id INTEGER, tag_id INTEGER)")
    db.execute("CREATE TEMP TRIGGER count_inserts AFTER INSERT ON main.image_tags BEGIN "
               "INSERT INTO link_writes VALUES ('insert', new.image_id, new.tag_id); END")
    db.execute("CREATE TEMP TRIGGER count_deletes AFTER DELETE ON main.image_tags BEGIN "
               "INSERT INTO link_writes VALUES ('delete', old.image_id, old.tag_id); END")
    dropped = edited["tag_ids"][0]
    edited.update(tag_ids=[*edited["tag_ids"][1:], 987654], tags=[*edited["tags"][1:], "new tag"],
                  score=unchanged["score"] + 1)
    unchanged["score"] += 1  # a new vote: the record changes, its tags do not
    writer.save_page([edited, unchanged])
    writes = sorted(db.execute("SELECT kind, image_id, tag_id FROM link_writes").fetchall())
    assert writes == [("delete", edited["id"], dropped), ("insert", edited["id"], 987654)]
    for record in (edited, unchanged):
        links = {r[0] for r in db.execute("SELECT tag_id FROM image_tags WHERE image_id = ?", [record["id"]])}
        assert links == set(record["tag_ids"])


@pytest.mark.parametrize("stored", [False, True], ids=["new", "stored"])
def test_a_page_with_an_image_twice_links_the_later_copys_tags(db, stored):
    """The later copy is the row; its tags, and only its tags, are the image's links."""
    writer = ImageWriter(db, BASE)
    earlier = json.loads(json.dumps(image_records()[0][1]))
    if stored:
        writer.save_page([earlier])
    later = dict(earlier, tag_ids=[*earlier["tag_ids"][1:], 987654], tags=[*earlier["tags"][1:], "new tag"])
    writer.save_page([earlier, later])
    links = {r[0] for r in db.execute("SELECT tag_id FROM image_tags WHERE image_id = ?", [later["id"]])}
    assert links == set(later["tag_ids"])
    assert json.loads(db["images"].get(later["id"])["tags"]) == later["tags"]


def test_an_image_whose_tags_and_tag_ids_disagree_renames_no_tag(db):
    """One name short: paired in order, every name after the gap would go to the wrong id (tag 3
    ``questionable`` renamed ``rarity`` across the archive). Such a record is kept as sent and linked by
    its ids, names no tag, says what it changed in the history without names, and is counted."""
    from mirror.store.history import recording

    writer = ImageWriter(db, BASE)
    intact = json.loads(json.dumps(image_records()[0][1]))
    writer.save_page([intact])
    names = dict(db.execute("SELECT id, name FROM tags").fetchall())
    short = dict(intact, id=intact["id"] + 1000, tags=intact["tags"][1:], tag_ids=[*intact["tag_ids"], 987654])
    with recording(db, None):
        saved = writer.save_page([short])
        changed = dict(intact, tags=intact["tags"][1:], tag_ids=[987655, *intact["tag_ids"]])
        writer.save_page([changed])
    assert saved.new == 1 and saved.unpaired_tags == 1
    assert dict(db.execute("SELECT id, name FROM tags").fetchall()) == names
    assert json.loads(db["images"].get(short["id"])["raw"]) == short
    links = {r[0] for r in db.execute("SELECT tag_id FROM image_tags WHERE image_id = ?", [short["id"]])}
    assert links == set(short["tag_ids"])
    added = db.execute(f"SELECT tag_id, {tag_name_sql('c')} FROM image_tag_changes c WHERE image_id = ?",
                       [intact["id"]]).fetchall()
    assert added == [(987655, None)]
