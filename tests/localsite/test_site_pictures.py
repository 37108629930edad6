"""`mirror site` serves pictures someone can look at by default (drawn artwork, then shapes), and
an archive made from it, as docs/use.md makes one, groups no two different pictures (issue 28)."""

from __future__ import annotations

import io
import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner
from PIL import Image

from mirror.cli import cli
from mirror.localsite.board.editor import BoardEditor
from mirror.localsite.files.pictures import artwork_for
from mirror.localsite.http.server import SiteServer

from ..support.configs import site_config, sync, write_config

MIRROR = str(Path(sys.executable).parent / "mirror")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _a_thumbnail(*options: str) -> Image.Image:
    """The ``thumb`` of the first large PNG or JPEG image of a `mirror site` started with ``options``."""
    port = _free_port()
    site = subprocess.Popen([MIRROR, "site", "--images", "20", "--port", str(port), *options],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}/api/v1/json/search/images?q=width.gte:300,height.gte:300&per_page=50"
        # It draws its pictures before it listens: seconds on a quiet machine, over 20 at a load of 10.
        deadline = time.monotonic() + 180
        while True:
            try:
                images = httpx.get(url).json()["images"]
                break
            except httpx.TransportError:
                if site.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"mirror site did not answer (exit status {site.poll()})")
                time.sleep(0.1)
        image = next(image for image in images if image["format"] in ("png", "jpg") and image["thumbnails_generated"])
        return Image.open(io.BytesIO(httpx.get(image["representations"]["thumb"]).content))
    finally:
        site.terminate()
        site.wait(10)


def test_mirror_site_serves_drawn_artwork_by_default_and_stand_ins_on_request():
    picture = _a_thumbnail()
    assert max(picture.size) >= 100 and len(picture.convert("RGB").getcolors(1 << 24)) > 1000  # a painting
    stand_in = _a_thumbnail("--stand-ins")
    assert len(stand_in.convert("RGB").getcolors(1 << 24)) < 100


def test_every_early_image_of_a_board_shows_a_different_painting():
    shown = [artwork_for(f"1-{image_id}") for image_id in range(1, 244)]
    assert None not in shown and len({art.name for art in shown}) == 243
    assert artwork_for("1-244") is None  # shapes from there on


@pytest.fixture(scope="module")
def readme_archive(tmp_path_factory):
    """A mirror of a `mirror site` board with pictures, thumbnails kept, as the steps of docs/use.md make."""
    tmp = tmp_path_factory.mktemp("readme-archive")
    editor = BoardEditor.generate(seed=1, images=300, with_pictures=True)
    with SiteServer(editor) as site:
        config = site_config(site, tmp, download={"enabled": True, "representations": ["thumb"],
                                                  "requests_per_second": 500, "partial_dir": str(tmp / "p")})
        _, db = sync(config)
    return write_config(config, tmp / "mirror.toml"), db


def test_duplicates_on_the_readmes_archive_groups_no_two_different_pictures(readme_archive):
    path, db = readme_archive
    hashed = db.execute("SELECT count(DISTINCT image_id) FROM image_hashes").fetchone()[0]
    assert hashed > 250
    result = CliRunner().invoke(cli, ["-c", str(path), "duplicates", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == {"distance": 12, "groups": []}
