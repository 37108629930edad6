"""A board: a database in the store's schema, read the way the JSON API reads it.

Records are served as the site sent them (the ``raw`` column), or as the stub it sent last for a
record hidden since (``stub``). Only what depends on the request is worked out here: URLs of
files point at the server answering (so a client fetches the kept files, not the site's), and
``spoilered`` follows the filter the request applies (reference section 11).

Connections are opened read-only, one per thread, so ``mirror serve`` can answer while a sync
writes to the same database (WAL: neither blocks the other).
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..errors import EXIT_STORE, MirrorError
from ..search.compile import FALSE, Sql
from ..search.filters import ImageFilter
from ..search.images import ImageSearches, open_reader, searches_of
from ..search.indexes import GALLERIES, Index
from ..search.sort import FIXED_ORDERS
from .http import parse_json

__all__ = ["Board", "BoardGone", "BoardMissing", "raw_records", "rebase"]

Record = dict[str, Any]


class BoardGone(Exception):
    """The database being served was deleted under the server: answered 503, said in the log."""


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
        if not self.path.is_file():
            raise BoardMissing(f"there is no mirror database at {self.path}; run `mirror sync` first, "
                               "or point --db at one")
        try:
            self.connection().execute("SELECT 1 FROM images LIMIT 1")
        except sqlite3.Error as e:
            raise BoardMissing(f"{self.path} is not a mirror database ({e})") from None

    def connection(self) -> sqlite3.Connection:
        """This thread's read-only connection: a new one once the board's file was replaced (a
        backup restored, a copy moved into place), so that the server answers from the file the
        path names now, never from one that is gone. A file deleted is :class:`BoardGone`."""
        file = self.file_identity()
        if getattr(self._local, "file", None) != file:
            old = getattr(self._local, "conn", None)
            if old is not None:
                old.close()
            self._local.conn, self._local.file = self._connect(self.path), file
        return self._local.conn

    def file_identity(self) -> tuple[int, int]:
        """(device, inode) of the file the board's path names now."""
        try:
            stat = os.stat(self.path)
        except FileNotFoundError:
            raise BoardGone(f"the mirror database {self.path} was deleted while being served; "
                            "put it back (or restart mirror serve on another)") from None
        return stat.st_dev, stat.st_ino

    def _connect(self, path: Path) -> sqlite3.Connection:
        return open_reader(path)

    def image_searches(self) -> ImageSearches:
        """The connections image searches of this board use, with its posting lists
        (:class:`~mirror.search.images.ImageSearches`): opened again once the file was replaced."""
        self.file_identity()  # a file deleted is BoardGone
        return searches_of(self.path)

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
        return self.all("SELECT id, raw, stub, hidden_from_users FROM posts WHERE forum_short_name = ? "
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
            return parse_json(row["stub"])  # the stub the site serves: no files, no spoilered
        record = parse_json(row["raw"])
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
        out.append(parse_json(row["stub"] if hidden else row["raw"]))
    return out

