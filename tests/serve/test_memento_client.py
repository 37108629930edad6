"""RFC 7089's own client library uses `mirror serve` as a web archive of the site it mirrors.

The local site is mirrored, an image retagged, and mirrored again; `mirror serve` runs as the CLI
runs it (a process of its own, on a real socket, configured with the site's ``base_url``). The
``memento-client`` package, asked for the site's own URL of the image at three datetimes through
the mirror's TimeGate, must land on the right memento each time: the first for a time before it,
the one in force between the syncs, the newest for now.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone

import httpx
import pytest
from memento_client import MementoClient

from mirror.asof import Moment
from mirror.dates import utc_text
from mirror.localsite.board.editor import BoardEditor
from mirror.localsite.http.server import SiteServer

from ..support.browsing import serving
from ..support.configs import mirror_config, sync, write_config


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("memento-client")
    editor = BoardEditor.generate(seed=21, images=8)
    with SiteServer(editor) as site:  # up throughout: the client asks the original for its own links
        config = mirror_config(site, tmp, editor.everything_filter_id)
        sync(config, ("images",))
        image = min(i for i in editor.images if not editor.images[i].get("hidden_from_users"))
        time.sleep(1.1)
        between = Moment(utc_text())
        time.sleep(1.1)  # the history keeps times to the second: the retag comes after the moment
        editor.edit_image(image, tags=[*editor.images[image]["tags"], "retagged later"])
        sync(config, ("images",))
        with serving(write_config(config, tmp / "mirror.toml")) as (api, _):
            yield {"site": site.url, "mirror": api.removesuffix("/api/v1/json"), "image": image, "between": between}


def _at(moment: Moment) -> datetime:
    return moment.datetime.astimezone(timezone.utc).replace(tzinfo=None)  # the client writes naive times as GMT


def test_memento_client_finds_the_right_memento_for_three_datetimes(archive):
    original = f"{archive['site']}/api/v1/json/images/{archive['image']}"
    mirror = archive["mirror"]
    listed = httpx.get(f"{mirror}/timemap/json/{original}").json()["mementos"]["list"]
    first, last = listed[0], listed[-1]
    in_force = max((m for m in listed if m["datetime"] <= archive["between"].text), key=lambda m: m["datetime"])
    client = MementoClient(timegate_uri=f"{mirror}/timegate/")
    asked = {"before the first": (datetime(2001, 1, 1), first), "between the syncs": (_at(archive["between"]), in_force),
             "now": (datetime.now(timezone.utc).replace(tzinfo=None), last)}
    for label, (when, expected) in asked.items():
        info = client.get_memento_info(original, when)
        assert info["original_uri"] == original, label
        assert info["timegate_uri"] == f"{mirror}/timegate/{original}", label
        closest = info["mementos"]["closest"]
        assert closest["uri"] == [expected["uri"]], label
        assert closest["datetime"] == _at(Moment(expected["datetime"])), label
        assert info["mementos"]["first"]["uri"] == [first["uri"]], label
    tags_then = httpx.get(in_force["uri"]).json()["image"]["tags"]
    tags_now = httpx.get(last["uri"]).json()["image"]["tags"]
    assert "retagged later" in tags_now and "retagged later" not in tags_then
    assert len({first["uri"], in_force["uri"], last["uri"]}) == 3


def test_the_mirrors_plain_url_names_the_site_as_the_original(archive):
    mirror, image = archive["mirror"], archive["image"]
    client = MementoClient(timegate_uri=f"{mirror}/timegate/")
    found = client.get_memento_info(f"{mirror}/api/v1/json/images/{image}", _at(archive["between"]))
    assert found["original_uri"] == f"{archive['site']}/api/v1/json/images/{image}"
    assert found["mementos"]["closest"]["uri"][0].startswith(f"{mirror}/as-of/")
