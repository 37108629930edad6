"""Every record of every recorded real response is stored losslessly in its table."""

from __future__ import annotations

import json

import pytest

from mirror.store import ImageWriter, open_database
from mirror.store.specs import SPECS
from mirror.store.writer import RecordWriter

from ..support.mirrored import BASE, expected_column, stored_column
from ..support.real_fixtures import fixture_files, records_in

# Recorded topics and posts carry no forum or topic: the crawler supplies them.
CONTEXT = {"topics": {"forum_short_name": "art"}, "posts": {"forum_short_name": "art", "topic_slug": "chat"}}


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    return open_database(tmp_path_factory.mktemp("store") / "mirror.db")


def store(db, path):
    """The records of one recorded response, stored as a sync stores them: (resource, records, saved)."""
    resource, records = records_in(path)
    if resource == "images":
        return resource, records, ImageWriter(db, BASE).save_page(records)
    return resource, records, RecordWriter(db, SPECS[resource], BASE).save(records, CONTEXT.get(resource, {}))


@pytest.mark.parametrize("path", fixture_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_record_is_kept_raw_with_typed_columns(db, path):
    resource, records, saved = store(db, path)
    spec = SPECS[resource]
    context = CONTEXT.get(resource, {})
    assert saved.rejected == 0 and len(saved.keys) == len(records)
    for record, key in zip(records, saved.keys):
        row = db[spec.table].get(key)
        assert json.loads(row["raw"]) == record
        for field, kind in spec.fields.items():
            value = record.get(field, record.get(spec.aliases.get(field, field)))
            assert stored_column(kind, row[field]) == expected_column(kind, value), (path.name, field)
        for column, value in context.items():
            assert row[column] == value


def test_fixture_rows_are_searchable_and_joinable(tmp_path):
    """Over every recorded response stored (in a database of its own: under xdist the parametrized
    test above may have run on another worker)."""
    db = open_database(tmp_path / "mirror.db")
    for path in fixture_files():
        store(db, path)
    assert db.execute("SELECT count(*) FROM posts_fts WHERE posts_fts MATCH 'artists'").fetchone()[0] > 0
    assert db.execute("SELECT count(*) FROM tags_fts WHERE tags_fts MATCH 'wings'").fetchone()[0] > 0
    assert db.execute("SELECT count(*) FROM galleries_fts WHERE galleries_fts MATCH 'safe'").fetchone()[0] > 0
    assert db.execute("SELECT count(*) FROM tag_implications").fetchone()[0] > 0
    assert db.execute("SELECT count(*) FROM user_awards").fetchone()[0] > 0
    artists = db.execute("SELECT artists FROM image_details WHERE artists IS NOT NULL").fetchall()
    assert artists and all(not a[0].startswith("artist:") for a in artists)
    gallery = db.execute("SELECT creator, creator_id FROM galleries WHERE id = 25220").fetchone()
    assert gallery == ("Rusher pony", 718518)


def test_every_table_has_every_column_its_spec_declares(db):
    for spec in SPECS.values():
        # table_xinfo: a generated ``raw`` (images, comments, posts) is a hidden column to table_info
        columns = {row[1] for row in db.execute(f"PRAGMA table_xinfo({spec.table})")}
        assert set(spec.columns()) | {"raw", "mirrored_at"} <= columns, spec.table


def test_numbers_too_large_for_sqlite_are_null_in_their_column_or_rejected_as_keys(tmp_path):
    db = open_database(tmp_path / "m.db")
    saved = RecordWriter(db, SPECS["comments"], BASE).save([
        {"id": 1, "image_id": 5, "body": "a", "user_id": "99999999999999999999"},
        {"id": 2**63, "body": "b"},
    ])
    assert saved.keys == [1] and saved.rejected == 1
    row = db["comments"].get(1)
    assert row["user_id"] is None and json.loads(row["raw"])["user_id"] == "99999999999999999999"
    assert json.loads(next(db["rejects"].rows)["raw"])["id"] == 2**63
