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
- A record first seen by a run that filled its empty table has no ``first_seen`` row of its own
  (:mod:`mirror.store.first_sightings`): it is answered as first seen when that run's sightings
  end, never before the mirror had it, and up to the run's length after.

One clock: the history's ``seen_at``, which is the site's time for the site's own changes and the
time the mirror saw a change for the rest. A change made on the site a day before a sync saw it is
answered from the moment the sync saw it, unless a dump told when the site made it.
"""

from __future__ import annotations

import itertools
import json
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, NamedTuple

from ..dates import utc_text
from ..store.first_sightings import RECORD_COUNTED_AT_SQL, first_seen_counted_at
from ..store.history import tag_name_sql
from ..store.records import parse_json
from .histories import KNOWN_AT, RecordHistory
from .moments import Moment

__all__ = ["Event", "AsOf", "Version", "Versions", "record_as_of", "events_of", "versions_page", "versions_around",
           "versions_of", "latest_began", "created_time", "Rewind", "Then", "KNOWN_AT", "HIDING"]

Record = dict[str, Any]

HIDING = frozenset({"hidden", "deleted", "merged"})
_MARKS = HIDING | {"shown"}
_MARK_EVENTS = tuple(sorted(_MARKS))
# What a hiding event keeps of the stub (:mod:`mirror.store.history`).
_STUB_FIELDS = ("deletion_reason", "duplicate_of", "updated_at")
# What a hidden image's stub holds besides them (reference: image_view.ex), for one shown again since.
_STUB_KEYS = ("id", "created_at", "first_seen_at")


class Event(NamedTuple):
    """One entry of a record's history (a named tuple: a rewind makes one for each change it undoes)."""

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


def events_of(conn: sqlite3.Connection, resource: str, key: str, *, events: Sequence[str] = (),
              after: str = "", until: str = "\uffff", newest_first: bool = False) -> Iterator[Event]:
    """A record's history between ``after`` (excluded) and ``until`` (included), oldest first (by
    time, then as written) unless ``newest_first``; only ``events`` when given. Read as it is walked:
    a record hammered by bots has hundreds of thousands of entries, never held at once."""
    order = "DESC" if newest_first else ""
    kinds = " AND event IN (SELECT value FROM json_each(?))" if events else ""
    try:
        rows = conn.execute(f"SELECT id, seen_at, event, changes FROM history WHERE resource = ? AND record_key = ? "
                            f"AND seen_at > ? AND seen_at <= ?{kinds} ORDER BY seen_at {order}, id {order}",
                            [resource, key, after, until, *([json.dumps(list(events))] if events else [])])
    except sqlite3.OperationalError as error:
        if _no_history(error):  # a mirror made before history was kept
            return
        raise
    for i, seen_at, event, changes in rows:
        yield Event(i, seen_at, event, json.loads(changes) if changes else None)


def _no_history(error: sqlite3.OperationalError) -> bool:
    return "no such table" in str(error)


def record_as_of(conn: sqlite3.Connection, resource: str, key: str, row: Mapping[str, Any],
                 when: Moment) -> AsOf | None:
    """The record of today's ``row`` (``raw``, and ``stub`` and ``hidden_from_users`` where the
    resource is hideable) as it was at ``when``; None where it did not exist then.

    Read by :class:`Rewind` (the same pass :func:`versions_of` makes through every version): the
    record's history after ``when`` is read newest first as it is walked, never held at once."""
    rewind = Rewind.of(conn, resource, key, row)
    if rewind is None:
        return None
    with rewind:
        then = rewind.to(when.text)
        if then is None:
            return None
        began = rewind.began()
        return AsOf(then.row(row), began or created_time(then.record) or rewind.last)


@dataclass(frozen=True)
class Then:
    """A record at a moment, as :class:`Rewind` reads it: its fields, and whether it was hidden
    then with the stub the site answered; ``touched``: the fields whose value may differ from
    today's record (None: any), so that a reader of many versions compares those alone."""

    record: Record
    hidden: bool
    stub: str | None
    touched: frozenset[str] | None = None

    def row(self, today: Mapping[str, Any]) -> dict[str, Any]:
        """Today's ``row`` with the record as it was: a row as the API reads rows."""
        return {**today, "raw": json.dumps(self.record, ensure_ascii=False), "stub": self.stub,
                "hidden_from_users": self.hidden}


class Rewind:
    """Today's record taken back through its history to ever earlier moments, in one pass.

    At a moment, the record is today's with every change after it undone, newest first: a field
    set back to its old value, a tag added since taken off and one removed since put back, each
    hide and un-hide since undone. The earliest change after the moment holds the value then, so
    walking the history newest first and undoing each change as it passes reads the record at
    each moment in turn: ``to`` called with moments that go back in time costs one read of the
    history, however many versions it rebuilds. The history (and an image's tag changes) are two
    cursors read as they are walked."""

    def __init__(self, conn: sqlite3.Connection, resource: str, key: str, row: Mapping[str, Any],
                 record: Record, history: RecordHistory | None = None) -> None:
        self.conn, self.resource, self.key = conn, resource, key
        self.fields = record  # today's fields, with the field changes after the moment undone
        self.tags: dict[Any, tuple[str, Any]] = {}  # a tag's earliest change after the moment
        # The tags at the last moment (tag id: name), and the lists they were made from; the tag
        # changes passed since, to undo on them: a moment further back costs only the changes between.
        self._tags_then: dict[Any, Any] = {}
        self._tags_from: tuple[Any, Any] | None = None
        self._tags_passed: list[tuple[Any, str, Any]] = []
        self.touched: set[str] = set()  # the fields a change undone so far named
        self.hidden, self.stub = bool(row.get("hidden_from_users")), _loads(row.get("stub"))
        self.last: str | None = None  # the oldest time undone so far (once all are: the earliest)
        self._first_seen: tuple[str | None] | None = None
        if history is not None:  # read already, with other records' (mirror.asof.histories)
            self._history: Iterator[tuple] | None = iter(history.changes)
            self._tag_changes: Iterator[tuple] | None = iter(history.tag_changes)
            self._next, self._next_tag = self._fetch(self._history), self._fetch(self._tag_changes)
            return
        # With its first sighting where a run kept it only as a count (mirror.store.first_sightings),
        # numbered 0: when that run's sightings end.
        self._history = self._cursor(
            "SELECT id, seen_at, event, changes FROM history WHERE resource = :resource AND record_key = :key "
            f"UNION ALL SELECT 0, at, 'first_seen', NULL FROM (SELECT {RECORD_COUNTED_AT_SQL} AS at) "
            "WHERE at IS NOT NULL "
            "ORDER BY seen_at DESC, id DESC", {"resource": resource, "key": key})
        self._tag_changes = self._cursor(
            f"SELECT seen_at, change, tag_id, {tag_name_sql('c')} FROM image_tag_changes c WHERE image_id = ? "
            "ORDER BY seen_at DESC, history_id DESC, tag_id DESC", [int(key)]) if resource == "images" else None
        self._next = self._fetch(self._history)
        self._next_tag = self._fetch(self._tag_changes)

    @classmethod
    def of(cls, conn: sqlite3.Connection, resource: str, key: str, row: Mapping[str, Any],
           record: Record | None = None, history: RecordHistory | None = None) -> Rewind | None:
        """The rewind of today's ``row`` (its ``raw`` as ``record`` where the caller has read it,
        left as it is; its history as ``history`` where read already); None for a row with no
        record to rebuild."""
        if record is None:
            record = parse_json(row["raw"]) if row.get("raw") is not None else None
        return cls(conn, resource, key, row, dict(record), history) if isinstance(record, dict) else None

    def __enter__(self) -> Rewind:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        for cursor in (self._history, self._tag_changes):
            if isinstance(cursor, sqlite3.Cursor):
                cursor.close()

    def to(self, moment: str) -> Then | None:
        """The record at ``moment`` (no later than the one before); None where it did not exist then."""
        while self._next is not None and self._next[1] > moment:
            self._undo(Event(self._next[0], self._next[1], self._next[2],
                             parse_json(self._next[3]) if self._next[3] else None))
            self.last = self._next[1]
            self._next = self._fetch(self._history)
        while self._next_tag is not None and self._next_tag[0] > moment:
            _, change, tag_id, name = self._next_tag
            self.tags[tag_id] = (change, name)
            self._tags_passed.append((tag_id, change, name))
            self._next_tag = self._fetch(self._tag_changes)
        record = self._with_tags(dict(self.fields))
        first = self.first_seen() if created_time(record) is None else None
        if not _existed(record, first, moment):
            return None
        hidden, stub = self._hidden_then(record, moment)
        return Then(record, hidden, stub, frozenset(self.touched.union(_TAG_FIELDS) if self.tags else self.touched))

    def began(self) -> str | None:
        """When the version at the last moment began: the latest change at or before it."""
        return self._next[1] if self._next is not None else None

    def first_seen(self) -> str | None:
        """When the mirror first saw the record (read once, for a record with no date of its own)."""
        if self._first_seen is None:
            self._first_seen = (self._scalar(f"SELECT coalesce((SELECT min(seen_at) FROM history WHERE resource = "
                                             f":resource AND record_key = :key AND event = 'first_seen'), "
                                             f"{RECORD_COUNTED_AT_SQL})"),)
        return self._first_seen[0]

    def _undo(self, event: Event) -> None:
        if event.event in _FIELD_EVENTS and isinstance(event.changes, dict):
            for field, change in event.changes.items():
                self.fields[field] = change[0] if isinstance(change, list) and change else None
            self.touched.update(event.changes)
        if event.event in _MARKS:
            self._unmark(event)

    def _unmark(self, event: Event) -> None:
        """Undo a hide or an un-hide: a hide sets the stub's reason and time back (and, a first
        hide, shows the record again); an un-hide leaves a stub the history did not keep."""
        if event.event == "shown":
            self.hidden, self.stub = True, None
            return
        if self.stub is not None:
            self.stub.update({f: old for f, (old, _new) in (event.changes or {}).items() if f in _STUB_FIELDS})
        if not hidden_before(event):
            self.hidden, self.stub = False, None

    def _with_tags(self, record: Record) -> Record:
        """``record`` with each tag changed since the moment as it was: taken off if added since,
        put back if removed."""
        if not self.tags or not isinstance(record.get("tag_ids"), list):
            return record
        tags, passed = self._tags_then, self._tags_passed
        if self._tags_from is None or self._tags_from[0] is not record["tag_ids"] \
                or self._tags_from[1] is not record.get("tags"):  # first, or a field change set the lists back
            names = record.get("tags") if isinstance(record.get("tags"), list) else []
            tags = {tag_id: (names[n] if n < len(names) else None) for n, tag_id in enumerate(record["tag_ids"])}
            passed = [(tag_id, change, name) for tag_id, (change, name) in self.tags.items()]
            self._tags_then, self._tags_from = tags, (record["tag_ids"], record.get("tags"))
        # Undone newest first, each tag ends as its earliest change since the moment leaves it.
        for tag_id, change, name in passed:
            if change == "+":
                tags.pop(tag_id, None)
            else:
                tags[tag_id] = name
        self._tags_passed = []
        ordered = sorted(tags.items())  # the API lists an image's tags by id, names in step
        record["tag_ids"] = [tag_id for tag_id, _ in ordered]
        record["tags"] = [name for _, name in ordered]
        record["tag_count"] = len(ordered)
        return record

    def _hidden_then(self, record: Record, moment: str) -> tuple[bool, str | None]:
        """Whether the record was hidden at the moment, and the stub the site answered then. Past
        an un-hide the stub it ended is not kept; it is rebuilt from the hides before (:func:`_stub_then`)."""
        if not self.hidden:
            return False, None
        stub = dict(self.stub) if self.stub is not None else None
        if stub is None:
            since_shown = itertools.takewhile(lambda e: e.event != "shown", events_of(
                self.conn, self.resource, self.key, events=_MARK_EVENTS, until=moment, newest_first=True))
            stub = _stub_then(record, list(since_shown)[::-1])
        return True, json.dumps({**stub, "hidden_from_users": True}, ensure_ascii=False)

    def _cursor(self, sql: str, params: list[Any] | dict[str, Any]) -> Iterator[tuple] | None:
        try:
            return self.conn.execute(sql, params)
        except sqlite3.OperationalError as error:
            if _no_history(error):  # a mirror made before history was kept
                return None
            raise

    @staticmethod
    def _fetch(rows: Iterator[tuple] | None) -> tuple | None:
        return next(rows, None) if rows is not None else None

    def _scalar(self, sql: str) -> str | None:
        cursor = self._cursor(sql, {"resource": self.resource, "key": self.key})
        return cursor.fetchone()[0] if cursor is not None else None


# What :meth:`Rewind._with_tags` sets.
_TAG_FIELDS = ("tag_ids", "tags", "tag_count")
# The events whose ``changes`` are fields of the record, old and new.
_FIELD_EVENTS = frozenset({"changed", "counters", "shown"})


def versions_page(conn: sqlite3.Connection, resource: str, key: str, row: Mapping[str, Any], *,
                  after: str = "", limit: int = 10_000) -> tuple[list[str], bool]:
    """When each version of a record the mirror knows began, oldest first, after ``after``: its
    upload (or first sighting), then each kept change; at most ``limit`` of them, and whether more
    follow (a TimeMap's next page, RFC 7089's paged TimeMaps)."""
    record = json.loads(row["raw"]) if row.get("raw") else {}
    created = created_time(record if isinstance(record, dict) else {})
    starts = {created} if created and created > after else set()
    try:
        starts.update(at for (at,) in conn.execute(
            "SELECT DISTINCT seen_at FROM history WHERE resource = ? AND record_key = ? AND seen_at > ? "
            "ORDER BY seen_at LIMIT ?", [resource, key, after, limit + 1]))
    except sqlite3.OperationalError as error:
        if not _no_history(error):
            raise
    counted = first_seen_counted_at(conn, resource, key)
    if counted is not None and counted > after:
        starts.add(counted)
    ordered = sorted(starts)
    return ordered[:limit], len(ordered) > limit


@dataclass(frozen=True)
class Versions:
    """Where a moment falls among a record's versions (the times each began, as
    :func:`versions_page` lists them): the one in force then (``at``; the first for a moment
    before it, since a TimeGate answers with a memento its TimeMap lists, never a 404), the
    versions either side of it, and the first and last."""

    first: str
    at: str
    previous: str | None
    next: str | None
    last: str


def versions_around(conn: sqlite3.Connection, resource: str, key: str, row: Mapping[str, Any],
                    when: Moment) -> Versions | None:
    """The versions around ``when`` of the record of today's ``row``; None when it has none the
    mirror knows. Five seeks on the record's index range, however long its history."""
    record = json.loads(row["raw"]) if row.get("raw") else {}
    created = created_time(record if isinstance(record, dict) else {})
    counted = first_seen_counted_at(conn, resource, key)

    def one(aggregate: str, condition: str, value: str) -> str | None:
        try:
            found = conn.execute(f"SELECT {aggregate}(seen_at) FROM history WHERE resource = ? AND record_key = ?"
                                 f"{condition}", [resource, key, *([value] if condition else [])]).fetchone()[0]
        except sqlite3.OperationalError as error:
            if not _no_history(error):
                raise
            found = None
        mine = [t for t in (created, counted) if t is not None and (not condition or _holds(t, condition, value))]
        both = [t for t in (found, *mine) if t is not None]
        return (max if aggregate == "max" else min)(both) if both else None

    first, last = one("min", "", ""), one("max", "", "")
    if first is None or last is None:
        return None
    at = one("max", " AND seen_at <= ?", when.text) or first
    return Versions(first, at, one("max", " AND seen_at < ?", at), one("min", " AND seen_at > ?", at), last)


def _holds(value: str, condition: str, bound: str) -> bool:
    return {"<=": value <= bound, "<": value < bound, ">": value > bound}[condition.split()[-2]]


@dataclass(frozen=True)
class Version:
    """One version of a record, as :func:`record_as_of` reads it at any moment it was in force.

    Two clocks. ``began`` is the board's, the one ``/as-of/`` answers by (its Memento-Datetime):
    the history's time of the change that began it (a sync's, or the site's own for the changes
    its dump told) or the record's upload; None for a version in force before anything the
    history says (a record with no date kept before its first change). ``known`` is the mirror's:
    when it held every change the version is rebuilt from (the sync that saw a change; the run
    that read a dump, for the site's own changes).

    ``then`` is the record as it was; None for the last version, today's ``row`` itself.
    """

    began: str | None
    known: str | None
    then: Then | None

    @property
    def today(self) -> bool:
        """The last version: today's row as it is kept."""
        return self.then is None


_KNOWN = f"""
    SELECT seen_at, max(known) FROM (
        SELECT h.seen_at, {KNOWN_AT} AS known FROM history h LEFT JOIN sync_runs r ON r.id = h.run_id
        WHERE h.resource = :resource AND h.record_key = :key
        UNION ALL SELECT at, min(at, coalesce(:mirrored, at)) FROM (SELECT {RECORD_COUNTED_AT_SQL} AS at)
        WHERE at IS NOT NULL)
    GROUP BY seen_at ORDER BY seen_at"""


def versions_of(conn: sqlite3.Connection, resource: str, key: str, row: Mapping[str, Any], *,
                since: str | None = None, record: Record | None = None,
                history: RecordHistory | None = None) -> Iterator[Version]:
    """Every version of today's ``row`` the history can rebuild, NEWEST first: one for each time
    its TimeMap lists (:func:`versions_page`), each the record :func:`record_as_of` reads at that
    time, so the versions are ``/as-of/``'s answers and no other; with ``since``, only those begun
    at or after it. The first is today's ``row`` itself. One pass back through the record's
    history (:class:`Rewind`), however many versions it has; ``record``: ``row``'s ``raw`` read
    already; ``history``: the record's history read already (:func:`mirror.asof.histories.histories_of`)."""
    if record is None:
        record = parse_json(row["raw"]) if row.get("raw") else None
    starts, first_known = _starts_known(conn, resource, key, row, record, history)
    if not starts:
        if since is None and (rewind := Rewind.of(conn, resource, key, row, record, history)) is not None:
            with rewind:
                if rewind.to(_far_future().text) is not None:  # what record_as_of reads at any moment
                    yield Version(None, first_known, None)
        return
    if since is None or starts[-1][0] >= since:
        yield Version(*starts[-1], None)
    rewind = Rewind.of(conn, resource, key, row, record, history)
    if rewind is None:
        return
    with rewind:
        for began, known in reversed(starts[:-1]):
            if since is not None and began < since:
                return
            if (then := rewind.to(began)) is not None:
                yield Version(began, known, then)
        if since is None and (then := rewind.to(_second_before(starts[0][0]).text)) is not None:
            yield Version(None, first_known, then)


def _starts_known(conn: sqlite3.Connection, resource: str, key: str, row: Mapping[str, Any],
                  record: Any, history: RecordHistory | None = None) -> tuple[list[tuple[str, str | None]], str | None]:
    """Each time the record's TimeMap lists, oldest first, with when the mirror knew every change
    up to it (the latest of the history's times it knew them at, up to that one); and when it
    knew the first of them (today's ``mirrored_at`` for a record with no history)."""
    known = history.known if history is not None else _known_times(conn, resource, key, row.get("mirrored_at"))
    created = created_time(record if isinstance(record, dict) else {})
    first_known = running = min(known.values(), default=row.get("mirrored_at"))
    starts = []
    for start in sorted({*known, *([created] if created else [])}):
        if start in known:
            running = max(running or known[start], known[start])
        starts.append((start, running))
    return starts, first_known


def latest_began(conn: sqlite3.Connection, resource: str, key: str, row: Mapping[str, Any]) -> str | None:
    """When today's version of the record began: the last time its TimeMap lists (None: none)."""
    record = json.loads(row["raw"]) if row.get("raw") else {}
    created = created_time(record if isinstance(record, dict) else {})
    try:
        (changed,) = conn.execute("SELECT max(seen_at) FROM history WHERE resource = ? AND record_key = ?",
                                  [resource, key]).fetchone()
    except sqlite3.OperationalError as error:
        if not _no_history(error):
            raise
        changed = None
    return max(filter(None, (created, changed, first_seen_counted_at(conn, resource, key))), default=None)


def _known_times(conn: sqlite3.Connection, resource: str, key: str, mirrored: str | None) -> dict[str, str]:
    try:
        return dict(conn.execute(_KNOWN, {"resource": resource, "key": key, "mirrored": mirrored}))
    except sqlite3.OperationalError as error:
        if _no_history(error):
            return {}
        raise


def _second_before(text: str) -> Moment:
    try:
        return Moment(utc_text(Moment(text).datetime - timedelta(seconds=1)))
    except (ValueError, OverflowError):  # year 1's first second, or a time that is none
        return Moment("0000-00-00T00:00:00Z")


def _far_future() -> Moment:
    return Moment("9999-12-31T23:59:59Z")


def created_time(record: Mapping[str, Any]) -> str | None:
    """When the record was uploaded or written, to the second, as the history writes times (None: no date)."""
    created = record.get("created_at")
    return created[:19] + "Z" if isinstance(created, str) and len(created) >= 19 else None


def _existed(record: Mapping[str, Any], first_seen: str | None, when: str) -> bool:
    """Uploaded (or written) by then; a record with no date existed once the mirror first saw it,
    and, with no first sighting kept (a dump's record, or one kept before history), always."""
    created = created_time(record)
    if created is not None:
        return created <= when
    return first_seen is None or first_seen <= when


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
