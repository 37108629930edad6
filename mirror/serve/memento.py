"""Memento (RFC 7089) over the archive: the API as of any moment, found the way web archives find it.

- ``/as-of/WHEN/api/v1/json/...`` is a *Memento*: the record as it was at WHEN (:mod:`mirror.asof`),
  with ``Memento-Datetime`` (when the version answering began) and ``Link`` to the *original*
  (the plain URL), the *TimeGate* and the *TimeMap*.
- The plain URL of a record is its *TimeGate*: asked with ``Accept-Datetime``, it redirects (302)
  to the Memento of that moment, ``Vary: accept-datetime`` on that answer only.
- ``/timemap/link/api/v1/json/...`` lists every version of the record the mirror knows, in
  ``application/link-format``; ``/timemap/json/...`` the same as JSON.

``mirror serve --as-of WHEN`` pins the plain API to a moment, for clients that cannot change paths.
"""

from __future__ import annotations

from collections.abc import Sequence

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from ..asof import Moment, moment_of_http_date, parse_moment
from .http import API_PREFIX, ErrorAnswer, JsonAnswer, origin_of

__all__ = ["AS_OF_PREFIX", "TIMEMAP_PREFIX", "moment_of", "memento_headers", "timegate", "timemap"]

AS_OF_PREFIX = "/as-of/{when}"
TIMEMAP_PREFIX = "/timemap/{kind}"
LINK_FORMAT = "application/link-format"


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


def timemap(request: Request, versions: Sequence[str]) -> Response:
    """Every version of a record the mirror knows (the times each began, oldest first)."""
    origin, path = origin_of(request), original_path(request).split("?", 1)[0]
    mementos = [(Moment(at), f"{origin}/as-of/{Moment(at).digits}{path}") for at in versions]
    if request.path_params.get("kind") == "json":
        return JsonAnswer({"original_uri": f"{origin}{path}", "timegate_uri": f"{origin}{path}",
                           "mementos": {"list": [{"datetime": m.text, "uri": uri} for m, uri in mementos]}})
    if request.path_params.get("kind") != "link":
        raise ErrorAnswer(404, "Not Found")
    lines = [f'<{origin}{path}>; rel="original"', f'<{origin}{path}>; rel="timegate"',
             f'<{origin}/timemap/link{path}>; rel="self"; type="{LINK_FORMAT}"']
    for n, (moment, uri) in enumerate(mementos):
        rel = " ".join(word for word, here in (("first", n == 0), ("last", n == len(mementos) - 1), ("memento", True))
                       if here)
        lines.append(f'<{uri}>; rel="{rel}"; datetime="{moment.http_date}"')
    return Response(",\n".join(lines) + "\n", media_type=LINK_FORMAT)
