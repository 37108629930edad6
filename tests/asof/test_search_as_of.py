"""An image search as of a moment answers what the same search answered on the board at that moment.

The histories are those of :mod:`.test_records_as_of`: nights of edits (tags, descriptions,
votes, hides, merges, un-hides, uploads), each followed by a sync through the store's writers. The
board as the site answered it after each night is also written, alone, into an archive of its own
(no history): a replay. For every night's moment, each search over the archive as of the moment
must give the replay's total and page, in order, as today's search gives them over the replay.
"""

from __future__ import annotations

import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mirror.asof import search as as_of_search
from mirror.search import images
from mirror.search.bitmap_search import ImageScope
from mirror.search.postings import Postings
from mirror.store import open_database
from mirror.store.database import database_file
from mirror.store.images import ImageWriter
from mirror.store.specs import SPECS
from mirror.store.writer import RecordWriter

from .test_records_as_of import TAGS, fresh_mirror, nights, play

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
                             columns="i.id", seconds=30, reader=as_of_search.reader(moment))
        return page.total, [row["id"] for row in page.rows]
    finally:
        conn.close()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(nights=nights, counters=st.sampled_from(["all", "daily"]))
def test_each_search_as_of_each_night_is_the_replays(nights, counters, empty_mirror, tmp_path, monkeypatch):
    db = fresh_mirror(empty_mirror, tmp_path, nights)
    path = database_file(db)
    _, answered = play(nights, counters, db, monkeypatch, lambda db, records: ImageWriter(db, "").save_page(records))
    db.conn.close()
    replays = []
    for night, (moment, answers) in enumerate(answered):  # each night's board alone, with no history
        replay = tmp_path / f"replay-{id(nights)}-{night}.db"
        shutil.copy(empty_mirror, replay)
        board = open_database(replay)
        ImageWriter(board, "").save_page(list(answers.values()))
        board.conn.close()
        replays.append((moment, replay))
    for moment, replay in replays:
        for q, sf, sd in SEARCHES:
            if counters == "daily" and (sf in COUNTED or any(f in q for f in COUNTED)):
                continue
            assert _searched(path, q, sf, sd, moment) == _searched(replay, q, sf, sd), (moment.text, q, sf, sd)
