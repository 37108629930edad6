"""The record kept whole without keeping it twice: ``raw`` rebuilt from the typed columns.

Every table keeps each record twice over: its fields in typed columns, and the whole record as JSON
in ``raw``. For the three large tables (images, comments, posts: nine tenths of a board's bytes)
that doubled the archive. Here ``raw`` is a *virtual generated column*: SQLite writes it on
read, with its own JSON functions, from the columns and two small stored ones:

``raw_rest``
    What the columns cannot say, as a JSON merge patch (RFC 7396, SQLite's ``json_patch``): a
    field the column holds differently (a URL made https, a float SQLite would print with fewer
    digits, a mistyped value the column kept as NULL). Usually a few dozen bytes, where the record
    is two kilobytes.
``raw_absent``
    The fields the record lacks, as a bit mask over the table's fields (bit *i*: the *i*-th field
    of :class:`.specs.TableSpec`), which the rebuild removes: a record from the site's dump lacks a
    dozen (``first_seen_at``, ``processed`` ...), each of which a ``"name":null`` in the patch took
    twenty bytes to say. Above those, a bit for each field kept aside (:data:`KEPT_ASIDE`) whose
    record says ``null`` while its column holds a value. NULL for a record with every field, so
    that it pays nothing.
``raw_more``
    The fields the table has no column for (added to the API since), as the text received.
``raw_full``
    The whole record, for the rare one the rebuild cannot give back exactly (a lone surrogate,
    a nested ``null`` a merge patch would drop); NULL otherwise.

So ``raw`` stays a column of every row, read by SQL (``raw ->> '$.tags'``), Datasette and every
room above the store exactly as before, and holds the record's JSON value exactly: each write is
read back and compared with the text the writer expected, and a row whose rebuild differs keeps
that text in ``raw_full``. One thing is normalised, as whitespace and escapes always were (``raw``
has never been the bytes on the wire): the order of the record's keys. JSON objects are
unordered and the site's own order is its hash order, which differs from one release to the next;
``raw`` lists the fields with a column in the table's order, then the others (:func:`canonical`),
and an image's ``representations`` in the order of the rule that makes them (:mod:`.derived`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

from .derived import DERIVED, ordered_representations
from .records import parse_json, to_json
from .specs import COMMENTS, IMAGES, POSTS, TableSpec

__all__ = ["REBUILT", "KEPT_ASIDE", "is_rebuilt", "absent_sql", "column_holds_sql", "raw_expression", "canonical", "split", "Split",
           "STORED_COLUMNS", "stored", "mismatches", "rebuilt_record"]

REBUILT: dict[str, TableSpec] = {spec.table: spec for spec in (IMAGES, COMMENTS, POSTS)}

# Fields whose columns something other than a full record writes: a stub marks the row (its hidden
# state, dates, merge target) and a downloaded file fills what the record lacked (``animated``,
# ``duration``: :func:`.images.save_file_facts`), while the record stays as the site sent it. Such
# a writer splits the record again over the columns it set (:func:`.writer.keep_record`), so that
# the patch holds the record's value of such a field only where its column holds another; a null
# the patch cannot say is a bit of ``raw_absent``.
KEPT_ASIDE: dict[str, tuple[str, ...]] = {
    "images": (*IMAGES.stub_fields, "animated", "duration"),
    "comments": COMMENTS.stub_fields,
    "posts": POSTS.stub_fields,
}

STORED_COLUMNS = ("raw_rest", "raw_more", "raw_full", "raw_absent")
_NO_FIELD = "'$.\"\"'"  # a path no table's field has: json_remove's argument for a field present


def is_rebuilt(table: str) -> bool:
    return table in REBUILT


def _aside(spec: TableSpec) -> frozenset[str]:
    return frozenset(KEPT_ASIDE[spec.table]) - set(spec.pk_columns)


def _value_sql(name: str, kind: str, null_bit: int | None) -> str:
    if null_bit is not None:
        return f"CASE WHEN raw_absent & {1 << null_bit} THEN NULL ELSE {_value_sql(name, kind, None)} END"
    column = f'"{name}"'
    if kind in ("json", "url_map"):  # a column may hold Python's NaN, which SQLite refuses: the row keeps it whole
        return f"CASE WHEN json_valid({column}) THEN json({column}) END"
    if kind == "bool":
        return f"CASE {column} WHEN 1 THEN json('true') WHEN 0 THEN json('false') END"
    return column


def raw_expression(spec: TableSpec) -> str:
    """The SQL that rebuilds ``raw`` for a row of ``spec``'s table: every field from its column
    (a field kept aside: null where ``raw_absent`` says so) in the table's order, the patch laid
    over them, then the fields without a column appended as the text they were received as (a
    merge patch cannot carry a ``null``). The fields the record lacks are removed only where ``raw_absent`` names
    some: a record with every field reads no more than before."""
    pairs = ", ".join(f"'{name}', {_value_sql(name, spec.fields[name], null_bit)}"
                      for name, _, null_bit in _plan(spec.table))
    patched = f"json_patch(json_object({pairs}), coalesce(raw_rest, '{{}}'))"
    gone = ", ".join(f"""CASE WHEN raw_absent & {1 << index} THEN '$."{name}"' ELSE {_NO_FIELD} END"""
                     for index, name in enumerate(spec.fields))
    base = f"CASE WHEN raw_absent IS NULL THEN {patched} ELSE json_remove({patched}, {gone}) END"
    joined = (f"CASE WHEN raw_more IS NULL THEN {base} ELSE substr({base}, 1, length({base}) - 1) "
              f"|| CASE WHEN length({base}) > 2 THEN ',' ELSE '' END || substr(raw_more, 2) END")
    return f"coalesce(raw_full, {joined})"


def rebuilt_record(table: str, columns: Mapping[str, Any], rest: str | None, more: str | None,
                   full: str | None, absent: int | None) -> Any:
    """The record ``raw`` gives back for a row of ``table`` (its typed ``columns`` by name and the
    :data:`STORED_COLUMNS`), made in Python as :func:`raw_expression` makes its text in SQL: the
    same JSON value, without SQLite writing the text and Python parsing it again (a reader that
    wants the record, not its text: the export reads millions). The key order is not kept."""
    if full is not None:
        return parse_json(full)
    names, parsed, booleans, null_bits = _python_plan(table)
    record = {name: columns.get(name) for name in names}
    for name in parsed:  # json_valid: a text SQLite's JSON refuses (a NaN) reads as null
        value = record[name]
        record[name] = _strict_json_value(value) if isinstance(value, str) else None
    for name in booleans:
        value = record[name]
        record[name] = True if value == 1 else False if value == 0 else None
    if absent:
        for name, bit in null_bits:
            if absent >> bit & 1:
                record[name] = None
    if rest is not None:
        _merge_patch(record, parse_json(rest))
    if absent:
        for index, name in enumerate(names):
            if absent >> index & 1:
                record.pop(name, None)
    if more is not None:
        record.update(parse_json(more))
    return record


@cache
def _python_plan(table: str) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], tuple[tuple[str, int], ...]]:
    """:func:`rebuilt_record`'s plan of ``table``: its fields in order, those parsed as JSON, the
    booleans, and each field kept aside with its null bit."""
    fields = REBUILT[table].fields
    return (tuple(fields), tuple(n for n, kind in fields.items() if kind in ("json", "url_map")),
            tuple(n for n, kind in fields.items() if kind == "bool"),
            tuple((name, bit) for name, _, bit in _plan(table) if bit is not None))


def _strict_json_value(text: str) -> Any:
    try:
        return json.loads(text, parse_constant=_refuse) if "NaN" in text or "Infinity" in text else parse_json(text)
    except ValueError:
        return None


def _merge_patch(target: dict[str, Any], patch: Any) -> None:
    """RFC 7396, as SQLite's ``json_patch`` applies it: a null removes the member, an object is
    laid over the member's object, anything else replaces it."""
    for name, value in patch.items():
        if value is None:
            target.pop(name, None)
        elif isinstance(value, dict):
            member = target.get(name)
            if not isinstance(member, dict):
                member = target[name] = {}
            _merge_patch(member, value)
        else:
            target[name] = value


def absent_sql(table: str, alias: str, name: str) -> str:
    """SQL true where the record of ``table``'s row ``alias`` lacks the field ``name``: read from
    ``raw_absent``, not from ``raw``, which SQLite would rebuild whole for every row scanned."""
    bit = 1 << list(REBUILT[table].fields).index(name)
    # A whole text SQLite's JSON refuses (a NaN, an Infinity) is read as text: a partial index holds
    # this expression, and an error in it would refuse the row's write.
    return (f"CASE WHEN {alias}.raw_full IS NULL THEN coalesce({alias}.raw_absent & {bit}, 0) != 0 "
            f"WHEN json_valid({alias}.raw_full) THEN json_type({alias}.raw_full, '$.\"{name}\"') IS NULL "
            f"ELSE instr({alias}.raw_full, '\"{name}\":') = 0 END")


def column_holds_sql(table: str, name: str) -> str:
    """SQL true where a row of ``table`` holds its record's value of the text or number field ``name``
    in its column, as ``raw`` gives it back (no whole text, no patch of the field, no bit of
    ``raw_absent`` for it): there a reader takes the column and SQLite never rebuilds ``raw``."""
    bits = sum(1 << bit for bit, (field, _, null_bit) in enumerate(_plan(table)) if field == name)
    bits |= sum(1 << null_bit for field, _, null_bit in _plan(table) if field == name and null_bit is not None)
    return (f"(raw_full IS NULL AND coalesce(raw_absent & {bits}, 0) = 0 "
            f"AND (raw_rest IS NULL OR json_type(raw_rest, '$.\"{name}\"') IS NULL))")


def canonical(spec: TableSpec, record: Mapping[str, Any]) -> dict[str, Any]:
    """``record`` with its keys in the order ``raw`` gives them: the fields the table has columns
    for, in the table's order, then the others as received."""
    record = _nested_in_order(spec, record)
    ordered = {name: record[name] for name in spec.fields if name in record}
    ordered.update((name, value) for name, value in record.items() if name not in spec.fields)
    return ordered


def _nested_in_order(spec: TableSpec, record: Mapping[str, Any]) -> Mapping[str, Any]:
    """An image's ``representations`` in their rule's order too (:mod:`.derived`)."""
    return ordered_representations(record) if spec.table in DERIVED else record


Split = tuple[str, str | None, str | None, str | None, int | None]


def split(spec: TableSpec, record: Mapping[str, Any], columns: Mapping[str, Any]) -> Split:
    """``(text, rest, more, full, absent)``: the record's ``raw`` text, and what the row stores to
    give it back from ``columns`` (the typed values the writer stores): the ``raw_rest`` patch, the
    ``raw_more`` fields, or, for a record SQLite's JSON cannot hold (``NaN``, ``Infinity``), the
    whole text in ``raw_full``; and the ``raw_absent`` mask of the fields it lacks. None where
    nothing is needed."""
    record = _nested_in_order(spec, record)
    rest: dict[str, Any] = {}
    ordered: dict[str, Any] = {}
    absent = 0
    for bit, (name, check, null_bit) in enumerate(_plan(spec.table)):
        if name not in record:
            absent |= 1 << bit
            continue
        value = ordered[name] = record[name]
        if value is None:
            if columns.get(name) is None:
                continue
            if null_bit is not None:
                absent |= 1 << null_bit
            else:
                rest[name] = value  # what no patch can say: the read-back keeps the record whole
        elif not check(columns.get(name), value):
            rest[name] = value
    more = {name: value for name, value in record.items() if name not in spec.fields} \
        if len(ordered) < len(record) else {}
    ordered.update(more)
    text = to_json(ordered)
    try:
        return text, _strict_json(rest), _strict_json(more), None, absent or None
    except ValueError:
        return text, None, None, text, None


@cache
def _plan(table: str) -> tuple[tuple[str, Callable[[Any, Any], bool], int | None], ...]:
    """Each field of ``table`` in order: its name, how its column is compared, and, kept aside,
    the bit of ``raw_absent`` that says its record's value is null."""
    spec = REBUILT[table]
    aside = [name for name in spec.fields if name in _aside(spec)]
    return tuple((name, _CHECKS[kind], len(spec.fields) + aside.index(name) if name in aside else None)
                 for name, kind in spec.fields.items())


def stored(spec: TableSpec, record: Mapping[str, Any], columns: Mapping[str, Any]) -> dict[str, str | None]:
    """The :data:`STORED_COLUMNS` of ``record``'s row, by name: for code that writes rows in bulk."""
    return dict(zip(STORED_COLUMNS, split(spec, record, columns)[1:]))


def _strict_json(value: dict[str, Any]) -> str | None:
    if not value:
        return None
    text = to_json(value)
    if "NaN" in text or "Infinity" in text:  # written by Python, refused by SQLite: only then parse again
        json.loads(text, parse_constant=_refuse)
    return text


def _refuse(constant: str) -> Any:
    raise ValueError(f"{constant} is not JSON")


def _renders_alike(kind: str, column: Any, value: Any) -> bool:
    """Whether SQLite's ``json_object`` renders the ``column`` value as ``value``'s JSON."""
    if value is None or column is None:
        return value is None and column is None
    check = _CHECKS.get(kind)
    return check(column, value) if check else False


def _same_int(column: Any, value: Any) -> bool:
    return type(value) is int and column == value


def _same_float(column: Any, value: Any) -> bool:
    # SQLite prints a real with 15 significant digits ("%!.15g"): the same text only when those
    # digits give the float back and Python writes it without an exponent.
    if type(value) is not float or column != value or not math.isfinite(value):
        return False
    text = repr(value)
    return "e" not in text and float(f"{value:.15g}") == value


def _same_bool(column: Any, value: Any) -> bool:
    return type(value) is bool and column == int(value)


def _same_text(column: Any, value: Any) -> bool:
    return type(value) is str and column == value


def _same_json(column: Any, value: Any) -> bool:
    # The column is this very value as JSON (the writer made it so): only its kind is checked, and
    # the read-back of every write holds the rest.
    return isinstance(value, (list, dict)) and column is not None


def _same_url_map(column: Any, value: Any) -> bool:
    # Made https only where a URL was not: a map of https URLs is kept as it came.
    if not isinstance(value, dict) or column is None:
        return False
    return all(type(url) is str and url.startswith("https://") for url in value.values()) or column == to_json(value)


_CHECKS: dict[str, Callable[[Any, Any], bool]] = {
    "int": _same_int, "float": _same_float, "bool": _same_bool, "text": _same_text, "url": _same_text,
    "json": _same_json, "url_map": _same_url_map,
}


def mismatches(rebuilt: Mapping[Any, str | None], expected: Mapping[Any, str]) -> dict[Any, str]:
    """The rows whose rebuilt ``raw`` is not the text the writer expected: key -> that text."""
    return {key: text for key, text in expected.items() if rebuilt.get(key) != text}

