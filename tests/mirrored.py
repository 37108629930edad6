"""Checking that a table holds exactly what the site served, field by field."""

from __future__ import annotations

import json
import time

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
        row = rows[key]
        assert json.loads(row["raw"]) == record
        for field, kind in spec.fields.items():
            assert stored_column(kind, row[field]) == expected(kind, record.get(field), base_url), (key, field)


def expected(kind: str, value, base_url: str):
    """What a typed column holds for a field's value, site URLs made https against ``base_url``."""
    return https_url(value, base_url) if kind == "url" else expected_column(kind, value)


def requests_seen(site, settle: float = 0.1) -> list:
    """The site's request log once the last response has been logged: the site logs a request just
    after sending its response, so reading the log the instant a sync returns can miss the last one."""
    time.sleep(settle)
    return site.requests
