"""`/socket/websocket`: the local site's firehose, as Philomena publishes its own.

The real site (``lib/philomena_web/channels/``) serves one Phoenix channel, ``firehose``, over
Phoenix's V2 WebSocket frames (each a JSON array ``[join_ref, ref, topic, event, payload]``). A
client joins it, sends a heartbeat about every 30 s, and receives each edit as it commits:

    image:create, image:update           {"image": <record as the API serves it>, "interactions": []}
    image:process                        {"image_id": N}
    image:tag_update                     {"image_id": N, "added": [names], "removed": [names]}
    image:source_update                  {"image_id": N, "added": [[urls]], "removed": [[urls]]}
    image:description_update             {"image_id": N, "added": new text, "removed": old text}
    image:merge                          {"image": <stub>, "duplicate_of_image": <record>}
    comment:create, comment:update       {"comment": <record>}
    post:create                          {"post": <record>, "topic": <record>, "forum": <record>}

The board's editor tells this module of each edit (``BoardEditor.listeners``); the payload is
made then, so an event carries the record as that edit left it. Anything a client sends besides
its join and heartbeats stops its channel, as on the site; a client silent for
:attr:`Firehose.idle_timeout` seconds is closed. There is no replay: a client away misses what
happened meanwhile. The ``ws*`` faults (:mod:`.faults`) refuse, drop, stall and garble connections.
"""

from __future__ import annotations

import asyncio
import json
import threading
from dataclasses import dataclass, field
from typing import Any

from starlette.routing import BaseRoute, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from ...serve.board import Board
from ...serve.http import origin_of
from ..board.editor import BoardEditor
from .faults import FaultState

__all__ = ["Firehose", "firehose_routes", "TOPIC"]

TOPIC = "firehose"
CLOSE = object()  # put in a connection's queue to close it
# What the wsgarble fault sends, in turn: not JSON, not a V2 frame, a payload the event never carries.
GARBLED = ('{"not json', '{"topic": "firehose"}',
           json.dumps([None, None, TOPIC, "image:update", {"image": "not a record"}]))


@dataclass(eq=False)
class Subscriber:
    """One joined connection: where its frames go, and the origin its file URLs name."""

    loop: asyncio.AbstractEventLoop
    origin: str
    queue: asyncio.Queue = field(default_factory=asyncio.Queue)

    def put(self, item: Any) -> None:
        self.loop.call_soon_threadsafe(self.queue.put_nowait, item)


class Firehose:
    """The site's broadcaster: the editor's edits made into events, sent to every joined client."""

    def __init__(self, editor: BoardEditor, board: Board, faults: FaultState) -> None:
        self.editor, self.board, self.faults = editor, board, faults
        self.idle_timeout = 60.0  # Phoenix closes a socket that stays silent this long
        self._lock = threading.Lock()
        self._subscribers: set[Subscriber] = set()
        editor.listeners.append(self._told)

    @property
    def connections(self) -> int:
        with self._lock:
            return len(self._subscribers)

    def subscribe(self, subscriber: Subscriber) -> None:
        with self._lock:
            self._subscribers.add(subscriber)

    def unsubscribe(self, subscriber: Subscriber) -> None:
        with self._lock:
            self._subscribers.discard(subscriber)

    def close_all(self) -> int:
        """Close every joined connection now (a restart of the site's nodes); how many there were."""
        with self._lock:
            subscribers = list(self._subscribers)
        for subscriber in subscribers:
            subscriber.put(CLOSE)
        return len(subscribers)

    def _told(self, event: str, facts: dict[str, Any]) -> None:
        with self._lock:
            subscribers = list(self._subscribers)
        payloads: dict[str, dict[str, Any]] = {}
        for subscriber in subscribers:
            if subscriber.origin not in payloads:
                payloads[subscriber.origin] = self.payload(event, facts, subscriber.origin)
            subscriber.put((event, payloads[subscriber.origin]))

    def payload(self, event: str, facts: dict[str, Any], origin: str) -> dict[str, Any]:
        """What the site broadcasts for ``event``, from the ids in ``facts``."""
        if event in ("image:create", "image:update"):
            return {"image": self.board.image_as_served(facts["image_id"], origin), "interactions": []}
        if event == "image:merge":
            return {"image": self.board.image_as_served(facts["image_id"], origin),
                    "duplicate_of_image": self.board.image_as_served(facts["duplicate_of"], origin)}
        if event.startswith("comment:"):
            return {"comment": self._raw("comments", "id = ?", facts["comment_id"])}
        if event == "post:create":
            topic = self.editor.topics[facts["topic_id"]]
            return {"post": self._raw("posts", "id = ?", facts["post_id"]),
                    "topic": self._raw("topics", "forum_short_name = ? AND slug = ?", topic["forum"], topic["slug"]),
                    "forum": self._raw("forums", "short_name = ?", topic["forum"])}
        return dict(facts)  # image:process and the *_update events carry their facts as they are

    def _raw(self, table: str, where: str, *params: Any) -> Any:
        text = self.editor.value(f"SELECT raw FROM {table} WHERE {where}", params)
        return None if text is None else json.loads(text)


def _frame(join_ref: Any, ref: Any, topic: str, event: str, payload: Any) -> str:
    return json.dumps([join_ref, ref, topic, event, payload], ensure_ascii=False)


def _reply(message: list[Any], status: str, response: dict[str, Any]) -> str:
    return _frame(message[0], message[1], message[2], "phx_reply", {"status": status, "response": response})


class Connection:
    """One client's socket: its reader answers the join and heartbeats, its writer sends events."""

    def __init__(self, websocket: WebSocket, hose: Firehose) -> None:
        self.ws, self.hose = websocket, hose
        profile = hose.faults.profile
        self.stalled = False
        self.drop_every, self.garble_every = profile.wsdrop, profile.wsgarble
        origin = origin_of(websocket)  # ws:// or wss://, where the files are at http:// or https://
        self.subscriber = Subscriber(asyncio.get_running_loop(), "http" + origin[2:] if origin.startswith("ws") else origin)
        self.joined: list[Any] | None = None
        self.sent = 0

    async def serve(self) -> None:
        reader = asyncio.create_task(self._read())
        try:
            await self._write()
        except WebSocketDisconnect:
            pass  # the client left first
        finally:
            reader.cancel()
            self.hose.unsubscribe(self.subscriber)

    async def _read(self) -> None:
        try:
            while True:
                async with asyncio.timeout(self.hose.idle_timeout):
                    text = await self.ws.receive_text()
                self._answer(text)
        except (WebSocketDisconnect, TimeoutError, RuntimeError):
            self.subscriber.put(CLOSE)

    def _answer(self, text: str) -> None:
        try:
            message = json.loads(text)
            join_ref, ref, topic, event, _payload = message
        except (ValueError, TypeError):
            self.subscriber.put(CLOSE)  # Phoenix cannot decode it: the socket goes
            return
        if topic == "phoenix" and event == "heartbeat":
            self.subscriber.put(_reply(message, "ok", {}))
        elif event == "phx_join" and topic == TOPIC and self.joined is None:
            self.joined = [join_ref, ref]
            self.subscriber.put(_reply(message, "ok", {}))
            self.hose.subscribe(self.subscriber)
        elif event == "phx_join":
            self.subscriber.put(_reply(message, "error", {"reason": "unmatched topic"}))
        else:  # firehose_channel.ex: any other message stops the channel
            self.hose.unsubscribe(self.subscriber)
            if self.joined:
                self.subscriber.put(_frame(self.joined[0], self.joined[0], TOPIC, "phx_close", {}))

    async def _write(self) -> None:
        while True:
            item = await self.subscriber.queue.get()
            if item is CLOSE:
                await self.ws.close(code=1011 if self.drop_every else 1000)
                return
            self.stalled = self.stalled or self.hose.faults.profile.wsstall
            if self.stalled:
                continue  # a stalled connection goes silent, open, for good
            if isinstance(item, str):
                await self.ws.send_text(item)
                continue
            event, payload = item
            self.sent += 1
            if self.garble_every and self.sent % self.garble_every == 0:
                await self.ws.send_text(GARBLED[(self.sent // self.garble_every - 1) % len(GARBLED)])
            await self.ws.send_text(_frame(None, None, TOPIC, event, payload))
            if self.drop_every and self.sent % self.drop_every == 0:
                await self.ws.close(code=1011)
                return


async def firehose_socket(websocket: WebSocket) -> None:
    hose: Firehose = websocket.app.state.firehose
    if hose.faults.profile.wsrefuse:
        await websocket.close()  # before accepting: the server answers the upgrade 403
        return
    await websocket.accept()
    await Connection(websocket, hose).serve()


def firehose_routes() -> list[BaseRoute]:
    return [WebSocketRoute("/socket/websocket", firehose_socket)]
