"""Image searches with posting lists give exactly the SQL search's total and page, in its order.

The SQL search (tested against the oracle in test_search_sql.py) is the reference here: for random
queries, filters, sorts and pages, both must return the same total and the same ids in the same
order, through whichever way the bitmap search takes the page (index walk or sort of the set).
"""

from __future__ import annotations

import shutil
import sqlite3

import pytest
from pyroaring import BitMap
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mirror.search import bitmap_search, engine
from mirror.search.bitmap_search import ImageScope, id_range, search_images
from mirror.search.compile import TRUE, Sql
from mirror.search.filters import ImageFilter, complex_filter
from mirror.search.indexes import IMAGES
from mirror.search.postings import Postings, selected_ids
from mirror.search.query import Term, parse_query
from mirror.search.sort import image_sort
from mirror.serve.board import Board

from ..support.search_board import image_queries, vocabulary

SORTS = [(None, None), ("id", "asc"), ("id", "desc"), ("score", "desc"), ("score", "asc"), ("wilson_score", "desc"),
         ("first_seen_at", "asc"), ("created_at", "desc"), ("pixels", "desc"), ("random:7", "desc"),
         ("_score", "asc"), ("gallery_id:1", "asc")]


def sql_page(conn, node, scope: ImageScope, order, limit, offset):
    hides = scope.hides.hides()
    where = TRUE if hides.text == "0" else Sql(f"NOT coalesce(({hides.text}), 0)", hides.params)
    if not scope.deleted:
        where = where & Sql("coalesce(i.hidden_from_users, 0) = 0")
    page = engine.search(conn, IMAGES, node, order=order.sql, where=where, limit=limit, offset=offset,
                         columns="{t}.id")
    return page.total, [row[0] for row in page.rows]


def bitmap_page(conn, postings, node, scope, order, limit, offset):
    page = search_images(conn, postings, node, scope, order, limit=limit, offset=offset, columns="{t}.id",
                         seconds=5)
    return page.total, [row[0] for row in page.rows]


@st.composite
def filters(draw, tag_ids, atoms):
    hidden = tuple(draw(st.lists(st.sampled_from(tag_ids), max_size=3)))
    query = draw(st.none() | st.sampled_from(atoms))
    return ImageFilter(hidden_tags=hidden, hidden_complex=complex_filter(query) if query else None)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_random_searches_give_the_sql_searchs_total_and_page(board, data):
    db, conn, _ = board
    atoms = vocabulary(db)
    tag_ids = [row[0] for row in db.execute("SELECT tag_id FROM image_tags GROUP BY tag_id ORDER BY count(*) DESC "
                                            "LIMIT 20")]
    query = data.draw(image_queries(atoms))
    node = parse_query(query, IMAGES.spec)
    scope = ImageScope(data.draw(filters(tag_ids, atoms)), deleted=data.draw(st.booleans()))
    sf, sd = data.draw(st.sampled_from(SORTS))
    order = image_sort(sf, sd, IMAGES.alias, seed=3)
    limit, offset = data.draw(st.integers(1, 50)), data.draw(st.sampled_from([0, 0, 1, 7, 30, 150]))
    expected = sql_page(conn, node, scope, order, limit, offset)
    assert bitmap_page(conn, Postings(), node, scope, order, limit, offset) == expected, (query, sf, sd)


@pytest.mark.parametrize("sort_cost", [4, 0], ids=["chosen", "fallbacks"])
@pytest.mark.parametrize("sf,sd", SORTS)
def test_every_order_and_page_depth_matches_sql(board, sf, sd, sort_cost, monkeypatch):
    """With a sort cost of 0 every index walk gives up at once and every SQL term looks only
    among the candidates: the ways taken when the cheap ones would cost too much."""
    monkeypatch.setattr(bitmap_search, "_SORT_COST", sort_cost)
    _, conn, _ = board
    postings = Postings()
    order = image_sort(sf, sd, IMAGES.alias, seed=5)
    for query in ("*", "safe", "safe, -solo", "id.gt:40", "score.gt:0 OR safe", "safe, score.gt:0, width.gt:500"):
        node = parse_query(query, IMAGES.spec)
        for offset in (0, 3, 60, 190):
            scope = ImageScope(ImageFilter(), deleted=False)
            assert bitmap_page(conn, postings, node, scope, order, 15, offset) == \
                sql_page(conn, node, scope, order, 15, offset), (query, offset)


def test_the_lists_kept_are_dropped_when_another_connection_commits(board, tmp_path):
    """A sync writing beside `mirror serve`: the next search sees the new tags."""
    db = board[0]
    path = tmp_path / "mirror.db"
    source = sqlite3.connect(db.conn.execute("PRAGMA database_list").fetchone()[2])
    target = sqlite3.connect(path)
    source.backup(target)
    source.close()
    target.execute("PRAGMA journal_mode=WAL")
    served = Board(path)
    tag_id, name = target.execute("SELECT t.id, t.name FROM tags t JOIN image_tags it ON it.tag_id = t.id "
                                  "GROUP BY t.id ORDER BY count(*) LIMIT 1").fetchone()

    def total() -> int:
        node = parse_query(name, IMAGES.spec)
        searches = served.image_searches()
        with searches.connection() as conn:
            return search_images(conn, searches.postings, node, ImageScope(ImageFilter(), deleted=True),
                                 image_sort("id", "asc", "i", seed=1), limit=5, offset=0, columns="{t}.id",
                                 seconds=5).total

    before = total()
    kept = served.image_searches().postings._kept.copy()
    assert [key for key in kept if key[0] == "tag"]  # the tag's list was kept...
    assert total() == before  # ...and is still right
    untagged = target.execute("SELECT id FROM images WHERE id NOT IN (SELECT image_id FROM image_tags "
                              "WHERE tag_id = ?) LIMIT 1", (tag_id,)).fetchone()[0]
    target.execute("INSERT INTO image_tags (image_id, tag_id) VALUES (?, ?)", (untagged, tag_id))
    target.commit()
    assert total() == before + 1
    target.close()
    shutil.rmtree(tmp_path, ignore_errors=True)


@pytest.mark.parametrize("value,expected", [
    (("gt", 5), (6, 2**32 - 1)), (("gte", 5), (5, 2**32 - 1)), (("lt", 5), (0, 5)), (("lte", 5), (0, 6)),
    (("eq", 5), (5, 6)), (("gt", 1.5), (2, 2**32 - 1)), (("gte", 1.5), (2, 2**32 - 1)), (("lt", 1.5), (0, 2)),
    (("lte", 1.5), (0, 2)), (("eq", 1.5), (2, 2)), (("lt", -3), (0, 0)), (("gt", 2**40), (2**32 - 1, 2**32 - 1)),
])
def test_id_ranges(value, expected):
    start, stop = id_range(Term("id", "compare", value))
    assert (start, stop) == expected or (start >= stop and expected[0] >= expected[1])


def test_selected_ids_reads_every_integer_of_a_column():
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (n INTEGER)")
    assert selected_ids(conn, "SELECT n FROM t") == BitMap()
    values = [0, 7, 7, 65_535, 65_536, 3_699_789, 2**32 - 1]
    conn.executemany("INSERT INTO t VALUES (?)", [(v,) for v in values])
    assert selected_ids(conn, "SELECT n FROM t") == BitMap(values)
    assert selected_ids(conn, "SELECT n FROM t WHERE n > ? AND n < ?", (7, 2**32 - 1)) == BitMap([65_535, 65_536, 3_699_789])
