"""Shared fixtures: the local site on 127.0.0.1, and a finished mirror served by `mirror serve`.

Helpers the tests call (configs, syncs, the site's own listings) are in :mod:`tests.support.configs`.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

import pytest

from mirror.localsite.board.editor import BoardEditor
from mirror.localsite.http.server import LoopbackServer, SiteServer
from mirror.serve.app import create_serve_app
from mirror.serve.board import Board
from mirror.wiring import open_storage
from mirror.workers import usable_cores

from .support.boards import copy_generated_boards
from .support.configs import RESOURCES, Archive, mirror_config, sync
from .support.quick import QUICK
from .support.slowest import SLOWEST
from .support.tls import share_default_tls_context


def _picture_cache() -> None:
    """The drawn pictures (:mod:`mirror.localsite.files.drawn`) of one test run, shared by its
    workers (they inherit the variable set here before they start) and removed after it, so that
    tests never write to the user's cache and never read pictures an older run drew."""
    if "MIRROR_PICTURE_CACHE" in os.environ:
        return
    folder = tempfile.mkdtemp(prefix="mirror-test-pictures-")
    os.environ["MIRROR_PICTURE_CACHE"] = folder
    atexit.register(shutil.rmtree, folder, ignore_errors=True)


_picture_cache()
copy_generated_boards()
share_default_tls_context()


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: a worker more than the cores. A worker often waits (on a `mirror` process it
    started, a browser, PostgreSQL, a socket), and with one per core a core then idled: on 2
    cores the whole suite took 12 min with 2 workers, 8 min 38 s with 3 (2026-11-27)."""
    return usable_cores() + 1


def pytest_configure(config: pytest.Config) -> None:
    """Under xdist, files are handed out in the collection's order (:mod:`tests.support.slowest`)."""
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the tests of :data:`tests.support.quick.QUICK` as ``quick`` (``pytest -m quick``), and
    put the files of :data:`tests.support.slowest.SLOWEST` first, slowest first (each file's own
    order kept)."""
    for item in items:
        if item.nodeid.startswith(QUICK):
            item.add_marker(pytest.mark.quick)
    rank = {path: i for i, path in enumerate(SLOWEST)}
    items.sort(key=lambda item: rank.get(item.nodeid.partition("::")[0], len(SLOWEST)))


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
