"""An image search as of a moment answers what the same search answered on the board at that moment.

The histories are those of :mod:`.test_records_as_of`: nights of edits (tags, descriptions,
votes, hides, merges, un-hides, uploads), each followed by a sync through the store's writers. The
board as the site answered it after each night is also written, alone, into an archive of its own
(no history): a replay. For every night's moment, each search over the archive as of the moment
must give the replay's total and page, in order, as today's search gives them over the replay.
"""

from __future__ import annotations

import shutil
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mirror.asof import Moment
from mirror.dates import utc_text
from mirror.search import images
from mirror.search.bitmap_search import ImageScope
from mirror.search.engine import prepare
from mirror.search.postings import Postings
from mirror.store import open_database
from mirror.store.history import keep_counters
from mirror.store.images import ImageWriter
from mirror.store.specs import SPECS
from mirror.store.state import start_run
from mirror.store.writer import RecordWriter

from .test_records_as_of import START, TAGS, Site, nights

# (query, sort field, direction): tags, negation, either-or, a phrase, counters, dates; sorts that
# read fields the history changes (score, tag_count, updated_at) and ones it never does.
SEARCHES = [
    ("safe", None, None), ("pony, -cat", "score", "desc"), ("pony || red", "tag_count", "asc"),
    ("description:cat", "id", "desc"), ("score.gte:1", "score", "asc"), ("-solo", "updated_at", "desc"),
    ("artist:a || artist:b", "created_at", "asc"), ("tag_count.gt:2, safe", None, None),
    ("created_at.lte:2025-01-03", "upvotes", "desc"), ("*", "wilson_score", "desc"),
]
COUNTED = ("score", "upvotes", "updated_at", "wilson_score")  # not exact under daily counters


@pytest.fixture(scope="module")
def empty_mirror(tmp_path_factory):
    path = tmp_path_factory.mktemp("asof-search") / "empty.db"
    db = open_database(path)
    RecordWriter(db, SPECS["tags"], "").save(TAGS)
    db.conn.close()
    return path


def _searched(path, q, sf, sd, moment=None):
    conn = images.open_reader(path)
    try:
        node = images.image_query(q)
        page = images.search(conn, Postings(), node, ImageScope(), sf=sf, sd=sd, limit=50, offset=0,
                             columns="i.id", seconds=30, moment=moment)
        return page.total, [row["id"] for row in page.rows]
    finally:
        conn.close()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(nights=nights, counters=st.sampled_from(["all", "daily"]))
def test_each_search_as_of_each_night_is_the_replays(nights, counters, empty_mirror, tmp_path, monkeypatch):
    path = tmp_path / f"mirror-{id(nights)}.db"
    shutil.copy(empty_mirror, path)
    db = open_database(path)
    keep_counters(db, counters)
    clock = {"now": START}
    monkeypatch.setattr("mirror.store.history.utc_text", lambda when=None: utc_text(when or clock["now"]))
    site, replays = Site(), []
    for night, night_steps in enumerate(nights):
        clock["now"] = START + timedelta(days=night, hours=3)
        at = utc_text(clock["now"] - timedelta(hours=1))
        for kind, which, value in night_steps:
            site.act(kind, which, value, at)
        run = start_run(db, "images")
        ImageWriter(db, "").save_page(list(site.answers().values()))
        run.finish(db, status="done")
        replay = tmp_path / f"replay-{id(nights)}-{night}.db"
        shutil.copy(empty_mirror, replay)
        board = open_database(replay)
        ImageWriter(board, "").save_page(list(site.answers().values()))
        board.conn.close()
        replays.append((Moment(utc_text(clock["now"])), replay))
    db.conn.close()
    for moment, replay in replays:
        for q, sf, sd in SEARCHES:
            if counters == "daily" and (sf in COUNTED or any(f in q for f in COUNTED)):
                continue
            assert _searched(path, q, sf, sd, moment) == _searched(replay, q, sf, sd), (moment.text, q, sf, sd)
