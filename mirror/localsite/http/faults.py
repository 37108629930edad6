"""Fault profiles: the misbehaviour of a real site and its proxy, reproducible on demand.

A profile is written as a comma list, each item optionally with parameters:

    ratelimit[:LIMIT/SECONDS]   the production proxy (default 30/5 per client IP): 429 + HTML +
                                Retry-After (seconds until a slot frees, rounded up)
    flaky[:PERIOD/BURST]        every PERIOD-th request starts a burst of BURST failures
                                (default 7/2), cycling 503 (Retry-After: 1), 502, 500
    drops[:EVERY]               every EVERY-th request (default 5) loses its connection:
                                alternately closed before any response, and a truncated body
                                (Content-Length larger than what is sent)
    corrupt[:EVERY]             every EVERY-th file request (default 5) gets a body of the right
                                length with one byte changed (`/img` only; API answers are served as is)
    badfiles[:EVERY]            every EVERY-th file request (default 5) answers 200 with what is not
                                the file: alternately an HTML page, and the file's first half with a
                                Content-Length to match (`/img` only)
    slow[:SECONDS]              every response is delayed (default 0.2 s), files included
    down[:STATUS]               every request answers STATUS (default 503) with an HTML page
    busy[:SECONDS/COUNT]        the first COUNT requests (default 1) after the profile is set
                                answer 503 with Retry-After: SECONDS (default 1), then all are
                                served: a host under load that says when to come back
    redirect:URL                the first request for each file answers 302 Found to URL + its
                                path (`/img` only; later requests for it are served): URL another
                                server for a file host that sends clients elsewhere, or this site
                                itself for a redirect within one origin
    trickle[:EVERY]             the files of every EVERY-th image (id divisible by EVERY, default
                                5) are sent 4 bytes every 0.1 s: never idle long enough for a read
                                timeout, never done in reasonable time

A site can also answer 200 with list pages that are wrong. These faults rewrite the records of
list answers (a JSON object with `total`: searches, forums, topics, posts, filters):

    repeat                      each path's first list answer is served again for every later
                                request on that path, whatever the query or page: a site stuck
                                on one page
    badids[:VALUE[/EVERY]]      records whose id is a multiple of EVERY (default 1: all) get a
                                spoilt `id`: VALUE is missing (no key), null, string ("12"),
                                negative (-id-1) or an integer to put there (default missing)
    vanish[:EVERY]              records whose id is a multiple of EVERY (default 10) are left out
                                of pages while `total` still counts them: rows deleted or hidden
                                while a walk is under way, or missing from the database behind
                                the search index

The firehose (`/socket/websocket`, :mod:`.firehose`) has faults of its own; counted per
connection, they change how each new connection is served:

    wsrefuse                    the WebSocket upgrade is refused (HTTP 403): a proxy that does not
                                let WebSockets through
    wsdrop[:EVERY]              the connection is closed (code 1011) after every EVERY-th event
                                it carries (default 5): whatever happens until the client is back
                                is never sent to it
    wsstall                     every connection, those already open included, stays open and
                                goes silent for good: no events, no replies to joins or heartbeats
    wsgarble[:EVERY]            before every EVERY-th event (default 3), one malformed frame: in
                                turn text that is not JSON, JSON that is not a V2 frame, and an
                                event whose payload is not what the event carries

Faults are counter-based (the record faults and trickle go by id), so a given request sequence always meets
the same faults. They apply to `/api`, `/img` and `/dumps` paths only (the faults marked `/img`
only, to image files alone); the `/_control` API is never faulted.
"""

from __future__ import annotations

import asyncio
import json
import math
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ...serve.http import json_bytes
from ..files.img import image_id_of

__all__ = ["FaultProfile", "FaultState", "FaultMiddleware", "DOWNTIME_HTML", "RAW_SEND_KEY"]

RAW_SEND_KEY = "mirror.raw_send"  # the server's own `send`, stashed in the scope by SiteApp

DOWNTIME_HTML = b"""<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><title>Philomena - Downtime</title></head>
<body>
<h1>Philomena - Downtime</h1>
<p>The site is experiencing high load or is down for maintenance. Please try again in a few minutes.</p>
</body>
</html>
"""

FAULTED_PREFIXES = ("/api/", "/img/", "/dumps/")
FILE_FAULTS = ("corrupt", "html", "halved")  # faults that only file requests meet
# A trickled file: this many bytes, then this long a pause, over and over.
TRICKLE_BYTES = 4
TRICKLE_PAUSE = 0.1


@dataclass(frozen=True)
class FaultProfile:
    """Which faults are on, with their parameters; `FaultProfile()` means none."""

    ratelimit: tuple[int, float] | None = None
    flaky: tuple[int, int] | None = None
    drops: int | None = None
    corrupt: int | None = None
    badfiles: int | None = None
    slow: float | None = None
    down: int | None = None
    busy: tuple[int, int] | None = None
    repeat: bool = False
    badids: tuple[str, int] | None = None
    vanish: int | None = None
    redirect: str | None = None
    trickle: int | None = None
    wsrefuse: bool = False
    wsdrop: int | None = None
    wsstall: bool = False
    wsgarble: int | None = None

    @property
    def rewrites(self) -> bool:
        """Whether list answers are rewritten (their bodies must be read whole first)."""
        return bool(self.repeat or self.badids or self.vanish)

    @classmethod
    def parse(cls, spec: str) -> FaultProfile:
        """Parse `"ratelimit"`, `"ratelimit:10/2,flaky"`, `"slow:0.05"`, `"down:502"`..."""
        profile = cls()
        for item in filter(None, (part.strip() for part in (spec or "").split(","))):
            name, _, arg = item.partition(":")
            try:
                profile = replace(profile, **{name: _KINDS[name].parse(arg)})
            except KeyError:
                raise ValueError(f"unknown fault {name!r}; expected one of {', '.join(_KINDS)}") from None
            except (TypeError, ValueError):
                raise ValueError(f"bad parameters for fault {name!r}: {arg!r}") from None
        return profile

    def __str__(self) -> str:
        parts = []
        for name, kind in _KINDS.items():
            value = getattr(self, name)
            if value is not None and (value or kind.zero_is_on):
                text = kind.format(value)
                parts.append(f"{name}:{text}" if text else name)
        return ",".join(parts)


def _pair(arg: str, default: tuple[Any, Any], first: type, second: type) -> tuple[Any, Any]:
    if not arg:
        return default
    a, _, b = arg.partition("/")
    return first(a), second(b) if b else default[1]


def _no_parameters(arg: str) -> bool:
    if arg:
        raise ValueError(arg)
    return True


SPOILT_IDS = ("missing", "null", "string", "negative")


def _bad_ids(arg: str) -> tuple[str, int]:
    value, every = _pair(arg, ("missing", 1), str, int)
    if value not in SPOILT_IDS:
        int(value)  # an integer to put there, or a ValueError
    if every < 1:
        raise ValueError(every)
    return value, every


def _absolute_url(arg: str) -> str:
    if not arg.startswith(("http://", "https://")):
        raise ValueError(f"expected an http:// or https:// URL, got {arg!r}")
    return arg.rstrip("/")


def _count(default: int) -> Callable[[str], int]:
    return lambda arg: int(arg) if arg else default


@dataclass(frozen=True)
class FaultKind:
    """How one fault is written in a profile: its parameters read from text and written back
    (``""`` for a fault without parameters); ``zero_is_on`` when a zero still means the fault is on."""

    parse: Callable[[str], Any]
    format: Callable[[Any], str] = str
    zero_is_on: bool = False


def _slash(value: tuple[Any, Any]) -> str:
    return f"{value[0]}/{value[1]:g}" if isinstance(value[1], float) else f"{value[0]}/{value[1]}"


# Every fault a profile can name, in the order a profile is written.
_KINDS: dict[str, FaultKind] = {
    "ratelimit": FaultKind(lambda arg: _pair(arg, (30, 5.0), int, float), _slash),
    "flaky": FaultKind(lambda arg: _pair(arg, (7, 2), int, int), _slash),
    "drops": FaultKind(_count(5)),
    "corrupt": FaultKind(_count(5)),
    "badfiles": FaultKind(_count(5)),
    "slow": FaultKind(lambda arg: float(arg) if arg else 0.2, lambda value: f"{value:g}", zero_is_on=True),
    "down": FaultKind(_count(503)),
    "busy": FaultKind(lambda arg: _pair(arg, (1, 1), int, int), _slash),
    "repeat": FaultKind(_no_parameters, lambda value: ""),
    "badids": FaultKind(_bad_ids, _slash),
    "vanish": FaultKind(_count(10)),
    "redirect": FaultKind(_absolute_url),
    "trickle": FaultKind(_count(5)),
    "wsrefuse": FaultKind(_no_parameters, lambda value: ""),
    "wsdrop": FaultKind(_count(5)),
    "wsstall": FaultKind(_no_parameters, lambda value: ""),
    "wsgarble": FaultKind(_count(3)),
}


@dataclass(frozen=True)
class Fault:
    """What to do with one request: `kind` is respond, drop, truncate, or a file fault (FILE_FAULTS)."""

    kind: str
    status: int = 0
    retry_after: int | None = None


class FaultState:
    """The live profile plus its counters and rate-limit windows; switchable while serving."""

    def __init__(self, profile: FaultProfile | None = None, clock: Any = time.monotonic) -> None:
        self._lock = threading.Lock()
        self.clock = clock
        self.set(profile or FaultProfile())

    @property
    def profile(self) -> FaultProfile:
        return self._profile

    def set(self, profile: FaultProfile | str) -> None:
        """Switch profile (a FaultProfile or a spec string) and reset every counter."""
        if isinstance(profile, str):
            profile = FaultProfile.parse(profile)
        with self._lock:
            self._profile = profile
            self._count = 0
            self._windows: dict[str, deque[float]] = {}
            self._first_answers: dict[str, dict[str, Any]] = {}
            self._redirected: set[str] = set()

    def rewrite(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """A list answer as the profile serves it: repeated, records left out, ids spoilt."""
        profile = self._profile
        if profile.repeat:
            with self._lock:
                body = self._first_answers.setdefault(path, body)
        key = _records_key(body)
        if key is None:
            return body
        records = body[key]
        if profile.vanish:
            records = [r for r in records if not _picked(r, profile.vanish)]
        if profile.badids:
            value, every = profile.badids
            records = [_spoilt(r, value) if _picked(r, every) else r for r in records]
        return {**body, key: records}

    def redirect(self, path: str) -> str | None:
        """Where the `redirect` fault sends this request for the file at `path`, or None to serve
        it: only the first request for each file is redirected, so a client that follows a redirect
        back to this site gets the file."""
        with self._lock:
            target = self._profile.redirect
            if not target or path in self._redirected:
                return None
            self._redirected.add(path)
            return target + path

    def trickles(self, path: str) -> bool:
        """Whether the file at `path` is to be trickled (its image id is divisible by EVERY)."""
        every = self._profile.trickle
        image_id = image_id_of(path.removeprefix("/img/"))
        return bool(every) and image_id is not None and image_id % every == 0

    def decide(self, client: str) -> Fault | None:
        """The fault for the next request from `client`, or None to serve it normally."""
        with self._lock:
            profile = self._profile
            if profile.ratelimit:
                retry_after = self._rate_limited(client, *profile.ratelimit)
                if retry_after is not None:
                    return Fault("respond", 429, retry_after)
            self._count += 1
            n = self._count
            if profile.down:
                return Fault("respond", profile.down)
            if profile.busy and n <= profile.busy[1]:
                return Fault("respond", 503, profile.busy[0])
            if profile.flaky:
                period, burst = profile.flaky
                if n >= period and n % period < burst:
                    status = (503, 502, 500)[(n // period + n % period) % 3]
                    return Fault("respond", status, 1 if status == 503 else None)
            if profile.drops and n % profile.drops == 0:
                return Fault("drop" if (n // profile.drops) % 2 else "truncate")
            if profile.corrupt and n % profile.corrupt == 0:
                return Fault("corrupt")
            if profile.badfiles and n % profile.badfiles == 0:
                return Fault("html" if (n // profile.badfiles) % 2 else "halved")
            return None

    def _rate_limited(self, client: str, limit: int, window: float) -> int | None:
        """Sliding window of accepted requests; returns seconds to wait when full."""
        now = self.clock()
        events = self._windows.setdefault(client, deque())
        while events and events[0] <= now - window:
            events.popleft()
        if len(events) >= limit:
            return max(1, math.ceil(events[0] + window - now))
        events.append(now)
        return None


def _records_key(body: Any) -> str | None:
    """Where a list answer keeps its records (`images`, `topics`...); None for other answers."""
    if not isinstance(body, dict) or "total" not in body:
        return None
    return next((k for k, v in body.items() if isinstance(v, list) and k != "interactions"), None)


def _picked(record: Any, every: int) -> bool:
    return isinstance(record, dict) and type(record.get("id")) is int and record["id"] % every == 0


def _spoilt(record: dict[str, Any], value: str) -> dict[str, Any]:
    """``record`` with its id replaced as `badids` says."""
    rest = {k: v for k, v in record.items() if k != "id"}
    spoilt = {"null": None, "string": str(record["id"]), "negative": -record["id"] - 1}
    if value == "missing":
        return rest
    return {"id": spoilt[value] if value in spoilt else int(value), **rest}


class FaultMiddleware:
    """Applies the current `FaultState` to `/api`, `/img` and `/dumps` requests."""

    def __init__(self, app: ASGIApp, state: FaultState) -> None:
        self.app, self.state = app, state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(FAULTED_PREFIXES):
            await self.app(scope, receive, send)
            return
        is_file = scope["path"].startswith("/img/")
        if is_file and (location := self.state.redirect(scope["path"])):
            await _redirect(send, location)
            return
        client = (scope.get("client") or ("unknown", 0))[0]
        fault = self.state.decide(client)
        delay = self.state.profile.slow
        if delay and not (fault and fault.status == 429):
            await asyncio.sleep(delay)
        served = fault is None or (fault.kind in FILE_FAULTS and not is_file)  # API answers are not corrupted
        if served and self.state.profile.rewrites and scope["path"].startswith("/api/"):
            await self._rewritten(scope, receive, send)
        elif served and self.state.trickles(scope["path"]):
            await self._trickled(scope, receive, send)
        elif served:
            await self.app(scope, receive, send)
        elif fault.kind == "respond":
            await _html_error(send, fault.status, fault.retry_after)
        elif fault.kind == "drop":
            await _abort(scope, receive)
        elif fault.kind == "corrupt":
            await self._corrupted(scope, receive, send)
        elif fault.kind == "html":
            await _html_error(send, 200, None)
        elif fault.kind == "halved":
            await self._halved(scope, receive, send)
        else:
            await self._truncated(scope, receive, send)

    async def _captured(self, scope: Scope, receive: Receive) -> tuple[Message, bytearray]:
        """The real response: its start message and its whole body."""
        start: Message = {}
        body = bytearray()

        async def capture(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                start = message
            elif message["type"] == "http.response.body":
                body.extend(message.get("body", b""))

        await self.app(scope, receive, capture)
        return start, body

    async def _corrupted(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve the real response with one byte of its body flipped (same length, same headers)."""
        start, body = await self._captured(scope, receive)
        if body:
            body[len(body) // 2] ^= 0xFF
        await send(start)
        await send({"type": "http.response.body", "body": bytes(body)})

    async def _halved(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve the first half of the real body as if it were all of it (Content-Length agrees)."""
        start, body = await self._captured(scope, receive)
        half = bytes(body[: len(body) // 2])
        headers = [(k, v) for k, v in start.get("headers", []) if k.lower() not in (b"content-length", b"etag")]
        headers.append((b"content-length", str(len(half)).encode()))
        await send({**start, "headers": headers})
        await send({"type": "http.response.body", "body": half})

    async def _rewritten(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve the real response, a successful list answer rewritten by :meth:`FaultState.rewrite`."""
        start, body = await self._captured(scope, receive)
        if start.get("status") == 200 and _records_key(parsed := _json_or_none(body)) is not None:
            body = bytearray(json_bytes(self.state.rewrite(scope["path"], parsed)))
        headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
        headers.append((b"content-length", str(len(body)).encode()))
        await send({**start, "headers": headers})
        await send({"type": "http.response.body", "body": bytes(body)})

    async def _trickled(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve the real response a few bytes at a time (a client that leaves stops nothing:
        uvicorn drops what is sent after a disconnect)."""
        start, body = await self._captured(scope, receive)
        await send(start)
        for offset in range(0, len(body), TRICKLE_BYTES):
            await asyncio.sleep(TRICKLE_PAUSE)
            chunk = bytes(body[offset:offset + TRICKLE_BYTES])
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b""})

    async def _truncated(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve the real response's headers and half its body, then cut the connection."""
        start, body = await self._captured(scope, receive)
        length = max(len(body), 2)
        headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
        headers.append((b"content-length", str(length).encode()))
        await send({"type": "http.response.start", "status": start.get("status", 200), "headers": headers})
        await send({"type": "http.response.body", "body": bytes(body[: length // 2]), "more_body": True})
        await _abort(scope, receive)


def _json_or_none(body: bytes | bytearray) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        return None


async def _redirect(send: Send, location: str) -> None:
    headers = [(b"location", location.encode()), (b"content-length", b"0")]
    await send({"type": "http.response.start", "status": 302, "headers": headers})
    await send({"type": "http.response.body", "body": b""})


async def _html_error(send: Send, status: int, retry_after: int | None) -> None:
    headers = [(b"content-type", b"text/html; charset=utf-8"),
               (b"content-length", str(len(DOWNTIME_HTML)).encode())]
    if retry_after is not None:
        headers.append((b"retry-after", str(retry_after).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": DOWNTIME_HTML})


class ConnectionDropped(Exception):
    """Raised to make the server close the connection when its transport is out of reach."""


async def _abort(scope: Scope, receive: Receive) -> None:
    """Close the TCP connection now, without completing (or starting) a response.

    ASGI has no "close" message, so this reaches for uvicorn's transport through the server's
    own `send` (a bound method of its request cycle), then waits for the disconnect so that the
    server does not try to answer a 500 on a closed socket.
    """
    raw_send = scope.get(RAW_SEND_KEY)
    transport = getattr(getattr(raw_send, "__self__", None), "transport", None)
    if transport is None:
        raise ConnectionDropped("fault profile dropped the connection")
    transport.close()
    try:
        async with asyncio.timeout(2):
            while (await receive())["type"] != "http.disconnect":
                pass
    except TimeoutError:
        pass
