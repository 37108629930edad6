"""A board: a database in the store's schema, read the way the JSON API reads it.

Records are served as the site sent them (the ``raw`` column), or as the stub it sent last for a
record hidden since (``stub``). Only what depends on the request is worked out here: URLs of
files point at the server answering (so a client fetches the kept files, not the site's), and
``spoilered`` follows the filter the request applies (reference section 11).

Connections are opened read-only, one per thread, so ``mirror serve`` can answer while a sync
writes to the same database (WAL: neither blocks the other).
"""

from __future__ import annotations

import functools
import json
import queue
import re
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..errors import EXIT_STORE, MirrorError
from ..search import engine
from ..search.compile import FALSE, Sql, compile_node
from ..search.indexes import GALLERIES, IMAGES, Index
from ..search.postings import Postings
from ..search.query import IMAGE_FIELDS, MatchAll, Node, QueryError, parse_query
from ..search.sort import FIXED_ORDERS

__all__ = ["Board", "ImageFilter", "BoardMissing", "raw_records", "rebase", "complex_filter"]

Record = dict[str, Any]


class BoardMissing(MirrorError):
    """The database to serve does not exist or is not a mirror."""

    exit_code = EXIT_STORE


# A plain absolute URL: (path, query). Every file URL of a record is one; others go through urlsplit.
_ABSOLUTE = re.compile(r"https?://[^/?#\s]*([^?#\s]*)(?:\?([^#\s]*))?(?:#\S*)?")


def rebase(url: Any, origin: str) -> Any:
    """A file URL of the site, pointing at ``origin`` instead (same path).

    An image record has a dozen file URLs and an image show is little else: a plain absolute
    URL is taken apart with one regular expression, which gives what ``urlsplit`` gives.
    """
    if not isinstance(url, str) or not url:
        return url
    if match := _ABSOLUTE.fullmatch(url):
        path, query = match.groups()
    else:
        parts = urlsplit(url if "//" in url else "//host" + url)
        path, query = parts.path, parts.query
    return origin + path + (f"?{query}" if query else "")


@dataclass(frozen=True)
class ImageFilter:
    """What a filter does to image searches (hides) and to records (spoilers), as SQL over ``i``."""

    hidden_tags: tuple[int, ...] = ()
    spoilered_tags: tuple[int, ...] = ()
    hidden_complex: Node | None = None
    spoilered_complex: Node | None = None

    @classmethod
    def of(cls, row: Record | None) -> ImageFilter:
        if row is None:
            return cls()
        return _image_filter(row["hidden_tag_ids"], row["spoilered_tag_ids"], row["hidden_complex"],
                             row["spoilered_complex"])

    def hides(self) -> Sql:
        """True for the images this filter hides from searches."""
        return _any_of(_has_tag(self.hidden_tags), self._complex(self.hidden_complex))

    def spoilers(self) -> Sql:
        """True for the images this filter spoilers in records (what it hides, too)."""
        return _any_of(_has_tag(self.hidden_tags + self.spoilered_tags), self._complex(self.hidden_complex),
                       self._complex(self.spoilered_complex))

    @staticmethod
    def _complex(node: Node | None) -> Sql:
        return FALSE if node is None else compile_node(node, IMAGES.fields, IMAGES.alias)


@functools.lru_cache(maxsize=64)
def _image_filter(hidden_tags: str | None, spoilered_tags: str | None, hidden_complex: str | None,
                  spoilered_complex: str | None) -> ImageFilter:
    """A filter row's effect, parsed once: every request applies a filter, most the same few."""
    return ImageFilter(tuple(json.loads(hidden_tags or "[]")), tuple(json.loads(spoilered_tags or "[]")),
                       complex_filter(hidden_complex), complex_filter(spoilered_complex))


def _has_tag(tag_ids: Sequence[int]) -> Sql:
    """True for an image carrying any of ``tag_ids``.

    Asked of each image in turn (a probe of ``image_tags``' key per tag), not by listing every
    image that has one of them: a filter's tags (``explicit``, ``grimdark``...) are on a good
    part of the board, and listing them would cost as much for one image shown as for a search.
    """
    if not tag_ids:
        return FALSE
    return Sql("EXISTS (SELECT 1 FROM image_tags filtered WHERE filtered.image_id = i.id "
               "AND filtered.tag_id IN (SELECT value FROM json_each(?)))", (json.dumps(list(tag_ids)),))


def _any_of(*parts: Sql) -> Sql:
    parts = tuple(p for p in parts if p != FALSE)
    if not parts:
        return FALSE
    return Sql(" OR ".join(f"coalesce(({p.text}), 0)" for p in parts), tuple(v for p in parts for v in p.params))


def _refuse_filter_id(value: str) -> Node:
    raise QueryError("Filter queries inside filters are not allowed.")


def complex_filter(text: str | None) -> Node | None:
    """A filter's complex string: lines OR-ed; one that does not parse hides (or spoilers) everything."""
    if not text or not text.strip():
        return None
    lines = [line for line in text.splitlines() if line.strip()]
    joined = " || ".join(f"({line})" for line in lines) if len(lines) > 1 else lines[0]
    try:
        return parse_query(joined, IMAGE_FIELDS, transforms={"filter_id": _refuse_filter_id})
    except QueryError:
        return MatchAll()


# Image searches that can run at once on one board (each has a connection of its own).
SEARCH_CONNECTIONS = 4


class _ImageSearching:
    """The posting lists of one board file, and the connections image searches read them with."""

    def __init__(self, path: Path, connect: Callable[[Path], sqlite3.Connection], size: int) -> None:
        self.path = path
        self.postings = Postings()
        self.idle: queue.LifoQueue[sqlite3.Connection] = queue.LifoQueue()
        for _ in range(size):
            self.idle.put(self.postings.reader(connect(path)))


class Board:
    """A mirror database opened read-only for serving.

    A board replaying recorded responses (``as_recorded``) serves image records exactly as they
    were recorded; otherwise their file URLs point at the origin answering and ``spoilered``
    follows the request's filter.
    """

    as_recorded = False

    def __init__(self, path: str | Path, *, search_seconds: float = 5.0) -> None:
        self.path = Path(path)
        self.search_seconds = search_seconds
        self._local = threading.local()
        self._searching_lock = threading.Lock()
        self._searching: _ImageSearching | None = None
        if not self.path.is_file():
            raise BoardMissing(f"there is no mirror database at {self.path}; run `mirror sync` first, "
                               "or point --db at one")
        try:
            self.connection().execute("SELECT 1 FROM images LIMIT 1")
        except sqlite3.Error as e:
            raise BoardMissing(f"{self.path} is not a mirror database ({e})") from None

    def connection(self) -> sqlite3.Connection:
        """This thread's read-only connection (a new one once the board's file was replaced)."""
        path = self.path
        if getattr(self._local, "path", None) != path:
            old = getattr(self._local, "conn", None)
            if old is not None:
                old.close()
            self._local.conn, self._local.path = self._connect(path), path
        return self._local.conn

    def _connect(self, path: Path) -> sqlite3.Connection:
        conn = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True, check_same_thread=False)
        conn.execute("PRAGMA busy_timeout=5000")
        engine.prepare(conn)
        return conn

    @contextmanager
    def image_searching(self) -> Iterator[tuple[sqlite3.Connection, Postings]]:
        """A connection to search images with, and the board's posting lists it reads.

        Image searches share the lists kept in memory, and read them through a few connections
        of their own, opened with the lists: a connection new to the lists would have to drop
        them (it cannot tell what changed before it came). At most that many searches run at
        once; the others wait their turn (the machine has few cores to give them anyway).
        """
        self.connection()  # a board replaced since is opened first
        with self._searching_lock:
            if self._searching is None or self._searching.path != self.path:
                self._searching = _ImageSearching(self.path, self._connect, SEARCH_CONNECTIONS)
            searching = self._searching
        conn = searching.idle.get()
        try:
            yield conn, searching.postings
        finally:
            searching.idle.put(conn)

    def one(self, sql: str, params: Iterable[Any] = ()) -> sqlite3.Row | None:
        return self.connection().execute(sql, tuple(params)).fetchone()

    def all(self, sql: str, params: Iterable[Any] = ()) -> list[sqlite3.Row]:
        return self.connection().execute(sql, tuple(params)).fetchall()

    # -- what the site knows and a mirror does not --------------------------------------------
    #
    # A mirror has no accounts, no gallery dates and no post positions: these answer as the API
    # answers an anonymous caller, and order as the records allow. A board that knows more (the
    # local site's generated board, :class:`mirror.localsite.board.accounts.GeneratedBoard`)
    # overrides them; nothing here reads a table a mirror does not have.

    def user_for_key(self, key: str) -> int | None:
        """The user an API key belongs to; None for no key, an unknown one, or a mirror."""
        return None

    def interactions(self, user_id: int, image_ids: Sequence[int]) -> list[Record]:
        """The user's votes, favourites and hides on these images."""
        return []

    def my_images(self, user_id: int, kind: str, value: str) -> Sql:
        """The images (SQL over ``i``) the user has an interaction of ``kind`` (and ``value``) with."""
        return FALSE

    def hidden_by(self, user_id: int) -> Sql | None:
        """A query for the ids of the images the user hid, left out of their searches; None for none."""
        return None

    def gallery_search(self) -> tuple[Index, str]:
        """The gallery search index, and its fixed order (SQL over the index's alias ``{t}``)."""
        return GALLERIES, FIXED_ORDERS["galleries"]

    def topic_posts(self, short_name: str, topic_slug: str, offset: int, size: int) -> list[sqlite3.Row]:
        """A window of a topic's posts in order: the mirror orders them by id, as they were written."""
        return self.all("SELECT raw, stub, hidden_from_users FROM posts WHERE forum_short_name = ? "
                        "AND topic_slug = ? AND raw IS NOT NULL ORDER BY id LIMIT ? OFFSET ?",
                        (short_name, topic_slug, size, offset))

    # -- filters ---------------------------------------------------------------------------------

    def filter_row(self, filter_id: int) -> Record | None:
        row = self.one("SELECT * FROM filters WHERE id = ?", [filter_id])
        return dict(row) if row else None

    def default_filter(self) -> Record | None:
        """The system filter named exactly ``Default`` (what anonymous requests get), if kept."""
        row = self.one("SELECT * FROM filters WHERE name = 'Default' AND system = 1 ORDER BY id LIMIT 1")
        return dict(row) if row else None

    # -- records ---------------------------------------------------------------------------------

    def images(self, rows: Sequence[sqlite3.Row], image_filter: ImageFilter, origin: str) -> list[Record]:
        """Image rows (with ``raw``, ``stub``, ``hidden_from_users``, ``id``) as served records."""
        spoilered = self.spoilered([row["id"] for row in rows], image_filter)
        return [self.image_record(row, origin, row["id"] in spoilered) for row in rows]

    def image_record(self, row: sqlite3.Row, origin: str, spoilered: bool) -> Record:
        if row["hidden_from_users"] and row["stub"]:
            return json.loads(row["stub"])  # the stub the site serves: no files, no spoilered
        record = json.loads(row["raw"])
        if self.as_recorded:
            return record
        record["spoilered"] = spoilered
        if isinstance(record.get("representations"), dict):
            record["representations"] = {k: rebase(v, origin) for k, v in record["representations"].items()}
        if "view_url" in record:
            record["view_url"] = rebase(record["view_url"], origin)
        return record

    def image_as_served(self, image_id: int, origin: str) -> Record:
        """The image as the API serves it now with no filter applied, files at ``origin``."""
        row = self.one("SELECT id, raw, stub, hidden_from_users FROM images WHERE id = ?", [image_id])
        return self.images([row], ImageFilter(), origin)[0]

    def spoilered(self, image_ids: Sequence[int], image_filter: ImageFilter) -> set[int]:
        condition = image_filter.spoilers()
        if not image_ids or condition == FALSE:
            return set()
        return {row[0] for row in self.all(
            f"SELECT i.id FROM images i WHERE i.id IN (SELECT value FROM json_each(?)) AND ({condition.text})",
            (json.dumps(list(image_ids)), *condition.params))}


def raw_records(rows: Iterable[sqlite3.Row]) -> list[Any]:
    """The ``raw`` records of rows, or their ``stub`` where the row is hidden and has one."""
    out = []
    for row in rows:
        keys = row.keys()
        hidden = "stub" in keys and row["stub"] is not None and row["hidden_from_users"]
        out.append(json.loads(row["stub"] if hidden else row["raw"]))
    return out

