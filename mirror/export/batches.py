"""The rows an export writes, read from the store and turned into Arrow record batches.

A record table's candidates are its rows (every one, the first time) written between the batch's
bounds (``mirrored_at``) or with history since; their versions are read from the history
(:mod:`.versions`). Today's version of each is hashed (:func:`digest`) and written only when it
differs from the version last exported to the same DEST (the store's ``export_digests``, read in
the same query). The reading runs on its own connection:
the Delta writer pulls the batches from threads of its own. What was written is collected in
:class:`Written` for the store to keep once the table's commit is made.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

import pyarrow as pa
import pyarrow.json as pa_json

from ..dates import parse_utc
from ..store.records import storable_text
from ..store.specs import SPECS
from .tables import APPENDED, BOOL, COMPARED, JSON, RECORDS, STAMP, Column, ExportTable
from .versions import RecordRows
from .written import Written

__all__ = ["Bounds", "digest", "record_batches"]

ROWS_PER_BATCH = 4_096
# A record table's rows read at a time: their histories and kept records are a first export's
# working memory (a chunk of 4,096 images held some 90 MB of Python objects at its peak).
RECORDS_PER_CHUNK = 1_024


@dataclass(frozen=True)
class Bounds:
    """What one export batch covers: records written from ``low`` to ``high`` (``mirrored_at``,
    both included), and history rows after ``history_low`` up to ``history_high`` (ids), per table;
    and the number of the DEST it goes to, whose digests say what it holds."""

    low: str
    high: str
    after: dict[str, int]
    upto: dict[str, int]
    dest: int = 0
    # The tables read whole (COMPARED) that no writer changed since the last batch
    # (:mod:`mirror.store.table_marks`): they have no new version, and are not read.
    unchanged: frozenset[str] = frozenset()

    @property
    def first(self) -> bool:
        """The first export to its DEST: every version of every record."""
        return not self.low


def digest(values: Sequence[Any]) -> int:
    """A 64-bit digest of a version's values (``seen_at`` left out): equal values, equal digest."""
    return int.from_bytes(hashlib.blake2b(repr(tuple(values)).encode(), digest_size=8).digest(), "big", signed=True)


def _queries(table: ExportTable, bounds: Bounds, first_sql: str = "",
             rowids: tuple[int, int] | None = None) -> list[tuple[str, list[Any]]]:
    """The queries of the table's candidate rows; a record table's first export reads ``first_sql``
    (:meth:`.RecordRows.first_sql`) after the key and digest, in place of ``raw`` and ``stub``, and
    with ``rowids`` only the rows after the first up to the second (a part of the table)."""
    columns = ", ".join(c.source for c in table.columns if c.sql != "?")
    if table.how == APPENDED:
        return [(f"SELECT {columns} {table.appended_sql}", [bounds.after.get(table.name, 0), bounds.upto.get(table.name, 0)])]
    rebuilt = ', raw, stub' if table.how == RECORDS and SPECS[table.name].hideable else ', raw, NULL'
    if first_sql and bounds.first:
        rebuilt = f", {first_sql}"
    if bounds.first:  # a first export's DEST holds no digest to compare with
        joined = (f'SELECT {columns}, {table.key_sql()}, NULL{rebuilt if table.how == RECORDS else ""} '
                  f'FROM "{table.table}"')
    else:
        joined = (f'SELECT {columns}, {table.key_sql()}, d.digest{rebuilt if table.how == RECORDS else ""} '
                  f'FROM "{table.table}" '
                  f"LEFT JOIN export_digests d ON d.dest = {int(bounds.dest)} AND d.tbl = '{table.name}' "
                  f"AND d.record_key = {table.key_sql()}")
    if table.how == COMPARED:
        return [(joined, [])]
    if bounds.first and rowids is not None:
        return [(joined + f' WHERE "{table.table}".rowid > ? AND "{table.table}".rowid <= ?', list(rowids))]
    if bounds.first:
        return [(joined, [])]
    # Three ranges (an OR of them would scan the table): the rows written within the bounds; a tag an
    # image named before the tags crawler read it, which has an id and a name and no mirrored_at yet;
    # and the records whose history grew since without their row being written (a dump's site changes).
    own = f'"{table.table}"."{table.key[0]}"' if len(table.key) == 1 else table.key_sql()
    return [(joined + " WHERE mirrored_at >= ? AND mirrored_at <= ?", [bounds.low, bounds.high]),
            (joined + " WHERE mirrored_at IS NULL", []),
            (joined + " JOIN (SELECT DISTINCT record_key FROM history WHERE resource = ? AND id > ? AND id <= ?) h "
                      f"ON {own} = h.record_key WHERE mirrored_at < ? OR mirrored_at > ?",
             [table.name, bounds.after.get("history", 0), bounds.upto.get("history", 0), bounds.low, bounds.high])]


def record_batches(conn: sqlite3.Connection, table: ExportTable, bounds: Bounds, written: Written,
                   *, write: bool = True, rowids: tuple[int, int] | None = None) -> Iterator[pa.RecordBatch]:
    """The new versions of ``table`` within ``bounds`` as record batches (nothing when ``write`` is
    false: the digests only, for a batch a killed run already committed), noting each in ``written``;
    with ``rowids``, a first export's versions of a record table's rows in that range only."""
    if table.how == RECORDS:
        yield from _record_versions(conn, table, bounds, written, write, rowids)
        return
    stamped = COMPARED == table.how
    if stamped and table.table in bounds.unchanged:
        return
    width = len(table.columns) - (1 if stamped else 0)
    names = [column.name for column in table.columns]
    key_at = [names.index(name) for name in table.key]
    key_of = itemgetter(*key_at) if len(key_at) > 1 else lambda values: (values[key_at[0]],)
    for chunk in _chunks(conn, _queries(table, bounds)):
        if table.how == APPENDED:
            fresh = chunk
        else:
            fresh = []
            for row in chunk:
                values = row[:width]
                value = digest(values)
                if value != row[-1]:
                    written.add_ids(key_of(values), row[-2], value)
                    fresh.append(values + (bounds.high,))
        written.rows += len(fresh)
        if fresh and write:
            yield to_batch(table, fresh)


def _record_versions(conn: sqlite3.Connection, table: ExportTable, bounds: Bounds, written: Written,
                     write: bool, rowids: tuple[int, int] | None) -> Iterator[pa.RecordBatch]:
    """Every version of each record the batch covers (:mod:`.versions`), a batch at a time."""
    rows = RecordRows(conn, table, first=bounds.first, history_after=bounds.after.get("history", 0),
                      history_upto=bounds.upto.get("history", 0), now=bounds.high)
    at = len(rows.names)
    fresh: list[tuple] = []
    queries = _queries(table, bounds, rows.first_sql() if bounds.first else "", rowids)
    for chunk in _chunks(conn, queries, RECORDS_PER_CHUNK):
        kept = rows.kept_records(chunk) if write and bounds.first else {}
        for row in chunk:
            value = digest(rows.values(row))
            changed = value != row[at + 1]
            if changed:
                written.add(row[at], value)
            if write:
                fresh += rows.versions(row, changed, kept)
            if len(fresh) >= ROWS_PER_BATCH:
                written.rows += len(fresh)
                yield to_batch(table, fresh)
                fresh = []
    if fresh:
        written.rows += len(fresh)
        yield to_batch(table, fresh)


def _chunks(conn: sqlite3.Connection, queries: list[tuple[str, list[Any]]],
            size: int = ROWS_PER_BATCH) -> Iterator[list[tuple]]:
    for sql, params in queries:
        rows = conn.execute(sql, params)
        while chunk := rows.fetchmany(size):
            yield chunk


def to_batch(table: ExportTable, rows: Sequence[Sequence[Any]]) -> pa.RecordBatch:
    """``rows`` (values in the order of ``table.columns``) as one Arrow record batch."""
    columns = list(zip(*rows))
    return pa.record_batch([_array(column, values) for column, values in zip(table.columns, columns)],
                           schema=table.schema())


def _array(column: Column, values: Sequence[Any]) -> pa.Array:
    if column.kind == BOOL:
        return pa.array([None if v is None else bool(v) for v in values], pa.bool_())
    if column.kind == STAMP:
        return _times(values)
    if column.kind == JSON:
        read = _read_json(values, column.type)
        if read is not None:
            return read
        parsed = [_loaded(v) for v in values]
        try:
            return pa.array(parsed, column.type)
        except (pa.ArrowException, TypeError, ValueError, OverflowError):
            return pa.array([fitted(v, column.type) for v in parsed], column.type)
    try:
        return pa.array(values, column.type)
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        return pa.array([fitted(v, column.type) for v in values], column.type)


def _read_json(values: Sequence[Any], kind: pa.DataType) -> pa.Array | None:
    """JSON texts as one Arrow array, parsed by Arrow's JSON reader (twenty times Python's pace:
    no Python object made), each distinct text once, where it reads them as :func:`_loaded` and
    ``pa.array`` would; None
    where it may not (a value that is no text, a line break or lone surrogate in one, a value
    that does not fit ``kind``), for the caller to parse them one by one."""
    if not all(isinstance(v, str) for v in values if v is not None):
        return None
    # Each text once: an image's past versions share today's texts for the fields they did not change.
    places: dict[str | None, int] = {}
    positions = [places.setdefault(v, len(places)) for v in values]
    lines = "\n".join(['{"v":' + ("null" if v is None else v) + "}" for v in places])
    if lines.count("\n") != len(places) - 1 or _SURROGATE_ESCAPE.search(lines):
        return None
    try:
        data = lines.encode()
        read = pa_json.read_json(io.BytesIO(data), read_options=pa_json.ReadOptions(
            use_threads=False, block_size=len(data) + 1), parse_options=pa_json.ParseOptions(
            explicit_schema=pa.schema([("v", kind)]), unexpected_field_behavior="ignore"))
    except (pa.ArrowException, UnicodeEncodeError):
        return None
    if read.num_rows != len(places):
        return None
    column = read.column("v").combine_chunks()
    return column if len(places) == len(values) else column.take(pa.array(positions, pa.int32()))


# A \uD800-\uDFFF escape: the JSON text may hold a lone surrogate (the store keeps one as its escape).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abcdefABCDEF]")


def _loaded(text: Any) -> Any:
    """A JSON column's value parsed; a lone surrogate in it (valid in JSON, not in UTF-8, so Arrow
    cannot write it) becomes U+FFFD, as it does in the store's text columns."""
    if text is None or not isinstance(text, str):
        return text
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return _storable(value) if _SURROGATE_ESCAPE.search(text) else value


def _storable(value: Any) -> Any:
    if isinstance(value, str):
        return storable_text(value)
    if isinstance(value, list):
        return [_storable(item) for item in value]
    if isinstance(value, dict):
        return {storable_text(key): _storable(item) for key, item in value.items()}
    return value


def _times(values: Sequence[Any]) -> pa.Array:
    """Dates as the site writes them, as UTC timestamps; one the site wrote otherwise is parsed
    alone, and one that is no date at all is null (the archive keeps its text in ``raw``)."""
    try:
        return pa.array(values, pa.string()).cast(pa.timestamp("us", tz="UTC"))
    except (pa.ArrowException, TypeError):
        return pa.array([parse_utc(v) if isinstance(v, str) else None for v in values], pa.timestamp("us", tz="UTC"))


def fitted(value: Any, kind: pa.DataType) -> Any:
    """``value`` made to fit ``kind``, or null where it cannot: a record that breaks the API's types
    (an id sent as text, a list where an object was) still exports, its odd field null."""
    if value is None:
        return None
    if pa.types.is_struct(kind):
        return {f.name: fitted(value.get(f.name), f.type) for f in kind} if isinstance(value, dict) else None
    if pa.types.is_list(kind):
        return [fitted(item, kind.value_type) for item in value] if isinstance(value, list) else None
    if pa.types.is_string(kind):
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    try:
        if pa.types.is_integer(kind):
            number = int(value)
            return number if -(1 << 63) <= number < (1 << 63) and not isinstance(value, bool) else None
        if pa.types.is_floating(kind):
            return float(value)
        if pa.types.is_boolean(kind):
            return bool(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return None
