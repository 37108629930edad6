"""Checkpoints of the tags' image lists at past moments: the board as of any moment undoes at
most :data:`SPACING` changes of a tag, not every change since.

A search as of a moment (:mod:`mirror.asof.search`) takes today's list of a tag and undoes every
change of that tag made since. With the site's own history back to 2012, "safe as of 2014" undoes
a decade: every image ever tagged ``safe`` since. A checkpoint is one tag's list as it stood at a
moment, that same undoing done once and kept as a roaring bitmap in its serialized form (the
portable format other roaring libraries read); a search then undoes only the changes between its
moment and the tag's first checkpoint after it (or today).

Where: a tag gets one after every :data:`SPACING` of its changes, counted from its first, so a
moment is never more than that many of its changes before a checkpoint or today; most tags have
fewer changes in all and no checkpoint. Each is the undoing of every change after it, from today,
exactly as the search undoes them, so a search through a checkpoint answers what the search from
today answers.

When: :func:`build` places and writes the missing ones (``mirror checkpoints``; ``mirror
import-dump`` and ``mirror sync`` at their end), only for the tags whose changes were written since
it last ran. Nights add changes after every checkpoint, which stays right: a later change undone
from today ends where the checkpoint's list stood. A change written later at an earlier time (a
dump's import brings the site's old tag changes) makes the tag's checkpoints at and after that
time wrong: a trigger deletes them as the change is written, in its transaction, and the next
build places them again from the last one left.
"""

from __future__ import annotations

import sqlite3
import time
from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass

from pyroaring import BitMap
from sqlite_utils import Database

from .state import load_cursor, save_cursor

__all__ = ["SPACING", "TAG_EVENTS", "Built", "Checkpoints", "build", "checkpoint_list", "undone"]

# Events whose tag changes an image's tags as of a moment undoes (mirror.asof reads the same).
TAG_EVENTS = ("changed", "shown", "site_tags")
# The changes of one tag between two of its checkpoints: what a search as of a moment undoes at most.
SPACING = 20_000
_CURSOR = "tag_checkpoints"
_CHANGES_SINCE = ("SELECT c.image_id, c.change FROM image_tag_changes c JOIN history h ON h.id = c.history_id "
                  f"WHERE c.tag_id = ? AND c.seen_at > ? AND h.event IN ({','.join('?' * len(TAG_EVENTS))}) ")


@dataclass
class Built:
    """What one :func:`build` did."""

    tags: int = 0
    checkpoints: int = 0
    bytes: int = 0
    seconds: float = 0.0

    def summary(self) -> str:
        return (f"{self.checkpoints:,} checkpoints of {self.tags:,} tags' image lists written "
                f"({self.bytes / 2**20:.1f} MiB) in {self.seconds:.1f} s")


def undone(conn: sqlite3.Connection, tag_id: int, now: BitMap, since: str, until: str | None = None) -> BitMap:
    """``now``, the images carrying ``tag_id`` at ``until`` (today with None), as they stood at
    ``since``: each image whose tag changed in between takes the state it had before the first
    of those changes (a ``+``: it lacked the tag; a ``-``: it had it)."""
    sql, params = _CHANGES_SINCE, [tag_id, since, *TAG_EVENTS]
    if until is not None:
        sql, params = sql + "AND c.seen_at <= ? ", [*params, until]
    rows = conn.execute(sql + "ORDER BY c.seen_at DESC, c.id DESC", params)
    state = {image_id: change == "-" for image_id, change in rows}  # the oldest change since wins
    if not state:
        return now
    then = BitMap(now) - BitMap(state)
    then.update(image_id for image_id, had in state.items() if had)
    return then


class Checkpoints:
    """The moments each tag has a checkpoint at, read once per state of the database."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.moments: dict[int, list[str]] = {}
        for tag_id, moment in conn.execute("SELECT tag_id, moment FROM tag_checkpoints ORDER BY tag_id, moment"):
            self.moments.setdefault(tag_id, []).append(moment)

    def after(self, tag_id: int, moment: str) -> str | None:
        """The first checkpoint of ``tag_id`` at or after ``moment`` (text as history's ``seen_at``)."""
        kept = self.moments.get(tag_id, ())
        at = bisect_left(kept, moment)
        return kept[at] if at < len(kept) else None


def checkpoint_list(conn: sqlite3.Connection, tag_id: int, moment: str) -> BitMap:
    """The images carrying ``tag_id`` at its checkpoint ``moment``."""
    row = conn.execute("SELECT bits FROM tag_checkpoints WHERE tag_id = ? AND moment = ?", (tag_id, moment)).fetchone()
    if row is None:
        raise LookupError(f"tag {tag_id} has no checkpoint at {moment}")
    return BitMap.deserialize(row[0])


def build(db: Database, say: Callable[[str], None] | None = None, *, spacing: int = SPACING) -> Built:
    """Write the checkpoints missing: for every tag changed since the last build, one after every
    ``spacing`` of its changes since its last checkpoint before the earliest of those changes.
    Each tag's are committed together, so a kill loses at most that tag's, and the next build
    writes them."""
    started, built = time.perf_counter(), Built()
    last = load_cursor(db, _CURSOR).get("after_change", 0)
    newest = db.execute("SELECT max(id) FROM image_tag_changes").fetchone()[0] or 0
    changed = db.execute("SELECT tag_id, min(seen_at) FROM image_tag_changes WHERE id > ? GROUP BY tag_id",
                         [last]).fetchall()
    shown = time.perf_counter()
    for n, (tag_id, earliest) in enumerate(changed, start=1):
        count, size = _build_tag(db, tag_id, earliest, spacing)
        built.tags += count > 0
        built.checkpoints += count
        built.bytes += size
        if say and time.perf_counter() - shown > 10:
            say(f"checkpoints: {n:,} of {len(changed):,} tags changed since the last build looked at, "
                f"{built.checkpoints:,} checkpoints written")
            shown = time.perf_counter()
    with db.atomic():
        save_cursor(db, _CURSOR, {"after_change": newest})
    built.seconds = time.perf_counter() - started
    if say and built.checkpoints:
        say(built.summary())
    return built


def _build_tag(db: Database, tag_id: int, earliest: str, spacing: int) -> tuple[int, int]:
    """The checkpoints one tag lacks from its last one before ``earliest`` on (how many, bytes).

    A change written since deleted (by the trigger) the checkpoints it made wrong: those between
    the image's previous change of the tag and it, so none is left between the last one before
    ``earliest`` and it; from there every checkpoint kept is a fixed point of the new places."""
    kept = [row[0] for row in db.execute("SELECT moment FROM tag_checkpoints WHERE tag_id = ? ORDER BY moment",
                                         [tag_id])]
    start = kept[bisect_left(kept, earliest) - 1] if bisect_left(kept, earliest) else ""
    wanted = _places(db.conn, tag_id, start, [m for m in kept if m > start], spacing)
    if not wanted:
        return 0, 0
    lists: dict[str, bytes] = {}
    state, until = None, None
    for moment in reversed(wanted):  # walked back, each list from the nearest checkpoint after it (or today)
        after = kept[bisect_left(kept, moment)] if bisect_left(kept, moment) < len(kept) else None
        if state is None or (after is not None and after < until):
            until = after
            state = checkpoint_list(db.conn, tag_id, after) if after else BitMap(
                row[0] for row in db.execute("SELECT image_id FROM image_tags WHERE tag_id = ?", [tag_id]))
        state = undone(db.conn, tag_id, state, moment, until)
        state.run_optimize()
        lists[moment], until = state.serialize(), moment
    with db.atomic():
        db.conn.executemany("INSERT INTO tag_checkpoints (tag_id, moment, bits) VALUES (?, ?, ?)",
                            [(tag_id, moment, bits) for moment, bits in lists.items()])
    return len(lists), sum(len(bits) for bits in lists.values())


def _places(conn: sqlite3.Connection, tag_id: int, start: str, kept: list[str], spacing: int) -> list[str]:
    """The moments after ``start`` where ``tag_id`` wants a checkpoint it lacks: the time of every
    ``spacing``-th change counted from the last checkpoint before (a change at the same second
    goes in with it); ``kept`` (sorted) are the checkpoints it has there."""
    places: list[str] = []
    count, last, fixed = 0, start, iter(kept)
    following = next(fixed, None)
    for (seen_at,) in conn.execute(
            "SELECT c.seen_at FROM image_tag_changes c INDEXED BY image_tag_changes_by_tag "
            "WHERE c.tag_id = ? AND c.seen_at > ? ORDER BY c.seen_at", (tag_id, start)):
        while following is not None and seen_at > following:  # past a checkpoint kept: counted from there
            count, following = 0, next(fixed, None)
        if count >= spacing and seen_at != last:
            places.append(last)
            count = 0
        count, last = count + 1, seen_at
    return places
