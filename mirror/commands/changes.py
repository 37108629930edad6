"""`mirror changes`: what the syncs saw change, newest first, one line each; with the site's own
tag and source changes where a dump was imported (``image 5 on the site: tags +pony``).

Reads the history tables (:mod:`mirror.store.history`) only: ``image 123: tags -safe
+suggestive; description edited``, ``image 456 deleted: Rule #2``, ``gallery 7: 2 images
removed, reordered``. ``--json`` gives the same as objects, with every old and new value.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from sqlite_utils import Database

from ..dates import utc_text

__all__ = ["Change", "changes", "describe", "parse_since", "RESOURCE_NAMES"]

# What a user may call a resource, and the table its history is kept under.
RESOURCE_NAMES = {"images": "images", "comments": "comments", "posts": "posts", "galleries": "galleries",
                  "tags": "tags", "forums": "forums", "topics": "topics", "filters": "filters",
                  "profiles": "users", "users": "users"}
_SINGULAR = {"images": "image", "comments": "comment", "posts": "post", "galleries": "gallery", "tags": "tag",
             "forums": "forum", "topics": "topic", "filters": "filter", "users": "user"}
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
# Fields whose change is said as "edited" rather than shown: long text, lists, objects.
_SHORT = 40


@dataclass
class Change:
    """One record's change seen by one sync."""

    id: int
    seen_at: str
    resource: str
    key: str
    event: str
    run_id: int | None
    changes: dict[str, list[Any]] | None
    tags_added: list[str] = field(default_factory=list)
    tags_removed: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"seen_at": self.seen_at, "resource": self.resource, "id": _natural(self.key), "event": self.event,
                "run_id": self.run_id, "changes": self.changes, "tags_added": self.tags_added,
                "tags_removed": self.tags_removed, "summary": describe(self)}


def parse_since(text: str, now: datetime | None = None) -> str:
    """``7d``, ``12h``, ``30m``, ``2w`` ago, or a date or time (``2026-11-01``), as stored text."""
    now = now or datetime.now(timezone.utc)
    if match := re.fullmatch(r"\s*(\d+)\s*([mhdw])\s*", text):
        return utc_text(now - timedelta(**{_UNITS[match.group(2)]: int(match.group(1))}))
    try:
        when = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"--since {text!r}: give a time ago (7d, 12h, 30m, 2w) or a date (2026-11-01)") from None
    return utc_text(when if when.tzinfo else when.replace(tzinfo=timezone.utc))


def changes(db: Database, *, since: str, resource: str | None = None, key: str | None = None,
            limit: int | None = None) -> list[Change]:
    """The changes seen at or after ``since`` (stored time text), newest first; none before the first
    sync of a version that keeps history (a mirror made before starts its history then)."""
    if not db["history"].exists():
        return []
    # By the index on time: left to itself, SQLite takes min(id) as a walk up the ids, through a year.
    first = db.execute("SELECT min(id) FROM history INDEXED BY history_by_time WHERE seen_at >= ?",
                       [since]).fetchone()[0]
    if first is None:
        return []
    # The site's own events, read from a dump, are written after the syncs' at their own (earlier) times.
    where, params = ["id >= ?", "seen_at >= ?"], [first, since]
    if resource is not None:
        where.append("resource = ?")
        params.append(resource)
    if key is not None:
        where.append("record_key = ?")
        params.append(key)
    sql = (f"SELECT id, seen_at, resource, record_key, event, run_id, changes FROM history WHERE {' AND '.join(where)} "
           "ORDER BY id DESC" + (" LIMIT ?" if limit else ""))
    decode = json.JSONDecoder().raw_decode  # what json.loads does, less its checks of whitespace
    found = [Change(row[0], row[1], row[2], row[3], row[4], row[5], decode(row[6])[0] if row[6] else None)
             for row in db.execute(sql, params + ([limit] if limit else []))]
    _add_tags(db, found)
    return found


def _add_tags(db: Database, found: list[Change]) -> None:
    images = {change.id: change for change in found if change.resource == "images"}
    if not images:
        return
    low, high = min(images), max(images)
    for history_id, change, tag_id, name in db.execute(
            "SELECT history_id, change, tag_id, tag_name FROM image_tag_changes WHERE history_id BETWEEN ? AND ? "
            "ORDER BY id", [low, high]):
        if history_id in images:
            shown = name if name is not None else f"tag {tag_id}"
            (images[history_id].tags_added if change == "+" else images[history_id].tags_removed).append(shown)


def describe(change: Change) -> str:
    """One line: ``image 123: tags -safe +suggestive; description edited``."""
    what = f"{_SINGULAR.get(change.resource, change.resource)} {change.key}"
    fields = change.changes or {}
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
    shown = [name for name in fields if name != "updated_at"] or list(fields)
    parts += [_field(name, *fields[name]) for name in shown]
    lead = f"{what} shown again" if change.event == "shown" else (
        f"{what} on the site" if change.event in ("site_tags", "site_source") else what)
    return f"{lead}: {'; '.join(parts)}" if parts else lead


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
