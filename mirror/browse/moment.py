"""The board as it was at a moment, in `mirror browse`: ``/as-of/WHEN/`` before a board page's path.

As a web archive's replay does (Wayback, pywb), the moment is a path prefix, so that an address
names the page and the moment together and can be kept or shared. :func:`moment_paths` (Datasette's
``asgi_wrapper``) takes the prefix off before Datasette routes the request, hands the moment to the
page in the request's scope (:func:`moment_of`), and writes it back in front of every board link
the page holds (``href``, a form's ``action``, a redirect's ``Location``), so links stay within the
moment whichever template or module built them. A link marked ``rel="original"`` (the banner's
"the same page today") is left as it is. Datasette's own pages (tables, JSON, files, the
stylesheet) are today's and are not carried: asked under ``/as-of/WHEN/``, they redirect to today's
address, so that no page of today is shown under a moment's.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

from ..asof import Moment, parse_moment
from .times import counted_from

__all__ = ["AS_OF_PATH", "moment_of", "is_board_page", "within", "carried", "moment_paths", "banner", "memento_headers"]

SCOPE_KEY = "booru_moment"
# The front page's date field asks here (never carried: it chooses the moment).
AS_OF_PATH = "/-/as-of"
_PREFIXED = re.compile(r"/as-of/([^/?]+)(/.*)?")
# The board's own pages: the front page, its lists, and the pages of one record.
_BOARD = re.compile(r"/(?:\?|$)|/-/(?:booru|tags|forums|galleries|changes|filter|trend)(?:\?|$)"
                    r"|/-/(?:image|tag|user|gallery|forum|topic)/")
_LINK = re.compile(r'(?<!rel="original" )\b(href|action)="(/[^"]*)"')


def moment_of(request: Any) -> Moment | None:
    """The moment a board page is asked as of, or None for today."""
    return request.scope.get(SCOPE_KEY)


def is_board_page(href: str) -> bool:
    """Whether ``href`` is the address of a board page (one that has a past)."""
    return bool(_BOARD.match(href))


def within(href: str, moment: Moment | None) -> str:
    """``href`` carried into ``moment`` when it is a board page's address."""
    return f"/as-of/{moment.digits}{href}" if moment is not None and is_board_page(href) else href


def carried(html: str, moment: Moment) -> str:
    """Every board link of a page carried into ``moment``, and its relative times counted from it."""
    return counted_from(_LINK.sub(lambda m: f'{m[1]}="{within(m[2], moment)}"', html), moment.datetime)


def banner(request: Any) -> dict[str, str] | None:
    """What the banner of a page asked as of a moment shows: the moment and the same page today."""
    moment = moment_of(request)
    if moment is None:
        return None
    query = request.scope.get("query_string", b"").decode("latin-1")
    today = request.scope.get("booru_today_path", "/") + (f"?{query}" if query else "")
    return {"moment": moment.text.replace("T", " ").replace("Z", " UTC"), "today": today}


def moment_paths(app: Any) -> Any:
    """The ASGI app ``app`` answering every board page under ``/as-of/WHEN/`` too."""
    async def wrapped(scope: dict[str, Any], receive: Any, send: Any) -> None:
        found = _PREFIXED.fullmatch(scope.get("path", "")) if scope.get("type") == "http" else None
        if found is None:
            return await app(scope, receive, send)
        try:
            moment = parse_moment(found[1])
        except ValueError as error:
            return await _refuse(send, str(error))
        path = found[2] or "/"
        raw = scope.get("raw_path") or quote(scope["path"]).encode("ascii")
        # the rest of the address as sent: past the moment's own segment, however it was encoded (%3A)
        after = raw[len(b"/as-of/"):]
        raw = after[after.index(b"/"):] if b"/" in after else b"/"
        if not _BOARD.match(path):  # a page with no past (Datasette's own): today's, said by its address
            query = scope.get("query_string", b"")
            here = b"/" + raw.lstrip(b"/")  # never //host: another site's address
            return await _redirect(send, here + (b"?" + query if query else b""))
        inner = {**scope, "path": path, "raw_path": raw, SCOPE_KEY: moment, "booru_today_path": raw.decode("ascii")}
        await app(inner, receive, _carrying(send, moment, raw))
    return wrapped


def memento_headers(moment: Moment, today: bytes) -> list[tuple[bytes, bytes]]:
    """What marks a past page as a Memento (RFC 7089), as ``mirror serve``'s past answers are
    marked: the moment it shows, and the same page today as its original."""
    return [(b"memento-datetime", moment.http_date.encode()),
            (b"link", b'<' + today + b'>; rel="original"')]


def _carrying(send: Any, moment: Moment, today: bytes) -> Any:
    """``send``, with the board links of an HTML answer, and a redirect's address, carried into
    ``moment``; a page answered is marked as a memento."""
    held: dict[str, Any] = {}
    body: list[bytes] = []

    async def sending(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            headers = [(k, within(v.decode("latin-1"), moment).encode("latin-1") if k.lower() == b"location" else v)
                       for k, v in message.get("headers", [])]
            html = any(k.lower() == b"content-type" and v.startswith(b"text/html") for k, v in headers)
            if not html:
                return await send({**message, "headers": headers})
            kept = [(k, v) for k, v in headers if k.lower() != b"content-length"]
            if message.get("status") == 200:
                kept += memento_headers(moment, today)
            held["start"] = {**message, "headers": kept}
            return None
        if "start" not in held:
            return await send(message)
        body.append(message.get("body", b""))
        if message.get("more_body"):
            return None
        page = carried(b"".join(body).decode("utf-8", "replace"), moment).encode("utf-8")
        start = held["start"]
        await send({**start, "headers": [*start["headers"], (b"content-length", str(len(page)).encode())]})
        await send({"type": "http.response.body", "body": page})
    return sending


async def _redirect(send: Any, location: bytes) -> None:
    await send({"type": "http.response.start", "status": 302,
                "headers": [(b"location", location), (b"content-length", b"0")]})
    await send({"type": "http.response.body", "body": b""})


async def _refuse(send: Any, reason: str) -> None:
    page = f"{reason}\n".encode()
    headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(page)).encode())]
    await send({"type": "http.response.start", "status": 400, "headers": headers})
    await send({"type": "http.response.body", "body": page})
