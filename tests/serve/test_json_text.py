"""serve's JSON, read and written by orjson where it can, by the json module where orjson refuses:
the same values either way, and what only the json module can say (a lone surrogate, an integer
past 64 bits) still said."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from mirror.serve.http import json_bytes, parse_json

TEXT = st.text(alphabet=st.characters(codec=None, exclude_categories=()))  # lone surrogates included
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False) | TEXT,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(TEXT, inner, max_size=5),
    max_leaves=20)


@given(VALUES)
def test_every_value_is_written_as_json_that_reads_back_the_same(value):
    assert json.loads(json_bytes(value)) == value


@given(st.recursive(st.none() | st.booleans() | st.integers(min_value=-(2**63), max_value=2**64 - 1) | TEXT,
                    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(TEXT, inner, max_size=5),
                    max_leaves=20))
def test_the_bytes_are_the_json_modules_own_where_no_float_is_written(value):
    """Floats are the one difference: orjson writes 1e-07 as 1e-7, the same number."""
    expected = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    try:
        expected_bytes = expected.encode()
    except UnicodeEncodeError:
        expected_bytes = json.dumps(value, separators=(",", ":")).encode()
    assert json_bytes(value) == expected_bytes


@given(VALUES)
def test_every_kept_text_reads_as_the_json_module_reads_it(value):
    text = json.dumps(value, ensure_ascii=False)
    assert parse_json(text) == json.loads(text)


def test_keys_that_are_not_text_are_written_as_text_as_before():
    assert json_bytes({1: "a", None: 2}) == b'{"1":"a","null":2}'
