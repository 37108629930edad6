"""The export read back by engines that share no code with its writer, against the SQLite archive:
Polars (over delta-rs' reader), DuckDB over the plain Parquet files, Spark in local mode."""

from __future__ import annotations

import json

import duckdb
import polars as pl
import pytest

from mirror.export import export_archive
from mirror.export.tables import EXPORT_TABLES
from mirror.export.views import as_of_sql, current_sql

from .reading import KEYS, assert_same_record, data_files, file_hashes

TAG = "safe"


def archive_rows(db, table: str) -> dict[tuple, dict]:
    return {tuple(row[k] for k in KEYS[table]): row for row in db.query(f'SELECT * FROM "{table}"')}


def last_versions(frame: pl.DataFrame, keys: tuple[str, ...]) -> dict[tuple, dict]:
    latest = {}
    for row in frame.sort("seen_at").to_dicts():
        latest[tuple(row[k] for k in keys)] = row
    return latest


def archive_tag_count(db) -> int:
    return db.execute("SELECT count(*) FROM images, json_each(images.tags) WHERE json_each.value = ?", [TAG]).fetchone()[0]


def parquet_list(exported, table: str) -> str:
    return "[" + ", ".join(f"'{p}'" for p in data_files(exported.dest / table)) + "]"


@pytest.mark.parametrize("table", sorted(KEYS))
def test_the_last_version_of_each_record_is_the_archives(exported, table):
    frame = pl.read_delta(str(exported.dest / table))
    latest = last_versions(frame, KEYS[table])
    archived = archive_rows(exported.db, table)
    assert archived and sorted(latest) == sorted(archived)
    for key, row in latest.items():
        assert_same_record(row, archived[key], table)


def test_hidden_and_merged_images_keep_their_state_and_last_full_content(exported):
    latest = last_versions(pl.read_delta(str(exported.dest / "images")), ("id",))
    hidden, merged = latest[(exported.done["hidden"],)], latest[(exported.done["merged"],)]
    assert hidden["hidden_from_users"] is True and hidden["deletion_reason"] == "Rule #1" and hidden["tags"]
    assert merged["hidden_from_users"] is True and merged["duplicate_of"] == exported.done["into"] and merged["tags"]


def test_each_version_is_a_row_and_none_twice(exported):
    images = pl.read_delta(str(exported.dest / "images"))
    edited = images.filter(pl.col("id") == exported.done["edited"]).sort("seen_at").to_dicts()
    assert len(edited) == 2
    assert edited[-1]["score"] == 77 and "exported tag" in edited[-1]["tags"] and "exported tag" not in edited[0]["tags"]
    assert images.filter(pl.col("id").is_in(exported.done["added"])).height == 3
    for table in EXPORT_TABLES:
        rows = [json.dumps({k: v for k, v in row.items() if k != "seen_at"}, default=str, sort_keys=True)
                for row in pl.read_delta(str(exported.dest / table)).to_dicts()]
        assert len(rows) == len(set(rows)), table
    # The tags a sync read again unchanged are not new versions: only the changed ones are.
    assert exported.second.tables["tags"] < exported.db.execute("SELECT count(*) FROM tags").fetchone()[0]


def test_duckdb_over_the_plain_parquet_files_counts_as_the_archive(exported):
    con = duckdb.connect()
    con.execute(f"CREATE VIEW images AS SELECT * FROM read_parquet({parquet_list(exported, 'images')})")
    current = current_sql(EXPORT_TABLES["images"], "duckdb", "images")
    assert con.execute(f"SELECT count(*) FROM ({current})").fetchone()[0] == \
        con.execute("SELECT count(DISTINCT id) FROM images").fetchone()[0] == \
        exported.db.execute("SELECT count(*) FROM images").fetchone()[0]
    tagged = con.execute(f"SELECT count(*) FROM ({current}) WHERE list_contains(tags, ?)", [TAG]).fetchone()[0]
    assert tagged == archive_tag_count(exported.db) > 0
    versions = sum(len(pl.read_delta(str(exported.dest / t))) for t in ("images",))
    assert con.execute("SELECT count(*) FROM images").fetchone()[0] == versions


def test_polars_counts_as_the_archive(exported):
    latest = pl.read_delta(str(exported.dest / "images")).sort("seen_at").group_by("id").last()
    assert latest.height == exported.db.execute("SELECT count(*) FROM images").fetchone()[0]
    assert latest.filter(pl.col("tags").list.contains(TAG)).height == archive_tag_count(exported.db)


def test_as_of_a_moment_gives_the_version_then(exported):
    con = duckdb.connect()
    con.execute(f"CREATE VIEW images AS SELECT * FROM read_parquet({parquet_list(exported, 'images')})")
    moment = exported.db.execute("SELECT json_extract(cursor, '$.through') FROM sync_state WHERE name = 'export'")
    assert moment  # the second export's bound; the first export's rows all came before the edits' sync
    query = as_of_sql(EXPORT_TABLES["images"], "duckdb", "images", "?::TIMESTAMPTZ")
    first_sync = exported.db.execute("SELECT max(mirrored_at) FROM images WHERE id = ?", [exported.done["added"][0]])
    before_edits = min(r["seen_at"] for r in pl.read_delta(str(exported.dest / "images"))
                       .filter(pl.col("id") == exported.done["edited"]).to_dicts())
    rows = con.execute(f"SELECT id, score, tags FROM ({query})", [before_edits]).fetchall()
    ids = {row[0] for row in rows}
    assert exported.done["edited"] in ids and not ids & set(exported.done["added"])
    assert first_sync.fetchone()[0] > before_edits.strftime("%Y-%m-%dT%H:%M:%SZ")
    edited = next(row for row in rows if row[0] == exported.done["edited"])
    assert "exported tag" not in edited[2]


def test_the_second_export_leaves_the_first_ones_files_as_they_were(exported):
    now = file_hashes(exported.dest)
    assert exported.first_files and {path: now.get(path) for path in exported.first_files} == exported.first_files
    assert len(now) > len(exported.first_files)


def test_an_export_with_nothing_changed_writes_nothing(exported):
    before = file_hashes(exported.dest)
    report = export_archive(exported.db, str(exported.dest))
    assert report.fetched == 0 and report.bytes == 0
    assert file_hashes(exported.dest) == before


def test_dest_says_what_each_table_and_column_is(exported):
    package = json.loads((exported.dest / "datapackage.json").read_text())
    described = {r["name"]: [f["name"] for f in r["schema"]["fields"]] for r in package["resources"]}
    for table in EXPORT_TABLES:
        assert described[table] == pl.read_delta(str(exported.dest / table)).columns, table
    readme = (exported.dest / "README.md").read_text()
    assert all(f"## {table}" in readme for table in EXPORT_TABLES)
    for dialect in ("duckdb", "spark", "trino"):
        assert "images_current" in (exported.dest / "views" / f"{dialect}.sql").read_text()


def test_spark_counts_as_the_archive(exported, spark):
    frame = spark.read.parquet(str(exported.dest / "images"))  # Spark skips _delta_log, as it skips any _ path
    frame.createOrReplaceTempView("images")
    current = spark.sql(current_sql(EXPORT_TABLES["images"], "spark", "`images`"))
    assert current.count() == exported.db.execute("SELECT count(*) FROM images").fetchone()[0]
    assert frame.count() == len(pl.read_delta(str(exported.dest / "images")))
    tagged = current.where(f"array_contains(tags, '{TAG}')").count()
    assert tagged == archive_tag_count(exported.db)
