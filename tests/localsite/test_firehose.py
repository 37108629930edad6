"""The local site's firehose: Phoenix V2 frames over a real WebSocket, the events the real site sends
as the control API edits the board, and the ``ws*`` faults."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from mirror.localsite.board.editor import BoardEditor
from mirror.localsite.http.server import SiteServer


@pytest.fixture(scope="module")
def site():
    with SiteServer(BoardEditor.generate(seed=5, images=40)) as server:
        yield server


@pytest.fixture(autouse=True)
def no_faults(site):
    site.set_faults("")
    yield
    site.set_faults("")


def socket_url(site) -> str:
    return site.url.replace("http://", "ws://") + "/socket/websocket?vsn=2.0.0"


async def joined(ws) -> list:
    await ws.send(json.dumps(["0", "0", "firehose", "phx_join", {}]))
    return json.loads(await ws.recv())


async def frames(ws, n: int) -> list[list]:
    return [json.loads(await asyncio.wait_for(ws.recv(), 5)) for _ in range(n)]


def control(site, path: str, body: dict) -> dict:
    answer = httpx.post(site.url + "/_control" + path, json=body, timeout=10)
    answer.raise_for_status()
    return answer.json()


async def test_join_heartbeat_and_the_events_of_a_tag_and_description_edit(site):
    async with connect(socket_url(site)) as ws:
        assert await joined(ws) == ["0", "0", "firehose", "phx_reply", {"status": "ok", "response": {}}]
        await ws.send(json.dumps([None, "1", "phoenix", "heartbeat", {}]))
        assert json.loads(await ws.recv()) == [None, "1", "phoenix", "phx_reply", {"status": "ok", "response": {}}]
        before = site.editor.images[3]
        kept = [name for name in before["tags"] if name != "safe"][:2]
        await asyncio.to_thread(control, site, "/images/3/edit", {"tags": ["safe", *kept, "brand new tag"],
                                                                 "description": "Edited."})
        got = await frames(ws, 4)
    assert [f[3] for f in got] == ["image:tag_update", "image:update", "image:description_update", "image:update"]
    assert all(f[:3] == [None, None, "firehose"] for f in got)
    assert got[0][4]["image_id"] == 3 and got[0][4]["added"] == ["brand new tag"]
    assert got[0][4]["removed"] and set(got[0][4]["removed"]) <= set(before["tags"]) - {"safe", *kept}
    assert got[1][4]["image"]["id"] == 3 and "brand new tag" in got[1][4]["image"]["tags"]
    assert got[1][4]["interactions"] == []
    assert got[2][4] == {"image_id": 3, "added": "Edited.", "removed": before["description"]}


async def test_comments_posts_merges_and_uploads_processed(site):
    topic = next(iter(site.editor.topics.values()))
    async with connect(socket_url(site)) as ws:
        await joined(ws)
        await asyncio.to_thread(control, site, "/images/2/comments", {"body": "First!"})
        await asyncio.to_thread(control, site, f"/topics/{topic['id']}/posts", {"body": "A reply."})
        await asyncio.to_thread(control, site, "/images/7/merge", {"into": 8})
        await asyncio.to_thread(site.editor.edit_image, 9, thumbnails_generated=True)
        got = await frames(ws, 4)
    assert [f[3] for f in got] == ["comment:create", "post:create", "image:merge", "image:process"]
    assert got[0][4]["comment"]["body"] == "First!" and got[0][4]["comment"]["image_id"] == 2
    assert got[1][4]["post"]["body"] == "A reply." and got[1][4]["forum"]["short_name"] == topic["forum"]
    assert got[1][4]["topic"]["slug"] == topic["slug"]
    assert got[2][4]["image"]["duplicate_of"] == 8 and got[2][4]["duplicate_of_image"]["id"] == 8
    assert got[3][4] == {"image_id": 9}


async def test_other_topics_are_refused_and_any_other_message_closes_the_channel(site):
    async with connect(socket_url(site)) as ws:
        await ws.send(json.dumps(["0", "0", "images", "phx_join", {}]))
        assert json.loads(await ws.recv())[4]["status"] == "error"
        await joined(ws)
        await ws.send(json.dumps(["0", "2", "firehose", "shout", {}]))
        assert json.loads(await ws.recv()) == ["0", "0", "firehose", "phx_close", {}]


async def test_wsrefuse_answers_the_upgrade_403(site):
    site.set_faults("wsrefuse")
    with pytest.raises(InvalidStatus) as refused:
        async with connect(socket_url(site)):
            pass
    assert refused.value.response.status_code == 403


async def test_wsgarble_sends_malformed_frames_between_the_events_and_wsdrop_closes(site):
    site.set_faults("wsgarble:2,wsdrop:3")
    async with connect(socket_url(site)) as ws:
        await joined(ws)
        await asyncio.to_thread(control, site, "/images/2/comments", {"n": 3})
        texts = [await asyncio.wait_for(ws.recv(), 5) for _ in range(4)]
        with pytest.raises(ConnectionClosed) as closed:
            await asyncio.wait_for(ws.recv(), 5)
    assert [json.loads(t)[3] for t in (texts[0], texts[2], texts[3])] == ["comment:create"] * 3
    assert texts[1] == '{"not json'
    assert closed.value.rcvd.code == 1011


async def test_wsstall_leaves_the_socket_open_and_silent(site):
    site.set_faults("wsstall")
    async with connect(socket_url(site)) as ws:
        await ws.send(json.dumps(["0", "0", "firehose", "phx_join", {}]))
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(ws.recv(), 0.5)
