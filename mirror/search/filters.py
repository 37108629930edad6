"""What a filter means for image searches and records, and the query terms that name a filter or
the caller: ``filter_id:`` and ``my:`` (reference sections 6 and 11).

A filter hides images carrying any of its hidden tags or matching its hidden complex query, and
spoilers those carrying its spoilered tags or matching its spoilered query (what it hides too).
Its meaning is SQL over the image alias ``i`` (for records and SQL searches) and, for the
posting lists, the tags and query themselves (:mod:`.bitmap_search`). The transforms take what
they need as plain values and functions, so that the web layer only says who asks.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .compile import FALSE, Sql, SqlNode, compile_node
from .indexes import IMAGES
from .query import IMAGE_FIELDS, MatchAll, MatchNone, Node, QueryError, parse_query

__all__ = ["ImageFilter", "FilteredBy", "complex_filter", "my_transform", "filter_id_transform", "INT4_MAX"]

Record = dict[str, Any]
INT4_MAX = 2**31 - 1


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


@dataclass(frozen=True)
class FilteredBy(SqlNode):
    """``filter_id:N`` inside a query: the images that filter would not hide (``sql`` says the same)."""

    hides: ImageFilter | None = None


# my:VALUE -> the interaction it names, and the value of it.
_MY = {"faves": ("faved", ""), "upvotes": ("voted", "up"), "downvotes": ("voted", "down"), "hidden": ("hidden", "")}


def my_transform(user_id: int | None, my_images: Callable[[int, str, str], Sql]) -> Callable[[str], Node]:
    """``my:`` queries: the caller's uploads, votes, favourites and hides (reference section 6).
    ``my_images(user_id, kind, value)`` is the SQL selecting the images of an interaction."""

    def transform(value: str) -> Node:
        if user_id is None:
            raise QueryError("You must be logged in to use `my' queries.")
        if value == "uploads":
            return SqlNode(Sql("i.uploader_id = ?", (user_id,)))
        if value in ("subs", "watched"):
            return MatchNone()  # no subscriptions or watch lists here
        if value not in _MY:
            raise QueryError("Unknown `my' value.")
        kind, vote = _MY[value]
        return SqlNode(my_images(user_id, kind, vote))

    return transform


def filter_id_transform(find_filter: Callable[[int], Record | None],
                        can_view: Callable[[Record], bool]) -> Callable[[str], Node]:
    """``filter_id:N`` in a query: everything filter N would not hide, if the caller may use it."""

    def transform(value: str) -> Node:
        row = find_filter(int(value)) if value.isdigit() and int(value) <= INT4_MAX else None
        if row is None or not can_view(row):
            raise QueryError(f"Invalid filter `{value}`.")
        image_filter = ImageFilter.of(row)
        hides = image_filter.hides()
        return FilteredBy(Sql(f"NOT coalesce(({hides.text}), 0)", hides.params), image_filter)

    return transform
