"""The export holds every version the history can rebuild: its as-of view is ``/as-of/``'s reading.

Random histories (:mod:`tests.asof.test_records_as_of`'s nights: edits, votes, retags, hides,
merges, un-hides, uploads, each synced through the store's writers) are exported; then, for
random moments, each record of the export's as-of view (the SQL of ``views/``, run by DuckDB)
must be the record :func:`mirror.asof.record_as_of` rebuilds, the one ``mirror serve`` answers
at ``/as-of/``, and a record that did not exist then must be missing. More nights and a second
export later, the same holds for the old moments and the new.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta

import duckdb
from deltalake import DeltaTable
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from mirror.asof import Moment, record_as_of
from mirror.dates import parse_utc, utc_text
from mirror.export import export_archive
from mirror.export.tables import EXPORT_TABLES
from mirror.export.views import as_of_sql
from mirror.store.specs import SPECS
from mirror.store.writer import RecordWriter

from ..asof.test_records_as_of import START, TAGS, empty_mirror, fresh_mirror, nights, play  # noqa: F401

# Hours from START: a moment before anything, within the nights, and after them.
hours = st.lists(st.integers(-30, 24 * 14), min_size=1, max_size=4)
STUB = ("id", "created_at", "updated_at", "first_seen_at", "duplicate_of", "deletion_reason")


def _save(db, records):
    RecordWriter(db, SPECS["images"], "").save(records)


def export_after(night: Moment, monkeypatch) -> None:
    """The export's clock an hour after the night's sync: the nights' clock is the store's (``play``)."""
    monkeypatch.setattr("mirror.export.run.utc_text",
                        lambda when=None: utc_text(when or night.datetime + timedelta(hours=1)))


def exported_as_of(dest, table: str, moment: Moment) -> dict[str, dict]:
    """Each record of ``table`` as of ``moment`` by the export's own view, read by DuckDB."""
    conn = duckdb.connect()
    conn.register("every_version", DeltaTable(str(dest / table)).to_pyarrow_table())
    sql = as_of_sql(EXPORT_TABLES[table], "duckdb", "every_version", f"TIMESTAMPTZ '{moment.text}'")
    cursor = conn.execute(sql)
    names = [d[0] for d in cursor.description]
    key = EXPORT_TABLES[table].key[0]
    return {str(row[names.index(key)]): dict(zip(names, row)) for row in cursor.fetchall()}


def served_as_of(db, table: str, moment: Moment) -> dict[str, object]:
    """Each record of ``table`` as ``/as-of/`` reads it at ``moment`` (the record served, and the row)."""
    hideable = SPECS[table].hideable
    columns = "id, raw, stub, hidden_from_users" if hideable else "id, raw"
    found = {}
    for row in db.execute(f"SELECT {columns} FROM {table}").fetchall():
        kept = dict(zip(("raw", "stub", "hidden_from_users"), row[1:]))
        then = record_as_of(db.conn, table, str(row[0]), kept, moment)
        if then is not None:
            found[str(row[0])] = then
    return found


def _same(value, expected) -> bool:
    if isinstance(value, datetime):
        return utc_text(value) == (utc_text(parse_utc(expected)) if isinstance(expected, str) else expected)
    if isinstance(value, dict) and isinstance(expected, dict):
        return all(_same(v, expected.get(k)) for k, v in value.items())
    return value == expected


def assert_the_same_board(db, dest, moment: Moment) -> None:
    for table in ("images", "tags"):
        exported, served = exported_as_of(dest, table, moment), served_as_of(db, table, moment)
        assert sorted(exported) == sorted(served), (table, moment.text)
        for key, then in served.items():
            row = exported[key]
            full = json.loads(then.row["raw"])
            hidden = bool(then.row.get("hidden_from_users"))
            if SPECS[table].hideable:
                assert row["hidden_from_users"] is hidden, (table, key, moment.text)
            shown = then.record  # the stub, for a record hidden then
            for field, value in row.items():
                if field in ("valid_from", "seen_at", "hidden_from_users"):
                    continue
                expected = shown.get(field) if hidden and field in STUB else full.get(field)
                assert _same(value, expected), (table, key, field, value, expected, moment.text)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(before=nights, after=nights, counters=st.sampled_from(["all", "daily"]), offsets=hours)
# An image uploaded an hour before the night that first saw it, after the first export: the second
# export wrote it from its sighting only, where /as-of/ answers it from its upload.
@example(before=[[("describe", 0, 0)]], after=[[("upload", 0, 0)]], counters="all", offsets=[26])
def test_the_exports_as_of_view_is_the_as_of_reading_before_and_after_a_second_export(
        before, after, counters, offsets, empty_mirror, tmp_path, monkeypatch):
    db = fresh_mirror(empty_mirror, tmp_path, before)
    RecordWriter(db, SPECS["tags"], "").save(TAGS)
    dest = tmp_path / f"dest-{id(before)}"
    site, first = play(before, counters, db, monkeypatch, _save)
    export_after(first[-1][0], monkeypatch)
    export_archive(db, str(dest))
    moments = [Moment(utc_text(START + timedelta(hours=h))) for h in offsets] + [m for m, _ in first]
    for moment in moments:
        assert_the_same_board(db, dest, moment)
    _, second = play(after, counters, db, monkeypatch, _save, site=site, first_night=len(before))
    export_after(second[-1][0], monkeypatch)
    export_archive(db, str(dest))
    for moment in moments + [m for m, _ in second]:
        assert_the_same_board(db, dest, moment)
    db.conn.close()
