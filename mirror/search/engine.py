"""Running a compiled search: one page of rows and the exact total, within a time limit.

Each request's work is bounded: the query text's length and nesting depth by the parser's
callers, the page size by the API's clamping, and the statement's running time here, by a
progress handler that interrupts SQLite once the deadline passes. A query that hits the limit
gets :class:`SearchTooSlow`, which the API answers with a clear message instead of a hang.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from .compile import TRUE, Sql, compile_node, register_functions
from .indexes import Index
from .query import Node

# SQLite virtual-machine steps between two looks at the clock.
_STEPS = 10_000


class SearchTooSlow(Exception):
    """A search ran past its time limit and was stopped."""


@dataclass
class Page:
    rows: list[sqlite3.Row]
    total: int


def register(conn: sqlite3.Connection) -> None:
    """Give ``conn`` the SQL functions compiled searches call (a connection someone else owns, too)."""
    register_functions(conn)


def prepare(conn: sqlite3.Connection) -> None:
    """Make a connection of our own able to run compiled searches, its rows readable by name."""
    register(conn)
    conn.row_factory = sqlite3.Row


@contextmanager
def time_limit(conn: sqlite3.Connection, seconds: float) -> Iterator[None]:
    """Interrupt any statement ``conn`` runs after ``seconds``; raise :class:`SearchTooSlow`."""
    deadline = time.monotonic() + seconds
    conn.set_progress_handler(lambda: int(time.monotonic() > deadline), _STEPS)
    try:
        yield
    except sqlite3.OperationalError as e:
        if "interrupted" in str(e):
            raise SearchTooSlow(f"the search took longer than {seconds:g} s and was stopped; "
                                "narrow it down (fewer wildcards, more tags)") from None
        raise
    finally:
        conn.set_progress_handler(None, 0)

def search(conn: sqlite3.Connection, index: Index, node: Node, *, order: Sql, limit: int, offset: int,
           where: Sql = TRUE, columns: str = "{t}.raw", seconds: float = 5.0) -> Page:
    """The rows of ``index`` matching ``node`` and ``where``, in ``order``, one page of them."""
    total_sql, page_sql = statements(index, node, order=order, where=where)
    with time_limit(conn, seconds):
        total = conn.execute(total_sql.text, total_sql.params).fetchone()[0]
        keys = [row[0] for row in conn.execute(page_sql.text, page_sql.params + (limit, offset))] \
            if total > offset else []
        rows = read_rows(conn, index, keys, columns)
    return Page(rows, total)

def statements(index: Index, node: Node, *, order: Sql, where: Sql = TRUE) -> tuple[Sql, Sql]:
    """The two statements a search runs: its exact total, and the rowids of one page in order
    (``LIMIT ? OFFSET ?`` to bind).

    The page is found by rowid alone, and its rows read after: sorting whole rows would read
    every matching record (several KiB each, with overflow pages) only to keep a page of them.
    """
    t = index.alias
    condition = compile_node(node, index.fields, t) & where
    source = f'FROM "{index.table}" {t} WHERE {condition.text}'
    return (Sql(f"SELECT count(*) {source}", condition.params),
            Sql(f"SELECT {t}.rowid {source} ORDER BY {order.text} LIMIT ? OFFSET ?", condition.params + order.params))

def read_rows(conn: sqlite3.Connection, index: Index, keys: list[int], columns: str) -> list[sqlite3.Row]:
    """The ``columns`` of the rows with these rowids, in the order given."""
    if not keys:
        return []
    t = index.alias
    return conn.execute(f'SELECT {columns.format(t=t)} FROM json_each(?) page JOIN "{index.table}" {t} '
                        f"ON {t}.rowid = page.value ORDER BY page.key", (json.dumps(keys),)).fetchall()

def count(conn: sqlite3.Connection, index: Index, node: Node, where: Sql = TRUE) -> int:
    """How many rows of ``index`` match (for tests and tools)."""
    condition = compile_node(node, index.fields, index.alias) & where
    return conn.execute(f'SELECT count(*) FROM "{index.table}" {index.alias} WHERE {condition.text}',
                        condition.params).fetchone()[0]

def ids(conn: sqlite3.Connection, index: Index, node: Node, where: Sql = TRUE) -> set[Any]:
    """The ids of every matching row (for tests and tools)."""
    condition = compile_node(node, index.fields, index.alias) & where
    return {row[0] for row in conn.execute(
        f'SELECT {index.alias}.id FROM "{index.table}" {index.alias} WHERE {condition.text}', condition.params)}
