"""Writing rows of one table with plain ``sqlite3``: the hot path of every sync.

sqlite-utils' ``upsert_all`` re-reads the table's schema and rebuilds its SQL for every batch,
converts each value again, and its ``ON CONFLICT DO UPDATE`` sets every column of a known row,
so SQLite rewrites that row's entry in every index. Here a batch's new rows go in with one
multi-row ``INSERT``, and a known row is updated only in the columns whose value differs from
what it holds. The rows end up exactly as an upsert would leave them: a nightly re-sync that
changes a score rewrites the entries of the indexes on the columns that changed, not of every
index, and a record read again unchanged costs one small update (``mirrored_at``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from .database import chunks

Key = Any  # one value, or a tuple for a compound primary key
Row = tuple[Any, ...]


def quoted(columns: Sequence[str]) -> str:
    return ", ".join(f'"{c}"' for c in columns)


def changed_columns(columns: Sequence[str], old: Row, new: Row) -> tuple[str, ...]:
    """The columns where writing ``new`` over ``old`` would change the row: values that differ, or
    are equal only in Python (1, 1.0 and True; 0.0 and -0.0) and not in a column."""
    return tuple([c for c, o, n in zip(columns, old, new)
                  if o is not n and (o != n or type(o) is not type(n) or (type(n) is float and repr(o) != repr(n)))])


class TableRows:
    """Reads and writes whole rows of ``table`` by primary key, for one connection."""

    def __init__(self, conn: sqlite3.Connection, table: str, pk_columns: tuple[str, ...]) -> None:
        self.conn, self.table, self.pk_columns = conn, table, pk_columns
        self._where = " AND ".join(f'"{c}" = ?' for c in pk_columns)

    def _key_values(self, key: Key) -> tuple[Any, ...]:
        return (key,) if len(self.pk_columns) == 1 else tuple(key)

    def read(self, keys: Sequence[Key], columns: tuple[str, ...]) -> dict[Key, Row]:
        """The rows these keys already have: key -> the values of ``columns``."""
        width = len(self.pk_columns)
        names = quoted(self.pk_columns)
        found: dict[Key, Row] = {}
        for chunk in chunks(keys):
            if width == 1:
                where = f'{names} IN ({",".join("?" * len(chunk))})'
                params: list[Any] = list(chunk)
            else:
                where = f'({names}) IN (VALUES {",".join("(" + ",".join("?" * width) + ")" for _ in chunk)})'
                params = [v for key in chunk for v in key]
            rows = self.conn.execute(f'SELECT {names}, {quoted(columns)} FROM "{self.table}" WHERE {where}', params)
            for row in rows:
                found[row[0] if width == 1 else row[:width]] = row[width:]
        return found

    def insert(self, columns: tuple[str, ...], rows: Sequence[Row]) -> None:
        """Insert new rows (each the values of ``columns``)."""
        self._many(columns, rows, "")

    def update(self, key: Key, columns: tuple[str, ...], row: Row) -> None:
        """Set ``columns`` of the row ``key`` to ``row``."""
        self.conn.execute(_update_sql(self.table, columns, self._where), (*row, *self._key_values(key)))

    def write(self, columns: tuple[str, ...], rows: dict[Key, Row], before: dict[Key, Row]) -> None:
        """Make each row ``rows`` names hold its values: insert the keys ``before`` (their rows as
        :meth:`read` gave them for the same ``columns``) does not have, and set only the columns
        that differ in those it has; a row that would not change is not written at all."""
        self.insert(columns, [row for key, row in rows.items() if key not in before])
        updates: dict[tuple[str, ...], list[Row]] = {}
        for key, row in rows.items():
            old = before.get(key)
            if old is not None:
                changed = changed_columns(columns, old, row)
                if changed:
                    updates.setdefault(changed, []).append(row)
        for changed, group in updates.items():
            assignments = ", ".join(f'"{c}" = excluded."{c}"' for c in changed)
            self._many(columns, group, f" ON CONFLICT ({quoted(self.pk_columns)}) DO UPDATE SET {assignments}")

    def _many(self, columns: tuple[str, ...], rows: Sequence[Row], conflict: str) -> None:
        """``INSERT ... VALUES`` of many rows a statement, not ``executemany``'s one a statement.

        Every statement that writes a table with a full-text index makes SQLite's FTS5 (3.40)
        write what it has indexed so far as a new segment, to be merged later: 50 image rows
        written one by one cost more than twice the index work of the same rows written together.
        """
        per_statement = max(1, self.conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER) // len(columns))
        row_marks = f'({", ".join("?" * len(columns))})'
        for start in range(0, len(rows), per_statement):
            chunk = rows[start:start + per_statement]
            sql = (f'INSERT INTO "{self.table}" ({quoted(columns)}) VALUES {", ".join([row_marks] * len(chunk))}'
                   f"{conflict}")
            self.conn.execute(sql, [value for row in chunk for value in row])


@lru_cache(maxsize=256)
def _update_sql(table: str, columns: tuple[str, ...], where: str) -> str:
    assignments = ", ".join(f'"{c}" = ?' for c in columns)
    return f'UPDATE "{table}" SET {assignments} WHERE {where}'
