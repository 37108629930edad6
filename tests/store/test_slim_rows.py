"""The whole board in less room (issue 48): each cut keeps every record and every answer as it was,
and an archive laid out before it is moved by the next run."""

from __future__ import annotations

import sqlite3

from mirror.search import engine
from mirror.search.indexes import IMAGES
from mirror.search.query import IMAGE_FIELDS, parse_query
from mirror.store import ImageWriter, open_database

from ..support.mirrored import BASE

DESCRIPTIONS = ["Magic show", "gic mag agi", "nonmagical", "xxab\u0130", "STAR ſtar", None]
OLD_DESCRIPTION_INDEX = """CREATE VIRTUAL TABLE "images_description" USING fts5("description", content='images',
    content_rowid='rowid', tokenize='trigram')"""


def description_search(path, phrase: str) -> set[int]:
    conn = sqlite3.connect(path)
    engine.prepare(conn)
    return engine.ids(conn, IMAGES, parse_query(f"description:{phrase}", IMAGE_FIELDS))


def test_the_description_index_keeps_no_positions_and_an_older_one_is_made_again(tmp_path):
    path = tmp_path / "m.db"
    db = open_database(path)
    ImageWriter(db, BASE).save_page([{"id": i, "description": text, "tags": [], "tag_ids": []}
                                     for i, text in enumerate(DESCRIPTIONS, 1)])
    assert "detail=none" in db.execute("SELECT sql FROM sqlite_master WHERE name = 'images_description'").fetchone()[0]
    assert not db["images_description_docsize"].exists()
    found = {phrase: description_search(path, phrase) for phrase in ("magic", "agic", "xabi", "star", "mag")}
    assert found == {"magic": {1, 3}, "agic": {1, 3}, "xabi": {4}, "star": {5}, "mag": {1, 2, 3}}
    with db.atomic():  # the index as migration 0015 made it until 0043
        for trigger in ("ai", "ad", "au"):
            db.execute(f"DROP TRIGGER images_description_{trigger}")
        db.execute("DROP TABLE images_description")
        db.execute(OLD_DESCRIPTION_INDEX)
        db.execute("INSERT INTO images_description (images_description) VALUES ('rebuild')")
        db.execute("DELETE FROM _sqlite_migrations WHERE name = '0043_description_trigrams_without_positions'")
    db.conn.close()

    db = open_database(path)

    assert "detail=none" in db.execute("SELECT sql FROM sqlite_master WHERE name = 'images_description'").fetchone()[0]
    assert {phrase: description_search(path, phrase) for phrase in found} == found
    ImageWriter(db, BASE).save_page([{"id": 7, "description": "a magic lamp", "tags": [], "tag_ids": []}])
    assert description_search(path, "magic") == {1, 3, 7}  # its triggers were made again
