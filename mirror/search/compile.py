"""A parsed query as one parameterised SQL condition over the mirror's tables.

Each index (images, comments, posts, galleries, tags, filters) maps the field names of its query
language to SQL: a column or expression of the row (:class:`Scalar`), a set of values reached
through another table (:class:`Related`: an image's tag names, a gallery's images), or nothing
the mirror keeps (:class:`Unknown`, which matches no row, as a field with no value never does).
Values are always bound as parameters, never spliced into the SQL text.

SQL's NULL is not the evaluator's "no value": ``NOT (x = 1)`` is NULL, not true, when ``x`` is
NULL. Positive conditions may stay NULL (a row whose condition is NULL is not returned, as it
would not match); a negation wraps its operand in ``coalesce(..., 0)`` so that "does not match"
includes "has no value", exactly as in the search engine.

Text is folded with Python's ``str.lower`` (registered as ``mirror_lower``), the same folding the
parser applies to the query, so non-ASCII letters compare as the engine compares them.
"""

from __future__ import annotations

import functools
import re
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Protocol

from ..store.derived import digest_bytes
from .query import (
    LIT_QMARK,
    LIT_STAR,
    And,
    MatchAll,
    MatchNone,
    Node,
    Not,
    Or,
    Term,
    edit_distance,
    wildcard_regex,
)
from .slugs import unslug

__all__ = ["Sql", "SqlNode", "Scalar", "Related", "Linked", "TrigramIndexed", "Digest", "Unknown", "Field", "compile_node",
           "register_functions", "sqlite_number"]

_OPERATORS = {"eq": "=", "gt": ">", "gte": ">=", "lt": "<", "lte": "<="}


@dataclass(frozen=True)
class Sql:
    """A piece of SQL and the parameters its ``?`` placeholders take, in order."""

    text: str
    params: tuple = ()

    def __and__(self, other: Sql) -> Sql:
        return Sql(f"({self.text}) AND ({other.text})", self.params + other.params)


TRUE, FALSE = Sql("1"), Sql("0")


@dataclass(frozen=True)
class SqlNode(Node):
    """A query node that is already SQL: what ``filter_id:`` and ``my:`` expand to."""

    sql: Sql


@dataclass(frozen=True)
class Scalar:
    """A field with one value per row: ``expr`` is an SQL expression over the row's alias ``{t}``.

    ``kind`` is ``text``, ``number``, ``date`` or ``bool``; ``folded`` says the stored text is
    already lower case (tag names, slugs), so equality can use the column's index as is.
    """

    expr: str
    kind: str = "number"
    folded: bool = False

    def condition(self, term: Term, alias: str) -> Sql:
        return _predicate(self.expr.format(t=alias), term, self.kind, self.folded)


@dataclass(frozen=True)
class TrigramIndexed(Scalar):
    """A text column with a trigram index (``index``, an FTS5 table over the row's rowid).

    A phrase (a case-insensitive substring) of three ASCII characters or more is looked up in the
    index, which then decides alone, without reading the text: for such a phrase its case folding
    finds exactly what ``str.lower`` finds, with two exceptions made good here. ``İ`` becomes
    ``i̇`` for ``str.lower`` and stays as it is in the index, so a phrase ending in ``i`` is also
    looked up ending in ``İ``; and the index folds the long s ``ſ`` to ``s``, which ``str.lower``
    does not, so a phrase with an ``s`` is tested exactly on the rows found that hold an ``ſ``
    (``long_s``).
    (Every code point was checked against every ASCII character.) Shorter phrases, and phrases
    with other letters, whose folding rules differ, are tested on every row.
    """

    index: str = ""
    long_s: str = ""  # a SELECT of the rowids whose text holds an ``ſ`` (by a partial index), over ``{t}``

    def condition(self, term: Term, alias: str) -> Sql:
        exact = super().condition(term, alias)
        if term.kind != "phrase" or len(term.value) < 3 or not term.value.isascii() or "\x00" in term.value:
            return exact  # a NUL ends an FTS5 query ("unterminated string"): the text is read instead
        phrases = [term.value] + ([term.value[:-1] + "\u0130"] if term.value.endswith("i") else [])
        match = " OR ".join('"' + p.replace('"', '""') + '"' for p in phrases)
        found = Sql(f'{alias}.rowid IN (SELECT rowid FROM "{self.index}" WHERE "{self.index}" MATCH ?)', (match,))
        if "s" not in term.value:
            return found
        rows = self.long_s.format(t="long_s")
        exact = super().condition(term, "long_s")  # on those rows only: the row searched is not read
        return Sql(f"{found.text} AND ({alias}.rowid NOT IN ({rows}) OR {alias}.rowid IN ({rows} AND {exact.text}))",
                   found.params + exact.params)


@dataclass(frozen=True)
class Digest(Scalar):
    """A hash SQLite writes out (``expr``) from the bytes ``stored`` keeps (:mod:`mirror.store.derived`).

    A term that is a hash in lower case (every term of a folded field is) is looked up by its
    bytes, in their index; the few rows whose hash is kept as the text the site sent (not a hash
    in lower case: in SQLite's order the text values, below every blob) are tested as text."""

    stored: str = ""

    def condition(self, term: Term, alias: str) -> Sql:
        exact = super().condition(term, alias)
        value = digest_bytes(term.value) if term.kind == "term" else None
        if value is None:
            return exact
        stored = self.stored.format(t=alias)
        return Sql(f"({stored} = ? OR ({stored} >= '' AND {stored} < x'' AND {exact.text}))", (value, *exact.params))


@dataclass(frozen=True)
class Related:
    """A field with any number of values per row, reached through other tables.

    ``select`` is a SELECT of ``key`` values whose related value is ``value``; the row matches
    when its ``key`` (over the alias ``{t}``) is among those whose value matches. With
    ``per_row`` the select is correlated to the row instead (``EXISTS``), for values stored in
    the row itself, such as a JSON list.
    """

    key: str
    select: str
    value: str
    kind: str = "text"
    folded: bool = False
    per_row: bool = False

    def condition(self, term: Term, alias: str) -> Sql:
        inner = _predicate(self.value, term, self.kind, self.folded)
        select = self.select.format(t=alias)
        if self.per_row:
            return Sql(f"EXISTS ({select} AND {inner.text})", inner.params)
        return Sql(f"{self.key.format(t=alias)} IN ({select} WHERE {inner.text})", inner.params)


@dataclass(frozen=True)
class Linked:
    """A field whose values are names of rows linked to the row by id (an image's tags).

    The row matches when it links to any row whose name matches, found by one of ``names``:
    pairs of a SELECT of ids and the name that SELECT tests (a tag's own name, the names of
    the tags aliased to it). The ids are resolved first (a handful of rows, through the name
    indexes), then the links of exactly those ids are read (``links`` is a SELECT of ``key``
    values ending in the id column), so a search walks one index range per tag instead of
    joining every link with its tag.
    """

    key: str
    links: str
    names: tuple[tuple[str, str], ...]
    folded: bool = False

    def condition(self, term: Term, alias: str) -> Sql:
        ids = self.ids(term)
        if ids is None:
            return FALSE
        return Sql(f"{self.key.format(t=alias)} IN ({self.links} IN ({ids.text}))", ids.params)

    def ids(self, term: Term) -> Sql | None:
        """A SELECT of the ids of the linked rows whose name matches; None when none can."""
        tests = [(select, _predicate(value, term, "text", self.folded)) for select, value in self.names]
        tests = [(select, test) for select, test in tests if test != FALSE]
        if not tests:
            return None
        return Sql(" UNION ALL ".join(f"{select} WHERE {test.text}" for select, test in tests),
                   tuple(v for _, test in tests for v in test.params))


@dataclass(frozen=True)
class Unknown:
    """A field the mirror has no data for (favourites, subscriber counts): it matches nothing."""

    def condition(self, term: Term, alias: str) -> Sql:
        return FALSE


class Field(Protocol):
    """How one field of an index is tested: a term in, an SQL condition over the row out."""

    def condition(self, term: Term, alias: str) -> Sql: ...


def compile_node(node: Node, fields: Mapping[str, Field], alias: str) -> Sql:
    """The SQL condition for ``node`` over rows aliased ``alias``, with ``fields`` by name."""
    if isinstance(node, MatchAll):
        return TRUE
    if isinstance(node, MatchNone):
        return FALSE
    if isinstance(node, SqlNode):
        return node.sql
    if isinstance(node, Not):
        inner = compile_node(node.child, fields, alias)
        return Sql(f"NOT coalesce(({inner.text}), 0)", inner.params)
    if isinstance(node, (And, Or)):
        parts = [compile_node(child, fields, alias) for child in node.children]
        joiner = " AND " if isinstance(node, And) else " OR "
        return Sql(joiner.join(f"({p.text})" for p in parts), tuple(v for p in parts for v in p.params))
    if isinstance(node, Term):
        field = fields.get(node.field)
        return field.condition(node, alias) if field is not None else FALSE
    raise TypeError(f"cannot compile {type(node).__name__} to SQL")


def _predicate(expr: str, term: Term, kind: str, folded: bool) -> Sql:
    """``expr`` tested against one term."""
    if term.kind in ("compare", "between"):
        return _range(expr, term, kind)
    if kind != "text":
        return FALSE  # a text term on a number never matches
    value = expr if folded or not term.fold else f"mirror_lower({expr})"
    if term.kind == "term":
        return Sql(f"{value} = ?", (term.value,))
    if term.kind == "wildcard":
        return Sql(f"{value} GLOB ?", (glob_pattern(term.value),))
    if term.kind == "fuzzy":
        text, distance = term.value
        return Sql(f"mirror_fuzzy({value}, ?, ?)", (text, distance))
    if term.kind == "phrase":
        if not term.value:
            return FALSE
        return Sql(f"instr(mirror_lower({expr}), ?) > 0", (term.value,))
    if term.kind == "phrase_wildcard":
        return Sql(f"mirror_any_word({expr}, ?)", (term.value,))
    raise ValueError(f"unknown term kind {term.kind!r}")


def _range(expr: str, term: Term, kind: str) -> Sql:
    if term.kind == "compare":
        op, bound = term.value
        if not _fits(bound, kind):
            return FALSE
        return Sql(f"{expr} {_OPERATORS[op]} ?", (_bound(bound),))
    lower, upper, inclusive = term.value
    if not _fits(lower, kind):
        return FALSE
    return Sql(f"{expr} >= ? AND {expr} {'<=' if inclusive else '<'} ?", (_bound(lower), _bound(upper)))


def _fits(bound: object, kind: str) -> bool:
    """Whether a bound of this type can compare with a field of ``kind`` (as in the evaluator)."""
    if isinstance(bound, bool):
        return kind == "bool"
    if isinstance(bound, datetime):
        return kind == "date"
    return kind == "number"


def _bound(value: object) -> object:
    """A bound as the store keeps values: dates as the API writes them, booleans as 0/1."""
    if isinstance(value, datetime):
        return value.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    if isinstance(value, bool):
        return int(value)
    return sqlite_number(value) if isinstance(value, int) else value


def sqlite_number(value: int) -> int | float:
    """An integer SQLite can take as a parameter: one past its 64 bits (``gallery_id:2^66``) as a
    float, which compares with every stored integer exactly as the integer would (it is beyond them all)."""
    return value if -(2**63) <= value < 2**63 else float(value)


def glob_pattern(pattern: str) -> str:
    """A wildcard pattern (as the parser leaves it) as a GLOB pattern."""
    out = []
    for c in pattern:
        if c in "*?":
            out.append(c)
        elif c in (LIT_STAR, LIT_QMARK):
            out.append("[*]" if c == LIT_STAR else "[?]")
        elif c in "[":
            out.append("[[]")
        else:
            out.append(c)
    return "".join(out)


@functools.lru_cache(maxsize=256)
def _word_regex(pattern: str) -> re.Pattern[str]:
    return re.compile(wildcard_regex(pattern), re.DOTALL)


def _lower(value: object) -> object:
    return value.lower() if isinstance(value, str) else value


def _fuzzy(value: object, target: str, distance: int) -> int:
    return int(isinstance(value, str) and edit_distance(value, target, distance) <= distance)


def _any_word(value: object, pattern: str) -> int:
    if not isinstance(value, str):
        return 0
    regex = _word_regex(pattern)
    return int(any(regex.fullmatch(word) for word in value.lower().split()))


def register_functions(conn: sqlite3.Connection) -> None:
    """The SQL functions compiled queries call, on a connection that will run them."""
    conn.create_function("mirror_lower", 1, _lower, deterministic=True)
    conn.create_function("mirror_fuzzy", 3, _fuzzy, deterministic=True)
    conn.create_function("mirror_any_word", 2, _any_word, deterministic=True)
    conn.create_function("mirror_unslug", 1, lambda value: unslug(value) if isinstance(value, str) else None,
                         deterministic=True)
