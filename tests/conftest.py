"""Shared fixtures: the local site on 127.0.0.1, and a finished mirror served by `mirror serve`.

Helpers the tests call (configs, syncs, the site's own listings) are in :mod:`tests.support.configs`.
"""

from __future__ import annotations

import pytest

from mirror.localsite.board.editor import BoardEditor
from mirror.localsite.http.server import LoopbackServer, SiteServer
from mirror.serve.app import create_serve_app
from mirror.serve.board import Board
from mirror.wiring import open_storage

from .support.configs import RESOURCES, Archive, mirror_config, sync


@pytest.fixture(scope="module")
def upload_site():
    """A local site with real pictures that takes uploads and processes them after 0.3 s."""
    editor = BoardEditor.generate(seed=11, images=40, with_pictures=True)
    editor.processing_delay = 0.3
    editor.tag_blacklist = ("forbidden thing",)
    with SiteServer(editor) as server:
        yield server


@pytest.fixture
def site():
    with SiteServer(BoardEditor.generate(seed=3, images=260)) as server:
        yield server


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    """A mirror of the local site, with its files, and `mirror serve` over it.

    Shared by the tests that talk to the archive as a client would (`mirror serve` itself,
    gallery-dl); they only read it, so one mirror per module is enough."""
    tmp = tmp_path_factory.mktemp("archive")
    with SiteServer(BoardEditor.generate(seed=6, images=120)) as site:
        config = mirror_config(site, tmp, site.editor.everything_filter_id)
        report, db = sync(config, RESOURCES)
        everything = site.editor.everything_filter_id
    with LoopbackServer(create_serve_app(Board(config.database), open_storage(config))) as served:
        yield Archive(config, db, served, everything)
