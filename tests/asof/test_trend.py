"""The past as data: a search's trend and its diff between two moments equal the per-moment
searches they summarise.

The histories are :mod:`.test_records_as_of`'s nights of edits, each synced. For every search, the
trend over the nights (one request, walking back) must give the total the search as of each
night gives; the diff between two nights must give the images found at the second and not the
first, and the reverse, with each one's changes between.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mirror.asof import Moment
from mirror.asof import search as as_of_search
from mirror.asof.trend import diff, steps, trend
from mirror.dates import utc_text
from mirror.search import images
from mirror.search.bitmap_search import ImageScope
from mirror.search.postings import Postings
from mirror.store.database import database_file
from mirror.store.images import ImageWriter

from .test_records_as_of import START, fresh_mirror, nights, play
from .test_search_as_of import empty_mirror  # noqa: F401 (the fixture: an empty mirror with the tags)

# Tags alone (the walk back) and beside a field (each step searched as of its moment).
QUERIES = ["safe", "pony, -cat", "pony || red", "*", "-solo", "artist:a || artist:b, safe", "id.lte:3, pony",
           "score.gte:1", "description:cat || blue"]


def _ids(conn, q, moment):
    page = images.search(conn, Postings(), images.image_query(q), ImageScope(), sf="id", sd="asc", limit=1000,
                         offset=0, columns="i.id", seconds=30, reader=as_of_search.reader(moment))
    return page.total, {row["id"] for row in page.rows}


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(nights=nights, deleted=st.booleans())
def test_a_trend_and_a_diff_equal_the_searches_they_summarise(nights, deleted, empty_mirror, tmp_path,  # noqa: F811
                                                              monkeypatch):
    db = fresh_mirror(empty_mirror, tmp_path, nights)
    _, answered = play(nights, "all", db, monkeypatch, lambda db, records: ImageWriter(db, "").save_page(records))
    # each night's moment, one before the first, and moments between nights (an hour before each sync)
    moments = [Moment(utc_text(START - timedelta(days=1)))] + [m for m, _ in answered]
    moments += [Moment(utc_text(m.datetime - timedelta(hours=2))) for m, _ in answered]
    scope = ImageScope(deleted=deleted)
    conn = images.open_reader(database_file(db.conn))
    try:
        for q in QUERIES:
            node = images.image_query(q)
            expected = []
            for moment in moments:
                page = images.search(conn, Postings(), node, scope, sf="id", sd="asc", limit=1, offset=0,
                                     columns="i.id", seconds=30, reader=as_of_search.reader(moment))
                expected.append(page.total)
            assert trend(conn, Postings(), node, scope, moments, seconds=30) == expected, q
        first, last = answered[0][0], answered[-1][0]
        for q in QUERIES[:4]:
            found = diff(conn, Postings(), images.image_query(q), ImageScope(), first, last, seconds=30)
            (total_from, before), (total_to, after) = _ids(conn, q, first), _ids(conn, q, last)
            assert (found.total_from, found.total_to) == (total_from, total_to), q
            assert set(found.entered) == after - before and set(found.left) == before - after, q
            for image_id in found.entered + found.left:
                assert found.moves[image_id], (q, image_id)  # something the history kept moved it
    finally:
        conn.close()
        db.conn.close()


def test_steps_are_every_month_from_the_start_to_the_end_and_refuse_what_is_not_one():
    from mirror.asof import parse_moment

    monthly = steps(parse_moment("2012-01-01"), parse_moment("2026-11-01"), "month")
    assert len(monthly) == 179 and monthly[0].text == "2012-01-01T23:59:59Z" and monthly[-1].text[:10] == "2026-11-01"
    assert [m.text[:10] for m in steps(parse_moment("2024-01-31"), parse_moment("2024-04-30"), "month")] == [
        "2024-01-31", "2024-02-29", "2024-03-31", "2024-04-30"]
    assert len(steps(parse_moment("2025-01-01"), parse_moment("2025-01-15"), "week")) == 3
    for every, start, end in (("fortnight", "2025-01-01", "2025-02-01"), ("day", "2025-02-01", "2025-01-01"),
                              ("day", "2000-01-01", "2025-01-01")):
        with pytest.raises(ValueError):
            steps(parse_moment(start), parse_moment(end), every)
