"""HTTP plumbing every JSON endpoint shares: error answers, id and page parsing, the proxy layer.

Reference sections 1, 4, 7 and 8: the error bodies and status codes, how ids are cast, how
``page`` and ``per_page`` are read and clamped, and what the production proxy adds in front.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import orjson
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..search.sort import integer_parse
from ..store.records import parse_json

__all__ = ["JsonAnswer", "JSON_TYPE", "json_bytes", "parse_json", "ErrorAnswer", "not_found", "bad_request", "parse_id", "parse_integer_id", "Paging", "ProxyMiddleware",
           "API_PREFIX", "INT4_MAX", "origin_of"]

API_PREFIX = "/api/v1/json"
BODY_LIMIT = 136_314_880  # the proxy's request_body max_size: 130 MiB
INT4_MAX = 2**31 - 1
# The deepest page read: past the end of any board at any page size, and its offset still a 64-bit integer.
MAX_PAGE = 2**40


JSON_TYPE = "application/json; charset=utf-8"  # the site's, exactly: clients (PyPI's derpi) assert it


def json_bytes(content: Any) -> bytes:
    """Compact UTF-8 JSON, written by orjson: a page of 50 images takes 0.6 ms, where the json
    module took 2.8 (a third of a search's time in ``mirror serve``). What orjson refuses, the
    json module writes: a record holding a lone surrogate (valid in JSON, not in UTF-8) is sent
    with every non-ASCII character escaped, so it reaches the client as the very string kept; an
    integer past 64 bits as it is."""
    try:
        return orjson.dumps(content, option=orjson.OPT_NON_STR_KEYS)
    except TypeError:  # orjson.JSONEncodeError is one
        pass
    text = json.dumps(content, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    try:
        return text.encode()
    except UnicodeEncodeError:
        return json.dumps(content, allow_nan=False, separators=(",", ":")).encode()


class JsonAnswer(JSONResponse):
    """Every JSON answer of the API: the site's Content-Type, and lone surrogates escaped, not a 500."""

    media_type = JSON_TYPE

    def render(self, content: Any) -> bytes:
        return json_bytes(content)


def origin_of(request: Request) -> str:
    """Where the mirror is reached (scheme, host and port): redirects, Memento links, TimeMaps and
    served file URLs point there. The public address ``mirror serve --public-url`` was given (a
    proxy in front), else the address of the socket the request came in on; never the request's
    ``Host``, which a client chooses: ``Host: evil.example`` would send redirects there, and a
    cache in front would keep them for everyone. (The local site, a stand-in for a real one in
    tests, answers under the ``Host`` it is asked with: ``origin_from_host``.)"""
    state = request.app.state
    if getattr(state, "origin_from_host", False):
        return f"{request.url.scheme}://{request.url.netloc}"
    public = getattr(state, "public_url", None)
    if public:
        return public
    server = request.scope.get("server")
    if not server or server[1] is None:
        return f"{request.url.scheme}://127.0.0.1"
    host, port = server
    return f"{request.url.scheme}://{f'[{host}]' if ':' in host else host}:{port}"


class ErrorAnswer(Exception):
    """An error answer: a JSON `{"error": ...}` body, or an empty text/plain one."""

    def __init__(self, status: int, message: str | None = None) -> None:
        super().__init__(status, message)
        self.status, self.message = status, message

    def response(self) -> Response:
        if self.message is None:
            return Response(b"", status_code=self.status, media_type="text/plain")
        return JsonAnswer({"error": self.message}, status_code=self.status)


def not_found() -> ErrorAnswer:
    return ErrorAnswer(404, "Not found")


def bad_request() -> ErrorAnswer:
    return ErrorAnswer(400, "Bad Request")


def parse_id(text: str) -> int:
    """An Ecto-cast integer id: anything else is 400, beyond int4 a 500 (reference section 7)."""
    if not re.fullmatch(r"[-+]?[0-9]+", text):
        raise bad_request()
    value = int(text)
    if not -(2**31) <= value <= INT4_MAX:
        raise ErrorAnswer(500, "Internal Error")
    return value


def parse_integer_id(text: str) -> int:
    """IntegerId.parse (filters, topic posts): anything that is not an int4 is a 404."""
    if not re.fullmatch(r"[0-9]+", text) or int(text) > INT4_MAX:
        raise not_found()
    return int(text)


@dataclass(frozen=True)
class Paging:
    """``page`` and ``per_page`` as the pagination plug reads them (reference section 4)."""

    page: int
    per_page: int | None  # None when the request gave no per_page

    @classmethod
    def from_params(cls, params: Any) -> Paging:
        page = min(MAX_PAGE, max(1, integer_parse(params.get("page")) or 1))
        per_page = None
        if "per_page" in params:
            parsed = integer_parse(params["per_page"])
            per_page = min(50, max(1, 25 if parsed is None else parsed))
        return cls(page, per_page)

    def size(self, default: int = 25) -> int:
        return self.per_page if self.per_page is not None else default

    def offset(self, default: int = 25) -> int:
        return (self.page - 1) * self.size(default)

    def scrivener_offset(self, total: int) -> int:
        """Scrivener clamps a page past the end to the last page."""
        size = self.size()
        pages = max(1, -(-total // size))
        return (min(self.page, pages) - 1) * size


class ProxyMiddleware:
    """What the production Caddy proxy adds in front of the app (reference section 8).

    `Cache-Control: no-store, no-cache` and CORS headers on API responses, a bare 400 for any
    legacy `.json` path, and a 413 for a request body over 130 MiB: refused on its
    `Content-Length`, or as soon as a body sent without one goes over (so that no request, to
    `mirror serve` either, can fill the memory or the disk the form parser spools files to).
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"].startswith("/_control"):
            await self.app(scope, receive, send)
            return
        if scope["path"].endswith(".json"):
            await Response(b"", status_code=400, media_type="text/plain")(scope, receive, send)
            return
        if _declared_length(scope) > BODY_LIMIT:
            await Response(b"", status_code=413, media_type="text/plain")(scope, receive, send)
            return
        receive = _limited(receive)
        api = scope["path"].startswith("/api/")

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start" and api:
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"cache-control"]
                headers.append((b"cache-control", b"no-store, no-cache"))
                if scope["method"] in ("GET", "HEAD", "OPTIONS"):
                    headers.append((b"access-control-allow-origin", b"*"))
                    headers.append((b"access-control-allow-methods", b"GET, OPTIONS"))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)


def _declared_length(scope: Scope) -> int:
    value = dict(scope["headers"]).get(b"content-length", b"")
    return int(value) if value.isdigit() else 0


def _limited(receive: Receive) -> Receive:
    """``receive``, raising a 413 once the body read goes over :data:`BODY_LIMIT`."""
    read = 0

    async def counted() -> Message:
        nonlocal read
        message = await receive()
        read += len(message.get("body", b""))
        if read > BODY_LIMIT:
            raise HTTPException(413)
        return message

    return counted
