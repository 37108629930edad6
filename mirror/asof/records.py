"""One record as it was at a moment: today's row, with what the history kept since undone.

The history keeps each change as the fields that changed, old and new (:mod:`mirror.store.history`),
an image's tags as additions and removals, and hides, merges and un-hides as events. So the record
at a moment is today's record with every change after that moment undone, newest first: a field
set back to its old value, a tag added since taken off and one removed since put back. This reads
one record's history (an index range), never the board's.

What it cannot know, it does not invent:

- Counters (votes, faves, comment counts) are as exact as ``history.counters`` kept them: with
  ``daily``, a record's count at a moment is the one kept on or after it that day.
- A field the mirror first received after the moment (one a dump lacked) shows the value it first
  had: it was unknown then, and nothing says it was different.
- Before the mirror first saw a record, what is known is the site's own history from its dump
  (tag changes, at the site's times) and ``created_at``: an image uploaded before a moment is
  answered as first seen, with the site's tag changes since undone.

One clock: the history's ``seen_at``, which is the site's time for the site's own changes and the
time the mirror saw a change for the rest. A change made on the site a day before a sync saw it is
answered from the moment the sync saw it, unless a dump told when the site made it.
"""

from __future__ import annotations

import itertools
import json
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .moments import Moment

__all__ = ["Event", "AsOf", "record_as_of", "events_of", "versions_of", "HIDING"]

Record = dict[str, Any]

HIDING = frozenset({"hidden", "deleted", "merged"})
_MARKS = HIDING | {"shown"}
# Events whose ``changes`` are fields of the record, old and new.
_FIELD_EVENTS = frozenset({"changed", "counters", "shown"})
# Events that carry an image's tags added and removed.
_TAG_EVENTS = frozenset({"changed", "shown", "site_tags"})
# What a hiding event keeps of the stub (:mod:`mirror.store.history`).
_STUB_FIELDS = ("deletion_reason", "duplicate_of", "updated_at")
# What a hidden image's stub holds besides them (reference: image_view.ex), for one shown again since.
_STUB_KEYS = ("id", "created_at", "first_seen_at")


@dataclass(frozen=True)
class Event:
    """One entry of a record's history."""

    id: int
    seen_at: str
    event: str
    changes: Mapping[str, list[Any]] | None


@dataclass(frozen=True)
class AsOf:
    """A record at a moment: a row as the API reads rows (``raw``, ``stub``, ``hidden_from_users``)
    and when the version answering began (Memento-Datetime), or None where nothing says."""

    row: dict[str, Any]
    began: str | None

    @property
    def record(self) -> Any:
        """The record served: the stub for a record hidden at the moment."""
        text = self.row["stub"] if self.row.get("hidden_from_users") and self.row.get("stub") else self.row["raw"]
        return json.loads(text) if text else None


def events_of(conn: sqlite3.Connection, resource: str, key: str) -> list[Event]:
    """A record's history, oldest first (by time, then as written)."""
    try:
        rows = conn.execute("SELECT id, seen_at, event, changes FROM history WHERE resource = ? AND record_key = ? "
                            "ORDER BY seen_at, id", [resource, key]).fetchall()
    except sqlite3.OperationalError:  # a mirror made before history was kept
        return []
    return [Event(i, at, event, json.loads(changes) if changes else None) for i, at, event, changes in rows]


def record_as_of(conn: sqlite3.Connection, resource: str, key: str, row: Mapping[str, Any],
                 when: Moment) -> AsOf | None:
    """The record of today's ``row`` (``raw``, and ``stub`` and ``hidden_from_users`` where the
    resource is hideable) as it was at ``when``; None where it did not exist then."""
    if row.get("raw") is None:
        return None
    events = events_of(conn, resource, key)
    record = json.loads(row["raw"])
    if not isinstance(record, dict):
        return None
    later = [e for e in events if e.seen_at > when.text]
    _undo_fields(record, later)
    if resource == "images":
        _undo_tags(conn, record, int(key), later)
    if not _existed(record, events, when):
        return None
    hidden, stub = _hidden_at(row, record, events, when)
    earlier = [e.seen_at for e in events if e.seen_at <= when.text]
    began = earlier[-1] if earlier else _created(record) or (events[0].seen_at if events else None)
    out = {**row, "raw": json.dumps(record, ensure_ascii=False), "stub": stub, "hidden_from_users": hidden}
    return AsOf(out, began)


def versions_of(conn: sqlite3.Connection, resource: str, key: str, row: Mapping[str, Any]) -> list[str]:
    """When each version of a record the mirror knows began, oldest first: its upload (or first
    sighting), then each kept change."""
    events = events_of(conn, resource, key)
    record = json.loads(row["raw"]) if row.get("raw") else {}
    starts = [created] if (created := _created(record if isinstance(record, dict) else {})) else []
    starts += [e.seen_at for e in events]
    return sorted(set(starts))


def _created(record: Mapping[str, Any]) -> str | None:
    created = record.get("created_at")
    return created[:19] + "Z" if isinstance(created, str) and len(created) >= 19 else None


def _existed(record: Mapping[str, Any], events: Sequence[Event], when: Moment) -> bool:
    """Uploaded (or written) by then; a record with no date existed once the mirror first saw it,
    and, with no first sighting kept (a dump's record, or one kept before history), always."""
    created = _created(record)
    if created is not None:
        return created <= when.text
    first = next((e for e in events if e.event == "first_seen"), None)
    return first is None or first.seen_at <= when.text


def _undo_fields(record: Record, later: Sequence[Event]) -> None:
    for event in reversed(later):
        if event.event in _FIELD_EVENTS and event.changes:
            for field, (old, _new) in event.changes.items():
                record[field] = old


def _undo_tags(conn: sqlite3.Connection, record: Record, image_id: int, later: Sequence[Event]) -> None:
    """Take off the tags added after the moment, put back those removed."""
    ids = [e.id for e in later if e.event in _TAG_EVENTS]
    if not ids or not isinstance(record.get("tag_ids"), list):
        return
    names = record.get("tags") if isinstance(record.get("tags"), list) else []
    tags = {tag_id: (names[n] if n < len(names) else None) for n, tag_id in enumerate(record["tag_ids"])}
    marks = ",".join("?" * len(ids))
    undone = conn.execute(f"SELECT change, tag_id, tag_name FROM image_tag_changes WHERE history_id IN ({marks}) "
                          "ORDER BY seen_at DESC, id DESC", ids).fetchall()
    for change, tag_id, name in undone:
        if change == "+":
            tags.pop(tag_id, None)
        else:
            tags[tag_id] = name
    ordered = sorted(tags.items())  # the API lists an image's tags by id, names in step
    record["tag_ids"] = [tag_id for tag_id, _ in ordered]
    record["tags"] = [name for _, name in ordered]
    record["tag_count"] = len(ordered)


def _hidden_at(row: Mapping[str, Any], record: Record, events: Sequence[Event],
               when: Moment) -> tuple[bool, str | None]:
    """Whether the record was hidden at the moment, and the stub the site answered then.

    Today's state, with each hide and un-hide since the moment undone, newest first: a hide sets
    the stub's reason and time back (and, a first hide, shows the record again). Past an un-hide
    the stub it ended is not kept; it is rebuilt from the hides before (:func:`_stub_then`)."""
    hidden, stub = bool(row.get("hidden_from_users")), _loads(row.get("stub"))
    for event in reversed([e for e in events if e.seen_at > when.text and e.event in _MARKS]):
        if event.event == "shown":
            hidden, stub = True, None
            continue
        if stub is not None:
            stub.update({f: old for f, (old, _new) in (event.changes or {}).items() if f in _STUB_FIELDS})
        if not hidden_before(event):
            hidden, stub = False, None
    if not hidden:
        return False, None
    if stub is None:
        stub = _stub_then(record, [e for e in events if e.seen_at <= when.text and e.event in _MARKS])
    return True, json.dumps({**stub, "hidden_from_users": True}, ensure_ascii=False)


def _stub_then(record: Record, marks: Sequence[Event]) -> Record:
    """The stub at the end of ``marks`` (hides and un-hides up to a moment; the record hidden then):
    its hides since the last un-hide replayed over the stub they started from: none for a first
    hide; for a record hidden when first seen, the stub it was first kept as, which the record with
    its later changes undone holds."""
    period = list(itertools.takewhile(lambda e: e.event != "shown", reversed(marks)))[::-1]
    first = next((n for n, e in enumerate(period) if not hidden_before(e)), None)
    stub = {f: record.get(f) for f in _STUB_KEYS if f in record}
    if first is None:
        stub.update({f: record.get(f) for f in _STUB_FIELDS})
    else:
        stub.update({f: None for f in _STUB_FIELDS})
        period = period[first:]
    for event in period:
        stub.update({f: new for f, (_old, new) in (event.changes or {}).items() if f in _STUB_FIELDS})
    return stub


def hidden_before(event: Event) -> bool:
    """Whether the record was hidden just before ``event``: an un-hide, or a hide that changed a
    stub kept before it (a first hide starts from no stub: every old value is null)."""
    if event.event == "shown":
        return True
    return any(old is not None for old, _new in (event.changes or {}).values())


def _loads(text: str | None) -> Record | None:
    value = json.loads(text) if text else None
    return value if isinstance(value, dict) else None
