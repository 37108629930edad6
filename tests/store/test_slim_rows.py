"""The whole board in less room (issue 48): each cut keeps every record and every answer as it was,
and an archive laid out before it is moved by the next run."""

from __future__ import annotations

import re
import sqlite3

from mirror.search import engine
from mirror.search.compile import compile_node
from mirror.search.indexes import IMAGES
from mirror.search.query import IMAGE_FIELDS, parse_query
from mirror.store import ImageWriter, open_database, relayout
from mirror.store.derived import DIGESTS
from mirror.store.raw_rebuilt import canonical
from mirror.store.records import to_json
from mirror.store.specs import IMAGES as IMAGE_SPEC
from mirror.store.history import SiteChange, save_site_changes, tag_name_sql
from mirror.store.schema import migrations

from ..support.mirrored import BASE
from ..support.real_fixtures import fixture_files, records_in

REAL_IMAGES = [r for path in fixture_files() for resource, records in [records_in(path)] if resource == "images"
               for r in records if isinstance(r, dict)]

NAMES_RENAMED_ONLY = "0044_tag_changes_name_renamed_tags_only"


def names_read(db) -> list[tuple]:
    return db.execute(f"SELECT change, tag_id, {tag_name_sql('c')} FROM image_tag_changes c "
                      "ORDER BY history_id, tag_id, change").fetchall()


def in_key_order(changes: list[tuple]) -> list[tuple]:
    """(change, tag id, name) of changes numbered as the old layout did, in one history row, in the key's order."""
    return sorted((change[1:] for change in changes), key=lambda change: (change[1], change[0]))


def test_a_tag_change_keeps_its_tags_name_only_where_the_tag_is_named_otherwise_today(tmp_path):
    db = open_database(tmp_path / "m.db")
    db["tags"].insert_all([{"id": 1, "name": "safe"}, {"id": 2, "name": "pony"}])
    save_site_changes(db, None, [SiteChange(5, "2020-01-01T00:00:00Z", None, "site_tags",
                                            (("+", 1, "safe"), ("+", 2, "ponies"), ("-", 3, None), ("-", 4, "gone")))])
    assert db.execute("SELECT tag_name FROM image_tag_changes ORDER BY tag_id").fetchall() == \
        [(None,), ("ponies",), ("",), ("gone",)]
    read = in_key_order([(1, "+", 1, "safe"), (2, "+", 2, "ponies"), (3, "-", 3, None), (4, "-", 4, "gone")])
    assert names_read(db) == read
    db.execute("UPDATE tags SET name = 'sfw' WHERE id = 1")  # a rename keeps the name the change gave
    db.execute("DELETE FROM tags WHERE id = 2")
    db["tags"].insert({"id": 3, "name": "named since"})
    assert names_read(db) == read
    assert "run_id" not in db["image_tag_changes"].columns_dict


def test_an_archive_whose_tag_changes_kept_every_name_and_run_is_moved_with_every_name_read_as_before(tmp_path):
    path = tmp_path / "m.db"
    db = open_database(path, migrate=False)
    migrations.apply(db, stop_before=NAMES_RENAMED_ONLY)
    db["tags"].insert_all([{"id": 1, "name": "safe"}, {"id": 2, "name": "pony"}])
    db.execute("INSERT INTO history (id, resource, record_key, run_id, seen_at, event) "
               "VALUES (7, 'images', '5', 3, '2020-01-01T00:00:00Z', 'site_tags')")
    old = [(1, "+", 1, "safe"), (2, "+", 2, "ponies"), (3, "-", 3, None), (4, "-", 1, "safe")]
    db.conn.executemany("INSERT INTO image_tag_changes (id, history_id, image_id, tag_id, tag_name, change, seen_at, "
                        "run_id) VALUES (?, 7, 5, ?, ?, ?, '2020-01-01T00:00:00Z', 3)",
                        [(i, tag, name, change) for i, change, tag, name in old])
    db.conn.commit()
    db.conn.close()

    db = open_database(path)

    assert names_read(db) == in_key_order(old)
    assert db.execute("SELECT count(*) FROM image_tag_changes WHERE tag_name IS NULL").fetchone()[0] == 2
    assert "run_id" not in db["image_tag_changes"].columns_dict
    db.execute("UPDATE tags SET name = 'sfw' WHERE id = 1")
    assert names_read(db) == in_key_order(old)


HASH = "ab" * 64
FIRST = 10**9  # the ids of the images made here, above the real ones
ODD_HASHES = [HASH.upper(), HASH[:127], "zz" * 64, "", None, 12, " " + HASH[1:], "cd" * 64 + "\n"]


def images_with_hashes() -> list[dict]:
    """Real image records, one with each kind of hash the site could send (and a few it never does)."""
    image = {name: value for name, value in REAL_IMAGES[0].items()}
    made = [{**image, "id": FIRST, "sha512_hash": HASH, "orig_sha512_hash": "ef" * 64}]
    made += [{**image, "id": FIRST + 1 + n, "sha512_hash": odd, "orig_sha512_hash": odd} for n, odd in enumerate(ODD_HASHES)]
    made.append({name: value for name, value in {**image, "id": FIRST + 20}.items() if name != "orig_sha512_hash"})
    return made


def test_an_images_hashes_are_kept_as_bytes_and_every_record_reads_back_as_sent(tmp_path):
    db = open_database(tmp_path / "m.db")
    records = images_with_hashes() + [r for r in REAL_IMAGES if isinstance(r, dict)]
    ImageWriter(db, BASE).save_page(records)
    for record in records:
        last = [r for r in records if r["id"] == record["id"]][-1]
        raw, full = db.execute("SELECT raw, raw_full FROM images WHERE id = ?", [record["id"]]).fetchone()
        assert raw == to_json(canonical(IMAGE_SPEC, last)) and full is None, record["id"]
    kept = dict(db.execute("SELECT id, sha512_hash_bytes FROM images WHERE id >= ?", [FIRST]).fetchall())
    assert kept[FIRST] == bytes.fromhex(HASH) and kept[FIRST + 1] == HASH.upper() and kept[FIRST + 5] is None
    assert db.execute("SELECT sha512_hash, orig_sha512_hash FROM images WHERE id = ?", [FIRST]).fetchone() \
        == (HASH, "ef" * 64)
    assert db.execute("SELECT count(*) FROM images WHERE typeof(sha512_hash_bytes) = 'blob'").fetchone()[0] \
        >= len(REAL_IMAGES) // 2
    # a stub over a kept row leaves the hashes; a row first seen as a stub keeps what it sent
    ImageWriter(db, BASE).save_page([{"id": FIRST, "hidden_from_users": True, "deletion_reason": "Rule #0"},
                                     {"id": FIRST + 40, "hidden_from_users": True, "sha512_hash": HASH.upper()}])
    assert db.execute("SELECT sha512_hash, json_extract(raw, '$.sha512_hash') FROM images WHERE id IN (?, ?) "
                      "ORDER BY id", [FIRST, FIRST + 40]).fetchall() == [(HASH, HASH), (HASH.upper(), HASH.upper())]


def hash_search(path, query: str) -> set[int]:
    conn = sqlite3.connect(path)
    engine.prepare(conn)
    return engine.ids(conn, IMAGES, parse_query(query, IMAGE_FIELDS))


def test_a_search_by_hash_reads_the_index_of_the_bytes_and_finds_what_it_found(tmp_path):
    path = tmp_path / "m.db"
    ImageWriter(open_database(path), BASE).save_page(images_with_hashes())
    assert hash_search(path, f"sha512_hash:{HASH}") == {FIRST, FIRST + 1}  # a term is folded, as the site does
    assert hash_search(path, f"sha512_hash:{HASH.upper()}") == {FIRST, FIRST + 1}
    assert hash_search(path, f"orig_sha512_hash:{'ef' * 64}") == {FIRST}
    assert hash_search(path, f"sha512_hash:{HASH[:127]}") == {FIRST + 2}
    assert hash_search(path, "sha512_hash:abab*") == {FIRST, FIRST + 1, FIRST + 2}
    condition = compile_node(parse_query(f"sha512_hash:{HASH}", IMAGE_FIELDS), IMAGES.fields, "i")
    conn = sqlite3.connect(path)
    engine.prepare(conn)
    plan = conn.execute(f"EXPLAIN QUERY PLAN SELECT i.id FROM images i WHERE {condition.text}",
                        condition.params).fetchall()
    plan = [row[-1] for row in plan]
    assert "images_by_sha512_hash" in str(plan) and "SCAN i" not in str(plan), plan


def lay_out_hashes_as_text(db) -> None:
    """Put the images back in the layout of before 0042: each hash a column of its own, as text."""
    create = db.execute("SELECT sql FROM sqlite_master WHERE name = 'images'").fetchone()[0]
    for column, kept in DIGESTS.items():
        create, found = re.subn(rf'"{kept}" ANY, "{column}" TEXT GENERATED ALWAYS AS \(.*?\) VIRTUAL',
                                f'"{column}" TEXT', create, count=1, flags=re.S)
        assert found
    others = [sql for (sql,) in db.execute("SELECT sql FROM sqlite_master WHERE tbl_name = 'images' "
                                           "AND type IN ('index', 'trigger') AND sql IS NOT NULL")]
    stored = [row[1] for row in db.execute("PRAGMA table_xinfo(images)") if row[6] == 0 and row[1] not in
              DIGESTS.values()] + list(DIGESTS)
    names = ", ".join(f'"{c}"' for c in stored)
    db.execute(create.replace('CREATE TABLE "images"', 'CREATE TABLE "images_old"', 1))
    db.execute(f"INSERT INTO images_old ({names}) SELECT {names} FROM images")
    db.execute("DROP TABLE images")
    db.execute("PRAGMA legacy_alter_table = ON")
    db.execute("ALTER TABLE images_old RENAME TO images")
    db.execute("PRAGMA legacy_alter_table = OFF")
    for sql in others:
        db.execute(sql.replace("images_by_sha512_hash ON images (sha512_hash_bytes)",
                               "idx_images_sha512_hash ON images (sha512_hash)"))
    db.execute("DELETE FROM _sqlite_migrations WHERE name = '0042_hashes_as_bytes'")


def test_an_archive_of_hashes_as_text_is_moved_with_every_record_byte_for_byte(tmp_path, capsys, monkeypatch):
    path = tmp_path / "m.db"
    db = open_database(path)
    ImageWriter(db, BASE).save_page(images_with_hashes() + REAL_IMAGES)
    raws = dict(db.execute("SELECT id, raw FROM images").fetchall())
    lay_out_hashes_as_text(db)
    db.conn.commit()
    assert dict(db.execute("SELECT id, raw FROM images").fetchall()) == raws  # the layout as it was
    assert db.execute("SELECT count(*) FROM images WHERE typeof(sha512_hash) = 'text'").fetchone()[0] > 10
    db.conn.close()
    monkeypatch.setattr(relayout, "LOUD_FROM", 1)

    db = open_database(path)

    assert "images: moved" in capsys.readouterr().err
    assert dict(db.execute("SELECT id, raw FROM images").fetchall()) == raws
    assert db.execute("SELECT count(*) FROM images WHERE raw_full IS NOT NULL").fetchone()[0] == 0
    assert db.execute("SELECT sha512_hash_bytes FROM images WHERE id = ?", [FIRST]).fetchone()[0] == bytes.fromhex(HASH)
    assert db.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND sql LIKE '%sha512%'"
                      ).fetchall() == [("images_by_sha512_hash",)]
    assert hash_search(path, f"sha512_hash:{HASH}") == {FIRST, FIRST + 1}
    assert sqlite3.connect(path).execute("PRAGMA integrity_check").fetchone() == ("ok",)
