"""The SQL search finds exactly what a plain evaluation finds, rule by rule and for random queries.

The board is the local site mirrored into a store database by `mirror sync` (the real path),
so the rows searched are the rows the mirror keeps. The oracle (tests/search_oracle.py) builds
documents from those rows in plain Python and matches them with the parser's evaluator.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mirror.search import engine
from mirror.search.compile import Sql
from mirror.search.indexes import INDEXES
from mirror.search.query import QueryError, parse_query
from mirror.search.sort import image_order

from ..support.search_board import image_queries, vocabulary
from ..support.search_oracle import matches

NOW = datetime(2026, 11, 1, tzinfo=timezone.utc)


def found(board, index: str, query: str) -> tuple[set, set]:
    """(ids the SQL finds, ids the oracle finds) for ``query`` on ``index``."""
    _, conn, docs = board
    node = parse_query(query, INDEXES[index].spec, now=NOW)
    return engine.ids(conn, INDEXES[index], node), {i for i, doc in docs[index].items() if matches(node, doc)}


def agree(board, index: str, query: str) -> set:
    sql, oracle = found(board, index, query)
    assert sql == oracle, (query, sorted(sql ^ oracle)[:10])
    return sql


# --- rule by rule -------------------------------------------------------------------------------

def common_tag(board) -> str:
    db = board[0]
    return db.execute("SELECT t.name FROM image_tags it JOIN tags t ON t.id = it.tag_id "
                      "GROUP BY t.id ORDER BY count(*) DESC LIMIT 1").fetchone()[0]


def test_tags_operators_and_precedence(board):
    tag = common_tag(board)
    every = agree(board, "images", "*")
    assert len(every) == len(board[2]["images"])
    assert agree(board, "images", "") == set()
    hits = agree(board, "images", tag)
    assert 0 < len(hits) < len(every)
    assert agree(board, "images", f"-{tag}") == every - hits
    assert agree(board, "images", f"NOT {tag}") == every - hits
    assert agree(board, "images", f"!{tag}") == every - hits
    other = board[0].execute("SELECT name FROM tags WHERE name != ? AND name LIKE 'artist:%' LIMIT 1",
                             [tag]).fetchone()[0]
    both = agree(board, "images", f"{tag}, {other}")
    either = agree(board, "images", f"{tag} OR {other}")
    assert both <= hits <= either
    assert agree(board, "images", f"{tag} AND {other}") == both == agree(board, "images", f"{tag} && {other}")
    assert agree(board, "images", f"{tag} || {other}") == either
    agree(board, "images", f"{tag} OR {other}, safe")  # a OR (b AND c)
    agree(board, "images", f"({tag} OR {other}), -safe")
    agree(board, "images", f"NOT ({tag} OR {other})^2")


def test_wildcards_fuzzy_and_aliases(board):
    db = board[0]
    tag = common_tag(board)
    assert agree(board, "images", tag[:3] + "*") >= agree(board, "images", tag)
    agree(board, "images", "*" + tag[-2:])
    agree(board, "images", tag[0] + "?" + tag[2:])
    agree(board, "images", tag[:-1] + "x~1")
    alias = db.execute("SELECT a.name, t.name FROM tags a JOIN tags t ON t.slug = a.aliased_tag LIMIT 1").fetchone()
    if alias:
        assert agree(board, "images", alias[0]) == agree(board, "images", alias[1])


@pytest.mark.parametrize("query", [
    "score.gt:0", "score.lte:-1", "score:3", "width.gte:1000", "height.lt:600", "faves.gt:5", "upvotes:0",
    "downvotes.gte:2", "id.lt:50", "id:10", "tag_count.gte:5", "rating_tag_count:1", "origin_tag_count.gt:0",
    "pixels.gt:1000000", "comment_count.gt:0", "size.gt:500", "orig_size.lt:500", "hides.gt:0",
    "source_count:0", "source_count.gte:2", "score:5~3", "aspect_ratio.gt:1.5", "wilson_score.gte:0.5",
    "duration.gt:1", "duration:0", "created_at.gte:2020", "created_at:2021-06", "created_at.lt:2019-01-01T00:00:00Z",
    "first_seen_at.gt:2022-03-04", "updated_at.lte:2023", "created_at.gte:5 years ago",
    "animated:true", "animated:false", "processed:false", "thumbnails_generated:true",
    "description:the", "description:pon*", "description:*", "uploader_id:3", "uploader:*", "file_name:*.png",
    "original_format:png", "original_format:svg", "mime_type:image/gif", "source_url:*", "source_url:https*",
    "gallery_id:1", "gallery_id:2", "faved_by:someone", "faved_by_id:1", "duplicate_id:5",
])
def test_image_fields(board, query):
    agree(board, "images", query)


@pytest.mark.parametrize("index,query", [
    ("comments", "*"), ("comments", "the"), ("comments", "author:*"), ("comments", "image_id:50"),
    ("comments", "created_at.gte:2021"), ("comments", "image.tags:safe"), ("comments", "author_id:3"),
    ("comments", "-body:a*"), ("comments", "id.gt:20, NOT created_at:2022"),
    ("posts", "*"), ("posts", "the"), ("posts", "forum:dis"), ("posts", "subject:*"), ("posts", "author:*"),
    ("posts", "topic_position:0"), ("posts", "created_at.lt:2022"), ("posts", "-forum:art"),
    ("galleries", "*"), ("galleries", "image_count.gt:3"), ("galleries", "image_ids:5"), ("galleries", "user:*"),
    ("galleries", "title:*"), ("galleries", "description:a*"), ("galleries", "user_id:2"),
    ("tags", "*"), ("tags", "artist:*"), ("tags", "namespace:artist"), ("tags", "category:rating"),
    ("tags", "images.gt:10"), ("tags", "aliased:true"), ("tags", "implies:*"), ("tags", "implied_by:*"),
    ("tags", "aliases:*"), ("tags", "alias_of:*"), ("tags", "description:pony"), ("tags", "name_in_namespace:a*"),
    ("filters", "*"), ("filters", "public:true"), ("filters", "system:true"), ("filters", "name:*"),
    ("filters", "hidden_count.gt:0"), ("filters", "creator:*"), ("filters", "description:*"),
])
def test_other_indexes(board, index, query):
    agree(board, index, query)


@pytest.mark.parametrize("query", [  # the shapes of searches people run on Derpibooru
    "safe, solo, -animated, score.gt:100",
    "(pinkie pie || rainbow dash), solo, first_seen_at.gt:3 years ago",
    "faves.gte:10, wilson_score.gt:0.5, safe",
    "safe, -oc:*, width.gte:1920",
    "twilight sparkle, -(equestria girls OR anthro)",
    "created_at.gte:2020-01-01, created_at.lt:2021",
    "artist:*, -artist needed, aspect_ratio.lt:1",
    "dashie, pegasus",  # an alias and an implication
    "safe || suggestive, rating_tag_count:1, tag_count.gte:5",
    "description:\"commission\", -score.lt:0",
    "cute^2, -sad",
    "species:bat pony OR *changeling",
])
def test_real_searches(board, query):
    agree(board, "images", query)


def test_the_image_sort_orders_by_field_then_id_in_the_same_direction(board):
    _, conn, docs = board
    node = parse_query("*", INDEXES["images"].spec)
    for sf, sd in [("score", "desc"), ("score", "asc"), ("wilson_score", "desc"), ("id", "asc"), (None, None),
                   ("created_at", "asc"), ("pixels", "desc"), ("duration", "asc")]:
        page = engine.search(conn, INDEXES["images"], node, order=image_order(sf, sd, "i", seed=1), limit=50,
                             offset=0, columns="{t}.id")
        got = [row[0] for row in page.rows]
        field = {None: "first_seen_at", "created_at": "first_seen_at"}.get(sf, sf)
        reverse = sd != "asc"
        expected = sorted(docs["images"], key=lambda i: (docs["images"][i][field] is not None,
                                                         docs["images"][i][field], i), reverse=reverse)
        if not reverse:  # SQLite puts NULLs first ascending, last descending
            expected = sorted(docs["images"], key=lambda i: (docs["images"][i][field] is not None,
                                                             docs["images"][i][field] or 0, i))
        assert got == expected[:50], sf
        assert page.total == len(docs["images"])


def test_random_sort_is_stable_for_a_seed_and_differs_between_seeds(board):
    _, conn, _ = board
    node = parse_query("*", INDEXES["images"].spec)

    def order(sf):
        return [row[0] for row in engine.search(conn, INDEXES["images"], node, order=image_order(sf, "desc", "i", seed=9),
                                                limit=50, offset=0, columns="{t}.id").rows]

    assert order("random:42") == order("random:42") != order("random:43")
    assert sorted(order("random:42")) != order("random:42")


def test_gallery_sort_follows_the_gallery_order(board):
    db, conn, _ = board
    gallery_id = db.execute("SELECT gallery_id FROM gallery_images GROUP BY gallery_id "
                            "ORDER BY count(*) DESC LIMIT 1").fetchone()[0]
    node = parse_query(f"gallery_id:{gallery_id}", INDEXES["images"].spec)
    page = engine.search(conn, INDEXES["images"], node, order=image_order(f"gallery_id:{gallery_id}", "asc", "i",
                                                                          seed=1), limit=50, offset=0,
                         columns="{t}.id")
    expected = [row[0] for row in db.execute("SELECT gi.image_id FROM gallery_images gi JOIN images i "
                                             "ON i.id = gi.image_id WHERE gallery_id = ? ORDER BY position",
                                             [gallery_id])]
    assert [row[0] for row in page.rows] == expected[:50]


def test_a_slow_search_is_stopped_with_a_clear_error(board):
    _, conn, _ = board
    slow = Sql("(SELECT count(*) FROM images a, images b, images c) > 0")
    with pytest.raises(engine.SearchTooSlow, match="took longer than"):
        engine.search(conn, INDEXES["images"], parse_query("*", INDEXES["images"].spec), order=Sql("1"),
                      limit=1, offset=0, where=slow, seconds=0.05)


# --- random queries -----------------------------------------------------------------------------

@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_random_valid_queries_find_what_the_oracle_finds(board, data):
    query = data.draw(image_queries(vocabulary(board[0])))
    agree(board, "images", query)


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(query=st.lists(st.sampled_from(list('abc:*?~^()",.!-| \\0123456789')
                                      + [" AND ", " OR ", "NOT ", "score", "id.gt", "created_at", "safe"]),
                      max_size=20).map("".join))
def test_random_strings_either_run_or_raise_a_query_error(board, query):
    _, conn, docs = board
    try:
        node = parse_query(query, INDEXES["images"].spec, now=NOW)
    except QueryError as e:
        assert str(e)
        return
    assert engine.ids(conn, INDEXES["images"], node) == {i for i, d in docs["images"].items() if matches(node, d)}


def test_stub_rows_are_searched_by_what_they_keep(board):
    db = board[0]
    hidden = [row["id"] for row in db.query("SELECT id FROM images WHERE hidden_from_users = 1")]
    assert hidden
    agree(board, "images", "id.gte:0")
    assert set(hidden) <= agree(board, "images", "*")
    assert json.loads(db["images"].get(hidden[0])["raw"])


def test_a_nul_in_a_phrase_is_searched_for_like_any_character(board):
    """FTS5's query syntax cannot carry a NUL ("unterminated string"): such a phrase is looked for in the
    text itself, as the site's ngram search would look for it, not refused as a broken database."""
    db = board[0]
    text = next(row[0] for row in db.execute("SELECT description FROM images WHERE length(description) > 8"))
    for phrase in (text[:6].lower() + "\x00", "aa\x00", "\x00" + text[:5].lower()):
        agree(board, "images", f'description:"{phrase}"')
