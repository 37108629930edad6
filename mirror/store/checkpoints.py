"""Checkpoints of the tags' image lists at past moments: the board as of any moment undoes at
most :data:`SPACING` changes of a tag, not every change since.

A search as of a moment (:mod:`mirror.asof.search`) takes today's list of a tag and undoes every
change of that tag made since. With the site's own history back to 2012, "pony as of 2014" undoes
a decade: every image tagged ``pony`` since. A tag with more than :data:`SPACING` changes gets a
checkpoint after every :data:`SPACING` of them, counted from its first; each holds, as a roaring
bitmap in its serialized form (the portable format other roaring libraries read), the images
whose state differs from the tag's next checkpoint: a delta, some two bytes per image the
interval changed, so the whole costs about two bytes per tag change, whatever the spacing (a
full list at each would cost the board's size again at each, growing as its square). The newest
holds nothing: its list is today's with the changes since undone, never more than a spacing
and a few nights. So a tag as of a moment is today's list walked back to its newest checkpoint,
the deltas down to the first checkpoint after the moment, and at most a spacing of changes
undone from there: what undoing every change from today gives, each checkpoint being that undoing.

When: :func:`build` places and writes the missing ones (``mirror checkpoints``; ``mirror
import-dump`` and ``mirror sync`` at their end), only for the tags whose changes were written
since it last ran. Nights add changes after every checkpoint and leave them right: a nightly
change agrees with what the undoing gave before it. A write that does not (an old change a dump's
import brings that disagrees with the next, an image first seen long after its upload) changes
what undoing from today gives at some moments; if a checkpoint of the tag is among them, a
trigger (migration 0040) deletes the tag's checkpoints in that write's transaction, and the next
build places them again.
"""

from __future__ import annotations

import sqlite3
import time
from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from pyroaring import BitMap
from sqlite_utils import Database

from .state import load_cursor, save_cursor
from .tag_changes import of_history_row

__all__ = ["SPACING", "TAG_EVENTS", "Built", "Checkpoints", "build", "undone", "walked_back", "upload_times",
           "upload_order", "as_seconds"]

# Events whose tag changes an image's tags as of a moment undoes (mirror.asof reads the same).
TAG_EVENTS = ("changed", "shown", "site_tags")
# The changes of one tag between two of its checkpoints: what a search as of a moment undoes at most.
SPACING = 2_000
_CURSOR = "tag_checkpoints"
# The share of the images written since the upload order was kept past which it is written again.
_UPLOADS_STALE = 0.1
# Every tag change is written with one of TAG_EVENTS (store.history's writers), so the changes
# are read without their history rows: a lookup less for each, half the time of an undoing.
_CHANGES_SINCE = "SELECT image_id, change FROM image_tag_changes WHERE tag_id = ? AND seen_at > ? "

# The tags changed by the history rows in a range: the history's own rows, each change found by its key.
_CHANGED_SINCE = (f"SELECT DISTINCT c.tag_id FROM history h NOT INDEXED JOIN image_tag_changes c ON {of_history_row()} "
                  "WHERE h.id > ? AND h.id <= ? AND h.resource = 'images'")


@dataclass
class Built:
    """What one :func:`build` did."""

    tags: int = 0
    checkpoints: int = 0
    bytes: int = 0
    uploads: int = 0  # images whose upload times were kept in order (0: the order kept was kept)
    seconds: float = 0.0

    def summary(self) -> str:
        uploads = f", the upload order of {self.uploads:,} images" if self.uploads else ""
        return (f"{self.checkpoints:,} checkpoints of {self.tags:,} tags' image lists written "
                f"({self.bytes / 2**20:.1f} MiB){uploads} in {self.seconds:.1f} s")


def undone(conn: sqlite3.Connection, tag_id: int, now: BitMap, since: str, until: str | None = None) -> BitMap:
    """``now``, the images carrying ``tag_id`` at ``until`` (today with None), as they stood at
    ``since``: each image whose tag changed in between takes the state it had before the first
    of those changes (a ``+``: it lacked the tag; a ``-``: it had it)."""
    sql, params = _CHANGES_SINCE, [tag_id, since]
    if until is not None:
        sql, params = sql + "AND seen_at <= ? ", [*params, until]
    rows = conn.execute(sql + "ORDER BY seen_at DESC, history_id DESC", params)
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
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'tag_checkpoints'").fetchone():
            return  # an archive read as it is, not migrated yet: it has none
        for tag_id, moment in conn.execute("SELECT tag_id, moment FROM tag_checkpoints ORDER BY tag_id, moment"):
            self.moments.setdefault(tag_id, []).append(moment)

    def after(self, tag_id: int, moment: str) -> str | None:
        """The first checkpoint of ``tag_id`` at or after ``moment`` (text as history's ``seen_at``)."""
        kept = self.moments.get(tag_id, ())
        at = bisect_left(kept, moment)
        return kept[at] if at < len(kept) else None

    def newest(self, tag_id: int) -> str:
        return self.moments[tag_id][-1]


def walked_back(conn: sqlite3.Connection, tag_id: int, newest: BitMap, moment: str, newest_moment: str) -> BitMap:
    """The images carrying ``tag_id`` at its checkpoint ``moment``, from its list at its newest
    checkpoint (``newest``, at ``newest_moment``): the deltas between applied."""
    state = BitMap(newest)
    for (bits,) in conn.execute("SELECT bits FROM tag_checkpoints WHERE tag_id = ? AND moment >= ? AND moment < ? "
                                "ORDER BY moment DESC", (tag_id, moment, newest_moment)):
        state ^= BitMap.deserialize(bits)
    return state


def build(db: Database, say: Callable[[str], None] | None = None, *, spacing: int | None = None) -> Built:
    """Write the checkpoints missing: for every tag changed since the last build, one after every
    ``spacing`` (:data:`SPACING`) of its changes since its newest. Each tag's are committed together, so a kill
    loses at most that tag's, and the next build writes them."""
    started, built, spacing = time.perf_counter(), Built(), spacing or SPACING
    last = load_cursor(db, _CURSOR).get("after_history", 0)
    newest = db.execute("SELECT max(id) FROM history").fetchone()[0] or 0
    changed = [row[0] for row in db.execute(_CHANGED_SINCE if last else "SELECT DISTINCT tag_id FROM image_tag_changes",
                                            [last, newest] if last else [])]
    shown = time.perf_counter()
    for n, tag_id in enumerate(changed, start=1):
        count, size = _build_tag(db, tag_id, spacing)
        built.tags += count > 0
        built.checkpoints += count
        built.bytes += size
        if say and time.perf_counter() - shown > 10:
            say(f"checkpoints: {n:,} of {len(changed):,} tags changed since the last build looked at, "
                f"{built.checkpoints:,} checkpoints written")
            shown = time.perf_counter()
    built.uploads = _keep_upload_order(db)
    with db.atomic():
        save_cursor(db, _CURSOR, {"after_history": newest})
    built.seconds = time.perf_counter() - started
    if say and built.checkpoints:
        say(built.summary())
    return built


def _build_tag(db: Database, tag_id: int, spacing: int) -> tuple[int, int]:
    """The checkpoints one tag lacks after its newest (how many written, their bytes): the new
    newest empty, each other the delta to the next, the former newest's too."""
    kept = db.execute("SELECT max(moment) FROM tag_checkpoints WHERE tag_id = ?", [tag_id]).fetchone()[0]
    wanted = _places(db.conn, tag_id, kept or "", spacing)
    if not wanted:
        return 0, 0
    state = BitMap(row[0] for row in db.execute("SELECT image_id FROM image_tags WHERE tag_id = ?", [tag_id]))
    rows, until, later = [], None, None
    for moment in reversed([kept, *wanted] if kept else wanted):  # walked back from today
        state = undone(db.conn, tag_id, state, moment, until)
        delta = BitMap() if later is None else state ^ later
        delta.run_optimize()
        rows.append((tag_id, moment, delta.serialize()))
        until, later = moment, state
    with db.atomic():
        db.conn.executemany("INSERT OR REPLACE INTO tag_checkpoints (tag_id, moment, bits) VALUES (?, ?, ?)", rows)
    return len(wanted), sum(len(row[2]) for row in rows)


def _places(conn: sqlite3.Connection, tag_id: int, after: str, spacing: int) -> list[str]:
    """The moments after ``after`` where ``tag_id`` wants a checkpoint: the time of every
    ``spacing``-th change counted from there (a change at the same second goes in with it)."""
    places: list[str] = []
    count, last = 0, after
    for (seen_at,) in conn.execute(
            "SELECT seen_at FROM image_tag_changes INDEXED BY image_tag_changes_by_tag "
            "WHERE tag_id = ? AND seen_at > ? ORDER BY seen_at", (tag_id, after)):
        if count >= spacing and seen_at != last:
            places.append(last)
            count = 0
        count, last = count + 1, seen_at
    return places


_CHUNK = 500_000  # rows read and converted at a time


def upload_times(conn: sqlite3.Connection) -> tuple[np.ndarray, np.ndarray]:
    """Every dated image's upload time to the second and its id, sorted by time: the times as
    seconds (:func:`as_seconds`) when each is a date, else as the bytes of their first 19
    characters, ordered as SQLite orders them. Read and converted :data:`_CHUNK` rows at a time:
    a whole board's rows as Python tuples and text took 1.47 GB at 3.5 M images."""
    texts, ids = [], []
    cursor = conn.execute("SELECT substr(created_at, 1, 19), id FROM images WHERE created_at IS NOT NULL")
    while rows := cursor.fetchmany(_CHUNK):
        chunk_texts, chunk_ids = zip(*rows)
        try:
            texts.append(np.array(chunk_texts, dtype="S19"))
        except UnicodeEncodeError:  # a date that is not one: ordered by its bytes, as SQLite would
            texts.append(np.array([t.encode("utf-8", "replace")[:19] for t in chunk_texts], dtype="S19"))
        ids.append(np.array(chunk_ids, dtype=np.uint32))
    times = np.concatenate(texts) if texts else np.array([], dtype="S19")
    order = np.argsort(times, kind="stable")
    times = times[order]
    seconds = as_seconds(times)
    return (times if seconds is None else seconds), (np.concatenate(ids) if ids else np.array([], np.uint32))[order]


def as_seconds(times: np.ndarray) -> np.ndarray | None:
    """Times written ``YYYY-MM-DDTHH:MM:SS`` (bytes) as seconds since 1970, in the same order;
    None when one is not such a time."""
    parts = []
    for start in range(0, len(times), _CHUNK):
        try:
            texts = times[start:start + _CHUNK].astype("U19")
            seconds = texts.astype("datetime64[s]")
        except ValueError:
            return None
        if not (seconds.astype("U19") == texts).all():
            return None
        parts.append(seconds.astype(np.int64))
    return np.concatenate(parts) if parts else np.array([], dtype=np.int64)


def upload_order(conn: sqlite3.Connection) -> tuple[np.ndarray, np.ndarray, str] | None:
    """The upload times and ids :func:`build` kept (as :func:`upload_times` gives them, in
    seconds), and the ``mirrored_at`` they are complete to: rows written at or after it may differ."""
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'upload_order'").fetchone():
        return None
    row = conn.execute("SELECT mirrored_at, seconds, ids FROM upload_order").fetchone()
    if row is None:
        return None
    return np.frombuffer(row[1], dtype=np.int64), np.frombuffer(row[2], dtype=np.uint32), row[0]


def _keep_upload_order(db: Database) -> int:
    """Keep every image's upload time in seconds and its id, sorted (12 bytes an image), when
    there is none or a tenth of the images were written since: a search as of a moment reads
    them at once instead of every image's ``created_at`` (and the rows written since)."""
    row = db.execute("SELECT mirrored_at, length(ids) / 4 FROM upload_order").fetchone()
    images = db.execute("SELECT count(*) FROM images").fetchone()[0]
    # Images new since are counted by number, not by time: times are to the second, and a sync that
    # began within the second the order was kept wrote its images unseen by ``mirrored_at > stamp``.
    if row is not None and max(images - row[1], db.execute("SELECT count(*) FROM images WHERE mirrored_at > ?",
                                                            [row[0]]).fetchone()[0]) <= _UPLOADS_STALE * images:
        return 0
    stamp = db.execute("SELECT max(mirrored_at) FROM images").fetchone()[0] or ""
    times, ids = upload_times(db.conn)
    with db.atomic():
        db.execute("DELETE FROM upload_order")
        if times.dtype == np.int64:  # else a time that is not one: searches read them all, as before
            db.execute("INSERT INTO upload_order (id, mirrored_at, seconds, ids) VALUES (1, ?, ?, ?)",
                       [stamp, times.tobytes(), ids.tobytes()])
    return len(ids)

