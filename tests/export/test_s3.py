"""The export to S3 (a moto server on 127.0.0.1), with the credentials and endpoint conventions of
the file store: read back by Polars over delta-rs and by DuckDB over the plain Parquet objects."""

from __future__ import annotations

import os

import duckdb
import fsspec
import polars as pl
import pytest
import s3fs

from mirror.export import export_archive
from mirror.export.tables import EXPORT_TABLES
from mirror.export.views import current_sql
from mirror.store import open_database

from ..support.moto import moto_s3
from .test_killed import copy_of
from .test_read_back import TAG, archive_tag_count


class ObjectStore(s3fs.S3FileSystem):
    protocol = ("objects",)


@pytest.fixture(scope="module")
def s3_endpoint():
    with moto_s3() as endpoint:
        yield endpoint


def plain_objects(fs, folder: str) -> list[str]:
    """The table's Parquet objects as a plain reader lists them (``_``-prefixed parts skipped)."""
    return sorted(path for path in fs.find(folder) if path.endswith(".parquet")
                  and not any(part.startswith(("_", ".")) for part in path[len(folder):].split("/")))


def test_an_export_to_s3_reads_back_as_the_archive(exported, tmp_path, s3_endpoint):
    bucket = f"export-{os.urandom(4).hex()}"
    fs = fsspec.filesystem("s3", endpoint_url=s3_endpoint)
    fs.mkdir(bucket)
    dest = f"s3://{bucket}/board"
    db = open_database(copy_of(exported.db, tmp_path / "mirror.db"))
    first = export_archive(db, dest, endpoint_url=s3_endpoint)
    assert first.fetched > 0
    before = {path: fs.info(path)["ETag"] for path in plain_objects(fs, f"{bucket}/board/images")}
    db.execute("UPDATE images SET score = score + 1, mirrored_at = strftime('%Y-%m-%dT%H:%M:%SZ', 'now') WHERE id = ?",
               [exported.done["edited"]])
    db.conn.commit()
    export_archive(db, dest, endpoint_url=s3_endpoint)

    options = {"AWS_ENDPOINT_URL": s3_endpoint, "AWS_ALLOW_HTTP": "true", "AWS_REGION": "us-east-1"}
    latest = pl.read_delta(f"{dest}/images", storage_options=options).sort("seen_at").group_by("id").last()
    archived = db.execute("SELECT count(*) FROM images").fetchone()[0]
    assert latest.height == archived
    assert latest.filter(pl.col("id") == exported.done["edited"])["score"].item() == \
        db.execute("SELECT score FROM images WHERE id = ?", [exported.done["edited"]]).fetchone()[0]
    assert latest.filter(pl.col("tags").list.contains(TAG)).height == archive_tag_count(db)

    objects = plain_objects(fs, f"{bucket}/board/images")
    assert {path: fs.info(path)["ETag"] for path in before} == before and len(objects) > len(before)
    # DuckDB keeps s3:// for its httpfs extension (downloaded on first use): the objects are read
    # through s3fs under a name of their own instead, over the same sockets to the moto server.
    con = duckdb.connect(config={"autoload_known_extensions": False, "autoinstall_known_extensions": False})
    con.register_filesystem(ObjectStore(endpoint_url=s3_endpoint))
    files = ", ".join(f"'objects://{path}'" for path in objects)
    con.execute(f"CREATE VIEW images AS SELECT * FROM read_parquet([{files}])")
    current = current_sql(EXPORT_TABLES["images"], "duckdb", "images")
    assert con.execute(f"SELECT count(*) FROM ({current})").fetchone()[0] == archived
    assert con.execute(f"SELECT count(*) FROM ({current}) WHERE list_contains(tags, ?)", [TAG]).fetchone()[0] == \
        archive_tag_count(db)
    assert fs.exists(f"{bucket}/board/datapackage.json") and fs.exists(f"{bucket}/board/views/trino.sql")
