"""Image searches answered with posting lists: exact totals and sorted pages on a million images.

A query is evaluated to the set of matching ids, as a bitmap. Tags (and aliases, wildcards) are
the images their posting lists hold, ``id`` ranges are cut from the list of every image, and
boolean operators are set operations. Every other term (scores, dates, descriptions, galleries)
is the SQL the compiler makes of it, asked once for the ids it selects: over the whole table when
SQLite can find them by an index, or only among the candidates the rest of the query left when
it would have to read every image. The caller's filter, hidden images and own hides are removed
the same way. The total is then the set's size, exact, at no cost.

The page is taken in sort order by one of two means, whichever reads less: walking the sort
column's index from its end and keeping the first ids that are in the set (a set holding one
image in ten fills a page of 15 after some 150 index entries), or reading the sort keys of every
id in the set and sorting them (a small set). Both give the order ``ORDER BY`` gives.
"""

from __future__ import annotations

import math
import re
import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
from pyroaring import BitMap

from .compile import Field, Linked, Sql, SqlNode, compile_node
from .engine import Page, read_rows, time_limit
from .filters import FilteredBy, ImageFilter
from .indexes import IMAGES
from .postings import Postings, Snapshot, json_ids
from .query import And, MatchAll, MatchNone, Node, Not, Or, Term
from .sort import Order, random_scores

__all__ = ["ImageScope", "Evaluator", "search_images", "matching", "page_ids"]

_MAX_ID = 2**32 - 1
# Index entries walked for the cost of reading and sorting one id's sort key.
_SORT_COST = 4


@dataclass(frozen=True)
class ImageScope:
    """What a caller may find, besides the query: a filter's hides, hidden images unless
    ``deleted``, and ``excluded`` ids (SQL selecting them: the caller's own hides)."""

    hides: ImageFilter | None = None
    deleted: bool = False
    excluded: Sql | None = None


def search_images(conn: sqlite3.Connection, postings: Postings, node: Node, scope: ImageScope, order: Order, *,
                  limit: int, offset: int, columns: str, seconds: float) -> Page:
    """One page of the images matching ``node`` within ``scope``, in ``order``, and their total,
    every statement reading the same state of the database (one read transaction)."""
    with time_limit(conn, seconds):
        try:
            lists = postings.snapshot(conn)
            found = matching(Evaluator(conn, lists), node, scope)
            keys = page_ids(conn, lists, found, order, limit, offset) if len(found) > offset else []
            return Page(read_rows(conn, IMAGES, keys, columns), len(found))
        finally:
            if conn.in_transaction:
                conn.rollback()


def matching(evaluator: Evaluator, node: Node, scope: ImageScope) -> BitMap:
    """The ids matching ``node`` that ``scope`` lets the caller see."""
    allowed = evaluator.allowed(scope)
    return evaluator.bits(node, within=allowed) & allowed


class Evaluator:
    """Turns query nodes into bitmaps of image ids, reading one snapshot of the database."""

    def __init__(self, conn: sqlite3.Connection, snapshot: Snapshot, fields: Mapping[str, Field] = IMAGES.fields,
                 alias: str = IMAGES.alias) -> None:
        self.conn, self.snapshot, self.fields, self.alias = conn, snapshot, fields, alias

    def allowed(self, scope: ImageScope) -> BitMap:
        allowed = self.visible(scope.hides)
        if not scope.deleted:
            allowed = allowed - self.snapshot.hidden()
        if scope.excluded is not None:
            allowed = allowed - self.snapshot.selected(scope.excluded.text, scope.excluded.params)
        return allowed

    def visible(self, hides: ImageFilter | None) -> BitMap:
        """Every image ``hides`` does not hide (hidden images included)."""
        if hides is None:
            return self.snapshot.images()

        def build() -> BitMap:
            hidden = self.snapshot.tagged(hides.hidden_tags)
            if hides.hidden_complex is not None:
                hidden = hidden | self.bits(hides.hidden_complex)
            return self.snapshot.images() - hidden

        return self.snapshot.kept(("visible", hides.hidden_tags, hides.hidden_complex), build)

    def bits(self, node: Node, within: BitMap | None = None) -> BitMap:
        """Ids of images matching ``node``; exact within ``within`` (outside it, anything)."""
        if isinstance(node, MatchAll):
            return self.snapshot.images()
        if isinstance(node, MatchNone):
            return BitMap()
        if isinstance(node, Not):
            return self.snapshot.images() - self.bits(node.child, within)
        if isinstance(node, And):
            return self._all(node.children, within)
        if isinstance(node, Or):
            return BitMap.union(BitMap(), *(self.bits(child, within) for child in node.children))
        if isinstance(node, FilteredBy) and node.hides is not None:
            return self.visible(node.hides)
        if isinstance(node, Term):
            bits = self._term(node)
            if bits is not None:
                return bits
            return self._selected(compile_node(node, self.fields, self.alias), within)
        if isinstance(node, SqlNode):
            return self._selected(node.sql, within)
        raise TypeError(f"cannot search images with {type(node).__name__}")

    def _all(self, children: Iterable[Node], within: BitMap | None) -> BitMap:
        """The intersection: what the lists answer first, then the terms SQL answers, as one
        statement (so SQLite sees ``score.gte:100, score.lte:120`` as one index range) that looks
        only among what is left when it would otherwise read every image."""
        cheap, sql, other = [], [], []
        for child in children:
            if self._cheap(child):
                cheap.append(child)
            elif isinstance(child, (Term, SqlNode)) and not isinstance(child, FilteredBy):
                sql.append(child)
            else:
                other.append(child)
        found: BitMap | None = None
        for child in cheap + other:
            bits = self.bits(child, _narrowest(within, found))
            found = bits if found is None else found & bits
            if not found:
                return found
        if sql:
            bits = self._selected(compile_node(And(tuple(sql)), self.fields, self.alias), _narrowest(within, found))
            found = bits if found is None else found & bits
        return found if found is not None else self.snapshot.images()

    def _cheap(self, node: Node) -> bool:
        if isinstance(node, (MatchAll, MatchNone)):
            return True
        if isinstance(node, Not):
            return self._cheap(node.child)
        if isinstance(node, (And, Or)):
            return all(self._cheap(child) for child in node.children)
        if isinstance(node, FilteredBy):
            return node.hides is not None
        return isinstance(node, Term) and (isinstance(self.fields.get(node.field), Linked) or node.field == "id")

    def _term(self, term: Term) -> BitMap | None:
        """A tag or an id range from the lists; None for a term SQL must answer."""
        field = self.fields.get(term.field)
        if isinstance(field, Linked):
            ids = field.ids(term)
            if ids is None:
                return BitMap()
            return self.snapshot.tagged(row[0] for row in self.conn.execute(ids.text, ids.params))
        if term.field == "id" and term.kind in ("compare", "between"):
            bounds = id_range(term)
            if bounds is None:
                return None
            return self.snapshot.images() & BitMap(range(*bounds))
        return None

    def _selected(self, condition: Sql, within: BitMap | None) -> BitMap:
        """The ids an SQL condition selects: by its own index (kept, like a tag's list, so the
        next page of the same search does not ask again), or among ``within``."""
        t = self.alias
        whole = f"SELECT {t}.id FROM images {t} WHERE {condition.text}"
        key = ("selected", condition)
        if within is None:
            return self.snapshot.kept(key, lambda: self.snapshot.selected(whole, condition.params))
        known = self.snapshot.known(key)
        if known is not None:
            return known
        if not _reads_every_row(self.conn, whole, condition.params, t):
            ids = _at_most(self.conn.execute(whole, condition.params), _SORT_COST * len(within))
            if ids is not None:
                return self.snapshot.kept(key, lambda: BitMap(ids))
        return self.snapshot.selected(
            f"SELECT {t}.id FROM json_each(?) candidate CROSS JOIN images {t} ON {t}.id = candidate.value "
            f"WHERE {condition.text}", (json_ids(within), *condition.params))


def _at_most(rows: sqlite3.Cursor, count: int) -> list[int] | None:
    """The first column of every row, or None once there are more than ``count``."""
    ids: list[int] = []
    while batch := rows.fetchmany(4096):
        ids.extend(row[0] for row in batch)
        if len(ids) > count:
            return None
    return ids


def _narrowest(within: BitMap | None, found: BitMap | None) -> BitMap | None:
    if found is None or within is None:
        return within if found is None else found
    return found & within


def id_range(term: Term) -> tuple[int, int] | None:
    """``[start, stop)`` of the ids a comparison on ``id`` selects; None for a bound that is not a number."""
    if term.kind == "compare":
        op, bound = term.value
        bounds = {op: bound}
    else:
        lower, upper, inclusive = term.value
        bounds = {"gte": lower, "lte" if inclusive else "lt": upper}
    if any(isinstance(b, bool) or not isinstance(b, (int, float)) for b in bounds.values()):
        return None
    start, stop = 0, _MAX_ID
    for op, bound in bounds.items():
        if op in ("gt", "gte", "eq"):
            start = max(start, math.floor(bound) + 1 if op == "gt" else math.ceil(bound))
        if op in ("lt", "lte", "eq"):
            stop = min(stop, math.ceil(bound) if op == "lt" else math.floor(bound) + 1)
    return min(max(0, start), _MAX_ID), max(0, min(stop, _MAX_ID))


_FULL_SCAN = re.compile(r"SCAN (\w+)")


def _reads_every_row(conn: sqlite3.Connection, sql: str, params: tuple, alias: str) -> bool:
    """Whether SQLite would read every image to answer ``sql`` (no index narrows it)."""
    return any((m := _FULL_SCAN.match(row[3])) and m.group(1) == alias
               for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}", params))


# ---------------------------------------------------------------------------- the page


def page_ids(conn: sqlite3.Connection, snapshot: Snapshot, found: BitMap, order: Order, limit: int,
             offset: int, ahead: int = 0) -> list[int]:
    """The ids of one page of ``found`` in ``order``; ``ahead``: index entries expected before
    the first of ``found`` on top of its spread (a set of long ago, newest first, lies past every
    image uploaded since)."""
    if order.by_id_alone and order.seed is not None:
        return _random_page(found, order, limit, offset)
    if order.column == "id":
        size = len(found)
        if order.descending:
            return list(reversed(found[max(0, size - offset - limit):size - offset]))
        return list(found[offset:offset + limit])
    if order.column is not None and snapshot.walkable(_walk_sql(order)):
        # Entries to walk if the set is spread evenly over the index; a set bunched at its far
        # end (a date range, in date order) is given up on once the walk costs what sorting would.
        expected = ahead + (offset + limit) * len(snapshot.images()) / len(found)
        if expected < len(found):
            keys = _walk(conn, found, order, limit, offset, budget=_SORT_COST * len(found))
            if keys is not None:
                return keys
    return sorted_page(conn, found, order, limit, offset)


def _random_page(found: BitMap, order: Order, limit: int, offset: int) -> list[int]:
    """The page of a random order: every id scored at once, the first ``offset + limit`` picked
    without sorting the rest (score, then id, in the order's direction, as its SQL sorts)."""
    ids = np.frombuffer(found.to_array(), dtype=np.uint32).astype(np.int64)
    keys = (random_scores(ids, order.seed) << 32) | ids  # a score is below 2**31, an id below 2**32
    if order.descending:
        keys = -keys
    wanted = min(offset + limit, len(keys))
    if wanted == 0:
        return []
    first = np.argpartition(keys, wanted - 1)[:wanted] if wanted < len(keys) else np.arange(len(keys))
    ranked = first[np.argsort(keys[first], kind="stable")]
    return ids[ranked[offset:offset + limit]].tolist()


def _walk(conn: sqlite3.Connection, found: BitMap, order: Order, limit: int, offset: int,
          budget: int) -> list[int] | None:
    """The page, read off the sort column's index; None when the set is too thin there."""
    rows = conn.execute(_walk_sql(order))
    keys: list[int] = []
    skip = offset
    for read, (image_id,) in enumerate(rows, 1):
        if image_id in found:
            if skip:
                skip -= 1
            else:
                keys.append(image_id)
                if len(keys) == limit:
                    break
        if read >= budget:
            return None
    return keys


def _walk_sql(order: Order) -> str:
    direction = "DESC" if order.descending else "ASC"
    return f"SELECT id FROM images ORDER BY {order.column} {direction}, id {direction}"


def sorted_page(conn: sqlite3.Connection, found: BitMap, order: Order, limit: int, offset: int) -> list[int]:
    """The page, by reading and sorting the keys of every id in the set."""
    t = IMAGES.alias
    rows = f"(SELECT value AS id FROM json_each(?)) {t}" if order.by_id_alone else \
        f"json_each(?) candidate CROSS JOIN images {t} ON {t}.id = candidate.value"
    return [row[0] for row in conn.execute(f"SELECT {t}.id FROM {rows} ORDER BY {order.sql.text} LIMIT ? OFFSET ?",
                                           (json_ids(found), *order.sql.params, limit, offset))]

