"""`mirror changes`: what the syncs saw change, newest first, one line each, for people: the real
events first (``image 456 deleted: Rule #2``, ``image 123: tags -safe +suggestive; description
edited``, ``tag pony: images 27 -> 26``), then a first sync's "first seen" records summed up per
resource, one line each (``--event first_seen`` lists them, and says the sightings of a run that
filled an empty table, kept as a count, in one line: ``100,000 images first seen``; a summary says
"lists them" only where some records were first seen one by one). With the
site's own tag and source changes where a dump was imported (``image 5 on the site by user 12
(Alice): tags +pony``).

Reads the history (:mod:`mirror.store.history_read`) only. ``--json`` gives every change the
filters select as objects, with every old and new value, as it reads them (never held at once).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

from sqlite_utils import Database

from ..dates import utc_text
from ..store.history_read import (EVENTS, RESOURCES, Change, FirstSeen, changes_since, counted_sighting,
                                  counted_sightings, first_seen)

__all__ = ["Change", "changes", "describe", "lines", "parse_since", "parse_limit", "parse_events", "parse_resources",
           "parse_record", "to_json", "json_chunks", "record_name", "RESOURCE_NAMES", "EVENTS"]

# What a user may call a resource, and the table its history is kept under.
RESOURCE_NAMES = {"images": "images", "comments": "comments", "posts": "posts", "galleries": "galleries",
                  "tags": "tags", "forums": "forums", "topics": "topics", "filters": "filters",
                  "profiles": "users", "users": "users"}
_SINGULAR = {"images": "image", "comments": "comment", "posts": "post", "galleries": "gallery", "tags": "tag",
             "forums": "forum", "topics": "topic", "filters": "filter", "users": "user"}
_BY_SINGULAR = {**{one: table for table, one in _SINGULAR.items()}, "profile": "users"}
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
MAX_LIMIT = 10**12
# Fields whose change is said as "edited" rather than shown: long text, lists, objects.
_SHORT = 40
# A line needs no more of a text than this (a reason or a source it shows): the rest is left in the
# database rather than read (an 8 MB description, old and new, is said "edited").
_LINE_TEXT = 300
# Records said by their name rather than their id.
_NAMED = frozenset({"tags", "users"})
# What follows from the real events (numbers moving, a tag left with no image or given its first), and
# what a person looks for first: everything else but the records first seen.
_FOLLOWING = ("counters", "emptied", "used")
_HIDING = ("hidden", "deleted", "merged")
_REAL_EVENTS = tuple(e for e in EVENTS if e not in _FOLLOWING + ("first_seen",))


def parse_since(text: str, now: datetime | None = None) -> str:
    """``7d``, ``12h``, ``30m``, ``2w`` ago, or a date or time (``2026-11-01``), as stored text."""
    now = now or datetime.now(timezone.utc)
    if match := re.fullmatch(r"\s*(\d+)\s*([mhdw])\s*", text):
        try:
            return utc_text(now - timedelta(**{_UNITS[match.group(2)]: int(match.group(1))}))
        except OverflowError:  # past the year 1, or more days than a timedelta holds
            raise ValueError(f"--since {text.strip()}: further back than the calendar goes (year 1); "
                             "give a time ago such as 7d or 2w, or a date (2026-11-01)") from None
    try:
        when = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"--since {text!r}: give a time ago (7d, 12h, 30m, 2w) or a date (2026-11-01)") from None
    return utc_text(when if when.tzinfo else when.replace(tzinfo=timezone.utc))


def parse_limit(limit: int | None) -> int | None:
    """``--limit``: None (no limit) or a number from 1 to :data:`MAX_LIMIT`; ValueError otherwise."""
    if limit is not None and not 1 <= limit <= MAX_LIMIT:
        raise ValueError(f"--limit {limit}: give a number from 1 to {MAX_LIMIT:,}, or no --limit for every change")
    return limit


def _words(values: Sequence[str]) -> list[str]:
    """``--x a --x b,c`` as [a, b, c]."""
    return [word.strip().lower() for value in values for word in value.split(",") if word.strip()]


def parse_events(values: Sequence[str]) -> tuple[str, ...]:
    """The events asked for (repeated or comma lists); ValueError naming the valid ones."""
    found = _words(values)
    unknown = [word for word in found if word not in EVENTS]
    if unknown:
        raise ValueError(f"--event {unknown[0]}: not an event the history keeps; give one or more of "
                         f"{', '.join(EVENTS)}")
    return tuple(dict.fromkeys(found))


def parse_resources(values: Sequence[str]) -> tuple[str, ...]:
    """The tables of the resources asked for (``images``, ``image``, ``profiles``...); ValueError
    naming the valid ones."""
    found = _words(values)
    unknown = [word for word in found if word not in RESOURCE_NAMES and word not in _BY_SINGULAR]
    if unknown:
        raise ValueError(f"--resource {unknown[0]}: not a resource; give one or more of "
                         f"{', '.join(sorted(RESOURCE_NAMES))}")
    return tuple(dict.fromkeys(RESOURCE_NAMES.get(word) or _BY_SINGULAR[word] for word in found))


def parse_record(text: str, resources: Sequence[str]) -> tuple[str, str]:
    """(table, record key) of ``--id``: ``image:5``, ``tag:265``, ``forum:art``, ``topic:art/a-topic``;
    a bare id with exactly one ``--resource``. ValueError saying what to give otherwise."""
    kind, colon, key = text.partition(":")
    if not colon:
        if len(resources) != 1:
            raise ValueError(f"--id {text}: say what it is, as in --id image:{text} (or give one --resource); "
                             "images, tags, users, comments, posts... share their numbers")
        return resources[0], text.strip()
    table = RESOURCE_NAMES.get(kind.strip().lower()) or _BY_SINGULAR.get(kind.strip().lower())
    if table is None:
        raise ValueError(f"--id {text}: {kind!r} is not a resource; give one of "
                         f"{', '.join(sorted(_BY_SINGULAR))}, as in --id image:5")
    if resources and table not in resources:
        raise ValueError(f"--id {text} is not among --resource {', '.join(resources)}")
    key = key.strip()
    if table == "topics" and "/" in key:
        key = json.dumps(key.split("/", 1), ensure_ascii=False, separators=(",", ":"))
    return table, key


def changes(db: Database, *, since: str, events: Sequence[str] = (), resources: Sequence[str] = (),
            key: str | None = None, limit: int | None = None, longest: int | None = None) -> Iterator[Change]:
    """The changes seen at or after ``since`` (stored time text), newest first, as they are read;
    none before the first sync of a version that keeps history (a mirror made before starts its
    history then). With ``longest``, their texts cut to that many characters."""
    if not db["history"].exists():
        return iter(())
    found = changes_since(db.conn, since, events=events, resources=resources, key=key, limit=limit, longest=longest)
    if key is not None and len(resources) == 1 and (not events or "first_seen" in events):
        return _with_counted_sighting(db, found, resources[0], key, since, limit)
    return found


def _with_counted_sighting(db: Database, found: Iterator[Change], resource: str, key: str, since: str,
                           limit: int | None) -> Iterator[Change]:
    """One record's changes, then its first sighting where a run kept it only as a count
    (:mod:`mirror.store.first_sightings`), dated when that run's sightings end: the oldest."""
    left = limit if limit is not None else 2**62
    for change in found:
        yield change
        left -= 1
    counted = counted_sighting(db.conn, resource, key)
    if left > 0 and counted is not None and counted.seen_at >= since:
        yield counted


def lines(db: Database, *, since: str, events: Sequence[str] = (), resources: Sequence[str] = (),
          key: str | None = None, limit: int | None = None) -> Iterator[str]:
    """What `mirror changes` prints. With no event asked for and no record: the real events first
    (deleted, merged, changed...), then the counts that moved with them, then the records first
    seen summed up per resource, one line each. Else every change selected, newest first."""
    if events or key is not None:
        left = limit if limit is not None else 2**62
        for change in changes(db, since=since, events=events, resources=resources, key=key, limit=limit,
                              longest=_LINE_TEXT):
            yield f"{_when(change.seen_at)}  {describe(change)}"
            left -= 1
        if "first_seen" in events and key is None and db["history"].exists():
            for seen in counted_sightings(db.conn, resources or RESOURCES):
                if seen.last_at >= since and left > 0:
                    yield f"{_when(seen.last_at)}  {seen.count:,} {_noun(seen)} first seen"
                    left -= 1
        return
    left = limit if limit is not None else 2**62
    for kinds in (_REAL_EVENTS, _FOLLOWING):
        for change in changes(db, since=since, events=kinds, resources=resources, limit=left, longest=_LINE_TEXT):
            yield f"{_when(change.seen_at)}  {describe(change)}"
            left -= 1
        if left <= 0:
            return
    if db["history"].exists():
        for seen in first_seen(db.conn, since=since, resources=resources or RESOURCES):
            listed = " (--event first_seen lists them)" if seen.count > seen.counted else ""
            yield f"{_when(seen.last_at)}  {seen.count:,} {_noun(seen)} first seen{listed}"


def _noun(seen: FirstSeen) -> str:
    return seen.resource if seen.count != 1 else _SINGULAR.get(seen.resource, seen.resource)


def _when(stored: str) -> str:
    return stored[:16].replace("T", " ")


def to_json(change: Change) -> dict[str, Any]:
    """A change as `mirror changes --json` gives it: every old and new value, and its one line."""
    return {"seen_at": change.seen_at, "resource": change.resource, "id": _natural(change.key), "name": change.name,
            "event": change.event, "run_id": change.run_id, "on_site": change.on_site, "user_id": change.user_id,
            "changes": change.changes, "tags_added": change.tags_added, "tags_removed": change.tags_removed,
            "summary": describe(change)}


def record_name(change: Change) -> str:
    """``image 5``, ``tag pony``, ``user Alice``, ``topic art/a-topic``."""
    singular = _SINGULAR.get(change.resource, change.resource)
    if change.resource in _NAMED and change.name:
        return f"{singular} {change.name}"
    key = _natural(change.key)
    return f"{singular} {'/'.join(map(str, key)) if isinstance(key, list) else key}"


def describe(change: Change) -> str:
    """One line: ``image 123: tags -safe +suggestive; description edited``."""
    what = record_name(change)
    fields = change.changes or {}
    if change.event in _HIDING and set(fields) == {"updated_at"} and fields["updated_at"][0] is not None:
        return f"{what} edited while hidden"  # the reason is as it was: the stub's time moved
    if change.event == "deleted":
        reason = (fields.get("deletion_reason") or [None, None])[1]
        return f"{what} deleted" + (f": {reason}" if reason else "")
    if change.event == "merged":
        return f"{what} merged into {(fields.get('duplicate_of') or [None, '?'])[1]}"
    if change.event in ("hidden", "destroyed", "gone", "emptied", "used"):
        return f"{what} {change.event}"
    if change.event == "first_seen":
        return f"{what} first seen"
    if change.event == "gallery_images":
        return f"{what}: " + _membership(fields)
    parts = []
    if change.tags_added or change.tags_removed:
        parts.append("tags " + " ".join([f"-{t}" for t in change.tags_removed] + [f"+{t}" for t in change.tags_added]))
    if change.on_site:
        fields = {name: value for name, value in fields.items() if name != "source"}
        parts += [f"source {_short(change.changes['source'][1])}"] if "source" in (change.changes or {}) else []
    shown = [name for name in fields if name != "updated_at"] or list(fields)
    parts += [_field(name, *fields[name]) for name in shown]
    lead = f"{what} {_site_mark(change)}" if change.on_site else what
    lead = f"{what} shown again" if change.event == "shown" else lead
    return f"{lead}: {'; '.join(parts)}" if parts else lead


def _site_mark(change: Change) -> str:
    """``on the site by user 12 (Alice)``: a change the site made, read from its dump."""
    if change.user_id is None:
        return "on the site"
    return f"on the site by user {change.user_id}" + (f" ({change.user_name})" if change.user_name else "")


def _field(name: str, old: Any, new: Any) -> str:
    if _scalar(old) and _scalar(new):
        return f"{name} {_short(old)} -> {_short(new)}"
    if old in (None, "", [], {}):
        return f"{name} added"
    if new in (None, "", [], {}):
        return f"{name} removed"
    return f"{name} edited"


def _scalar(value: Any) -> bool:
    """A value shown as it is: a number, nothing, or a short line of text."""
    kind = type(value)
    return value is None or kind is int or kind is float or (kind is str and len(value) <= _SHORT and "\n" not in value)


def _short(value: Any) -> str:
    if type(value) is float:  # wilson_score, aspect_ratio: to two places, as a reader compares them (and browse)
        return f"{value:.2f}"
    return "none" if value is None else f'"{value}"' if type(value) is str else str(value)


def _membership(fields: dict[str, Any]) -> str:
    added, removed = fields.get("added") or [], fields.get("removed") or []
    parts = [f"{len(added)} image{'s' * (len(added) != 1)} added"] if added else []
    parts += [f"{len(removed)} image{'s' * (len(removed) != 1)} removed"] if removed else []
    parts += ["reordered"] if fields.get("reordered") else []
    return ", ".join(parts) or "images changed"


def _natural(key: str) -> Any:
    """A record key as its natural type: ``123`` -> 123, a compound key -> its list."""
    if key.isdigit():
        return int(key)
    if key.startswith("["):
        return json.loads(key)
    return key


def json_chunks(found: Iterator[Change]) -> Iterator[str]:
    """A JSON list of the changes, written as they are read: a year of history is never held at once."""
    yield "["
    for n, change in enumerate(found):
        yield ("," if n else "") + "\n" + json.dumps(to_json(change), ensure_ascii=False, indent=2)
    yield "\n]\n"
