"""History a person can read: ``/-/image/N/history`` and ``/-/changes``.

An image's history is a board page: the picture with its attribution, its score and faves over
time as a small chart, then a timeline, newest first: tags added and removed by name, description
and source edits as diffs, hidden, deleted or merged with the reason. The site's own tag and source
changes (read from its dump) are on the same timeline at the site's time, marked "on the site" with
the site's user. ``/-/changes`` is what changed in the whole archive, filtered by event and resource
(``?event=deleted,merged&resource=images``), a page at a time; a first sync's records are counted
per resource unless asked for (``?event=first_seen``).

Everything from a record is escaped: a diff marks words with ``<del>``/``<ins>`` around escaped
text, and a URL becomes a link only when it is http(s).
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from datasette.utils.asgi import BadRequest, NotFound, Response
from markupsafe import Markup

from ..commands.changes import describe, parse_events, parse_resources, record_name
from ..asof import Moment
from ..dates import utc_text
from ..store.history_read import (EVENTS, RESOURCES, Change, changes_page, counted_sightings, cursor_text, first_seen,
                                  parse_cursor, record_history, tag_changes)
from ..urls import is_web_url
from .figure import ImageCard, artists_of_tags
from .history_chart import Series, chart
from .metadata import kept_extension
from .moment import moment_of
from .places import forum_url, image_url, topic_url
from .search_page import PATH as SEARCH_PATH
from .search_page import search_url
from .settings import css, database_name, site_address
from .text_diff import text_diff
from .then import then
from .steering import moment_href
from .times import relative_time

__all__ = ["ROUTES", "CHANGES_PATH", "history_url", "image_history", "archive_changes", "tag_lately"]

CHANGES_PATH = "/-/changes"
PER_PAGE = 50
# Shown unless asked for: counts moving on every vote, and the records a sync saw for the first time.
QUIET_EVENTS = ("counters", "first_seen")
# Fields edited as text, shown as a diff.
TEXT_FIELDS = ("description", "source_url", "source_urls", "source")
# Fields that move on their own (the site moves updated_at on each vote) or follow others (the
# addresses of the files name the tags).
UNSHOWN = frozenset({"updated_at", "tag_ids", "tags", "view_url", "representations"})
COUNTED = ("score", "faves")
TITLES = {"first_seen": "first seen by the mirror", "changed": "edited", "counters": "counts moved",
          "hidden": "hidden on the site", "deleted": "deleted on the site", "merged": "merged",
          "shown": "shown again on the site", "destroyed": "destroyed on the site", "gone": "gone from the site",
          "site_tags": "tags changed", "site_source": "source changed", "emptied": "left with no image",
          "used": "given its first image", "gallery_images": "its images changed"}


def history_url(image_id: int) -> str:
    return f"/-/image/{image_id}/history"


@dataclass
class Entry:
    """One change of an image as the timeline shows it."""

    change: Change
    title: str
    tags_added: list[dict[str, str]] = field(default_factory=list)
    tags_removed: list[dict[str, str]] = field(default_factory=list)
    diffs: list[tuple[str, Markup]] = field(default_factory=list)
    facts: list[tuple[str, str]] = field(default_factory=list)
    reason: str | None = None
    merged_into: int | None = None


def _text(value: Any) -> str:
    """A field's value as the text a diff compares: a list one item a line."""
    if isinstance(value, list):
        return "\n".join(str(v) for v in value)
    return "" if value is None else str(value)


def _short(value: Any) -> str:
    if value is None:
        return "none"
    if type(value) is int:
        return f"{value:,}"
    if type(value) is float:  # wilson_score, aspect_ratio: two places, as a reader compares them
        return f"{value:,.2f}"
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 80 else text[:77] + "..."


def entry(change: Change) -> Entry:
    """What the timeline says of one change."""
    fields = change.changes or {}
    shown = Entry(change, TITLES.get(change.event, change.event))
    shown.tags_added = [{"name": t, "href": search_url(t)} for t in change.tags_added]
    shown.tags_removed = [{"name": t, "href": search_url(t)} for t in change.tags_removed]
    if change.event in ("deleted", "hidden", "merged"):
        shown.reason = (fields.get("deletion_reason") or [None, None])[1]
        into = (fields.get("duplicate_of") or [None, None])[1]
        shown.merged_into = into if isinstance(into, int) else None
        return shown
    for name, pair in fields.items():
        if name in UNSHOWN or not isinstance(pair, list) or len(pair) != 2:
            continue
        old, new = pair
        if name in TEXT_FIELDS or (isinstance(old, str) and isinstance(new, str) and "\n" in old + new):
            shown.diffs.append((name, text_diff(_text(old), _text(new))))
        else:
            shown.facts.append((name, f"{_short(old)} \u2192 {_short(new)}"))
    return shown


def counted_series(history: list[Change], record: dict[str, Any], now: str) -> list[Series]:
    """Score and faves over time: where the history saw each move, from the first sight to now."""
    oldest_first = list(reversed(history))
    start = next((c.seen_at for c in oldest_first if c.event == "first_seen"), None)
    found = []
    for name in COUNTED:
        moves = [(c.seen_at, c.changes[name]) for c in oldest_first
                 if not c.on_site and c.changes and isinstance(c.changes.get(name), list)]
        current = record.get(name)
        if not moves or not isinstance(current, int):
            continue
        first_value = moves[0][1][0]
        points = [(start, first_value)] if start and start < moves[0][0] and isinstance(first_value, int) else []
        points += [(at, pair[1]) for at, pair in moves if isinstance(pair[1], int)]
        points.append((max(now, points[-1][0]) if points else now, current))
        found.append(Series(name, points))
    return found


def image_history(conn: sqlite3.Connection, image_id: int, moment: Moment | None = None,
                  before: tuple[str, int] | None = None) -> dict[str, Any] | None:
    """Everything the history page shows: a page of the timeline, the newest :data:`PER_PAGE`
    changes before ``before`` (up to ``moment`` when given), and the score and faves over its span;
    None when the mirror has no such image (or it was not uploaded yet then)."""
    row = conn.execute("SELECT raw, stub, tags, source_url, hidden_from_users, deletion_reason, duplicate_of "
                       "FROM images WHERE id = ?", [image_id]).fetchone()
    if row is None:
        return None
    record = json.loads(row[0] or row[1] or "{}")
    if moment is not None:  # the changes at or before the moment: before just after it
        before = min(before or (moment.text, 2**62), (moment.text, 2**62))
    history = record_history(conn, "images", str(image_id), before=before, limit=PER_PAGE + 1)
    older = cursor_text(history[PER_PAGE - 1]) if len(history) > PER_PAGE else None
    history = history[:PER_PAGE]
    if moment is not None:
        found = then(conn, "images", image_id, moment)
        if found is None:
            return None
        record, stub = json.loads(found.row["raw"]), json.loads(found.row["stub"] or "{}")
        row = (None, None, record.get("tags"), record.get("source_url"), found.row["hidden_from_users"],
               stub.get("deletion_reason"), stub.get("duplicate_of"))
    users = {c.user_id for c in history if c.user_id is not None}
    known = {r[0] for r in conn.execute("SELECT id FROM users WHERE id IN (SELECT value FROM json_each(?))",
                                        [json.dumps(sorted(users))])}
    entries = [entry(c) for c in history]
    _colour_tags(conn, entries)
    return {
        "id": image_id, "record": record, "artists": artists_of_tags(row[2]), "source": row[3] or None,
        "kept": kept_extension(conn, image_id), "hidden": bool(row[4]), "deletion_reason": row[5],
        "duplicate_of": row[6], "entries": entries, "known_users": known,
        "older": f"{history_url(image_id)}?{urlencode({'before': older})}" if older else None,
        "chart": chart(counted_series(history, record, moment.text if moment else utc_text())),
        "counts": [(name, record.get(name)) for name in COUNTED],
    }


def _colour_tags(conn: sqlite3.Connection, entries: list[Entry]) -> None:
    """Give each tag added or removed its category, which the board colours it by."""
    tags = [t for e in entries for t in e.tags_added + e.tags_removed]
    names = sorted({t["name"] for t in tags})
    categories = dict(conn.execute("SELECT name, category FROM tags WHERE name IN (SELECT value FROM json_each(?))",
                                   [json.dumps(names)]).fetchall()) if names else {}
    for tag in tags:
        tag["category"] = categories.get(tag["name"]) or ""


def tag_lately(conn: sqlite3.Connection, tag_id: int, limit: int = 12) -> list[tuple[str, list[dict[str, Any]]]]:
    """The images that gained and lost a tag lately, as the tag page's link lists."""
    found = tag_changes(conn, tag_id, limit)
    lists = []
    for sign, label in (("+", "gained it lately"), ("-", "lost it lately")):
        lists.append((label, [{"text": f"#{c.image_id} ({c.seen_at[:10]}{', on the site' if c.on_site else ''})",
                               "href": history_url(c.image_id)} for c in found if c.change == sign]))
    return lists


def record_href(change: Change) -> str | None:
    """Where a changed record is shown on the board (an image: its history), or None."""
    key = change.key
    if change.resource == "images" and key.isdigit():
        return history_url(int(key))
    if change.resource in ("tags", "users", "galleries") and key.isdigit():
        return f"/-/{change.resource[:-1] if change.resource != 'galleries' else 'gallery'}/{key}"
    if change.resource == "forums":
        return forum_url(key)
    if change.resource == "topics" and key.startswith("["):
        forum, slug = json.loads(key)
        return topic_url(forum, slug)
    return None


def _then_href(change: Change) -> str | None:
    """The board page of a changed record as it was just after the change ("this page as it was then")."""
    key = change.key
    page = image_url(int(key)) if change.resource == "images" and key.isdigit() else record_href(change)
    return moment_href(change.seen_at, page) if page else None


@dataclass(frozen=True)
class Selection:
    """What ``/-/changes`` is asked for."""

    events: tuple[str, ...]
    resources: tuple[str, ...]
    before: tuple[str, int] | None

    @property
    def listed_events(self) -> tuple[str, ...]:
        return self.events or tuple(e for e in EVENTS if e not in QUIET_EVENTS)

    def query(self, **override: Any) -> str:
        values = {"event": ",".join(self.events), "resource": ",".join(self.resources), **override}
        return "?" + urlencode({k: v for k, v in values.items() if v})


def selection_of(args: Any) -> Selection:
    """The filters of a request (``event`` and ``resource``, repeated or comma lists; ``before``,
    the cursor of a page); ValueError naming the valid values."""
    events = parse_events(args.getlist("event"))
    resources = parse_resources(args.getlist("resource"))
    before = parse_cursor(args.get("before")) if args.get("before") else None
    return Selection(events, resources, before)


def archive_changes(conn: sqlite3.Connection, selection: Selection, moment: Moment | None = None) -> dict[str, Any]:
    """A page of what changed in the archive (up to ``moment`` when given), with the first
    sightings counted unless asked for."""
    resources = selection.resources or RESOURCES
    before = selection.before
    if moment is not None:  # the changes at or before the moment: before just after it
        before = min(before or (moment.text, 2**62), (moment.text, 2**62))
    found = changes_page(conn, events=selection.listed_events, resources=resources, before=before,
                         limit=PER_PAGE + 1)
    rows = [{"change": c, "what": record_name(c), "line": describe(c)[len(record_name(c)):].lstrip(": "),
             "href": record_href(c), "then": _then_href(c)} for c in found[:PER_PAGE]]
    older = found[PER_PAGE - 1] if len(found) > PER_PAGE else None
    if selection.before:
        summed = []
    elif not selection.events:
        summed = first_seen(conn, resources=resources)
    else:  # the sightings of runs that filled an empty table, kept as a count: no row of them to list
        summed = [seen for seen in counted_sightings(conn, resources) if "first_seen" in selection.events
                  and (moment is None or seen.last_at <= moment.text)]
    return {"rows": rows, "first_seen": summed,
            "older": selection.query(before=cursor_text(older)) if older else None}


def _context(**values: Any) -> dict[str, Any]:
    return {"css": css(), "searchbox_q": "", "search_path": SEARCH_PATH, "changes_path": CHANGES_PATH,
            "ago": relative_time, "then_href": moment_href, **values}


async def booru_image_history(datasette: Any, request: Any) -> Response:
    image_id = int(request.url_vars["id"])
    database = datasette.get_database(database_name(datasette))
    moment = moment_of(request)
    try:
        before = parse_cursor(request.args["before"]) if request.args.get("before") else None
    except ValueError as e:
        raise BadRequest(str(e)) from None
    found = await database.execute_fn(lambda conn: image_history(conn, image_id, moment, before))
    if found is None:
        raise NotFound(f"the mirror has no image {image_id}")
    site = site_address(datasette)
    found["card"] = ImageCard(image_id, found["artists"], found["source"], found["kept"]).html(
        site, SEARCH_PATH, image_url(image_id))
    found["source_link"] = bool(found["source"] and is_web_url(found["source"]))
    context = _context(image_path=image_url(image_id), site=site, **found)
    return Response.html(await datasette.render_template("booru_history.html", context, request=request))


async def booru_changes(datasette: Any, request: Any) -> Response:
    try:
        selection = selection_of(request.args)
    except ValueError as e:
        context = _context(error=str(e), events=EVENTS, resources=RESOURCES, selection=None, rows=[],
                           first_seen=[], older=None)
        return Response.html(await datasette.render_template("booru_changes.html", context, request=request),
                             status=400)
    found = await datasette.get_database(database_name(datasette)).execute_fn(
        lambda conn: archive_changes(conn, selection, moment_of(request)))
    context = _context(error=None, events=EVENTS, resources=RESOURCES, selection=selection, **found)
    return Response.html(await datasette.render_template("booru_changes.html", context, request=request))


ROUTES = [(r"^/-/image/(?P<id>[0-9]{1,10})/history$", booru_image_history), (r"^/-/changes$", booru_changes)]
