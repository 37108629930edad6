"""One Phoenix channel over one WebSocket: the client side of Philomena's firehose.

Phoenix's V2 serializer sends each message as a JSON array ``[join_ref, ref, topic, event,
payload]``. A client joins a topic (``phx_join``, answered by a ``phx_reply`` with a status),
sends ``[null, ref, "phoenix", "heartbeat", {}]`` every :data:`HEARTBEAT` seconds (the server
closes a socket silent for 60 s), and reads the topic's broadcasts, ``[null, null, topic, event,
payload]``. The WebSocket itself (handshake, ping and pong, close, TLS) is the ``websockets``
package's; this module speaks only the channel's frames.

A heartbeat whose reply has not come back when the next is due means a stalled connection (open,
silent): :class:`Stalled`, and the caller reconnects. A frame that is not a V2 message is handed
on as :class:`Malformed`, never raised: one bad frame must not cost the ones after it.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus

from ..errors import EXIT_NO_FIREHOSE, MirrorError

__all__ = ["HEARTBEAT", "Channel", "Event", "Malformed", "FirehoseRefused", "ChannelLost", "Stalled",
           "socket_url", "open_channel"]

HEARTBEAT = 30.0  # seconds between heartbeats, as Phoenix's own JavaScript client sends them


class FirehoseRefused(MirrorError):
    """The site does not let this client follow it: the upgrade refused, or the channel's join."""

    exit_code = EXIT_NO_FIREHOSE


class ChannelLost(Exception):
    """The connection closed, failed or went silent: reconnect (after a pause) and catch up."""


class Stalled(ChannelLost):
    """The connection is open but a heartbeat went unanswered."""


@dataclass(frozen=True)
class Event:
    """A broadcast on the joined topic, with the moment it arrived (``time.time()``)."""

    event: str
    payload: Any
    arrived: float


@dataclass(frozen=True)
class Malformed:
    """A frame that is not a V2 message of the joined topic: its text and why."""

    text: str
    reason: str
    arrived: float


def socket_url(base_url: str) -> str:
    """The firehose's address for a site at ``base_url``: ``wss://host/socket/websocket?vsn=2.0.0``
    (``ws://`` for a site configured as ``http://``)."""
    parts = urlsplit(base_url)
    scheme = "ws" if parts.scheme == "http" else "wss"
    path = parts.path.rstrip("/") + "/socket/websocket"
    return urlunsplit((scheme, parts.netloc, path, "vsn=2.0.0", ""))


class Channel:
    """A joined topic: iterate it for :class:`Event` and :class:`Malformed` items."""

    def __init__(self, ws: ClientConnection, topic: str, heartbeat: float) -> None:
        self.ws, self.topic, self.heartbeat = ws, topic, heartbeat
        self._ref = 0
        self._waiting: str | None = None  # the ref of the heartbeat not answered yet
        self._next_beat = time.monotonic() + heartbeat
        self.last_reply = time.time()  # when the site last answered a heartbeat (or the join)

    def _next_ref(self) -> str:
        self._ref += 1
        return str(self._ref)

    async def _send(self, frame: list[Any]) -> None:
        try:
            await self.ws.send(json.dumps(frame))
        except ConnectionClosed as e:
            raise ChannelLost(f"the firehose closed ({_close_text(e)})") from None

    async def join(self, timeout: float) -> None:
        ref = self._next_ref()
        await self._send([ref, ref, self.topic, "phx_join", {}])
        async with asyncio.timeout(timeout):
            while True:
                message = _parsed(await self._receive())
                if message and message[1] == ref and message[3] == "phx_reply":
                    break
        reply = message[4] if isinstance(message[4], dict) else {}
        if reply.get("status") != "ok":
            reason = (reply.get("response") or {}).get("reason", "no reason given")
            raise FirehoseRefused(f"the site refused to let this client join its {self.topic} channel ({reason})")
        self.last_reply = time.time()

    async def _receive(self) -> str:
        try:
            text = await self.ws.recv()
        except ConnectionClosed as e:
            raise ChannelLost(f"the firehose closed ({_close_text(e)})") from None
        return text if isinstance(text, str) else text.decode("utf-8", "replace")

    async def _beat(self) -> None:
        if self._waiting is not None:
            raise Stalled(f"no answer to a heartbeat in {self.heartbeat:g} s")
        self._waiting = self._next_ref()
        await self._send([None, self._waiting, "phoenix", "heartbeat", {}])
        self._next_beat = time.monotonic() + self.heartbeat

    async def __aiter__(self) -> AsyncIterator[Event | Malformed]:
        while True:
            try:
                async with asyncio.timeout(max(0.0, self._next_beat - time.monotonic())):
                    text = await self._receive()
            except TimeoutError:
                await self._beat()
                continue
            arrived = time.time()
            message = _parsed(text)
            if message is None:
                yield Malformed(text, "not a Phoenix V2 frame (a JSON array of five)", arrived)
            elif message[2] == "phoenix" and message[3] == "phx_reply":
                if message[1] == self._waiting:
                    self._waiting, self.last_reply = None, arrived
            elif message[2] != self.topic:
                yield Malformed(text, f"a frame of another topic ({str(message[2])[:40]!r})", arrived)
            elif message[3] in ("phx_close", "phx_error"):
                raise ChannelLost(f"the site closed the {self.topic} channel ({message[3]})")
            elif not isinstance(message[3], str):
                yield Malformed(text, "an event that is not a name", arrived)
            else:
                yield Event(message[3], message[4], arrived)


def _parsed(text: str) -> list[Any] | None:
    try:
        message = json.loads(text)
    except ValueError:
        return None
    return message if isinstance(message, list) and len(message) == 5 else None


def _close_text(error: ConnectionClosed) -> str:
    frame = error.rcvd or error.sent
    return f"code {frame.code}" if frame else "no close frame"


@asynccontextmanager
async def open_channel(url: str, topic: str = "firehose", *, heartbeat: float = HEARTBEAT,
                       timeout: float = 30.0, user_agent: str | None = None) -> AsyncIterator[Channel]:
    """Connect to ``url`` and join ``topic``.

    Raises :class:`FirehoseRefused` when the site answers the upgrade with an HTTP status (a proxy
    that lets no WebSocket through) or refuses the join, and :class:`ChannelLost` when the
    connection cannot be made or is lost.
    """
    agent = {"user_agent_header": user_agent} if user_agent else {}
    try:
        ws = await connect(url, open_timeout=timeout, max_size=2 ** 24, **agent)
    except InvalidStatus as e:
        raise FirehoseRefused(f"the site answered the firehose's upgrade with HTTP {e.response.status_code}") from None
    except (OSError, TimeoutError, InvalidHandshake) as e:
        raise ChannelLost(f"cannot reach the firehose ({e or type(e).__name__})") from None
    try:
        channel = Channel(ws, topic, heartbeat)
        try:
            await channel.join(timeout)
        except TimeoutError:
            raise Stalled(f"no answer to joining {topic} in {timeout:g} s") from None
        yield channel
    finally:
        await ws.close()
