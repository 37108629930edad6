"""Turning an API record into a row: typed columns by field name, plus the record kept raw.

A value that does not fit its column's type is stored as NULL in that column; the record in
``raw`` still holds it, so nothing the site sent is lost. JSON may carry a lone surrogate
(``"\ud800"``), which is no Unicode character and cannot be written to SQLite as UTF-8: ``raw``
keeps it as the JSON escape (so it parses back to the very string received), and a text column
holds U+FFFD in its place.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import orjson

from ..urls import https_url

# Made once: ``json.dumps`` with options builds a new encoder on every call.
_UNICODE_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
_ASCII_JSON = json.JSONEncoder(separators=(",", ":"))
_PLAIN_ITEMS = frozenset({str, int})


def to_json(value: Any) -> str:
    """Compact JSON that round-trips to an equal value (unicode kept as is, unless it holds a lone
    surrogate: then everything beyond ASCII is escaped, since SQLite could not store it as UTF-8).

    A list of texts and integers (an image's tags and tag ids, its sources) is written by orjson,
    to the same text in a third of the time; what orjson refuses (a lone surrogate, an integer past
    64 bits) goes the json module's way."""
    if type(value) is list and _PLAIN_ITEMS.issuperset(map(type, value)):
        try:
            return orjson.dumps(value).decode()
        except orjson.JSONEncodeError:
            pass
    text = _UNICODE_JSON.encode(value)
    return text if _utf8(text) else _ASCII_JSON.encode(value)


# orjson reads an integer past 64 bits as a float, where the json module keeps it whole: a text
# holding a run of 19 digits (2**63 has 19; 18 never reach it) is read by the json module.
_DIGITS = bytes(0x31 if 0x30 <= b <= 0x39 else 0x30 for b in range(256))  # a digit as 1, else 0
_PAST_64_BITS = b"1" * 19


def parse_json(text: str | bytes) -> Any:
    """A kept record's JSON text as Python values, by orjson (five times the json module's speed);
    a text orjson refuses or would change (a lone surrogate, an integer past 64 bits) by the json
    module."""
    try:
        data = text.encode() if isinstance(text, str) else text
        if _PAST_64_BITS not in data.translate(_DIGITS):
            return orjson.loads(data)
    except (UnicodeEncodeError, orjson.JSONDecodeError):
        pass
    return json.loads(text)


def _utf8(text: str) -> bool:
    if text.isascii():
        return True
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def storable_text(text: str) -> str:
    """``text`` as an SQLite TEXT value: lone surrogates (valid in JSON, not in UTF-8) become U+FFFD."""
    return text if _utf8(text) else text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _parsed(value: str, parse: Callable[[str], Any]) -> Any:
    try:
        return parse(value)
    except ValueError:
        return None


# SQLite's INTEGER is 64-bit: a larger number cannot be stored as one.
SQLITE_INTEGERS = range(-2**63, 2**63)


def fits_integer(value: Any) -> bool:
    """True for an int (not a bool) that an INTEGER column can hold."""
    return type(value) is int and value in SQLITE_INTEGERS


# The largest id a record may have: every JSON parser holds integers up to 2^53 exactly, and
# Philomena's ids are int4 on the site. A larger one (2^63-1, 2^64+5) is a broken record: taken as
# an id, it would move a keyset cursor past all of the site's real data for good.
MAX_ID = 2**53 - 1


def valid_id(value: Any) -> bool:
    """True for an id a record may be stored under and a cursor may move to: an int from 0 to MAX_ID."""
    return type(value) is int and 0 <= value <= MAX_ID


def record_ids(records: Iterable[Any]) -> list[int]:
    """The valid ids of ``records``, in order: records without one are not counted or followed."""
    return [r["id"] for r in records if isinstance(r, dict) and valid_id(r.get("id"))]


def _int(value: Any) -> int | None:
    if type(value) is int:  # nearly always: the checks below are for what JSON rarely brings
        return value if value in SQLITE_INTEGERS else None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    elif isinstance(value, str):
        value = _parsed(value, int)
    return value if fits_integer(value) else None


def _float(value: Any) -> float | None:
    if type(value) is float:
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return _parsed(value, float) if isinstance(value, str) else None


def _bool(value: Any) -> int | None:
    return int(value) if isinstance(value, bool) else None


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if type(value) is str and value.isascii():
        return value
    return storable_text(value) if isinstance(value, str) else to_json(value)


def _json(value: Any) -> str | None:
    return None if value is None else to_json(value)


def column_converters(fields: Mapping[str, str], base_url: str) -> dict[str, Callable[[Any], Any]]:
    """One converter per field, by the field's kind (see ``schema.IMAGE_FIELDS``)."""

    def url(value: Any) -> str | None:
        return https_url(storable_text(value), base_url) if isinstance(value, str) else None

    def url_map(value: Any) -> str | None:
        if not isinstance(value, dict):
            return _json(value)
        return to_json({k: https_url(v, base_url) if isinstance(v, str) else v for k, v in value.items()})

    kinds: dict[str, Callable[[Any], Any]] = {
        "int": _int, "float": _float, "bool": _bool, "text": _text, "json": _json, "url": url, "url_map": url_map,
    }
    return {name: kinds[kind] for name, kind in fields.items()}


def shape(record: Mapping[str, Any], converters: Mapping[str, Callable[[Any], Any]],
          fields: tuple[str, ...] | None = None) -> dict[str, Any]:
    """The typed columns for ``record``: every field in ``fields`` (all by default), None if absent."""
    names = fields if fields is not None else tuple(converters)
    return dict(zip(names, shape_values(record, [(name, converters[name]) for name in names])))


def shape_values(record: Mapping[str, Any], fields: Sequence[tuple[str, Callable[[Any], Any]]]) -> list[Any]:
    """The typed values of ``record``'s ``fields`` (name and converter each), in order: what
    :func:`shape` gives, as a list, for writers that make the converter list once per table."""
    get = record.get
    return [None if (value := get(name)) is None else convert(value) for name, convert in fields]


def tags_in_step(record: Mapping[str, Any]) -> bool:
    """Whether an image record's ``tags`` and ``tag_ids`` are lists of one length, so that each name can
    be paired with the id at its place. The site sends them in step; a record whose lists disagree
    would pair every name after the gap with the wrong id, and one record must never rename a tag
    that every other record names: its names are not taken (its ids still are)."""
    tag_ids, names = record.get("tag_ids"), record.get("tags")
    return isinstance(tag_ids, list) and isinstance(names, list) and len(tag_ids) == len(names)


def fingerprint(resource: str, reason: str, raw: str) -> str:
    """What makes a reject distinct: the same record rejected for the same reason is kept once."""
    return hashlib.sha256("\0".join((resource, reason, raw)).encode()).hexdigest()
