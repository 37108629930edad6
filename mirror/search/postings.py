"""Posting lists: the ids of the images carrying a tag, as compressed bitmaps, kept in memory.

A search engine answers ``tag AND NOT other`` by combining sorted lists of ids, not by testing
every candidate: SQLite would probe an index for each image carrying the tag (about 1.6 us each,
so 700 ms to count a tag on 580,000 images). Roaring bitmaps intersect, join and count such sets
in microseconds, and hold a million ids in a few hundred KiB.

A tag's list is read from ``image_tags`` the first time a search needs it and kept, within a
memory budget, while the database does not change; so are the every-image and hidden-image sets,
what each filter lets through, and the ids an SQL term selected (a date range, a phrase), which
the next page of the same search asks for again. Every connection reports whether another one
committed since it last looked (``PRAGMA data_version``); when one does, every list kept is
dropped (a mirror being synced beside ``mirror serve`` changes between two searches), and a
search that began before the change never keeps what it read.
"""

from __future__ import annotations

import sqlite3
import threading
from array import array
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from typing import Any, TypeVar

import numpy as np
from pyroaring import BitMap, FrozenBitMap

__all__ = ["Postings", "Snapshot", "selected_ids", "json_ids"]

T = TypeVar("T")

# What the kept lists may take, all together; the least recently used go first.
DEFAULT_BUDGET = 64 * 1024 * 1024
# Tags read one by one (each list kept); more than this are read in one statement, not kept.
_KEPT_TAGS = 32


def selected_ids(conn: sqlite3.Connection, sql: str, params: tuple = ()) -> BitMap:
    """The integers ``sql`` selects (one column) as a bitmap.

    SQLite hands them over as one comma-separated text and numpy parses it: a Python tuple a row
    costs some 0.25 us each, and the first search of a whole board reads every image's id
    (3.5 million) and ``safe``'s 2.2 million: 0.86 s against 0.25 s for the images.
    """
    text = conn.execute(f"WITH found(id) AS ({sql}) SELECT group_concat(id) FROM found", params).fetchone()[0]
    if not text:
        return BitMap()
    return BitMap(array("I", np.fromstring(text, dtype=np.uint32, sep=",").tobytes()))


class Postings:
    """The kept lists of one database, shared by every thread reading it."""

    def __init__(self, budget: int = DEFAULT_BUDGET) -> None:
        self.budget = budget
        self._lock = threading.Lock()
        self._kept: OrderedDict[object, tuple[BitMap, int]] = OrderedDict()
        self._bytes = 0
        self._generation = 0
        self._plans: dict[str, bool] = {}
        self._seen: dict[int, int] = {}  # id(connection) -> the data_version it last reported
        self._derived: dict[Hashable, Any] = {}  # other things read from this state (see Snapshot.derived)

    @property
    def generation(self) -> int:
        """How many times every kept list was dropped (a change seen, or a connection new to them)."""
        return self._generation

    def reader(self, conn: sqlite3.Connection) -> sqlite3.Connection:
        """Let ``conn`` read the lists without dropping them first: what it sees now is what they
        hold (none are kept yet, or ``conn`` was opened after the last change). ``conn`` must stay
        open as long as these lists are used (it is known by its ``id``)."""
        version = self._version(conn)
        conn.rollback()
        with self._lock:
            if self._kept:
                self._clear()
            self._seen[id(conn)] = version
        return conn

    def snapshot(self, conn: sqlite3.Connection) -> Snapshot:
        """The lists as ``conn`` sees the database, in the read transaction this begins. A
        connection not made a :meth:`reader` drops every list kept the first time it asks."""
        version = self._version(conn)
        with self._lock:
            if self._seen.get(id(conn)) != version:
                self._seen[id(conn)] = version
                self._clear()
            return Snapshot(self, conn, self._generation)

    @staticmethod
    def _version(conn: sqlite3.Connection) -> int:
        """Begins a read transaction and returns the connection's count of others' commits."""
        conn.execute("BEGIN")
        conn.execute("SELECT 1 FROM images LIMIT 1").fetchall()  # the state read from now on
        return conn.execute("PRAGMA data_version").fetchone()[0]

    def _plan(self, sql: str, read: Callable[[], bool]) -> bool:
        with self._lock:
            known = self._plans.get(sql)
        if known is None:
            known = read()
            with self._lock:
                self._plans[sql] = known
        return known

    def _clear(self) -> None:
        self._plans.clear()
        self._derived.clear()
        self._generation += 1
        self._kept.clear()
        self._bytes = 0

    def _get(self, key: object, generation: int) -> BitMap | None:
        with self._lock:
            if generation != self._generation or key not in self._kept:
                return None
            self._kept.move_to_end(key)
            return self._kept[key][0]

    def _keep(self, key: object, bits: BitMap, generation: int) -> None:
        size = _size(bits)
        with self._lock:
            if generation != self._generation or size > self.budget:
                return
            if key in self._kept:
                self._bytes -= self._kept.pop(key)[1]
            self._kept[key] = (bits, size)
            self._bytes += size
            while self._bytes > self.budget:
                self._bytes -= self._kept.popitem(last=False)[1][1]


def _size(bits: BitMap) -> int:
    stats = bits.get_statistics()
    return 64 + sum(stats[f"n_bytes_{kind}_containers"] for kind in ("array", "bitset", "run"))


class Snapshot:
    """The lists one search reads, all from the same state of the database."""

    def __init__(self, postings: Postings, conn: sqlite3.Connection, generation: int) -> None:
        self._postings = postings
        self._conn = conn
        self._generation = generation

    def kept(self, key: Hashable, build: Callable[[], BitMap]) -> BitMap:
        """The bitmap kept under ``key``, built (and kept) when there is none."""
        bits = self.known(key)
        if bits is None:
            bits = FrozenBitMap(build())
            self._postings._keep(key, bits, self._generation)
        return bits

    def known(self, key: Hashable) -> BitMap | None:
        """The bitmap kept under ``key``, if there is one."""
        return self._postings._get(key, self._generation)

    def _kept(self, key: Hashable, sql: str, params: tuple = ()) -> BitMap:
        return self.kept(key, lambda: self.selected(sql, params))

    def derived(self, key: Hashable, build: Callable[[], T]) -> T:
        """What ``build`` reads from this state of the database, kept (outside the lists' budget)
        until the database changes, as the lists are."""
        postings = self._postings
        with postings._lock:
            if self._generation == postings._generation and key in postings._derived:
                return postings._derived[key]
        value = build()
        with postings._lock:
            if self._generation == postings._generation:
                postings._derived[key] = value
        return value

    def walkable(self, sql: str) -> bool:
        """Whether SQLite reads ``sql``'s rows in order off an index, without sorting them first."""
        return self._postings._plan(sql, lambda: not any(
            "TEMP B-TREE" in row[3] for row in self._conn.execute(f"EXPLAIN QUERY PLAN {sql}")))

    def images(self) -> BitMap:
        """Every image's id, read off the score's index: a number and an id a row, a third of the
        other indexes SQLite would otherwise choose (the first search after a night reads it from
        disk, 35 MB for 3.5 million images)."""
        return self.kept("images", lambda: self.selected(f"SELECT id FROM images {self._by('idx_images_score')}"))

    def hidden(self) -> BitMap:
        """The images hidden from users (deleted or merged)."""
        return self.kept("hidden", lambda: self.selected(
            f"SELECT id FROM images {self._by('images_hidden')} WHERE hidden_from_users"))

    def _by(self, index: str) -> str:
        """``INDEXED BY index`` when the database has it (a mirror of an older schema may not)."""
        found = self._conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = ?", [index]).fetchone()
        return f"INDEXED BY {index}" if found else ""

    def tagged(self, tag_ids: Iterable[int]) -> BitMap:
        """The images carrying any of ``tag_ids``."""
        tag_ids = sorted(set(tag_ids))
        if len(tag_ids) > _KEPT_TAGS:
            return selected_ids(self._conn, "SELECT image_id FROM image_tags WHERE tag_id IN "
                                "(SELECT value FROM json_each(?))", (json_ids(tag_ids),))
        return BitMap.union(BitMap(), *(self._kept(("tag", tag_id), "SELECT image_id FROM image_tags WHERE tag_id = ?",
                                                   (tag_id,)) for tag_id in tag_ids))

    def selected(self, sql: str, params: tuple = ()) -> BitMap:
        """The ids an SQL statement selects (first column), not kept."""
        return selected_ids(self._conn, sql, params)


def json_ids(ids: Iterable[int]) -> str:
    """Integer ids as a JSON list, for ``json_each(?)``."""
    return "[" + ",".join(map(str, ids)) + "]"
