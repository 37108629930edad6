"""Large boards for benchmarks (`mirror.localsite.board.generate`), and the indexes searches use at that size."""

from __future__ import annotations

import sqlite3

import pytest

from mirror.localsite.board.generate import BoardSizes, generate_board
from mirror.search import engine
from mirror.search.indexes import IMAGES
from mirror.search.query import IMAGE_FIELDS, parse_query
from mirror.store import ImageWriter, open_database

from ..support.search_oracle import matches

TABLES = ("images", "image_tags", "tags", "comments", "galleries", "gallery_images", "topics", "posts", "forums",
          "users", "filters", "featured_images")


def contents(path) -> dict[str, list]:
    """Every row of the board's tables, less when they were written."""
    conn = sqlite3.connect(path)
    out = {}
    for table in TABLES:
        columns = [row[1] for row in conn.execute(f"PRAGMA table_info({table})") if row[1] != "mirrored_at"]
        out[table] = conn.execute(f"SELECT {', '.join(columns)} FROM {table} ORDER BY 1, 2").fetchall()
    return out


def fts_entries(path) -> dict[str, list]:
    """Every (term, row, column, offset) each full-text index holds."""
    conn = sqlite3.connect(path)
    indexes = [name for (name,) in conn.execute(
        "SELECT name FROM sqlite_master WHERE sql LIKE 'CREATE VIRTUAL TABLE%USING fts5%'")]
    out = {}
    for index in indexes:
        conn.execute(f"CREATE VIRTUAL TABLE temp.v_{index} USING fts5vocab(main, {index}, 'instance')")
        conn.execute(f"INSERT INTO {index} ({index}, rank) VALUES ('integrity-check', 1)")
        out[index] = conn.execute(f"SELECT * FROM temp.v_{index} ORDER BY 1, 2, 3, 4").fetchall()
    return out


@pytest.fixture(scope="module")
def boards(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("bulk")
    sizes = BoardSizes(400, comments_per_image=1.0, images_per_topic=40, images_per_gallery=20)
    reports = [generate_board(tmp / name, 400, seed=4, batch=150, sizes=sizes, defer_fts=defer)
               for name, defer in (("a.db", True), ("b.db", True), ("c.db", False))]
    return tmp, reports


def test_a_seed_gives_the_same_board(boards):
    tmp, reports = boards
    first = contents(tmp / "a.db")
    assert all(first[table] for table in TABLES), {t: len(rows) for t, rows in first.items()}
    assert contents(tmp / "b.db") == first
    assert reports[0].counts == reports[1].counts and reports[0].counts["images"] == 400


def test_deferred_full_text_indexes_hold_what_the_triggers_write(boards):
    tmp, _ = boards
    assert contents(tmp / "a.db") == contents(tmp / "c.db")
    deferred, triggered = fts_entries(tmp / "a.db"), fts_entries(tmp / "c.db")
    assert deferred == triggered and deferred["images_description"] and deferred["images_fts"]
    schema = "SELECT type, name, sql FROM sqlite_master ORDER BY name"
    assert sqlite3.connect(tmp / "a.db").execute(schema).fetchall() \
        == sqlite3.connect(tmp / "c.db").execute(schema).fetchall()


def test_the_board_counts_its_records(boards):
    tmp, reports = boards
    conn = sqlite3.connect(tmp / "a.db")
    assert conn.execute("SELECT count(*) FROM images").fetchone()[0] == 400
    visible = conn.execute("SELECT count(*) FROM images WHERE hidden_from_users = 0").fetchone()[0]
    safe = conn.execute("SELECT images FROM tags WHERE name = 'safe'").fetchone()[0]
    assert 0 < safe < visible < 400
    assert safe == conn.execute("SELECT count(*) FROM image_tags it JOIN images i ON i.id = it.image_id "
                                "JOIN tags t ON t.id = it.tag_id WHERE t.name = 'safe' "
                                "AND i.hidden_from_users = 0").fetchone()[0]


DESCRIPTIONS = ["xxab\u0130 yy", "Magic show", "nonmagical", "\u00c0BC abc", "\u212aelvin", "ab\u0130c", None, "",
                "\u017ftar", "Star ſtar", "STAR", "gic mag agi", "star tars", "xab\u0130xabi"]


@pytest.mark.parametrize("phrase", ["abi", "agic", "magic", "AGIC S", "kelvin", "àbc", "abc", "ab", "xxabi", "ic s",
                                    "star", "tar", "ſtar", "c sh", "xabixabi", "abixab"])
def test_description_phrases_find_what_the_evaluator_finds(tmp_path, phrase):
    """The trigram index finds phrases, not their trigrams anywhere in the text ("gic mag agi" holds
    every trigram of "magic"); a dotted capital I, the Kelvin sign,
    short and non-ASCII phrases find what plain evaluation finds."""
    db = open_database(tmp_path / "m.db")
    ImageWriter(db, "https://derpibooru.org").save_page(
        [{"id": i, "description": text, "tags": [], "tag_ids": []} for i, text in enumerate(DESCRIPTIONS, 1)])
    conn = sqlite3.connect(tmp_path / "m.db")
    engine.prepare(conn)
    node = parse_query(f"description:{phrase}", IMAGE_FIELDS)
    expected = {i for i, text in enumerate(DESCRIPTIONS, 1) if matches(node, {"description": text})}
    assert engine.ids(conn, IMAGES, node) == expected
