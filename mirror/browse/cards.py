"""The image cards of a grid, as the site's media boxes show them: the kept thumbnail with its
score, faves and comment count, covered when the filter in use spoilers it.

The filter in use is the one a person chose in the browser (a cookie), else the one the mirror was
synced through (``site.filter_id``, which the images cursor keeps): a mirror made through
Everything shows the board as Everything shows it, not a third of it under covers. A mirror synced
with no filter_id saw the board as the site's anonymous visitors do, through its ``Default``
system filter, which is then the one in use when the mirror keeps it; with none, nothing is
spoilered.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..search.filters import ImageFilter
from .figure import Counts, ImageCard, artists_of_tags
from .metadata import kept_extension

__all__ = ["FILTER_COOKIE", "FilterInUse", "chosen_filter", "filter_in_use", "image_cards", "spoilered", "synced_filter"]

FILTER_COOKIE = "booru_filter"
# The images crawler's cursor in ``sync_state`` (:data:`mirror.sync.images.STATE_NAME`).
IMAGES_CURSOR = "images"


@dataclass(frozen=True)
class FilterInUse:
    """A filter of the mirror's ``filters`` table, by id and name, and what it does."""

    id: int | None
    name: str
    effect: ImageFilter
    kept: bool = True  # False: the filter the images were synced through, which the mirror lacks

    @property
    def spoiler_tags(self) -> tuple[int, ...]:
        return self.effect.hidden_tags + self.effect.spoilered_tags


NO_FILTER = FilterInUse(None, "none", ImageFilter())


def chosen_filter(request: Any) -> int | None:
    """The filter a person chose in this browser (its cookie), if any."""
    value = request.cookies.get(FILTER_COOKIE, "")
    return int(value) if value.isdigit() and len(value) < 10 else None


def synced_filter(conn: sqlite3.Connection) -> int | None:
    """The filter the images were synced through (the images cursor's ``filter_id``); None for none
    named, or a mirror no sync has walked."""
    row = conn.execute("SELECT cursor FROM sync_state WHERE name = ?", [IMAGES_CURSOR]).fetchone()
    try:
        found = json.loads(row[0]).get("filter_id") if row else None
    except (ValueError, AttributeError):
        return None
    return found if type(found) is int else None


def filter_in_use(conn: sqlite3.Connection, chosen: int | None) -> FilterInUse:
    """The chosen filter, else the one the mirror was synced through, else the site's ``Default``;
    else none. A synced filter the mirror does not keep spoilers nothing (what it does is unknown)."""
    if chosen is not None:
        row = conn.execute("SELECT * FROM filters WHERE id = ?", [chosen]).fetchone()
        if row is not None:
            return _of(conn, row)
    synced = synced_filter(conn)
    if synced is not None:
        row = conn.execute("SELECT * FROM filters WHERE id = ?", [synced]).fetchone()
        return _of(conn, row) if row is not None else FilterInUse(synced, f"filter {synced}", ImageFilter(),
                                                                  kept=False)
    row = conn.execute("SELECT * FROM filters WHERE name = 'Default' AND system = 1 ORDER BY id LIMIT 1").fetchone()
    return NO_FILTER if row is None else _of(conn, row)


def _of(conn: sqlite3.Connection, row: tuple) -> FilterInUse:
    names = [d[0] for d in conn.execute("SELECT * FROM filters LIMIT 0").description]
    record = dict(zip(names, row))
    return FilterInUse(record["id"], record["name"] or f"filter {record['id']}", ImageFilter.of(record))


def spoilered(conn: sqlite3.Connection, ids: Sequence[int], used: FilterInUse) -> dict[int, str]:
    """Why the filter spoilers each of ``ids`` it spoilers: the names of its tags the image
    carries (the site names them on the cover), or that its query matched."""
    if not ids:
        return {}
    listed = json.dumps(list(ids))
    why: dict[int, list[str]] = {}
    if used.spoiler_tags:
        for image_id, name in conn.execute(
                "SELECT it.image_id, t.name FROM image_tags it JOIN tags t ON t.id = it.tag_id "
                "WHERE it.image_id IN (SELECT value FROM json_each(?)) AND it.tag_id IN (SELECT value FROM json_each(?)) "
                "ORDER BY t.name", [listed, json.dumps(list(used.spoiler_tags))]):
            why.setdefault(image_id, []).append(name)
    queries = [node for node in (used.effect.hidden_complex, used.effect.spoilered_complex) if node is not None]
    if queries:
        matched = ImageFilter(hidden_complex=queries[0], spoilered_complex=queries[-1]).spoilers()
        for (image_id,) in conn.execute(f"SELECT i.id FROM images i WHERE i.id IN (SELECT value FROM json_each(?)) "
                                        f"AND ({matched.text})", [listed, *matched.params]):
            why.setdefault(image_id, []).append("the filter's query")
    return {image_id: ", ".join(names) for image_id, names in why.items()}


def image_cards(conn: sqlite3.Connection, ids: Sequence[int], used: FilterInUse) -> list[ImageCard]:
    """The cards of ``ids``, in that order (an id the mirror lacks is left out)."""
    rows = {row[0]: row for row in conn.execute(
        "SELECT id, tags, source_url, score, faves, comment_count FROM images "
        "WHERE id IN (SELECT value FROM json_each(?))", [json.dumps(list(ids))])}
    covered = spoilered(conn, list(rows), used)
    return [ImageCard(image_id, artists_of_tags(tags), source or None, kept_extension(conn, image_id),
                      Counts(score, faves, comments), covered.get(image_id))
            for image_id, tags, source, score, faves, comments in (rows[i] for i in ids if i in rows)]
