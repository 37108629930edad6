"""Checking that a table holds exactly what the site served, field by field."""

from __future__ import annotations

import json

from mirror.store.specs import TableSpec
from mirror.urls import https_url

from .configs import site_images


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


BASE = "https://derpibooru.org"


def expected_column(kind: str, value):
    if value is None:
        return None
    if kind == "float":
        return float(value)
    if kind == "bool":
        return int(value)
    if kind == "json":
        return value
    if kind == "url":
        return https_url(value, BASE)
    if kind == "url_map":
        return {k: https_url(v, BASE) for k, v in value.items()}
    return value


def stored_column(kind: str, value):
    if value is not None and kind in ("json", "url_map"):
        return json.loads(value)
    return value


def mirrored(db) -> dict[int, dict]:
    return {row["id"]: row for row in db.query("SELECT * FROM images")}


def assert_mirror_matches(db, site, query="*") -> list[dict]:
    """Every record the site returns is in the mirror, field by field; nothing else is."""
    records = site_images(site, query)
    rows = mirrored(db)
    assert sorted(rows) == sorted(r["id"] for r in records)
    for record in records:
        row = rows[record["id"]]
        if "tags" in record:
            assert json.loads(row["raw"]) == record
            assert row["stub"] is None and row["hidden_from_users"] == 0
            assert json.loads(row["tags"]) == record["tags"] and row["score"] == record["score"]
            links = {r[0] for r in db.execute("SELECT tag_id FROM image_tags WHERE image_id = ?", [record["id"]])}
            assert links == set(record["tag_ids"])
        else:
            assert json.loads(row["stub"]) == record
            assert row["hidden_from_users"] == 1
            assert row["duplicate_of"] == record["duplicate_of"]
            assert row["deletion_reason"] == record["deletion_reason"]
    return records
