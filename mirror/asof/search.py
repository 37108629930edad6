"""Image search as of a moment: today's posting lists, with the changes made since undone.

A search as of WHEN must answer what the same search answered at WHEN, over a million images,
without rebuilding the board. Most of the board did not change since any given moment, and for
those images today's answer is the answer then. So each set a search is made of is today's set,
corrected by the few images that changed after WHEN in what that set reads:

- every image: today's, less those uploaded after WHEN;
- hidden images: today's, with the state each image had before its first hide or un-hide since;
- a tag's images: today's list, with each image whose tag changed since given the state it had
  before its first change since (a ``+`` since: it lacked the tag; a ``-``: it had it); a tag
  list of a popular tag costs the changes of that tag since WHEN, read by an index;
- any other term (a score, a date, a description phrase): today's ids, less the images whose
  history since WHEN changed a field the term reads, plus those of them whose record as of WHEN
  (:func:`mirror.asof.records.record_as_of`) matches the same SQL, run over a scratch table.

The page is sorted the same way: when the sort reads a field some found images changed since
WHEN, those images are sorted with their values then, beside the first page of the others.

What it does not undo: tag names, aliases and implications resolve as today's, and a filter's
tags are today's; gallery membership is today's (``gallery_id:``); counters are as exact as the
history kept them (see :mod:`.records`).
"""

from __future__ import annotations

import array
import json
import re
import sqlite3
import threading
from collections.abc import Callable, Hashable, Iterable
from typing import Any

import numpy as np
from pyroaring import BitMap

from ..search.bitmap_search import Evaluator, ImageScope, matching, page_ids, search_images, sorted_page
from ..search.compile import Sql
from ..search.engine import Page, read_rows, register, time_limit
from ..search.images import Reader
from ..search.indexes import IMAGES
from ..search.postings import Postings, Snapshot, json_ids
from ..search.query import Node
from ..search.sort import FIRST_SEEN, Order
from ..store.checkpoints import (TAG_EVENTS, Checkpoints, as_seconds, undone, upload_order, upload_times,
                                 walked_back)
from ..store.database import database_file, reader_uri
from ..store.derived import DIGESTS, kept_value
from ..store.first_sightings import COUNTED_AT_SQL
from ..store.history import COUNTERS
from ..store.records import column_converters, shape_values
from ..store.specs import IMAGES as IMAGE_SPEC
from ..store.tag_changes import of_history_row
from .moments import Moment
from .records import HIDING, Event, hidden_before, record_as_of

__all__ = ["search_images_as_of", "reader", "images_out_of_sight_then", "Changes", "MARK_EVENTS", "TAG_EVENTS"]

# Events whose ``changes`` are an image's columns (a hide's stub sets its dates and reasons there
# too), and events that carry its tag changes (:mod:`.records`).
_FIELD_EVENTS = ("changed", "counters", "shown", *sorted(HIDING))
MARK_EVENTS = (*sorted(HIDING), "shown")
_COLUMN = re.compile(r"\bi\.(\w+)")
# Fields an image record keeps from its upload on.
_NEVER_CHANGED = frozenset({"id", "created_at", "first_seen_at"})
# Columns of the images table that record fields fill (a scratch row holds them).
_FIELDS = tuple(IMAGE_SPEC.fields)
_AT = {name: n for n, name in enumerate(_FIELDS)}
# The events whose changes a row as of a moment undoes (a hide's stub fields are not the record's).
_UNDONE = ("changed", "counters", "shown")
Row = tuple[Any, ...]
_CONVERTERS = column_converters(IMAGE_SPEC.fields, "")
# Images first seen by a sync (their order's time is that) a newest-first page reads beside the
# upload order at most: a board started from the site's dump has few (the dump has no such time).
_SEEN_AT_MOST = 2_000


def search_images_as_of(conn: sqlite3.Connection, postings: Postings, node: Node, scope: ImageScope, order: Order,
                        moment: Moment, *, limit: int, offset: int, columns: str, seconds: float) -> Page:
    """:func:`mirror.search.bitmap_search.search_images` as of ``moment``: the page's rows are
    today's (the caller reads each as of the moment), its ids and total those of the moment."""
    with time_limit(conn, seconds):
        try:
            today = postings.snapshot(conn)
            changes = Changes(conn, moment)
            lists = AsOfSnapshot(today, changes)
            found = matching(AsOfEvaluator(conn, lists, today, changes), node, scope)
            keys = _page(conn, lists, changes, found, order, limit, offset) if len(found) > offset else []
            return Page(read_rows(conn, IMAGES, keys, columns), len(found))
        finally:
            if conn.in_transaction:
                conn.rollback()


def reader(moment: Moment | None) -> Reader:
    """What answers an image search (:func:`mirror.search.images.search`) on the board as of
    ``moment``, or today's with None: the choice the callers (serve, browse) make."""
    if moment is None:
        return search_images

    def as_of(conn: sqlite3.Connection, postings: Postings, node: Node, scope: ImageScope, order: Order, *,
              limit: int, offset: int, columns: str, seconds: float) -> Page:
        return search_images_as_of(conn, postings, node, scope, order, moment, limit=limit, offset=offset,
                                   columns=columns, seconds=seconds)
    return as_of


def images_out_of_sight_then(conn: sqlite3.Connection, moment: Moment, tag_ids: Iterable[int]) -> BitMap:
    """The images hidden from users at ``moment``, and those carrying any of ``tag_ids`` then
    (a filter's hidden tags): what a comment search leaves the comments of out."""
    changes = Changes(conn, moment)
    out = changes.hidden_then(BitMap(row[0] for row in conn.execute("SELECT id FROM images WHERE hidden_from_users")))
    for tag_id in set(tag_ids):
        now = BitMap(row[0] for row in conn.execute("SELECT image_id FROM image_tags WHERE tag_id = ?", (tag_id,)))
        out |= changes.tagged_then(tag_id, now)
    return out


class Changes:
    """What the history says of the images since a moment, read as a search needs it."""

    def __init__(self, conn: sqlite3.Connection, moment: Moment) -> None:
        self.conn, self.moment = conn, moment
        self._touching: dict[frozenset[str], BitMap] = {}
        self._marked_ids: BitMap | None = None

    def uploaded_after(self, uploads: Uploads) -> BitMap:
        """Images uploaded after the moment (by ``created_at``, to the second, as records are)."""
        return uploads.after(self.moment) | self.undated_after()

    def undated_after(self) -> BitMap:
        """Images with no upload time first seen after the moment."""
        # An image with no first_seen row of its own was first seen by a run that kept its first
        # sightings as a count (mirror.store.first_sightings): when that run's sightings end.
        return BitMap(row[0] for row in self.conn.execute(
            "SELECT i.id FROM images i WHERE i.created_at IS NULL AND coalesce((SELECT min(h.seen_at) FROM history h "
            "WHERE h.resource = 'images' AND h.record_key = CAST(i.id AS TEXT) AND h.event = 'first_seen'), "
            f"{COUNTED_AT_SQL}) > :moment", {"resource": "images", "moment": self.moment.text}))

    def uploaded_by(self, uploads: Uploads) -> BitMap:
        """Every image uploaded by the moment: today's images less those uploaded after it, read
        without reading every id (a slice of the upload times, and the undated images)."""
        undated = BitMap(row[0] for row in self.conn.execute("SELECT id FROM images WHERE created_at IS NULL"))
        return uploads.before(self.moment) | (undated - self.undated_after())

    def hidden_then(self, hidden_now: BitMap) -> BitMap:
        """The hidden images at the moment, from today's: each image hidden or shown since has the
        state it had before the first of those events."""
        first: dict[int, Event] = {}
        for key, seen_at, event, changes in self._events(MARK_EVENTS):
            image_id = int(key)
            if image_id not in first or seen_at < first[image_id].seen_at:
                first[image_id] = Event(0, seen_at, event, json.loads(changes) if changes else None)
        hidden = BitMap(hidden_now) - BitMap(first)
        hidden.update(image_id for image_id, event in first.items() if hidden_before(event))
        return hidden

    def tagged_then(self, tag_id: int, tagged_now: BitMap, checkpoint: str | None = None) -> BitMap:
        """The images carrying ``tag_id`` at the moment, from today's list, or from the list at
        the tag's ``checkpoint`` after the moment (:mod:`mirror.store.checkpoints`)."""
        return undone(self.conn, tag_id, tagged_now, self.moment.text, checkpoint)

    def touching(self, fields: frozenset[str]) -> BitMap:
        """Images whose history since the moment changed any of ``fields`` (``tag_ids`` for their tags).

        Only the events that can hold those fields are read: a nightly ``counters`` event (most of
        a busy board's history) only for a counter, none for fields an image never changes."""
        fields = fields - _NEVER_CHANGED
        if fields not in self._touching:
            found = BitMap()
            named = sorted(fields - {"tag_ids"})
            events = tuple(e for e in _FIELD_EVENTS if e != "counters" or fields & COUNTERS["images"])
            if named:
                found.update(int(row[0]) for row in self.conn.execute(
                    "SELECT DISTINCT h.record_key FROM history h INDEXED BY history_by_resource_event, "
                    f"json_each(h.changes) field WHERE h.resource = 'images' AND h.event IN ({_marks(events)}) "
                    f"AND h.seen_at > ? AND field.key IN ({_marks(named)})",
                    (*events, self.moment.text, *named)))
            if "tag_ids" in fields:
                found.update(int(row[0]) for row in self.conn.execute(
                    "SELECT DISTINCT h.record_key FROM history h INDEXED BY history_by_resource_event "
                    f"WHERE h.resource = 'images' AND h.event IN ({_marks(TAG_EVENTS)}) AND h.seen_at > ? "
                    f"AND EXISTS (SELECT 1 FROM image_tag_changes c WHERE {of_history_row()})",
                    (*TAG_EVENTS, self.moment.text)))
            self._touching[fields] = found
        return self._touching[fields]

    def rows_then(self, image_ids: BitMap, fields: frozenset[str]) -> tuple[list[Row], dict[int, list[int]]]:
        """The scratch rows of ``image_ids`` as of the moment in ``fields``, and their tags then
        (when ``fields`` holds ``tag_ids``).

        Today's columns, each field read set back to the value the first change since replaced:
        one record's history each, by its index, never the board's. An image hidden or shown since,
        whose columns a stub set, is rebuilt whole (:func:`.records.record_as_of`)."""
        marked = image_ids & self._marked()
        plain = image_ids - marked
        columns = ", ".join(f"i.{name}" for name in _FIELDS)
        rows = {row[0]: list(row) for row in self.conn.execute(
            f"SELECT {columns} FROM json_each(?) page JOIN images i ON i.id = page.value", (json_ids(plain),))}
        named = sorted(fields - {"tag_ids"} - _NEVER_CHANGED)
        keys = json.dumps([str(i) for i in plain])
        if named and rows:
            events = tuple(e for e in _UNDONE if e != "counters" or set(named) & COUNTERS["images"])
            for key, field, value in self.conn.execute(
                    "SELECT h.record_key, field.key, field.value FROM history h INDEXED BY history_by_record_time, "
                    "json_each(h.changes) field WHERE h.resource = 'images' AND h.record_key IN "
                    f"(SELECT value FROM json_each(?)) AND h.event IN ({_marks(events)}) AND h.seen_at > ? "
                    f"AND field.key IN ({_marks(named)}) ORDER BY h.seen_at DESC, h.id DESC",
                    (keys, *events, self.moment.text, *named)):
                rows[int(key)][_AT[field]] = _CONVERTERS[field](json.loads(value)[0])  # the oldest change wins
        tags: dict[int, list[int]] = {}
        if "tag_ids" in fields and rows:
            tags = self._tags_then(list(rows))
            for image_id, tag_ids in tags.items():
                rows[image_id][_AT["tag_ids"]] = json.dumps(tag_ids)
        for record in self._records(marked):
            rows[record["id"]] = list(_row(record))
            tags[record["id"]] = [t for t in record.get("tag_ids") or [] if type(t) is int]
        return [tuple(row) for row in rows.values()], tags

    def _tags_then(self, image_ids: list[int]) -> dict[int, list[int]]:
        """The tags of these images at the moment: today's, with their changes since undone."""
        tags: dict[int, set[int]] = {i: set() for i in image_ids}
        for image_id, tag_id in self.conn.execute(
                "SELECT image_id, tag_id FROM image_tags WHERE image_id IN (SELECT value FROM json_each(?))",
                (json_ids(image_ids),)):
            tags[image_id].add(tag_id)
        for image_id, tag_id, change in self.conn.execute(
                "SELECT c.image_id, c.tag_id, c.change FROM image_tag_changes c JOIN history h ON h.id = c.history_id "
                "WHERE c.image_id IN (SELECT value FROM json_each(?)) AND h.seen_at > ? "
                f"AND h.event IN ({_marks(TAG_EVENTS)}) ORDER BY c.seen_at DESC, c.history_id DESC, c.tag_id DESC",
                (json_ids(image_ids), self.moment.text, *TAG_EVENTS)):
            (tags[image_id].discard if change == "+" else tags[image_id].add)(tag_id)
        return {image_id: sorted(ids) for image_id, ids in tags.items()}

    def _marked(self) -> BitMap:
        """Images hidden, deleted, merged or shown again since the moment."""
        if self._marked_ids is None:
            self._marked_ids = BitMap(int(row[0]) for row in self._events(MARK_EVENTS))
        return self._marked_ids

    def _records(self, image_ids: Iterable[int]) -> list[dict[str, Any]]:
        """The records of these images as of the moment (each with ``hidden_from_users`` then)."""
        records = []
        for image_id, raw, stub, hidden in self.conn.execute(
                "SELECT i.id, i.raw, i.stub, i.hidden_from_users FROM json_each(?) page "
                "JOIN images i ON i.id = page.value", (json_ids(image_ids),)).fetchall():
            found = record_as_of(self.conn, "images", str(image_id),
                                 {"raw": raw, "stub": stub, "hidden_from_users": hidden}, self.moment)
            record = json.loads(found.row["raw"]) if found is not None else None
            if isinstance(record, dict):
                records.append({**record, "hidden_from_users": found.row["hidden_from_users"]})
        return records

    def _events(self, events: tuple[str, ...]) -> list[tuple[str, str, str, str | None]]:
        return self.conn.execute(
            "SELECT record_key, seen_at, event, changes FROM history INDEXED BY history_by_resource_event "
            f"WHERE resource = 'images' AND event IN ({_marks(events)}) AND seen_at > ?",
            (*events, self.moment.text)).fetchall()


class Uploads:
    """Every image's upload time, sorted, read once per state of the database: the images
    uploaded after any moment are then a slice, where an index range would hand Python a row
    per image (half a second for 500,000 images, a moment three years back on a large board).
    Read from the order the checkpoints' build keeps, with the rows written since, when there is one."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        kept = upload_order(conn)
        if kept is None or not self._merged(conn, *kept):
            self.times, self.ids = upload_times(conn)

    def _merged(self, conn: sqlite3.Connection, seconds: np.ndarray, ids: np.ndarray, stamp: str) -> bool:
        """The kept order with the images written since in place; False when one of those has a
        time that is not one (then every time is read)."""
        rows = conn.execute("SELECT substr(created_at, 1, 19), id FROM images WHERE mirrored_at >= ?", (stamp,)).fetchall()
        written = np.array([row[1] for row in rows], dtype=np.uint32)
        dated = [row for row in rows if row[0] is not None]
        try:
            times = as_seconds(np.array([row[0] for row in dated], dtype="S19"))
        except UnicodeEncodeError:
            return False
        if times is None:
            return False
        order = np.argsort(times, kind="stable")
        kept = ~np.isin(ids, written)
        seconds, ids = seconds[kept], ids[kept]
        at = np.searchsorted(seconds, times[order], side="right")
        self.times = np.insert(seconds, at, times[order])
        self.ids = np.insert(ids, at, np.array([row[1] for row in dated], dtype=np.uint32)[order])
        return True

    def _cut(self, moment: Moment) -> int:
        text = moment.text[:19].encode()
        key = text if self.times.dtype.kind == "S" else as_seconds(np.array([text], dtype="S19"))[0]
        return int(np.searchsorted(self.times, key, side="right"))

    def after(self, moment: Moment) -> BitMap:
        return BitMap(array.array("I", self.ids[self._cut(moment):].tobytes()))

    def between(self, earlier: Moment, later: Moment) -> BitMap:
        """The dated images uploaded after ``earlier`` and by ``later``."""
        return BitMap(array.array("I", self.ids[self._cut(earlier):self._cut(later)].tobytes()))

    def before(self, moment: Moment) -> BitMap:
        """The dated images uploaded by the moment."""
        return BitMap(array.array("I", self.ids[:self._cut(moment)].tobytes()))

    def count_after(self, moment: Moment) -> int:
        return len(self.ids) - self._cut(moment)

    def newest(self, moment: Moment, among: BitMap, count: int, budget: int) -> BitMap | None:
        """The ``count`` images of ``among`` (uploaded by the moment) uploaded last, and every one
        uploaded in the same second as the last of them; None once ``budget`` entries were read."""
        found: list[int] = []
        boundary = None
        for read, at in enumerate(range(self._cut(moment) - 1, -1, -1)):
            if read >= budget:
                return None
            image = int(self.ids[at])
            if image in among:
                if boundary is not None and self.times[at] != boundary:
                    break
                found.append(image)
                if len(found) == count:
                    boundary = self.times[at]
                if len(found) == len(among):
                    break
        return BitMap(found)


def uploads_of(snapshot: Snapshot) -> Uploads:
    """The upload times of the database state ``snapshot`` reads (dropped with its posting lists)."""
    return snapshot.derived("uploads", lambda: Uploads(snapshot._conn))


def _marks(values: Iterable[Any]) -> str:
    return ",".join("?" * len(tuple(values)))


class AsOfSnapshot(Snapshot):
    """Today's lists, each corrected to the moment (kept under keys of their own)."""

    def __init__(self, today: Snapshot, changes: Changes) -> None:
        super().__init__(today._postings, today._conn, today._generation)
        self.today, self.changes = today, changes

    def kept(self, key: Hashable, build: Callable[[], BitMap]) -> BitMap:
        return super().kept(("as-of", self.changes.moment.text, key), build)

    def known(self, key: Hashable) -> BitMap | None:
        return super().known(("as-of", self.changes.moment.text, key))

    def images(self) -> BitMap:
        return self.kept("images", lambda: self.changes.uploaded_by(uploads_of(self.today)))

    def hidden(self) -> BitMap:
        return self.kept("hidden", lambda: self.changes.hidden_then(self.today.hidden()))

    def tagged(self, tag_ids: Iterable[int]) -> BitMap:
        return BitMap.union(BitMap(), *(self.kept(("tag", tag_id), lambda t=tag_id: self._tagged_then(t))
                                        for tag_id in sorted(set(tag_ids))))

    def _tagged_then(self, tag_id: int) -> BitMap:
        """One tag's images then: from its first checkpoint after the moment when it has one, else
        from today's list (:mod:`mirror.store.checkpoints`)."""
        known = checkpoints_of(self.today)
        at = known.after(tag_id, self.changes.moment.text)
        if at is None:
            return self.changes.tagged_then(tag_id, self.today.tagged([tag_id]))
        return self.changes.tagged_then(tag_id, self._checkpoint(known, tag_id, at), at)

    def _checkpoint(self, known: Checkpoints, tag_id: int, at: str) -> BitMap:
        """A tag's images at its checkpoint ``at``, kept as today's lists are (by any moment's search)."""
        newest = known.newest(tag_id)
        top = self.today.kept(("checkpoint", tag_id, newest), lambda: undone(
            self._conn, tag_id, self.today.tagged([tag_id]), newest))
        if at == newest:
            return top
        return self.today.kept(("checkpoint", tag_id, at), lambda: walked_back(self._conn, tag_id, top, at, newest))


def checkpoints_of(snapshot: Snapshot) -> Checkpoints:
    """The tags' checkpoints in the database state ``snapshot`` reads."""
    return snapshot.derived("checkpoints", lambda: Checkpoints(snapshot._conn))


class AsOfEvaluator(Evaluator):
    """An :class:`Evaluator` whose SQL terms are answered as of the moment."""

    def __init__(self, conn: sqlite3.Connection, snapshot: AsOfSnapshot, today: Snapshot, changes: Changes) -> None:
        super().__init__(conn, snapshot)
        self.today, self.changes = Evaluator(conn, today), changes

    def _selected(self, condition: Sql, within: BitMap | None) -> BitMap:
        if within is None:  # the next page of the same search asks again
            return self.snapshot.kept(("selected", condition), lambda: self._then(condition, None))
        return self._then(condition, within)

    def _then(self, condition: Sql, within: BitMap | None) -> BitMap:
        selected = self.today._selected(condition, within)
        changed = self.changes.touching(fields_read(condition.text))
        if within is not None:
            changed = changed & within
        if not changed:
            return selected
        then = scratch_of(self.conn).matching(*self.changes.rows_then(changed, fields_read(condition.text)), condition)
        return (BitMap(selected) - changed) | then


def fields_read(sql: str) -> frozenset[str]:
    """The image fields an SQL condition or order reads (``tag_ids`` for its tags)."""
    fields = set(_COLUMN.findall(sql)) - {"id", "rowid"}
    if "images_description" in sql or "FROM images " in sql:
        fields.add("description")
    if "image_tags" in sql or "tag_count" in sql:
        fields.add("tag_ids")
    return frozenset(fields & (set(_FIELDS) | {"tag_ids"}))


def _page(conn: sqlite3.Connection, lists: AsOfSnapshot, changes: Changes, found: BitMap, order: Order, limit: int,
          offset: int) -> list[int]:
    """The page in ``order``: the images whose sort fields changed since the moment are sorted
    with their values then, beside the first ``offset + limit`` of the others."""
    changed = changes.touching(fields_read(order.sql.text)) & found if not order.by_id_alone else BitMap()
    if not changed:
        newest = _newest_first(conn, lists, found, order, limit, offset)
        if newest is not None:
            return newest
        return page_ids(conn, lists, found, order, limit, offset, ahead=_uploaded_since(lists, order))
    rest = found - changed
    others = page_ids(conn, lists, rest, order, offset + limit, 0) if rest else []
    columns = ", ".join(f"i.{name}" for name in _FIELDS)
    today = conn.execute(f"SELECT {columns} FROM json_each(?) page JOIN images i ON i.id = page.value",
                         (json_ids(others),)).fetchall()
    rows = [tuple(row) for row in today] + changes.rows_then(changed, fields_read(order.sql.text))[0]
    return scratch_of(conn).ordered(rows, order, limit, offset)


def _newest_first(conn: sqlite3.Connection, lists: AsOfSnapshot, found: BitMap, order: Order, limit: int,
                  offset: int) -> list[int] | None:
    """A page in the default order (first seen, else uploaded, newest first), read off the upload
    order down from the moment: the images of ``found`` uploaded last, with every one uploaded in
    the same second as the last of them, those first seen by a sync (their time is that) and those
    with no upload time, sorted as the order says. None when that is not the order, when more than
    :data:`_SEEN_AT_MOST` were first seen by a sync, or when the found images are too thinly spread
    over the upload order (the page is then sorted whole)."""
    if not (order.descending and order.column == FIRST_SEEN.format(t="images")) or order.sql.params:
        return None
    uploads = uploads_of(lists.today)
    if uploads.times.dtype.kind == "S":
        return None
    seen = found & lists.today.kept("first seen", lambda: lists.today.selected(
        "SELECT id FROM images WHERE first_seen_at IS NOT NULL"))
    if len(seen) > _SEEN_AT_MOST:
        return None
    undated = found & lists.today.kept("undated", lambda: lists.today.selected(
        "SELECT id FROM images WHERE created_at IS NULL"))
    newest = uploads.newest(lists.changes.moment, found - seen - undated, offset + limit, budget=4 * len(found))
    if newest is None:
        return None
    return sorted_page(conn, newest | seen | undated, order, limit, offset)


def _uploaded_since(lists: AsOfSnapshot, order: Order) -> int:
    """The images uploaded since the moment, when ``order`` walks the newest first: the entries a
    walk of its index reads before any image of then."""
    if not (order.descending and order.column in (FIRST_SEEN.format(t="images"), "created_at")):
        return 0
    return uploads_of(lists.today).count_after(lists.changes.moment)


def _row(record: dict[str, Any]) -> Row:
    values = shape_values(record, [(name, _CONVERTERS[name]) for name in _FIELDS])
    hidden = _FIELDS.index("hidden_from_users")
    values[hidden] = 1 if record.get("hidden_from_users") else 0
    return tuple(values)


class Scratch:
    """An in-memory table of images (and their tags and description index) beside the archive,
    attached read-only: the same SQL a search compiles runs over records as of a moment, since
    names it leaves unqualified (``images``, ``image_tags``) find the scratch tables first and
    the rest (``tags``, ``gallery_images``) the archive's."""

    def __init__(self, path: str) -> None:
        self.conn = sqlite3.connect("file::memory:", uri=True, check_same_thread=False)
        self.conn.execute("ATTACH DATABASE ? AS archive", (reader_uri(path),))
        register(self.conn)
        # with a hash's bytes beside its text, as the archive keeps them (a search by hash reads them)
        self.conn.execute(f"CREATE TABLE images ({', '.join(_FIELDS)}, {', '.join(DIGESTS.values())})")
        self.conn.execute("CREATE TABLE image_tags (image_id INTEGER, tag_id INTEGER)")
        self.conn.execute("CREATE INDEX image_tags_by_tag ON image_tags (tag_id, image_id)")
        self.conn.execute("CREATE INDEX images_long_s ON images (id) WHERE instr(description, 'ſ') > 0")
        self.conn.execute("CREATE VIRTUAL TABLE images_description USING fts5(description, tokenize='trigram')")

    def matching(self, rows: list[Row], tags: dict[int, list[int]], condition: Sql) -> BitMap:
        """The ids of ``rows`` (with ``tags``) that ``condition`` (over ``i``) selects."""
        self._fill(rows, tags)
        return BitMap(row[0] for row in self.conn.execute(f"SELECT i.id FROM images i WHERE {condition.text}",
                                                          condition.params))

    def ordered(self, rows: list[Row], order: Order, limit: int, offset: int) -> list[int]:
        """The ids of one page of ``rows`` in ``order``."""
        self._fill(rows, {})
        return [row[0] for row in self.conn.execute(f"SELECT i.id FROM images i ORDER BY {order.sql.text} "
                                                    "LIMIT ? OFFSET ?", (*order.sql.params, limit, offset))]

    def _fill(self, rows: list[Row], tags: dict[int, list[int]]) -> None:
        with self.conn:
            for table in ("images", "image_tags", "images_description"):
                self.conn.execute(f"DELETE FROM {table}")
            marks = ", ".join("?" * (len(_FIELDS) + len(DIGESTS) + 1))
            self.conn.executemany(f"INSERT INTO images (rowid, {', '.join(_FIELDS)}, {', '.join(DIGESTS.values())}) "
                                  f"VALUES ({marks})", [(row[0], *row, *(kept_value(name, {name: row[_AT[name]]})
                                                                         for name in DIGESTS)) for row in rows])
            self.conn.executemany("INSERT INTO image_tags VALUES (?, ?)",
                                  [(image_id, t) for image_id, ids in tags.items() for t in ids])
            at = _FIELDS.index("description")
            self.conn.executemany("INSERT INTO images_description (rowid, description) VALUES (?, ?)",
                                  [(row[0], row[at]) for row in rows if row[at] is not None])


_SCRATCH = threading.local()


def scratch_of(conn: sqlite3.Connection) -> Scratch:
    """This thread's scratch tables beside the archive ``conn`` reads."""
    path = database_file(conn)
    kept: dict[str, Scratch] = _SCRATCH.__dict__.setdefault("by_path", {})
    if path not in kept:
        kept[path] = Scratch(path)
    return kept[path]
