"""The past as data: a search's total at every step of a range, and what changed for a search
between two moments.

*Trend* (``/as-of/trend?q=...&from=...&to=...&every=month``, as the ohsome API answers a monthly
series in one request): the total :func:`.search.search_images_as_of` gives at each step, in one
pass. The steps are walked newest first, and the board is walked back with them: the images
uploaded after a step are a slice of the upload times sorted once; each tag the search reads
has its changes read once, newest first, and undone onto its list as the walk passes them (one
pass over the tag's changes sorted by time, never one search per step). A search that reads
more than tags and ids (a score, a description, a filter's complex hides) is answered step by
step with the search as of each moment: the same answer, at its cost.

*Diff* (``/as-of/diff?q=...&from=...&to=...``, as Overpass's ``[diff:]``): the images the search
found at the second moment and not the first (entered) and the reverse (left), each with the
changes the history kept of it between the two: its upload, the tags added or removed, its hides.
"""

from __future__ import annotations

import calendar
import json
import sqlite3
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from pyroaring import BitMap

from ..search.bitmap_search import Evaluator, ImageScope, matching
from ..search.compile import Linked
from ..search.engine import time_limit
from ..search.filters import FilteredBy
from ..search.indexes import IMAGES
from ..search.postings import Postings, Snapshot
from ..search.query import And, MatchAll, MatchNone, Node, Not, Or, Term
from ..store.history import tag_name_sql
from .moments import Moment
from .records import Event, events_of, hidden_before
from .search import MARK_EVENTS, TAG_EVENTS, AsOfEvaluator, AsOfSnapshot, Changes, uploads_of

__all__ = ["EVERY", "MAX_STEPS", "steps", "trend", "walkable", "Moved", "Diff", "diff", "diff_json"]

EVERY = ("day", "week", "month", "year")
# The most steps one request answers: 50 years of months.
MAX_STEPS = 600
# The images a diff details (each with its changes); the totals count them all.
DETAILED = 200


def steps(start: Moment, end: Moment, every: str) -> list[Moment]:
    """``start``, then every ``every`` after it, up to ``end`` (included); ValueError for an
    unknown step, an end before the start, or more than :data:`MAX_STEPS` steps."""
    if every not in EVERY:
        raise ValueError(f"every={every!r} is not a step: give one of {', '.join(EVERY)}")
    if end < start:
        raise ValueError(f"to={end.text} is before from={start.text}")
    found, n = [], 0
    while True:
        at = _add(start.datetime, every, n)
        if at is None or Moment.of(at) > end:
            return found
        found.append(Moment.of(at))
        n += 1
        if len(found) > MAX_STEPS:
            raise ValueError(f"more than {MAX_STEPS} steps from {start.text} to {end.text}: take a larger step")


def _add(when: datetime, every: str, n: int) -> datetime | None:
    """``n`` steps after ``when`` (a month from the 31st: the month's last day); None past the calendar."""
    try:
        if every in ("day", "week"):
            return when + timedelta(days=n * (7 if every == "week" else 1))
        months = when.month - 1 + (n if every == "month" else 12 * n)
        year, month = when.year + months // 12, months % 12 + 1
        return when.replace(year=year, month=month, day=min(when.day, calendar.monthrange(year, month)[1]))
    except (ValueError, OverflowError):
        return None


def trend(conn: sqlite3.Connection, postings: Postings, node: Node, scope: ImageScope, moments: Sequence[Moment], *,
          seconds: float) -> list[int]:
    """The total of the search ``node`` within ``scope`` as of each of ``moments`` (in their order)."""
    with time_limit(conn, seconds):
        try:
            today = postings.snapshot(conn)
            if not walkable(node, scope):
                return [len(_found_then(conn, today, node, scope, m)) for m in moments]
            return _walked(conn, today, node, scope, moments)
        finally:
            if conn.in_transaction:
                conn.rollback()


def _found_then(conn: sqlite3.Connection, today: Snapshot, node: Node, scope: ImageScope, moment: Moment) -> BitMap:
    changes = Changes(conn, moment)
    return matching(AsOfEvaluator(conn, AsOfSnapshot(today, changes), today, changes), node, scope)


def walkable(node: Node, scope: ImageScope) -> bool:
    """Whether the trend of a search is one walk back (it reads only tags, ids and everything),
    not a search as of each step."""
    if scope.excluded is not None or (scope.hides is not None and scope.hides.hidden_complex is not None):
        return False
    return _reads_lists(node)


def _reads_lists(node: Node) -> bool:
    if isinstance(node, (MatchAll, MatchNone)):
        return True
    if isinstance(node, Not):
        return _reads_lists(node.child)
    if isinstance(node, (And, Or)):
        return all(_reads_lists(child) for child in node.children)
    if isinstance(node, FilteredBy):
        return node.hides is not None and node.hides.hidden_complex is None
    return isinstance(node, Term) and (isinstance(IMAGES.fields.get(node.field), Linked) or node.field == "id")


def _walked(conn: sqlite3.Connection, today: Snapshot, node: Node, scope: ImageScope,
            moments: Sequence[Moment]) -> list[int]:
    walk = _WalkBack(conn, today)
    totals: dict[Moment, int] = {}
    for moment in sorted(set(moments), reverse=True):
        lists = walk.to(moment)
        totals[moment] = len(matching(Evaluator(conn, lists), node, scope))
    return [totals[m] for m in moments]


class _WalkBack:
    """Today's lists walked back in time, one moment after another, newest first."""

    def __init__(self, conn: sqlite3.Connection, today: Snapshot) -> None:
        self.conn, self.today = conn, today
        self.tags: dict[int, _TagWalk] = {}
        self.hides: _HiddenWalk | None = None
        self.uploaded: tuple[Moment, BitMap] | None = None  # the dated images by the last moment asked

    def images(self, moment: Moment) -> BitMap:
        """Every image as of ``moment``, walked back too: each step takes off the images uploaded
        since the step after it, where a set of all those uploaded since it cost a board's worth of
        ids a step (at 3.5 M images, 179 months took 1.3 s, nearly all of it there)."""
        uploads = uploads_of(self.today)
        if self.uploaded is None or self.uploaded[0] < moment:  # the walk goes back in time only
            then = self.today.images() - uploads.after(moment)
        else:
            later, then = self.uploaded
            then = then - uploads.between(moment, later)
        self.uploaded = (moment, then)
        return then - Changes(self.conn, moment).undated_after()

    def to(self, moment: Moment) -> _StepLists:
        for walk in self.tags.values():
            walk.to(moment)
        if self.hides is not None:
            self.hides.to(moment)
        return _StepLists(self, moment)

    def hidden(self, moment: Moment) -> BitMap:
        if self.hides is None:
            self.hides = _HiddenWalk(self.conn, self.today.hidden())
            self.hides.to(moment)
        return self.hides.then

    def tagged(self, tag_id: int, moment: Moment) -> BitMap:
        if tag_id not in self.tags:
            self.tags[tag_id] = _TagWalk(self.conn, tag_id, self.today.tagged([tag_id]))
            self.tags[tag_id].to(moment)
        return self.tags[tag_id].then


class _TagWalk:
    """One tag's list, walked back: its changes read once, newest first, each undone as passed
    (a ``+`` since: the image lacked the tag; a ``-``: it had it), so the list at a moment is
    today's with every change after it undone."""

    def __init__(self, conn: sqlite3.Connection, tag_id: int, now: BitMap) -> None:
        self.then = BitMap(now)
        self.changes = conn.execute(
            "SELECT c.seen_at, c.image_id, c.change FROM image_tag_changes c JOIN history h ON h.id = c.history_id "
            f"WHERE c.tag_id = ? AND h.event IN ({','.join('?' * len(TAG_EVENTS))}) "
            "ORDER BY c.seen_at DESC, c.history_id DESC", (tag_id, *TAG_EVENTS))
        self.waiting: tuple[str, int, str] | None = self._next()

    def _next(self) -> tuple[str, int, str] | None:
        row = self.changes.fetchone()
        return tuple(row) if row else None  # type: ignore[return-value]

    def to(self, moment: Moment) -> None:
        while self.waiting is not None and self.waiting[0] > moment.text:
            _, image_id, change = self.waiting
            (self.then.discard if change == "+" else self.then.add)(image_id)
            self.waiting = self._next()


class _HiddenWalk:
    """The hidden images, walked back: the hides and un-hides read once, newest first, each image
    given the state it had before the event as the walk passes it (so, at a moment, the state
    before its first event after it: :meth:`.search.Changes.hidden_then`)."""

    def __init__(self, conn: sqlite3.Connection, now: BitMap) -> None:
        self.then = BitMap(now)
        self.events = conn.execute(
            "SELECT seen_at, record_key, event, changes FROM history INDEXED BY history_by_resource_event "
            f"WHERE resource = 'images' AND event IN ({','.join('?' * len(MARK_EVENTS))}) "
            "ORDER BY seen_at DESC, id DESC", MARK_EVENTS)
        self.waiting = self.events.fetchone()

    def to(self, moment: Moment) -> None:
        while self.waiting is not None and self.waiting[0] > moment.text:
            seen_at, key, event, changes = self.waiting
            was_hidden = hidden_before(Event(0, seen_at, event, json.loads(changes) if changes else None))
            (self.then.add if was_hidden else self.then.discard)(int(key))
            self.waiting = self.events.fetchone()


class _StepLists(Snapshot):
    """The lists at one step of the walk: what :class:`Evaluator` reads."""

    def __init__(self, walk: _WalkBack, moment: Moment) -> None:
        super().__init__(walk.today._postings, walk.today._conn, walk.today._generation)
        self.walk, self.moment = walk, moment
        self.own: dict[Hashable, BitMap] = {}

    def kept(self, key: Hashable, build: Callable[[], BitMap]) -> BitMap:
        if key not in self.own:
            self.own[key] = build()
        return self.own[key]

    def known(self, key: Hashable) -> BitMap | None:
        return self.own.get(key)

    def images(self) -> BitMap:
        return self.kept("images", lambda: self.walk.images(self.moment))

    def hidden(self) -> BitMap:
        return self.walk.hidden(self.moment)

    def tagged(self, tag_ids: Iterable[int]) -> BitMap:
        return BitMap.union(BitMap(), *(self.walk.tagged(t, self.moment) for t in sorted(set(tag_ids))))


@dataclass(frozen=True)
class Moved:
    """One change of an image between the two moments of a diff."""

    at: str
    event: str
    tags: list[str] = field(default_factory=list)  # "+name" or "-name"
    fields: list[str] = field(default_factory=list)  # the fields it changed


@dataclass(frozen=True)
class Diff:
    """What changed for a search between two moments."""

    total_from: int
    total_to: int
    entered: list[int]
    left: list[int]
    moves: dict[int, list[Moved]]  # the first :data:`DETAILED` of each, with their changes between


def diff(conn: sqlite3.Connection, postings: Postings, node: Node, scope: ImageScope, start: Moment, end: Moment, *,
         seconds: float) -> Diff:
    """The images ``node`` found within ``scope`` at ``end`` and not at ``start`` and the reverse,
    with what the history kept of each between them."""
    with time_limit(conn, seconds):
        try:
            today = postings.snapshot(conn)
            before = _found_then(conn, today, node, scope, start)
            after = _found_then(conn, today, node, scope, end)
        finally:
            if conn.in_transaction:
                conn.rollback()
    entered, left = list(after - before), list(before - after)
    moves = {image_id: list(_moves(conn, image_id, start, end)) for image_id in entered[:DETAILED] + left[:DETAILED]}
    return Diff(len(before), len(after), entered, left, moves)


def _moves(conn: sqlite3.Connection, image_id: int, start: Moment, end: Moment) -> Iterator[Moved]:
    """What the history kept of an image between two moments (its upload first, when it fell between)."""
    created = conn.execute("SELECT created_at FROM images WHERE id = ?", [image_id]).fetchone()
    if created and created[0] and start.text < created[0][:19] + "Z" <= end.text:
        yield Moved(created[0][:19] + "Z", "uploaded")
    tags: dict[int, list[str]] = {}
    for history_id, name, tag_id, change in conn.execute(
            f"SELECT history_id, coalesce({tag_name_sql('c')}, c.tag_id), tag_id, change "
            "FROM image_tag_changes c WHERE image_id = ? AND seen_at > ? AND seen_at <= ? ORDER BY seen_at, history_id, tag_id",
            [image_id, start.text, end.text]):
        tags.setdefault(history_id, []).append(f"{change}{name}")
    for event in events_of(conn, "images", str(image_id), after=start.text, until=end.text):
        if event.event in ("counters", "first_seen"):
            continue
        changed = sorted(k for k in (event.changes or {}) if k not in ("tag_ids", "tags"))
        yield Moved(event.seen_at, event.event, tags.get(event.id, []), changed)


def diff_json(found: Diff) -> dict[str, Any]:
    """A diff as the API answers it."""
    def said(moves: list[Moved]) -> list[dict[str, Any]]:
        return [{k: v for k, v in {"at": m.at, "event": m.event, "tags": m.tags, "fields": m.fields}.items() if v}
                for m in moves]
    return {"total_from": found.total_from, "total_to": found.total_to,
            "entered": [{"id": i, "changes": said(found.moves.get(i, []))} for i in found.entered],
            "left": [{"id": i, "changes": said(found.moves.get(i, []))} for i in found.left]}
