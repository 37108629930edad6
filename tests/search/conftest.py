"""A mirrored board to search, shared by the search tests.

The board is the local site mirrored into a store database by `mirror sync` (the real path),
so the rows searched are the rows the mirror keeps.
"""

from __future__ import annotations

import sqlite3

import pytest

from mirror.localsite.board.editor import BoardEditor
from mirror.localsite.http.server import SiteServer
from mirror.search import engine

from ..support.configs import RESOURCES, site_config, sync
from ..support.search_oracle import DOCS


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
