"""Memento (RFC 7089) over the archive: the mirror is a web archive of the site's API.

RFC 7089's Pattern 2.1 (section 4.2.1: "URI-R<>URI-G; 302-Style Negotiation; Distinct URI-M for
Mementos"): the *original resource* (URI-R) is the site's own URL of a record, under the configured
``site.base_url`` (``https://derpibooru.org/api/v1/json/images/1``); the mirror is a remote
archive of it, with a *TimeGate* and a *TimeMap* of its own and a distinct URI for each memento.

- ``/timegate/{URI-R}`` is the TimeGate, as aggregators spell it: asked with ``Accept-Datetime``
  (none: now), it redirects (302, ``Vary: accept-datetime``) to the memento its TimeMap lists that
  was in force at that time; for a time before the first, to the first (never a 404). Its ``Link``
  names the original, the TimeMap and the first, previous, next and last mementos around it.
- The mirror's plain URL of a record (``/api/v1/json/images/1``) answers today's copy and is a
  TimeGate too: asked with ``Accept-Datetime`` it redirects the same way, and every answer of it
  carries ``Vary: accept-datetime`` and ``Link`` to the original, the TimeGate and the TimeMap.
- ``/as-of/WHEN/api/v1/json/...`` is a *Memento*: the record as it was at WHEN (:mod:`mirror.asof`),
  with ``Memento-Datetime`` (when the version answering began) and the same links.
- ``/timemap/link/{URI-R}`` lists every version of the record the mirror knows, in
  ``application/link-format``; ``/timemap/json/{URI-R}`` the same as JSON; the mirror's own paths
  (``/timemap/link/api/v1/json/...``) too. A record hammered by bots has hundreds of thousands of
  versions, so a TimeMap is paged as web archives page theirs (RFC 7089's paged TimeMaps):
  :data:`TIMEMAP_PAGE` versions, then a ``rel="next"`` TimeMap of those after the last
  (``?after=WHEN``); the first and last mementos are marked on the first and last pages.

With no site configured (an app made without ``site_url``), the mirror's plain URL is the original.
``mirror serve --as-of WHEN`` pins the plain API to a moment, for clients that cannot change paths.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from ..asof import Moment, Versions, moment_of_http_date, parse_moment
from ..dates import utc_text
from .http import API_PREFIX, ErrorAnswer, JsonAnswer, origin_of

__all__ = ["AS_OF_PREFIX", "TIMEMAP_PREFIX", "TIMEGATE_PREFIX", "TIMEMAP_PAGE", "Names", "names_of", "moment_of",
           "asked_datetime", "original_headers", "memento_headers", "timegate_redirect", "timemap", "timemap_after"]

AS_OF_PREFIX = "/as-of/{when}"
TIMEMAP_PREFIX = "/timemap/{kind}"
TIMEGATE_PREFIX = "/timegate"
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


@dataclass(frozen=True)
class Names:
    """The URIs of one record in Memento's terms."""

    mirror: str  # where the mirror is reached
    site: str  # the site's base URL (the mirror's own address when no site is configured)
    path: str  # the API path, with its query

    @property
    def original(self) -> str:
        """URI-R: the site's own URL of the record."""
        return self.site + self.path

    @property
    def timegate(self) -> str:
        return f"{self.mirror}{TIMEGATE_PREFIX}/{self.original}"

    def timemap(self, kind: str = "link") -> str:
        return f"{self.mirror}/timemap/{kind}/{self.original.split('?', 1)[0]}"

    def memento(self, began: str, *, query: bool = True) -> str:
        """URI-M: the mirror's copy of the version that began at ``began``."""
        return f"{self.mirror}/as-of/{Moment(began).digits}{self.path if query else self.path.split('?', 1)[0]}"

    def links(self) -> str:
        return (f'<{self.original}>; rel="original", <{self.timegate}>; rel="timegate", '
                f'<{self.timemap()}>; rel="timemap"; type="{LINK_FORMAT}"')


def names_of(request: Request) -> Names:
    """The Memento names of the record a request reads (under the plain API, ``/as-of/WHEN``,
    ``/timemap/KIND`` or ``/timegate``); a 404 for a ``/timegate/`` or ``/timemap/`` URL that
    is not one of the mirrored site's API."""
    origin = origin_of(request)
    site = getattr(request.app.state, "site_url", None) or origin
    path = original_path(request)
    asked = request.path_params.get("uri")
    if asked is not None and not _names_the_site(asked, (site, origin)):
        raise ErrorAnswer(404, f"{asked} is not a URL of the mirrored site's API ({site}{API_PREFIX}/...)")
    return Names(origin, site, path)


def _names_the_site(uri: str, bases: Sequence[str]) -> bool:
    uri = uri.replace(":/", "://", 1) if ":/" in uri and "://" not in uri else uri  # a client that merged the //
    return any(uri.startswith(base + API_PREFIX + "/") for base in bases)


def asked_datetime(request: Request) -> Moment | None:
    """The moment ``Accept-Datetime`` asks for; None without one; a 400 for one that is no HTTP date."""
    asked = request.headers.get("accept-datetime")
    if asked is None:
        return None
    try:
        return moment_of_http_date(asked)
    except ValueError as error:
        raise ErrorAnswer(400, str(error)) from None


def original_headers(names: Names) -> dict[str, str]:
    """The headers of the mirror's plain answer of a record (today's copy, and a TimeGate)."""
    return {"Link": names.links(), "Vary": "accept-datetime"}


def memento_headers(names: Names, moment: Moment, began: Sequence[str]) -> dict[str, str]:
    """The headers of a Memento: when the version answering began (the latest of the records in
    it; the moment itself when nothing says), and its links."""
    started = Moment(max(began)) if began else moment
    return {"Memento-Datetime": started.http_date, "Link": names.links()}


def timegate_redirect(names: Names, versions: Versions) -> Response:
    """The TimeGate's answer: a redirect to the memento in force (``versions.at``), with the
    mementos around it in ``Link``."""
    rels: dict[str, list[str]] = {}
    for rel, at in (("first", versions.first), ("prev", versions.previous), ("next", versions.next),
                    ("last", versions.last), ("", versions.at)):
        if at is not None:
            rels.setdefault(at, []).append(rel)
    mementos = [f'<{names.memento(at, query=False)}>; rel="{" ".join([*filter(None, words), "memento"])}"; '
                f'datetime="{Moment(at).http_date}"' for at, words in sorted(rels.items())]
    link = ", ".join([f'<{names.original}>; rel="original"', f'<{names.timemap()}>; rel="timemap"; '
                      f'type="{LINK_FORMAT}"', *mementos])
    return RedirectResponse(names.memento(versions.at), status_code=302,
                            headers={"Vary": "accept-datetime", "Link": link})


def now() -> Moment:
    """The moment a TimeGate asked with no ``Accept-Datetime`` answers for: the present, so the newest memento."""
    return Moment(utc_text())


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


def timemap(request: Request, names: Names, versions: Sequence[str], *, first: bool = True,
            more: bool = False) -> Response:
    """One page of the versions of a record the mirror knows (the times each began, oldest first):
    ``first`` says it is the first page, ``more`` that a next one follows."""
    mementos = [(Moment(at), names.memento(at, query=False)) for at in versions]
    kind = request.path_params["kind"]
    own = names.timemap(kind)
    here = own + (f"?after={request.query_params['after']}" if not first else "")
    following = f"{own}?after={mementos[-1][0].digits}" if more and mementos else None
    original = names.original.split("?", 1)[0]
    if kind == "json":
        answer = {"original_uri": original, "timegate_uri": names.timegate.split("?", 1)[0], "self": here,
                  "mementos": {"list": [{"datetime": m.text, "uri": uri} for m, uri in mementos]}}
        return JsonAnswer({**answer, "next": following} if following else answer)
    lines = [f'<{original}>; rel="original"', f'<{names.timegate.split("?", 1)[0]}>; rel="timegate"',
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
