"""A mirrored board to search, and random queries over its vocabulary (shared by the search tests).

The board is the local site mirrored into a store database by `mirror sync` (the real path),
so the rows searched are the rows the mirror keeps.
"""

from __future__ import annotations

import sqlite3

import pytest
from hypothesis import strategies as st

from mirror.localsite.board.editor import BoardEditor
from mirror.localsite.http.server import SiteServer
from mirror.search import engine

from ..support.configs import site_config, sync
from .search_oracle import DOCS

RESOURCES = ("images", "tags", "comments", "galleries", "forums", "posts", "filters", "profiles")


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    """(sqlite-utils db, prepared sqlite3 connection, oracle docs by index) of a mirrored board."""
    tmp = tmp_path_factory.mktemp("board")
    with SiteServer(BoardEditor.generate(seed=21, images=200)) as site:
        enabled = {name: {"enabled": True, **({"scope": "all"} if name in ("comments", "galleries", "tags") else {})}
                   for name in RESOURCES}
        _, db = sync(site_config(site, tmp, **enabled), RESOURCES)
    conn = sqlite3.connect(tmp / "mirror.db")
    engine.prepare(conn)
    docs = {name: build(db) for name, build in DOCS.items()}
    assert all(docs.values()), {name: len(d) for name, d in docs.items()}
    return db, conn, docs


def vocabulary(db) -> list[str]:
    tags = [row[0] for row in db.execute("SELECT name FROM tags ORDER BY id LIMIT 60")]
    words = sorted({w.strip(".,!?").lower() for (text,) in db.execute("SELECT description FROM images LIMIT 80")
                    for w in (text or "").split() if w.isalpha()})[:30]
    return tags + [t[:3] + "*" for t in tags[:10]] + [t[:-1] + "~1" for t in tags[:5] if len(t) > 3] + [
        "score.gt:2", "score.lte:0", "width.gte:800", "faves:0", "id.lt:100", "tag_count.gt:4", "animated:true",
        "created_at.gte:2021", "created_at:2020-02", "first_seen_at.lt:3 years ago", "wilson_score.gt:0.3",
        "aspect_ratio.gte:1", "duration.gt:0", "gallery_id:1", "uploader:*", "source_url:*", "missing tag",
        "original_format:gif", "pixels.lt:500000", "rating_tag_count:1", "faved_by:x", "processed:true",
    ] + [f"description:{w}" for w in words[:15]] + ["description:*an*"]


@st.composite
def image_queries(draw, atoms):
    def expression(depth):
        if depth == 0 or draw(st.booleans()):
            return draw(st.sampled_from(atoms))
        left, right = expression(depth - 1), expression(depth - 1)
        form = draw(st.sampled_from(["{a}, {b}", "{a} OR {b}", "{a} AND {b}", "-({a})", "NOT ({a})",
                                     "({a} || {b}), {b}", "!({a})"]))
        return form.format(a=left, b=right)

    return expression(3)
