"""A fault proxy: a small reverse proxy on 127.0.0.1 in front of the local site that rewrites answers.

The site's fault profiles (:mod:`mirror.localsite.http.faults`) cover what a struggling site does by counter;
some faults need a precise answer instead: a 504, a ``Retry-After`` written as an HTTP-date, a
page whose JSON is cut, a record with a string where an int belongs. The proxy passes every request
through (keeping the ``Host`` it was asked under, so the site's file URLs point at the proxy too)
and lets a :data:`Rule` replace or rewrite the answer.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from mirror.localsite.http.faults import DOWNTIME_HTML, RAW_SEND_KEY, _abort
from mirror.localsite.http.server import LoopbackServer


@dataclass(frozen=True)
class Cut:
    """An answer whose headers promise ``body`` whole but whose connection closes halfway."""

    status: int
    headers: list[tuple[bytes, bytes]]
    body: bytes


Upstream = Callable[[], Awaitable[httpx.Response]]
# Given the request and a way to ask the site, the answer to send; None passes the site's answer on.
Rule = Callable[[Request, Upstream], Awaitable[Response | Cut | None]]


@dataclass(frozen=True)
class Seen:
    """One request the proxy answered: when, what, with which status, and the wait it asked for."""

    time: float
    path: str
    status: int
    retry_after: float | None


class FaultProxy(LoopbackServer):
    """The proxy, served from a daemon thread; set ``rule`` to change what it does."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.rule: Rule | None = None
        self.seen: list[Seen] = []

        async def app(scope: Scope, receive: Receive, send: Send) -> None:  # a function: uvicorn sees ASGI 3
            await self._answer(scope, receive, send)

        super().__init__(app)

    async def _answer(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        started = time.monotonic()
        async with httpx.AsyncClient(base_url=self.upstream, timeout=30) as client:
            async def upstream() -> httpx.Response:
                headers = [(k, v) for k, v in request.headers.raw if k.lower() != b"accept-encoding"]
                return await client.get(request.url.path, params=request.url.query, headers=headers)

            answer = await self.rule(request, upstream) if self.rule else None
            if answer is None:
                answer = passed_on(await upstream())
        self.seen.append(Seen(started, request.url.path, answer.status_code if isinstance(answer, Response)
                              else answer.status, _asked_wait(answer)))
        if isinstance(answer, Cut):
            await _send_cut(scope, receive, send, answer)
        else:
            await answer(scope, receive, send)


def passed_on(response: httpx.Response, body: bytes | None = None) -> Response:
    """The site's answer as the proxy sends it (with ``body`` instead of its own, if given)."""
    headers = {k: v for k, v in response.headers.items() if k.lower() not in ("content-length", "transfer-encoding")}
    return Response(response.content if body is None else body, response.status_code, headers=headers)


async def _send_cut(scope: Scope, receive: Receive, send: Send, cut: Cut) -> None:
    scope[RAW_SEND_KEY] = send  # what the site's fault layer closes the connection through
    headers = [*cut.headers, (b"content-length", str(len(cut.body)).encode())]
    await send({"type": "http.response.start", "status": cut.status, "headers": headers})
    await send({"type": "http.response.body", "body": cut.body[: len(cut.body) // 2], "more_body": True})
    await _abort(scope, receive)


def _asked_wait(answer: Response | Cut) -> float | None:
    """Seconds the answer's Retry-After asks for, measured now (an HTTP-date counts from now)."""
    value = answer.headers.get("retry-after") if isinstance(answer, Response) else None
    if value is None:
        return None
    if value.isdigit():
        return float(value)
    return email.utils.parsedate_to_datetime(value).timestamp() - time.time()


# --- rules -----------------------------------------------------------------------------------------

def on_first_api_requests(count: int, answer: Callable[[], Response | Cut]) -> Rule:
    """The first ``count`` API requests get ``answer()``; the rest, and every file, pass through."""
    state = {"left": count}

    async def rule(request: Request, upstream: Upstream) -> Response | Cut | None:
        if not request.url.path.startswith("/api/") or state["left"] <= 0:
            return None
        state["left"] -= 1
        return answer()

    return rule


def status(code: int, retry_after: str | Callable[[], str] | None = None) -> Callable[[], Response]:
    """An HTML error page with status ``code``, and a Retry-After (text, or made when sent)."""
    def answer() -> Response:
        headers = {}
        if retry_after is not None:
            headers["retry-after"] = retry_after() if callable(retry_after) else retry_after
        return Response(DOWNTIME_HTML, code, headers=headers, media_type="text/html")

    return answer


def http_date_in(seconds: float) -> Callable[[], str]:
    """A Retry-After as an HTTP-date ``seconds`` from when the answer is sent."""
    return lambda: email.utils.formatdate(time.time() + seconds, usegmt=True)


def body(content: bytes, media_type: str) -> Callable[[], Response]:
    """Status 200 with ``content`` as the whole body (Content-Length agreeing)."""
    return lambda: Response(content, 200, media_type=media_type)


def cut_json() -> Cut:
    """A JSON page whose connection closes halfway through the body its Content-Length promises."""
    page = json.dumps({"images": [{"id": n} for n in range(50)], "total": 50}).encode()
    return Cut(200, [(b"content-type", b"application/json")], page)


def stall(seconds: float, count: int) -> Rule:
    """The first ``count`` API requests are answered only after ``seconds`` (past the client's timeout)."""
    state = {"left": count}

    async def rule(request: Request, upstream: Upstream) -> Response | None:
        if not request.url.path.startswith("/api/") or state["left"] <= 0:
            return None
        state["left"] -= 1
        await asyncio.sleep(seconds)
        if await request.is_disconnected():  # the client gave up: the site is not asked after all (a request
            return Response(b"", 504)          # reaching it now would land in the next test's log)
        return passed_on(await upstream())

    return rule


def hang(asked: threading.Event, seconds: float = 60) -> Rule:
    """Every API request is held unanswered (``asked`` set once one is) until its client goes away or
    ``seconds`` pass: a request that the site is slow to answer, for a run to be stopped during it."""
    async def rule(request: Request, upstream: Upstream) -> Response | None:
        if not request.url.path.startswith("/api/"):
            return None
        asked.set()
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not await request.is_disconnected():
            await asyncio.sleep(0.05)
        return Response(b"", 504)

    return rule


def content_types(*kinds: str) -> Rule:
    """Every API answer passed on with the next of ``kinds`` as its Content-Type, in turn (a proxy or
    CDN that rewrites the header: no charset, another spelling, another type)."""
    turn = {"next": 0}

    async def rule(request: Request, upstream: Upstream) -> Response | None:
        if not request.url.path.startswith("/api/"):
            return None
        response = passed_on(await upstream())
        response.headers["content-type"] = kinds[turn["next"] % len(kinds)]
        turn["next"] += 1
        return response

    return rule


def rewrite_records(change: Callable[[dict[str, Any]], Any]) -> Rule:
    """Every image record the API answers with (in pages, and one at a time) is served as ``change(record)``."""
    async def rule(request: Request, upstream: Upstream) -> Response | None:
        if not request.url.path.startswith("/api/"):
            return None
        response = await upstream()
        answer = response.json() if response.status_code == 200 else None
        if not isinstance(answer, dict) or not ({"images", "image"} & answer.keys()):
            return passed_on(response)
        if isinstance(answer.get("images"), list):
            answer["images"] = [change(record) for record in answer["images"]]
        if isinstance(answer.get("image"), dict):
            answer["image"] = change(answer["image"])
        return passed_on(response, json.dumps(answer).encode())  # \u escapes: lone surrogates too

    return rule
