"""Each crawler's cursor said in words, for ``mirror status``: where it stands and what its next
run asks for. A cursor is its crawler's own JSON (:mod:`mirror.sync`); a shape not known here is
shown as it is, cut short, so a newer cursor key never breaks ``status``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

Cursor = dict[str, Any]


def describe_cursor(name: str, cursor: Cursor) -> str:
    """One line saying what ``cursor`` of crawler ``name`` means."""
    describe = DESCRIBE.get(name)
    try:
        return describe(cursor) if describe else _raw(cursor)
    except (KeyError, TypeError, ValueError, AttributeError):
        return _raw(cursor)


def _raw(cursor: Cursor, most: int = 100) -> str:
    text = json.dumps(cursor, sort_keys=True)
    return text if len(text) <= most else text[:most - 3] + "..."


def _when(text: str | None) -> str:
    return text.replace("T", " ").replace("Z", " UTC") if text else "never"


def _filter(cursor: Cursor) -> str:
    return "no filter" if cursor.get("filter_id") is None else f"filter {cursor['filter_id']}"


def _images(cursor: Cursor) -> str:
    through = f'query "{cursor.get("query", "*")}" through {_filter(cursor)}'
    walk = cursor.get("walk")
    if walk:
        return (f"a walk started {_when(walk.get('started'))} is under way, stored up to id {walk.get('after')}; "
                f"the next run goes on from there ({through})")
    if cursor.get("high_water") is None:
        return f"no image mirrored yet ({through})"
    return (f"every image up to id {cursor['high_water']} mirrored; the next run asks for newer ids and for images "
            f"updated since the last run began, {_when(cursor.get('last_start'))} ({through})")


def _tags(cursor: Cursor) -> str:
    parts = []
    if cursor.get("walk"):
        parts.append(f"a walk of every tag is under way at id {cursor['walk'].get('start')}")
    elif cursor.get("high_water") is not None:
        parts.append(f"every tag up to id {cursor['high_water']} walked")
    if "history_after" in cursor:
        parts.append(f"tags whose image counts moved refreshed up to history row {cursor['history_after']}")
    else:  # a cursor saved before the history mark
        parts.append(f"tags of images changed up to {_when((cursor.get('images_mark') or {}).get('at'))} refreshed")
    if cursor.get("changed"):
        parts.append(f"a refresh is under way past tag {cursor['changed'].get('after')}")
    return "; ".join(parts)


def _follower(cursor: Cursor) -> str:
    """comments, galleries, posts: the records of the mirrored images (or all), then what changed."""
    scope = "every one on the site" if cursor.get("scope") == "all" else "those of the mirrored images"
    parts = [f"{scope}, through {_filter(cursor)}"]
    everything = cursor.get("everything")
    if cursor.get("scope") == "all":
        parts.append("the first walk of everything is done" if everything and everything.get("done")
                     else "the first walk of everything is under way")
    parts.append(f"the next run asks for what changed since {_when(cursor.get('last_start'))}")
    if cursor.get("run"):
        parts.append(f"a run started {_when(cursor['run'].get('started'))} is under way")
    if "audit_after" in cursor:
        parts.append(f"the audit of hidden ones goes on after image {cursor['audit_after']}")
    return "; ".join(parts)


def _forums(cursor: Cursor) -> str:
    marks = cursor.get("marks") or {}
    parts = [f"{len(marks)} forums read up to their newest reply"
             + (f" (latest {_when(max(marks.values()))})" if marks else "")]
    if cursor.get("walk"):
        parts.append("a walk is under way")
    audited = cursor.get("audited")
    if audited:
        parts.append(f"the audit of old pages goes on after {audited[0]}/{audited[1]} page {audited[2]}")
    return "; ".join(parts)


def _filters(cursor: Cursor) -> str:
    kept = cursor.get("kept") or []
    return f"{len(kept)} filters kept (ids {', '.join(map(str, kept[:10]))}{', ...' if len(kept) > 10 else ''}); " \
           f"filter in use {cursor.get('filter_in_use')}"


def _profiles(cursor: Cursor) -> str:
    return f"the last run got as far as user {cursor.get('last_id')}; profiles older than refresh_days are asked again"


def _featured(cursor: Cursor) -> str:
    return f"the featured image of the day last recorded on {cursor.get('asked_on')}"


def _export(cursor: Cursor) -> str:
    pending = cursor.get("pending")
    if pending:
        return (f"export batch {pending.get('batch')} to {cursor.get('dest')} was begun and not finished; the next "
                "export finishes it")
    return (f"export batch {cursor.get('batch')} written to {cursor.get('dest')} at {_when(cursor.get('exported_at'))}"
            f", with every version seen up to {_when(cursor.get('through'))}")


def _follow(cursor: Cursor) -> str:
    counts = cursor.get("counts") or {}
    return (f"mirror follow: every change before {_when(cursor.get('sure_until'))} is in the mirror; "
            f"{counts.get('events', 0)} events stored, {counts.get('rejected', 0)} kept aside, "
            f"{counts.get('reconnects', 0)} reconnects by its last run")


DESCRIBE: dict[str, Callable[[Cursor], str]] = {
    "follow": _follow, "images": _images, "tags": _tags, "comments": _follower, "galleries": _follower, "posts": _follower,
    "forums": _forums, "filters": _filters, "profiles": _profiles, "featured": _featured, "export": _export,
}
