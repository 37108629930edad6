"""What a board page shows of the records as they were at a moment, read through :mod:`mirror.asof`.

One record is exact (:func:`mirror.asof.record_as_of`: today's row with the history kept since
undone). A list of images as of a moment is :func:`search_as_of`, one function, so that the
search over the past (``mirror.search``'s own, when it lands) takes its place: until then it reads
the candidates a page gives (today's, plus those the history says had what is asked) and keeps
those that, as of the moment, existed, were shown and match, reading at most :data:`SCANNED`.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..asof import AsOf, Moment, record_as_of
from ..asof.records import events_of
from ..store.history import record_key
from .cards import FilterInUse
from .figure import Counts, ImageCard, artists_of_tags
from .metadata import kept_extension

__all__ = ["Listed", "then", "record_then", "search_as_of", "gallery_then", "cards_then",
           "written_by"]

# The candidates one list reads at most, as of a moment (each is one record's history, an index range).
SCANNED = 2000
# How each table's row is read as the API reads it (the record, and its stub and hidden state).
_ROWS = {"images": ("raw, stub, hidden_from_users", "id = ?"), "comments": ("raw, stub, hidden_from_users", "id = ?"),
         "posts": ("raw, stub, hidden_from_users", "id = ?"), "tags": ("raw", "id = ?"), "users": ("raw", "id = ?"),
         "galleries": ("raw", "id = ?"), "forums": ("raw", "short_name = ?"),
         "topics": ("raw", "forum_short_name = ? AND slug = ?")}


def then(conn: sqlite3.Connection, table: str, key: Any, moment: Moment) -> AsOf | None:
    """The row of ``table`` keyed ``key`` (a tuple for a topic) as of ``moment``; None when the
    mirror has none or it did not exist then."""
    columns, where = _ROWS[table]
    params = list(key) if isinstance(key, tuple) else [key]
    cursor = conn.execute(f"SELECT {columns} FROM {table} WHERE {where}", params)
    row = cursor.fetchone()
    if row is None:
        return None
    return record_as_of(conn, table, record_key(key), dict(zip([d[0] for d in cursor.description], row)), moment)


def record_then(conn: sqlite3.Connection, table: str, key: Any, moment: Moment) -> dict[str, Any] | None:
    """The whole record (never its stub) as of ``moment``, or None."""
    found = then(conn, table, key, moment)
    record = json.loads(found.row["raw"]) if found is not None else None
    return record if isinstance(record, dict) else None


@dataclass(frozen=True)
class Listed:
    """A page of a list as of a moment: its ids, how many were found, and whether the reading
    stopped before the end (one past the page found, or :data:`SCANNED` candidates read)."""

    ids: list[int]
    total: int
    more: bool

    def pages(self, page: int, per_page: int) -> int:
        """The pages to offer: those found, and the next one too when the reading stopped early."""
        found = -(-self.total // per_page)
        return max(found, page + 1) if self.more else found

    @property
    def said(self) -> str:
        """How many, as a page says it: "at least N" when the reading stopped before the end."""
        return f"at least {self.total:,}" if self.more else f"{self.total:,}"


def search_as_of(conn: sqlite3.Connection, candidates: Iterable[int], moment: Moment, *, offset: int, limit: int,
                 keep: Callable[[dict[str, Any]], bool] = lambda record: True) -> Listed:
    """The images among ``candidates`` (in the order to list them) that existed at ``moment``, were
    shown then and whose record then ``keep`` keeps: the page at ``offset``, read until one past it
    is found (so a next page is known, not counted). The stand-in for the search as of a moment;
    bounded by :data:`SCANNED` candidates past the page's offset."""
    found: list[int] = []
    scanned = 0
    for image_id in candidates:
        if len(found) > offset + limit or scanned >= SCANNED + offset + limit:
            return Listed(found[offset:offset + limit], len(found), True)
        scanned += 1
        image = then(conn, "images", image_id, moment)
        if image is None or image.row.get("hidden_from_users"):
            continue
        record = json.loads(image.row["raw"])
        if keep(record):
            found.append(image_id)
    return Listed(found[offset:offset + limit], len(found), False)


def gallery_then(conn: sqlite3.Connection, gallery_id: int, moment: Moment) -> list[int]:
    """A gallery's images at ``moment``, in order: today's, with the walks' changes since undone
    (those added since taken out, those removed since put back at the end: where they stood is
    not kept)."""
    members = [row[0] for row in conn.execute("SELECT image_id FROM gallery_images WHERE gallery_id = ? "
                                              "ORDER BY position", [gallery_id])]
    for event in events_of(conn, "galleries", str(gallery_id), events=("gallery_images",), after=moment.text,
                           newest_first=True):
        if not event.changes:
            continue
        added = set(event.changes.get("added") or [])
        members = [i for i in members if i not in added]
        members += [i for i in event.changes.get("removed") or [] if i not in members]
    return members


def cards_then(conn: sqlite3.Connection, ids: Sequence[int], used: FilterInUse, moment: Moment) -> list[ImageCard]:
    """The cards of ``ids`` as of ``moment``: artists, source and counts then, spoilered by the
    filter's tags the image carried then (an image that did not exist then is left out)."""
    cards = []
    spoiler_tags = set(used.spoiler_tags)
    for image_id in ids:
        record = record_then(conn, "images", image_id, moment)
        if record is None:
            continue
        names = record.get("tags") if isinstance(record.get("tags"), list) else []
        ids_then = record.get("tag_ids") if isinstance(record.get("tag_ids"), list) else []
        covered = sorted(str(name) for tag_id, name in zip(ids_then, names) if tag_id in spoiler_tags)
        cards.append(ImageCard(image_id, artists_of_tags(names), record.get("source_url") or None,
                               kept_extension(conn, image_id),
                               Counts(record.get("score"), record.get("faves"), record.get("comment_count")),
                               ", ".join(covered) or None))
    return cards


def written_by(moment: Moment | None) -> tuple[str, list[str]]:
    """An SQL condition (and its parameter) keeping the comments, posts or topics written by
    ``moment`` (everything when None)."""
    return ("created_at <= ?", [moment.text]) if moment is not None else ("1", [])
