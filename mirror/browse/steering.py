"""Steering through time on a past page, as a web archive's toolbar does: where the moment falls
among the moments the mirror knows of the page shown, and the way to the previous and next.

The moments a page has (its *captures*) are those its record changed: the site's own change times
(a dump's tag and source history), the syncs that saw it change or first saw it, and its upload.
A page that shows no one record (the front page, a search, a list) has the syncs for captures.
A moment before the mirror's first sync is said to be one: the board then is rebuilt from the
site's own history where it has one, and is otherwise the earliest the mirror saw.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from datasette.utils.asgi import BadRequest, Response

from ..asof import Moment, Versions, versions_around, versions_page
from ..store.first_sightings import first_seen_counted_at
from ..store.history import record_key
from .moment import is_board_page
from .settings import css, database_name

__all__ = ["MOMENTS_PATH", "ROUTES", "Capture", "Steering", "steering", "captures", "record_of_page", "moment_href",
           "not_yet"]

MOMENTS_PATH = "/-/moments"
# The pages of one record: (the page's address, its table).
_RECORD_PAGES = [(re.compile(r"/-/image/(\d{1,10})(?:/history)?"), "images"),
                 (re.compile(r"/-/tag/(\d{1,10})"), "tags"), (re.compile(r"/-/user/(\d{1,10})"), "users"),
                 (re.compile(r"/-/gallery/(\d{1,10})"), "galleries")]
# What a moment of a record's history was, said for the captures list.
_KINDS = {"first_seen": "first seen by a sync", "changed": "a sync saw it change", "counters": "its counts moved",
          "site_tags": "the site's own change (its tags)", "site_source": "the site's own change (its sources)",
          "hidden": "hidden", "deleted": "deleted", "merged": "merged", "shown": "shown again",
          "gallery_images": "its images changed"}
CAPTURES_SHOWN = 500


def moment_href(at: str, page: str) -> str:
    """The address of ``page`` as of the moment ``at`` (a time as the history keeps it)."""
    return f"/as-of/{Moment(at).digits}{page}"


def record_of_page(page: str) -> tuple[str, int] | None:
    """(table, id) of the record a board page shows, or None for a page of many."""
    path = page.split("?", 1)[0]
    for pattern, table in _RECORD_PAGES:
        if found := pattern.fullmatch(path):
            return table, int(found[1])
    return None


@dataclass(frozen=True)
class Steering:
    """What a past page's banner offers besides the same page today."""

    previous: tuple[str, str] | None  # (its time, its address)
    next: tuple[str, str] | None
    since: str | None  # when the version shown began
    moments: str  # the captures list's address
    first_sync: str | None  # the mirror's first sync, when the moment is before it
    of_record: bool


def first_sync(conn: sqlite3.Connection) -> str | None:
    """When the mirror's first sync began (the first sighting when no run is recorded)."""
    found = conn.execute("SELECT min(started_at) FROM sync_runs").fetchone()[0]
    if found is None:
        try:
            found = conn.execute("SELECT min(first_at) FROM history_first_seen").fetchone()[0]
        except sqlite3.OperationalError:
            return None
    return found[:19] + "Z" if found else None


def _row(conn: sqlite3.Connection, table: str, key: int) -> dict[str, Any] | None:
    row = conn.execute(f"SELECT raw FROM {table} WHERE id = ?", [key]).fetchone()
    return {"raw": row[0]} if row else None


def versions_of_page(conn: sqlite3.Connection, page: str, moment: Moment) -> Versions | None:
    """Where ``moment`` falls among the versions of the record ``page`` shows; None for a page of many."""
    found = record_of_page(page)
    if found is None:
        return None
    table, key = found
    row = _row(conn, table, key)
    return versions_around(conn, table, record_key(key), row, moment) if row else None


def _runs_around(conn: sqlite3.Connection, moment: Moment) -> tuple[str | None, str | None]:
    before = conn.execute("SELECT max(finished_at) FROM sync_runs WHERE finished_at < ?", [moment.text]).fetchone()[0]
    after = conn.execute("SELECT min(finished_at) FROM sync_runs WHERE finished_at > ?", [moment.text]).fetchone()[0]
    return tuple(at[:19] + "Z" if at else None for at in (before, after))  # type: ignore[return-value]


def steering(conn: sqlite3.Connection, page: str, moment: Moment) -> Steering:
    """The banner's way through time on ``page`` shown as of ``moment``."""
    versions = versions_of_page(conn, page, moment)
    if versions is None:
        (earlier, later), since = _runs_around(conn, moment), None
    elif versions.at > moment.text:  # before the record's first version: the way forward to it
        earlier, later, since = None, versions.first, None
    else:  # the version before the one shown, and the first change after the moment
        earlier, later, since = versions.previous, versions.next, versions.at
    first = first_sync(conn)
    return Steering(
        previous=(earlier, moment_href(earlier, page)) if earlier else None,
        next=(later, moment_href(later, page)) if later else None,
        since=since, moments=f"{MOMENTS_PATH}?{urlencode({'page': page, 'at': moment.digits})}",
        first_sync=first if first and moment.text < first else None, of_record=versions is not None)


@dataclass(frozen=True)
class Capture:
    """One moment the mirror knows of a page: when, what happened then, and the page as of it."""

    at: str
    kinds: tuple[str, ...]
    href: str


def captures(conn: sqlite3.Connection, page: str) -> tuple[list[Capture], bool]:
    """The moments the mirror knows of ``page``, oldest first (at most :data:`CAPTURES_SHOWN`),
    and whether more follow: its record's versions, or the syncs for a page of many."""
    found = record_of_page(page)
    if found is None:
        runs = conn.execute("SELECT finished_at, group_concat(resource, ', ') FROM sync_runs "
                            "WHERE finished_at IS NOT NULL GROUP BY finished_at ORDER BY finished_at LIMIT ?",
                            [CAPTURES_SHOWN + 1]).fetchall()
        listed = [Capture(at[:19] + "Z", (f"a sync of {what}",), moment_href(at[:19] + "Z", page)) for at, what in runs]
        return listed[:CAPTURES_SHOWN], len(listed) > CAPTURES_SHOWN
    table, key = found
    row = _row(conn, table, key)
    if row is None:
        return [], False
    times, more = versions_page(conn, table, record_key(key), row, limit=CAPTURES_SHOWN)
    kinds = dict(_kinds(conn, table, record_key(key), times))
    counted = first_seen_counted_at(conn, table, record_key(key))  # a first sighting kept as a count
    if counted in times:
        kinds[counted] = tuple(sorted({*kinds.get(counted, ()), _KINDS["first_seen"]}))
    return [Capture(at, kinds.get(at, ("uploaded",)), moment_href(at, page)) for at in times], more


def _kinds(conn: sqlite3.Connection, table: str, key: str, times: list[str]) -> Iterator[tuple[str, tuple[str, ...]]]:
    if not times:
        return
    rows = conn.execute("SELECT seen_at, group_concat(DISTINCT event) FROM history WHERE resource = ? "
                        "AND record_key = ? AND seen_at BETWEEN ? AND ? GROUP BY seen_at",
                        [table, key, times[0], times[-1]])
    for at, events in rows:
        yield at, tuple(_KINDS.get(event, event) for event in sorted(events.split(",")))


async def booru_moments(datasette: Any, request: Any) -> Response:
    """``/-/moments?page=PATH``: every moment the mirror knows of a board page, each a link to the
    page as of it (the one shown, ``at``, marked)."""
    page = request.args.get("page", "/")
    if not is_board_page(page):
        raise BadRequest(f"{page!r} is not a board page: give the address of one, such as /-/image/1")
    found, more = await datasette.get_database(database_name(datasette)).execute_fn(lambda conn: captures(conn, page))
    shown = request.args.get("at", "")
    context = {"css": css(), "searchbox_q": "", "page": page, "captures": found, "more": more,
               "shown": next((c.at for c in found if Moment(c.at).digits == shown), None),
               "of_record": record_of_page(page) is not None}
    return Response.html(await datasette.render_template("booru_moments.html", context, request=request))


async def not_yet(datasette: Any, request: Any, table: str, key: int, page: str, moment: Moment) -> Response | None:
    """The page of a record the mirror has that did not exist yet at ``moment``, in the board's
    frame (404): what it is, and the ways to its first version and to today's; None when the
    mirror has no such record at all."""
    def first(conn: sqlite3.Connection) -> str | None:
        row = _row(conn, table, key)
        versions = versions_around(conn, table, record_key(key), row, moment) if row else None
        return versions.first if versions else None

    began = await datasette.get_database(database_name(datasette)).execute_fn(first)
    if began is None:
        return None
    context = {"css": css(), "searchbox_q": "", "what": f"{table[:-1] if table != 'galleries' else 'gallery'} #{key}",
               "moment": moment.text.replace("T", " ").replace("Z", " UTC"),
               "first": (began.replace("T", " ").replace("Z", " UTC"), moment_href(began, page)), "today": page}
    return Response.html(await datasette.render_template("booru_not_yet.html", context, request=request), status=404)


ROUTES = [(rf"^{MOMENTS_PATH}$", booru_moments)]
