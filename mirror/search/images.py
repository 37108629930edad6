"""Searching images: the one entry point `mirror serve` and `mirror browse` both call.

A search is the site's query (parsed by :mod:`.query`, with the ``my:`` and ``filter_id:`` terms
the caller's situation gives), within a scope (a filter's hides, hidden images, the caller's own
hides), in a sort order, one page at a time, answered with posting lists (:mod:`.bitmap_search`).
The posting lists are kept once per database file, whoever searches it: a server and a browser in
one process share them.

:class:`ImageSearches` is a pool of read connections for one database, opened with its posting
lists (a connection new to the lists would have to drop them, since it cannot tell what changed
before it came), for answering searches from many threads; :func:`searches_of` keeps one per
database file, for the server and the browser alike.
"""

from __future__ import annotations

import os
import queue
import random
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol

from ..store.database import reader_uri
from . import bitmap_search, engine
from .bitmap_search import ImageScope
from .engine import Page
from .indexes import IMAGE_SEARCH_SPEC, IMAGES
from .postings import Postings
from .query import Node, QueryError, parse_query
from .sort import Order, image_sort

__all__ = ["ImageScope", "ImageSearches", "Reader", "image_query", "open_reader", "postings_of", "search", "searches_of",
           "MAX_QUERY", "SEARCHES_AT_ONCE"]

# A query longer than this is refused before it is parsed: one request cannot stall a server.
MAX_QUERY = 4096
# Searches one database answers at once, each on a connection of its own. Enough that a few slow
# searches (each is stopped at its time limit) leave connections for the quick ones, which take
# little of the machine; a connection costs a few MiB of cache.
SEARCHES_AT_ONCE = 16


class Reader(Protocol):
    """What answers a search: :func:`mirror.search.bitmap_search.search_images`'s signature."""

    def __call__(self, conn: sqlite3.Connection, postings: Postings, node: Node, scope: ImageScope, order: Order, *,
                 limit: int, offset: int, columns: str, seconds: float) -> Page: ...


_POSTINGS: dict[str, Postings] = {}
_POSTINGS_LOCK = threading.Lock()


def postings_of(path: str | os.PathLike[str]) -> Postings:
    """The posting lists of the database file at ``path``: one set per file, shared by every search."""
    key = os.path.realpath(path)
    with _POSTINGS_LOCK:
        return _POSTINGS.setdefault(key, Postings())


def image_query(q: str, transforms: dict[str, Callable[[str], Node]] | None = None) -> Node:
    """The site's image query ``q`` parsed (``my:`` and ``filter_id:`` through ``transforms``)."""
    if len(q) > MAX_QUERY:
        raise QueryError(f"the query is longer than {MAX_QUERY} characters")
    return parse_query(q, IMAGE_SEARCH_SPEC, transforms=transforms)


def search(conn: sqlite3.Connection, postings: Postings, node: Node, scope: ImageScope, *, sf: str | None,
           sd: str | None, limit: int, offset: int, columns: str, seconds: float,
           reader: Reader = bitmap_search.search_images) -> Page:
    """One page of the images matching ``node`` in ``scope``, sorted by ``sf``/``sd`` as the site
    sorts (``random`` seeded afresh), with the total; stopped with SearchTooSlow after ``seconds``.

    ``reader`` answers it: today's board by default; the caller may hand another that reads the
    same posting lists differently (the board as of a moment, :mod:`mirror.asof.search`), so this
    room knows nothing of the past."""
    order = image_sort(sf, sd, IMAGES.alias, seed=random.randrange(1, 2**32))
    return reader(conn, postings, node, scope, order, limit=limit, offset=offset, columns=columns, seconds=seconds)


def open_reader(path: Path) -> sqlite3.Connection:
    """A read-only connection to the database at ``path`` that can run image searches (any thread)."""
    conn = sqlite3.connect(reader_uri(path), uri=True, check_same_thread=False)
    conn.execute("PRAGMA busy_timeout=5000")
    engine.prepare(conn)
    return conn


class ImageSearches:
    """The read connections image searches of one database file use, with its posting lists."""

    def __init__(self, path: Path, size: int = SEARCHES_AT_ONCE) -> None:
        self.path = path
        self.postings = postings_of(path)
        self.idle: queue.LifoQueue[sqlite3.Connection] = queue.LifoQueue()
        for _ in range(size):
            self.idle.put(self.postings.reader(open_reader(path)))

    @contextmanager
    def connection(self) -> Iterator[sqlite3.Connection]:
        """An idle connection, for one search; at most ``size`` at once, the others wait."""
        conn = self.idle.get()
        try:
            yield conn
        finally:
            self.idle.put(conn)

    def close(self) -> None:
        while not self.idle.empty():
            self.idle.get_nowait().close()


_SEARCHES: dict[Path, tuple[tuple[int, int], ImageSearches]] = {}
_SEARCHES_LOCK = threading.Lock()


def searches_of(path: str | os.PathLike[str], size: int = SEARCHES_AT_ONCE) -> ImageSearches:
    """The search connections of the database file at ``path`` (``size`` of them, when first
    opened), shared by every search of it in this process: opened again once the file was
    replaced (a backup restored, a copy moved into place). A file gone raises FileNotFoundError."""
    key = Path(os.path.realpath(path))
    stat = key.stat()
    identity = (stat.st_dev, stat.st_ino)
    with _SEARCHES_LOCK:
        known = _SEARCHES.get(key)
        if known is None or known[0] != identity:
            if known is not None:
                known[1].close()
            _SEARCHES[key] = known = identity, ImageSearches(key, size=size)
        return known[1]
