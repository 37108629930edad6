"""Record tables as of a moment, for the SQL that reads them (searches and lists of tags,
comments, posts, galleries, filters, forums and topics).

An in-memory connection attaches the archive read-only and puts, in front of each table asked
for, a view of the same name: the archive's rows that no history since the moment touched, and
beside them the rows of the touched ones as they were then (:func:`.records.record_as_of`), a
record that did not exist yet left out. Any statement the API runs against the table runs
unchanged against the view, its rowids included. The cost is one record rebuilt per record
changed since the moment: cheap for a recent moment, and bounded by the search's time limit for
one years back on a busy table (the tags' image counts change every night).

What is not undone: tables not asked for (an image's tags and hidden state, galleries'
membership) are today's.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from ..store.database import database_file, reader_uri
from ..store.first_sightings import COUNTED_AT_SQL
from ..store.history import EVENTS, record_key
from ..store.records import column_converters, shape_values
from ..store.specs import SPECS, TableSpec
from .moments import Moment
from .records import record_as_of

__all__ = ["tables_as_of"]


def tables_as_of(conn: sqlite3.Connection, moment: Moment, tables: tuple[str, ...]) -> sqlite3.Connection:
    """A connection on which each of ``tables`` (record tables of :data:`SPECS`) reads as of
    ``moment``, and every other table as the archive ``conn`` reads it. The caller closes it."""
    path = database_file(conn)
    scratch = sqlite3.connect("file::memory:", uri=True, check_same_thread=False)
    scratch.row_factory = sqlite3.Row
    scratch.execute("ATTACH DATABASE ? AS archive", (reader_uri(path),))
    for table in tables:
        _shadow(conn, scratch, SPECS[table], moment)
    return scratch


def _shadow(conn: sqlite3.Connection, scratch: sqlite3.Connection, spec: TableSpec, moment: Moment) -> None:
    table, keys = spec.table, spec.pk_columns
    scratch.execute(f'CREATE TABLE "then_{table}" AS SELECT rowid AS rowid, * FROM archive."{table}" WHERE 0')
    names = [row[1] for row in scratch.execute(f'PRAGMA table_info("then_{table}")')]
    touched = _touched(conn, spec, moment)
    unborn = _unborn(conn, spec, moment)
    rows = []
    for row in _rows(conn, table, keys, [key for key in touched if key not in unborn]):
        key = row[keys[0]] if len(keys) == 1 else tuple(row[k] for k in keys)
        found = record_as_of(conn, table, record_key(key), dict(row), moment)
        if found is not None:
            rows.append(_then(spec, dict(row), found.row))
    marks = ", ".join("?" * len(names))
    scratch.executemany(f'INSERT INTO "then_{table}" VALUES ({marks})', [[row.get(n) for n in names] for row in rows])
    scratch.execute(f'CREATE TABLE "touched_{table}" (key PRIMARY KEY) WITHOUT ROWID')
    scratch.executemany(f'INSERT OR IGNORE INTO "touched_{table}" VALUES (?)', [(k,) for k in [*touched, *unborn]])
    own = keys[0] if len(keys) == 1 else f"json_array({', '.join(keys)})"
    scratch.execute(f'CREATE TEMP VIEW "{table}" AS SELECT rowid AS rowid, * FROM archive."{table}" '
                    f'WHERE {own} NOT IN (SELECT key FROM "touched_{table}") UNION ALL SELECT * FROM "then_{table}"')


def _touched(conn: sqlite3.Connection, spec: TableSpec, moment: Moment) -> list[Any]:
    """The keys (as the table holds them; JSON text for a compound key) of the records whose
    history continues after the moment, or that were written after it."""
    marks = ",".join("?" * len(EVENTS))
    keys = [row[0] for row in conn.execute(
        "SELECT DISTINCT record_key FROM history INDEXED BY history_by_resource_event "
        f"WHERE resource = ? AND event IN ({marks}) AND seen_at > ?", (spec.table, *EVENTS, moment.text))]
    if spec.columns().get(spec.pk_columns[0]) == "int" and len(spec.pk_columns) == 1:
        keys = [int(k) for k in keys if k.lstrip("-").isdigit()]
    if "created_at" in spec.fields and len(spec.pk_columns) == 1:
        keys += [row[0] for row in conn.execute(f'SELECT "{spec.pk}" FROM "{spec.table}" WHERE created_at > ?',
                                                (moment.text[:19] + "\uffff",))]
    return list(dict.fromkeys(keys))


def _unborn(conn: sqlite3.Connection, spec: TableSpec, moment: Moment) -> set[Any]:
    """The keys of the records with no date of their own that a run keeping its first sightings as
    a count (:mod:`mirror.store.first_sightings`) first saw after the moment: none existed then,
    and none has a history row to be found by."""
    if "created_at" in spec.fields:
        return set()
    (counted,) = conn.execute(f"SELECT {COUNTED_AT_SQL}", {"resource": spec.table}).fetchone()
    if counted is None or counted <= moment.text:
        return set()
    keys = spec.pk_columns
    own = keys[0] if len(keys) == 1 else f"json_array({', '.join(keys)})"
    return {row[0] for row in conn.execute(
        f'SELECT {own} FROM "{spec.table}" WHERE raw IS NOT NULL AND NOT EXISTS (SELECT 1 FROM history h '
        f"WHERE h.resource = ? AND h.record_key = CAST({own} AS TEXT) AND h.event = 'first_seen')", (spec.table,))}


def _rows(conn: sqlite3.Connection, table: str, keys: tuple[str, ...], touched: list[Any]) -> list[sqlite3.Row]:
    own = keys[0] if len(keys) == 1 else f"json_array({', '.join(keys)})"
    found = []
    for start in range(0, len(touched), 500):
        chunk = touched[start:start + 500]
        found += conn.execute(f'SELECT rowid AS rowid, * FROM "{table}" WHERE {own} IN ({",".join("?" * len(chunk))})',
                              chunk).fetchall()
    return found


def _then(spec: TableSpec, today: dict[str, Any], then: dict[str, Any]) -> dict[str, Any]:
    """Today's row with its record's columns, ``raw``, ``stub`` and hidden state as they were."""
    record = json.loads(then["raw"])
    converters = column_converters(spec.fields, "")
    values = shape_values(record, [(name, converters[name]) for name in spec.fields])
    row = {**today, **dict(zip(spec.fields, values)), "raw": then["raw"]}
    if spec.hideable:
        row["stub"], row["hidden_from_users"] = then.get("stub"), 1 if then.get("hidden_from_users") else 0
    return row
