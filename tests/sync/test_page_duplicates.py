"""A page holding one image twice, in full and as a stub, syncs end to end and loses nothing.

A record hidden while the site builds a page can come in it twice: in full from the half built
before, as a stub from the half built after. The fault proxy (:mod:`tests.fault_proxy`) in front of
the local site on 127.0.0.1 serves such pages: every 6th visible image is sent a second time as
the stub of it hidden, before or after the full copy.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.requests import Request
from starlette.responses import Response

from mirror.localsite.board.editor import BoardEditor
from mirror.localsite.board.render import image_stub
from mirror.localsite.http.server import SiteServer

from ..support.configs import changed, site_config, sync
from ..support.fault_proxy import FaultProxy, Rule, Upstream, passed_on

EVERY = 6


@pytest.fixture(scope="module")
def site() -> Iterator[SiteServer]:
    """Two pages of images; each test only reads the site."""
    with SiteServer(BoardEditor.generate(seed=3, images=60)) as server:
        yield server


@pytest.fixture
def proxy(site: SiteServer) -> Iterator[FaultProxy]:
    with FaultProxy(site.url) as server:
        yield server


def with_stub_copies(stub_first: bool, full: dict[int, Any], stubs: dict[int, Any]) -> Rule:
    """Search pages with every EVERY-th visible image also sent as its stub (``full`` and ``stubs``
    collect what was served, by id)."""
    async def rule(request: Request, upstream: Upstream) -> Response | None:
        if not request.url.path.endswith("/search/images"):
            return None
        response = await upstream()
        answer = response.json()
        page = []
        for record in answer["images"]:
            copies = [record]
            if "tags" in record and record["id"] % EVERY == 0:
                stub = image_stub({**record, "duplicate_of": None, "deletion_reason": "Rule #1",
                                   "updated_at": "2030-01-01T00:00:00Z"})
                copies = [stub, record] if stub_first else [record, stub]
                full[record["id"]], stubs[record["id"]] = record, stub
            page += copies
        answer["images"] = page
        return passed_on(response, json.dumps(answer).encode())

    return rule


@pytest.mark.parametrize("stored", [False, True], ids=["not yet stored", "already stored"])
@pytest.mark.parametrize("stub_first", [True, False], ids=["stub then full", "full then stub"])
def test_a_sync_meeting_an_image_in_full_and_as_a_stub_in_one_page_keeps_both(site, proxy, tmp_path,
                                                                              stub_first, stored):
    config = changed(site_config(site, tmp_path), site={"base_url": proxy.url})
    if stored:
        _, db = sync(config)
        db.execute("DELETE FROM sync_state WHERE name = 'images'")  # the next run walks every image again
        db.conn.commit()
        db.close()
    full: dict[int, Any] = {}
    stubs: dict[int, Any] = {}
    proxy.rule = with_stub_copies(stub_first, full, stubs)
    report, db = sync(config)
    assert full and report.rejected == 0 and db["rejects"].count == 0
    # Each image counts once, however many copies a page held (293 "new" for 275 rows, before).
    assert report.new == (0 if stored else db["images"].count)
    rows = {row["id"]: row for row in db.query("SELECT * FROM images")}
    assert set(full) <= set(rows)
    for image_id, record in full.items():
        row = rows[image_id]
        assert json.loads(row["raw"]) == record and json.loads(row["stub"]) == stubs[image_id]
        assert row["hidden_from_users"] == 1 and row["deletion_reason"] == "Rule #1"
        assert json.loads(row["tags"]) == record["tags"]
        links = {r[0] for r in db.execute("SELECT tag_id FROM image_tags WHERE image_id = ?", [image_id])}
        assert links == set(record["tag_ids"])


def test_an_empty_page_claiming_a_total_is_reported_not_passed_in_silence(site, proxy, tmp_path):
    async def empty(request: Request, upstream: Upstream) -> Response | None:
        if not request.url.path.endswith("/search/images"):
            return None
        response = await upstream()
        return passed_on(response, json.dumps({"images": [], "interactions": [], "total": 275}).encode())

    proxy.rule = empty
    report, db = sync(changed(site_config(site, tmp_path), site={"base_url": proxy.url}))
    assert report.new == 0 and "the site counted 275: 275 not seen" in "; ".join(report.notes)
    message = db.execute("SELECT message FROM sync_runs WHERE resource = 'images'").fetchone()[0]
    assert "275 not seen" in message
