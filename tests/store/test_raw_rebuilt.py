"""``raw`` rebuilt from the columns (images, comments, posts): every record read back exactly, at a
fraction of the bytes; old archives moved to the layout by the next run."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mirror.store import ImageWriter, open_database, relayout
from mirror.store.derived import DIGESTS, has_representation_sql
from mirror.store.images import lacks_file_facts, save_file_facts
from mirror.store.raw_rebuilt import KEPT_ASIDE, REBUILT, STORED_COLUMNS, absent_sql, canonical, rebuilt_record
from mirror.store.records import to_json
from mirror.store.schema import migrations
from mirror.store.specs import SPECS
from mirror.store.writer import RecordWriter

from ..support.mirrored import BASE
from ..support.real_fixtures import fixture_files, records_in

LAYOUT = "0034_raw_rebuilt_from_columns"
CONTEXT = {"posts": {"forum_short_name": "art", "topic_slug": "chat"}}


def save(db, table, records):
    if table == "images":
        return ImageWriter(db, BASE).save_page(records)
    return RecordWriter(db, SPECS[table], BASE).save(records, CONTEXT.get(table, {}))


def kept(db, table, key):
    return db.execute(f"SELECT raw, raw_full FROM {table} WHERE id = ?", [key]).fetchone()


def real_records():
    found = {table: [] for table in REBUILT}
    for path in fixture_files():
        resource, records = records_in(path)
        if resource in found:
            found[resource] += [r for r in records if isinstance(r, dict)]
    return found


REAL = real_records()


def test_every_real_record_reads_back_byte_for_byte_and_few_need_their_whole_text(tmp_path):
    db = open_database(tmp_path / "m.db")
    for table, records in real_records().items():
        assert records, table
        save(db, table, records)
        whole = 0
        for record in records:
            raw, raw_full = kept(db, table, record["id"])
            # the last record of an id is the one kept (a fixture may list an image twice)
            last = [r for r in records if r["id"] == record["id"]][-1]
            # a row first seen hidden holds its stub as a record: the fields in the table's order
            assert raw == to_json(canonical(SPECS[table], last))
            whole += raw_full is not None
        assert whole <= len(records) // 10, (table, whole, len(records))


def test_the_rebuilt_layout_keeps_a_small_part_of_what_the_whole_record_took(tmp_path):
    db = open_database(tmp_path / "m.db")
    for table, records in real_records().items():
        save(db, table, records)
        whole, kept_bytes = db.execute(
            f"SELECT sum(length(raw)), sum(coalesce(length(raw_rest), 0) + coalesce(length(raw_more), 0) "
            f"+ coalesce(length(raw_full), 0)) FROM {table}").fetchone()
        assert kept_bytes < whole / 4, (table, kept_bytes, whole)


_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=False),
                     st.text(max_size=8), st.text(alphabet=st.sampled_from("a\ud800é😀\\\"\n"), max_size=4))
_VALUES = st.recursive(_SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                          st.dictionaries(st.text(max_size=3), inner, max_size=3)),
                       max_leaves=6)


@st.composite
def hostile_records(draw, table):
    """A record of ``table``: any of its fields, of any type, in any order, with fields it has no column for."""
    spec = SPECS[table]
    names = draw(st.lists(st.sampled_from(sorted(spec.fields)), unique=True))
    extra = draw(st.lists(st.sampled_from(["zz_new", "alpha", "tags_v2", "id2"]), unique=True))
    keys = draw(st.permutations(names + extra))
    record = {key: draw(_VALUES) for key in keys}
    record["id"] = draw(st.integers(1, 10**6))
    if table in ("comments", "posts") and record.get("body") is None:
        record["body"] = draw(st.text(max_size=5))  # a null body is a hidden one's stub, which marks instead
    if table == "images":
        record["tags"] = draw(st.lists(st.text(min_size=1, max_size=5), max_size=3))
        record["tag_ids"] = list(range(len(record["tags"])))
    return record


@pytest.fixture(scope="module")
def shared_db(tmp_path_factory):
    return open_database(tmp_path_factory.mktemp("rebuilt") / "m.db")


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_record_reads_back_as_the_very_json_value_received(shared_db, data):
    db = shared_db  # ids repeat across examples: a record written over another is checked too
    for table in REBUILT:
        record = data.draw(hostile_records(table))
        save(db, table, [record])
        raw, _ = kept(db, table, record["id"])
        assert raw == to_json(canonical(SPECS[table], record))
        assert json.loads(raw) == json.loads(to_json(record))
        assert rebuilt_in_python(db, table, record["id"]) == json.loads(raw)


def rebuilt_in_python(db, table, key):
    """The record of a row as :func:`rebuilt_record` makes it from the columns, not SQLite."""
    names = list(SPECS[table].fields)
    row = db.execute(f"SELECT {', '.join(f'[{n}]' for n in names)}, {', '.join(STORED_COLUMNS)} FROM {table} "
                     "WHERE id = ?", [key]).fetchone()
    return rebuilt_record(table, dict(zip(names, row)), *row[len(names):])


def test_the_record_made_from_the_columns_in_python_is_the_one_sqlite_gives_back(tmp_path):
    db = open_database(tmp_path / "m.db")
    for table, records in REAL.items():
        save(db, table, records)
        save(db, table, [dump_shaped(table, r) for r in records[:5]])  # fields absent, kept aside
        for (key, raw) in db.execute(f"SELECT id, raw FROM {table}"):
            assert rebuilt_in_python(db, table, key) == json.loads(raw), (table, key)


def test_a_stub_marks_the_row_while_raw_keeps_the_full_record(tmp_path):
    db = open_database(tmp_path / "m.db")
    image = real_records()["images"][0]
    save(db, "images", [image])
    stub = {"id": image["id"], "hidden_from_users": True, "deletion_reason": "Rule #0", "duplicate_of": None,
            "updated_at": "2030-01-01T00:00:00Z"}
    save(db, "images", [stub])
    row = db.execute("SELECT raw, hidden_from_users, deletion_reason, updated_at FROM images WHERE id = ?",
                     [image["id"]]).fetchone()
    assert json.loads(row[0]) == image
    assert row[1:] == (1, "Rule #0", "2030-01-01T00:00:00Z")


def test_an_archive_of_the_old_layout_is_moved_with_every_record_and_its_search_intact(tmp_path, capsys,
                                                                                       monkeypatch):
    records = real_records()
    today = open_database(tmp_path / "today.db")
    for table, kept_records in records.items():
        save(today, table, kept_records)
    made_today = set(today.execute("SELECT type, name FROM sqlite_master WHERE tbl_name IN ('images', 'comments', "
                                   "'posts')"))
    today.conn.close()
    path = tmp_path / "old.db"
    db = open_database(path, migrate=False)
    migrations.apply(db, stop_before=LAYOUT)
    db.execute("ATTACH ? AS today", [str(tmp_path / "today.db")])
    for table in REBUILT:  # rows as the old writer left them: raw whole, its keys in the order received
        columns = ", ".join(f'"{row[1]}"' for row in db.execute(f"PRAGMA table_info({table})"))
        db.execute(f"INSERT INTO {table} ({columns}) SELECT {columns} FROM today.{table}")
        db.conn.executemany(f"UPDATE {table} SET raw = ? WHERE id = ?",
                            [(to_json(record), record["id"]) for record in records[table]])
    db.conn.commit()
    db.execute("DETACH today")
    old = {table: dict(db.execute(f"SELECT id, raw FROM {table}").fetchall()) for table in REBUILT}
    objects = set(db.execute("SELECT type, name FROM sqlite_master WHERE tbl_name IN ('images', 'comments', 'posts')"))
    # the later migrations add some (0036: images_by_first_seen); 0042 indexes the hash's bytes instead
    assert objects - {("index", "idx_images_sha512_hash")} < made_today
    db.conn.close()
    monkeypatch.setattr(relayout, "LOUD_FROM", 1)

    db = open_database(path)

    assert "images: moved" in capsys.readouterr().err
    for table, raws in old.items():
        now = dict(db.execute(f"SELECT id, raw FROM {table}").fetchall())
        assert {k: json.loads(v) for k, v in now.items()} == {k: json.loads(v) for k, v in raws.items()}
        assert db.execute(f"SELECT count(*) FROM {table} WHERE raw_full IS NOT NULL").fetchone()[0] == 0
    assert set(db.execute("SELECT type, name FROM sqlite_master "
                          "WHERE tbl_name IN ('images', 'comments', 'posts')")) == made_today  # none lost
    words = records["comments"][0]["body"].split()[0]
    assert db.execute("SELECT count(*) FROM comments_fts WHERE comments_fts MATCH ?", [json.dumps(words)]).fetchone()[0]
    # the triggers work on the moved table: an edited body is found by its new words
    edited = {**records["comments"][0], "body": "zyzzogeton"}
    save(db, "comments", [edited])
    assert db.execute("SELECT rowid FROM comments_fts WHERE comments_fts MATCH 'zyzzogeton'").fetchall() == \
        [(edited["id"],)]
    assert sqlite3.connect(path).execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_an_images_files_are_made_by_the_sites_rule_and_kept_only_where_it_falls_short(tmp_path):
    db = open_database(tmp_path / "m.db")
    images = [r for r in real_records()["images"] if isinstance(r.get("representations"), dict)]
    elsewhere = {**images[0], "id": 10**9, "representations": {**images[0]["representations"],
                                                              "thumb": "https://cdn.example/t.png"}}
    save(db, "images", [*images, elsewhere])
    for record in [*images, elsewhere]:
        column, kept = db.execute("SELECT representations, representations_kept FROM images WHERE id = ?",
                                  [record["id"]]).fetchone()
        assert json.loads(column) == record["representations"]
        if record is elsewhere:
            assert kept is not None
    made = db.execute("SELECT count(*) FROM images WHERE (representations_kept IS NULL OR representations_kept = 'sized') "
                      "AND id < ?", [10**9]).fetchone()
    assert made[0] >= len({r["id"] for r in images}) * 9 // 10


def test_the_scans_that_read_the_layout_agree_with_the_columns_sqlite_makes(tmp_path):
    """What a scan of every image asks without having SQLite make ``raw`` and ``representations``
    for each row (a file named? a field absent?) is what those columns say."""
    db = open_database(tmp_path / "m.db")
    images = real_records()["images"]
    gif = {**images[0], "id": 10**9, "mime_type": "image/gif", "format": "gif"}
    gif.pop("thumbnails_generated", None)
    save(db, "images", [*images, gif])
    names = ["thumb_tiny", "thumb", "large", "full", "webm", "mp4", "svg", "nothing"]
    for name in names:
        fast = dict(db.execute(f"SELECT id, {has_representation_sql('i', ':name')} FROM images i", {'name': name}).fetchall())
        slow = dict(db.execute("SELECT id, json_extract(representations, '$.\"' || ? || '\"') IS NOT NULL "
                               "FROM images", [name]).fetchall())
        assert fast == slow, name
    fast = dict(db.execute(f"SELECT id, {absent_sql('images', 'i', 'thumbnails_generated')} FROM images i").fetchall())
    slow = dict(db.execute("SELECT id, json_type(raw, '$.thumbnails_generated') IS NULL FROM images").fetchall())
    assert fast == slow and fast[gif["id"]] == 1


# What a record read from the site's dump lacks (``mirror.dump.records``): an image's processing
# state, first sighting and file facts, a comment's avatar and edits.
DUMP_LACKS = {"images": ("first_seen_at", "orig_size", "duration", "animated", "thumbnails_generated", "processed",
                         "spoilered"),
              "comments": ("avatar", "edited_at", "edit_reason"),
              "posts": ("avatar", "edited_at", "edit_reason")}


def dump_shaped(table, record):
    # (a float of 16 significant digits, which SQLite prints with 15, is patched: not these tests' matter)
    shorter = {"wilson_score": 0.5, "aspect_ratio": 1.5} if table == "images" else {}
    return {name: value for name, value in {**record, **shorter}.items() if name not in DUMP_LACKS[table]}


def stored_bytes(db, table, key):
    return db.execute(f"SELECT coalesce(length(raw_rest), 0) + coalesce(length(raw_more), 0) "
                      f"+ coalesce(length(raw_full), 0) FROM {table} WHERE id = ?", [key]).fetchone()[0]


def test_a_record_from_the_dump_reads_back_exactly_and_its_absent_fields_cost_no_patch(tmp_path):
    db = open_database(tmp_path / "m.db")
    for table, records in real_records().items():
        record = dump_shaped(table, records[0])
        save(db, table, [record])
        raw, raw_full = kept(db, table, record["id"])
        assert raw == to_json(canonical(SPECS[table], record)) and raw_full is None
        # the kept-aside fields (dates, hidden state, image_id) hold the column's very value: not in the patch
        assert stored_bytes(db, table, record["id"]) == 0, db.execute(f"SELECT raw_rest FROM {table}").fetchall()
        for name in SPECS[table].fields:
            lacks = db.execute(f"SELECT {absent_sql(table, 't', name)} FROM {table} t WHERE id = ?",
                               [record["id"]]).fetchone()[0]
            assert lacks == (name not in record), name


def test_a_stub_over_a_dump_record_marks_the_row_and_keeps_the_record_in_a_few_bytes(tmp_path):
    db = open_database(tmp_path / "m.db")
    image = dump_shaped("images", real_records()["images"][0])
    comment = dump_shaped("comments", real_records()["comments"][0])
    save(db, "images", [image])
    save(db, "comments", [comment])
    before = {"images": kept(db, "images", image["id"])[0], "comments": kept(db, "comments", comment["id"])[0]}
    save(db, "images", [{"id": image["id"], "hidden_from_users": True, "deletion_reason": "Rule #0",
                         "duplicate_of": 3, "updated_at": "2030-01-01T00:00:00Z"}])
    save(db, "comments", [{"id": comment["id"], "image_id": 99, "body": None, "updated_at": "2030-01-01T00:00:00Z"}])
    row = db.execute("SELECT raw, raw_full, hidden_from_users, deletion_reason, duplicate_of, updated_at "
                     "FROM images WHERE id = ?", [image["id"]]).fetchone()
    assert row == (before["images"], None, 1, "Rule #0", 3, "2030-01-01T00:00:00Z")
    # the record's values of the columns the stub set go to the patch; its nulls, to the mask
    rest = json.loads(db.execute("SELECT raw_rest FROM images WHERE id = ?", [image["id"]]).fetchone()[0])
    assert rest == {name: image[name] for name in ("created_at", "updated_at", "hidden_from_users")}
    row = db.execute("SELECT raw, raw_rest, raw_full, image_id, updated_at FROM comments WHERE id = ?",
                     [comment["id"]]).fetchone()
    assert row == (before["comments"], to_json({name: comment[name] for name in ("image_id", "updated_at")}), None,
                   99, "2030-01-01T00:00:00Z")


def test_a_stub_never_seen_in_full_is_kept_in_its_columns_the_same_however_often_it_is_seen(tmp_path):
    """A kill soak found two mirrors of one site differing: a hidden post's stub seen once was kept
    whole in ``raw_full``, seen again (the rerun after a kill) split over its columns."""
    stubs = {"images": {"id": 5, "hidden_from_users": True, "deletion_reason": "Rule #0", "duplicate_of": None,
                        "created_at": "2012-07-11T23:26:25Z", "updated_at": "2012-07-11T23:26:25Z"},
             "comments": {"id": 6, "image_id": 5, "body": None, "author": "Background Pony #D6BD",
                          "avatar": None, "user_id": None, "created_at": "2012-07-11T23:26:25Z",
                          "updated_at": "2012-07-11T23:26:25Z", "edited_at": None, "edit_reason": None},
             "posts": {"id": 36, "user_id": 46, "author": "Zorne919", "avatar": "https://example.net/46.png",
                       "body": None, "created_at": "2012-07-11T23:26:25Z", "updated_at": "2012-07-11T23:26:25Z",
                       "edited_at": None, "edit_reason": None}}
    rows = {}
    for seen in (1, 2):
        db = open_database(tmp_path / f"seen-{seen}.db")
        for table, stub in stubs.items():
            for _ in range(seen):
                save(db, table, [stub])
            assert kept(db, table, stub["id"]) == (to_json(canonical(SPECS[table], stub)), None), table
        rows[seen] = {table: row_less_times(db, table, stub["id"]) for table, stub in stubs.items()}
    assert rows[1] == rows[2]


def row_less_times(db, table, key):
    columns = [r[1] for r in db.execute(f"PRAGMA table_info({table})") if r[1] != "mirrored_at"]
    return db.execute(f"SELECT {', '.join(columns)} FROM {table} WHERE id = ?", [key]).fetchone()


def test_the_facts_of_a_kept_file_fill_the_columns_and_leave_the_record_as_it_came(tmp_path):
    db = open_database(tmp_path / "m.db")
    lacking = dump_shaped("images", real_records()["images"][0])
    saying_null = {**real_records()["images"][1], "animated": None, "duration": None}
    save(db, "images", [lacking, saying_null])
    for record in (lacking, saying_null):
        raw = kept(db, "images", record["id"])[0]
        assert lacks_file_facts(db, record["id"]) == (record is lacking)
        save_file_facts(db, record["id"], animated=True, duration=1.25)
        assert db.execute("SELECT raw, raw_full, animated, duration FROM images WHERE id = ?",
                          [record["id"]]).fetchone() == (raw, None, 1, 1.25)
        assert not lacks_file_facts(db, record["id"])
    save_file_facts(db, lacking["id"], animated=False, duration=0.0)  # filled once: kept as it is
    assert db.execute("SELECT animated FROM images WHERE id = ?", [lacking["id"]]).fetchone() == (1,)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_stub_of_any_values_over_any_record_leaves_its_raw_as_it_was(shared_db, data):
    db = shared_db
    for table in REBUILT:
        real = [r for r in REAL[table] if not SPECS[table].is_stub(r)]
        record = data.draw(st.one_of(hostile_records(table), st.sampled_from(real),
                                     st.sampled_from(real).map(lambda r, t=table: dump_shaped(t, r))))
        save(db, table, [record])
        raw, _ = kept(db, table, record["id"])
        carried = {name: data.draw(_SCALARS) for name in SPECS[table].stub_fields
                   if name != "id" and data.draw(st.booleans())}
        stub = {**carried, "id": record["id"], **({"hidden_from_users": True} if table == "images" else {"body": None})}
        save(db, table, [stub])
        assert kept(db, table, record["id"])[0] == raw
        assert db.execute(f"SELECT stub FROM {table} WHERE id = ?", [record["id"]]).fetchone()[0] == to_json(stub)


NEXT_LAYOUT = "0038_absent_fields_as_a_mask"
TEXT_OF = {kept: column for column, kept in DIGESTS.items()}
COUNTED_FROM_INDEXES = "0039_images_counted_from_indexes"  # after it, and its indexes read raw_absent
# images, comments and posts as 0034 laid them out until 0038 (``sqlite_master.sql`` of an archive made then)
BEFORE_0038 = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "layouts" / "raw_rebuilt_before_0038.json")
                         .read_text())


def lay_out_as_before_0038(db, table):
    """Put ``table``'s rows back in the rebuilt layout as it was until 0038: no ``raw_absent``, each
    field the record lacks a null of the patch, each kept-aside field's value in the patch."""
    spec, aside = SPECS[table], [name for name in KEPT_ASIDE[table] if name != "id"]
    others = [sql for (sql,) in db.execute("SELECT sql FROM sqlite_master WHERE tbl_name = ? AND type IN "
                                           "('index', 'trigger') AND sql IS NOT NULL", [table])]
    # a hash as its text, as an image's was kept until 0042
    columns = [TEXT_OF.get(row[1], row[1]) for row in db.execute(f"PRAGMA table_info({table})")
               if row[1] != "raw_absent"]
    rows = db.execute(f"SELECT {', '.join(columns)}, raw FROM {table}").fetchall()
    db.execute(f"DROP TABLE {table}")
    db.execute(BEFORE_0038[table])
    for *values, raw in rows:
        row = dict(zip(columns, values))
        if row["raw_full"] is None:
            record = json.loads(raw)
            rest = {name: value for name, value in json.loads(row["raw_rest"] or "{}").items() if name not in aside}
            rest.update({name: record[name] for name in aside if record.get(name) is not None})
            rest.update({name: None for name in spec.fields if name not in record})
            row["raw_rest"] = to_json(rest) if rest else None
        db.execute(f"INSERT INTO {table} ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})", list(row.values()))
    for sql in others:
        if "raw_absent" not in sql and "_bytes" not in sql:  # later migrations' indexes (0039's, 0042's), made again
            db.execute(sql)


def test_an_archive_of_the_previous_rebuilt_layout_is_moved_with_every_raw_byte_for_byte(tmp_path, capsys, monkeypatch):
    path = tmp_path / "m.db"
    db = open_database(path)
    for table, records in REAL.items():
        save(db, table, records)
        save(db, table, [{**dump_shaped(table, r), "id": r["id"] + 10**8}
                         for r in records if not SPECS[table].is_stub(r)])
    image = REAL["images"][0]
    save(db, "images", [{"id": image["id"] + 10**8, "hidden_from_users": True, "deletion_reason": "Rule #0"}])
    save_file_facts(db, image["id"] + 10**8, animated=True, duration=2.0)
    made = set(db.execute("SELECT type, name, sql FROM sqlite_master "
                          "WHERE tbl_name IN ('images', 'comments', 'posts')"))
    raws = {table: dict(db.execute(f"SELECT id, raw FROM {table}").fetchall()) for table in REBUILT}
    for table in REBUILT:
        lay_out_as_before_0038(db, table)
        assert dict(db.execute(f"SELECT id, raw FROM {table}").fetchall()) == raws[table]  # the layout as it was
    patches = {table: db.execute(f"SELECT total(length(raw_rest)) FROM {table}").fetchone()[0] for table in REBUILT}
    db.execute("DELETE FROM _sqlite_migrations WHERE name IN (?, ?, ?)", [NEXT_LAYOUT, COUNTED_FROM_INDEXES,
                                                                          "0042_hashes_as_bytes"])
    db.execute("DROP INDEX IF EXISTS downloads_by_status")
    db.conn.commit()
    db.conn.close()
    monkeypatch.setattr(relayout, "LOUD_FROM", 1)

    db = open_database(path)

    assert "comments: moved" in capsys.readouterr().err
    assert set(db.execute("SELECT type, name, sql FROM sqlite_master "
                          "WHERE tbl_name IN ('images', 'comments', 'posts')")) == made
    for table in REBUILT:
        assert dict(db.execute(f"SELECT id, raw FROM {table}").fetchall()) == raws[table]
        patch = db.execute(f"SELECT total(length(raw_rest)) FROM {table}").fetchone()[0]
        assert patch < patches[table] * 0.6, (table, patch, patches[table])
        assert db.execute(f"SELECT count(*) FROM {table} WHERE raw_full IS NOT NULL AND id > ?", [10**8]).fetchone() \
            == (0,)
        for name in SPECS[table].fields:
            fast = db.execute(f"SELECT count(*) FROM {table} t WHERE {absent_sql(table, 't', name)}").fetchone()
            slow = db.execute(f"SELECT count(*) FROM {table} WHERE json_type(raw, '$.\"{name}\"') IS NULL").fetchone()
            assert fast == slow, (table, name)
    edited = {**REAL["comments"][0], "body": "zyzzogeton"}
    save(db, "comments", [edited])
    assert db.execute("SELECT rowid FROM comments_fts WHERE comments_fts MATCH 'zyzzogeton'").fetchall() == \
        [(edited["id"],)]
    assert sqlite3.connect(path).execute("PRAGMA integrity_check").fetchone() == ("ok",)
