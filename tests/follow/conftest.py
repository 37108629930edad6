"""The local site and a mirror of its images made by the nightly sync, which the follower keeps current."""

from __future__ import annotations

import pytest

from mirror.localsite.board.editor import BoardEditor
from mirror.localsite.http.server import SiteServer

from ..support.configs import site_config, sync


@pytest.fixture
def site():
    with SiteServer(BoardEditor.generate(seed=8, images=40)) as server:
        yield server


@pytest.fixture
def config(site, tmp_path):
    config = site_config(site, tmp_path)
    sync(config)[1].close()
    return config
