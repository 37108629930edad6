"""Memento (RFC 7089) over the archive: the API as of any moment, found the way web archives find it.

- ``/as-of/WHEN/api/v1/json/...`` is a *Memento*: the record as it was at WHEN (:mod:`mirror.asof`),
  with ``Memento-Datetime`` (when the version answering began) and ``Link`` to the *original*
  (the plain URL), the *TimeGate* and the *TimeMap*.
- The plain URL of a record is its *TimeGate*: asked with ``Accept-Datetime``, it redirects (302)
  to the Memento of that moment, ``Vary: accept-datetime`` on that answer only.
- ``/timemap/link/api/v1/json/...`` lists every version of the record the mirror knows, in
  ``application/link-format``; ``/timemap/json/...`` the same as JSON. A record hammered by bots
  has hundreds of thousands of versions, so a TimeMap is paged as web archives page theirs
  (RFC 7089's paged TimeMaps): :data:`TIMEMAP_PAGE` versions, then a ``rel="next"`` TimeMap of
  those after the last (``?after=WHEN``); the first and last mementos are marked on the first
  and last pages.

``mirror serve --as-of WHEN`` pins the plain API to a moment, for clients that cannot change paths.
"""

from __future__ import annotations

from collections.abc import Sequence

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from ..asof import Moment, moment_of_http_date, parse_moment
from .http import API_PREFIX, ErrorAnswer, JsonAnswer, origin_of

__all__ = ["AS_OF_PREFIX", "TIMEMAP_PREFIX", "TIMEMAP_PAGE", "moment_of", "memento_headers", "timegate", "timemap",
           "timemap_after"]

AS_OF_PREFIX = "/as-of/{when}"
TIMEMAP_PREFIX = "/timemap/{kind}"
TIMEMAP_KINDS = ("link", "json")
LINK_FORMAT = "application/link-format"
# The versions one TimeMap page lists: some 250 KB of link-format, in well under 300 ms.
TIMEMAP_PAGE = 2_000


def moment_of(request: Request) -> Moment | None:
    """The moment a request asks its answer as of: its ``/as-of/WHEN/``, else the one the server is
    pinned to (``mirror serve --as-of``), else None (today)."""
    when = request.path_params.get("when")
    if when is None:
        return getattr(request.app.state, "moment", None)
    try:
        return parse_moment(when)
    except ValueError as error:
        raise ErrorAnswer(400, str(error)) from None


def original_path(request: Request) -> str:
    """The plain API path of a request made under ``/as-of/WHEN`` or ``/timemap/KIND``, with its query."""
    path = request.url.path
    start = path.find(API_PREFIX)
    query = request.url.query
    return path[start:] + (f"?{query}" if query else "")


def memento_headers(request: Request, moment: Moment, began: Sequence[str]) -> dict[str, str]:
    """The headers of a Memento: when the version answering began (the latest of the records in
    it; the moment itself when nothing says), and its links."""
    started = Moment(max(began)) if began else moment
    return {"Memento-Datetime": started.http_date, "Link": _links(request)}


def _links(request: Request) -> str:
    origin, path = origin_of(request), original_path(request)
    timemap = f"{origin}/timemap/link{path.split('?', 1)[0]}"
    return (f'<{origin}{path}>; rel="original", <{origin}{path}>; rel="timegate", '
            f'<{timemap}>; rel="timemap"; type="{LINK_FORMAT}"')


def timegate(request: Request) -> Response | None:
    """The redirect to the Memento an ``Accept-Datetime`` asks for; None when the request asks none."""
    asked = request.headers.get("accept-datetime")
    if asked is None:
        return None
    try:
        moment = moment_of_http_date(asked)
    except ValueError as error:
        raise ErrorAnswer(400, str(error)) from None
    target = f"{origin_of(request)}/as-of/{moment.digits}{original_path(request)}"
    return RedirectResponse(target, status_code=302, headers={"Vary": "accept-datetime", "Link": _links(request)})


def timemap_after(request: Request) -> Moment | None:
    """The moment a TimeMap page starts after (``?after=WHEN``), None for the first page; and a
    404 for a TimeMap kind there is none of, before any record is read."""
    if request.path_params.get("kind") not in TIMEMAP_KINDS:
        raise ErrorAnswer(404, "Not Found")
    after = request.query_params.get("after")
    try:
        return parse_moment(after) if after is not None else None
    except ValueError as error:
        raise ErrorAnswer(400, str(error)) from None


def timemap(request: Request, versions: Sequence[str], *, first: bool = True, more: bool = False) -> Response:
    """One page of the versions of a record the mirror knows (the times each began, oldest first):
    ``first`` says it is the first page, ``more`` that a next one follows."""
    origin, path = origin_of(request), original_path(request).split("?", 1)[0]
    mementos = [(Moment(at), f"{origin}/as-of/{Moment(at).digits}{path}") for at in versions]
    kind = request.path_params["kind"]
    own = f"{origin}/timemap/{kind}{path}"
    here = own + (f"?after={request.query_params['after']}" if not first else "")
    following = f"{own}?after={mementos[-1][0].digits}" if more and mementos else None
    if kind == "json":
        answer = {"original_uri": f"{origin}{path}", "timegate_uri": f"{origin}{path}", "self": here,
                  "mementos": {"list": [{"datetime": m.text, "uri": uri} for m, uri in mementos]}}
        return JsonAnswer({**answer, "next": following} if following else answer)
    lines = [f'<{origin}{path}>; rel="original"', f'<{origin}{path}>; rel="timegate"',
             f'<{here}>; rel="self"; type="{LINK_FORMAT}"'
             + (f'; from="{mementos[0][0].http_date}"; until="{mementos[-1][0].http_date}"' if mementos else "")]
    if following:
        lines.append(f'<{following}>; rel="next"; type="{LINK_FORMAT}"')
    last = len(mementos) - 1
    for n, (moment, uri) in enumerate(mementos):
        rel = " ".join(word for word, is_it in (("first", first and n == 0), ("last", not more and n == last),
                                                 ("memento", True)) if is_it)
        lines.append(f'<{uri}>; rel="{rel}"; datetime="{moment.http_date}"')
    return Response(",\n".join(lines) + "\n", media_type=LINK_FORMAT)
