"""Checking that a table holds exactly what the site served, field by field."""

from __future__ import annotations

import json

from mirror.store.specs import TableSpec
from mirror.urls import https_url

from .test_store_images import expected_column, stored_column


def assert_rows_match(db, spec: TableSpec, served: dict, base_url: str, where: str = "1") -> None:
    """Rows of ``spec``'s table (those ``where`` selects) are exactly ``served`` (key -> record):
    each kept whole in ``raw`` and in every typed column."""
    (pk,) = spec.pk_columns
    rows = {row[pk]: row for row in db.query(f"SELECT * FROM {spec.table} WHERE {where}")}
    assert sorted(rows) == sorted(served)
    for key, record in served.items():
        assert json.loads(rows[key]["raw"]) == record
        assert_columns(rows[key], record, spec, base_url)


def assert_columns(row: dict, record: dict, spec: TableSpec, base_url: str) -> None:
    """Every typed column of ``row`` holds what ``record``'s field says."""
    for field, kind in spec.fields.items():
        assert stored_column(kind, row[field]) == expected(kind, record.get(field), base_url), (spec.table, field)


def expected(kind: str, value, base_url: str):
    """What a typed column holds for a field's value, site URLs made https against ``base_url``."""
    return https_url(value, base_url) if kind == "url" else expected_column(kind, value)
