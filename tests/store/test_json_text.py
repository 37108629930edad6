"""The store's JSON text (``to_json``): the same text whichever encoder writes it.

Lists of texts and integers take orjson's way, the rest the json module's; a row written by
either must read, compare and hash the same (the export's digests, the history's comparisons)."""

from __future__ import annotations

import json

from hypothesis import example, given, strategies as st

from mirror.store.records import to_json

UNICODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
ASCII = json.JSONEncoder(separators=(",", ":"))


def _json_module(value: object) -> str:
    text = UNICODE.encode(value)
    try:
        text.encode()
    except UnicodeEncodeError:  # a lone surrogate: escaped, as SQLite cannot store it as UTF-8
        return ASCII.encode(value)
    return text


@given(st.lists(st.one_of(st.text(), st.integers(), st.booleans(), st.floats(), st.none())))
@example(["safe", "artist:\u00e9", "a\ud800"])
@example([1, 2**64, -(2**63) - 1])
@example([True, 1, 1.0, float("nan"), 1e16])
@example(["line\nbreak", "\u2028", "\x7f", "quote\"back\\slash"])
def test_a_list_reads_as_the_json_module_writes_it(value: list) -> None:
    assert to_json(value) == _json_module(value)


def test_a_list_of_tags_is_compact_unicode_json() -> None:
    assert to_json(["safe", "pinkie pie", "artist:\u00e9"]) == '["safe","pinkie pie","artist:\u00e9"]'
    assert to_json([10, 20]) == "[10,20]"
