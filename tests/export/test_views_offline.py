"""Every table read through every view file of ``views/`` with nothing downloaded, from anywhere
the folder is moved to, before and after ``--compact``: each reader sees what Delta's reader sees.

DuckDB runs with the automatic install and load of extensions off (its delta extension is used
only where it is already installed); Spark reads the plain Parquet files with no package fetched
(skipped without Java); Polars and pandas read through their view modules.
"""

from __future__ import annotations

import runpy
import shutil
from datetime import datetime, timedelta, timezone

import duckdb
import polars as pl
import pytest

from mirror.export import export_archive
from mirror.export.tables import EXPORT_TABLES
from mirror.store import open_database

from .reading import data_files
from .test_killed import copy_of

MOMENT = datetime.now(timezone.utc) - timedelta(days=3650)  # before the export's versions, after the null ones


def expected(dest) -> dict[str, tuple[int, int]]:
    """Each table's versions and records (distinct keys) as delta-rs reads them."""
    found = {}
    for name, table in EXPORT_TABLES.items():
        frame = pl.read_delta(str(dest / name))
        found[name] = (frame.height, frame.select(table.key).n_unique() if table.key and frame.height else 0)
    return found


def duckdb_counts(dest, file: str = "duckdb.sql") -> dict[str, tuple[int, int]]:
    con = duckdb.connect()
    con.execute("SET autoinstall_known_extensions = false; SET autoload_known_extensions = false")
    if file == "duckdb_delta.sql":
        con.execute("LOAD delta")
    con.execute(f"SET file_search_path = '{dest}'")
    con.execute((dest / "views" / file).read_text())
    return {name: (con.execute(f'SELECT count(*) FROM "{name}"').fetchone()[0],
                   con.execute(f'SELECT count(*) FROM "{name}_current"').fetchone()[0] if table.key else 0)
            for name, table in EXPORT_TABLES.items()}


def module_counts(dest, file: str) -> dict[str, tuple[int, int]]:
    views = runpy.run_path(str(dest / "views" / file))

    def rows(frame):
        return frame.collect().height if isinstance(frame, pl.LazyFrame) else len(frame)

    return {name: (rows(views["table"](name)), rows(views["current"](name)) if table.key else 0)
            for name, table in EXPORT_TABLES.items()}


def as_of_counts(dest) -> set[int]:
    """How many images each reader has as of one moment: one number when they agree."""
    polars, pandas = (runpy.run_path(str(dest / "views" / f)) for f in ("polars.py", "pandas.py"))
    con = duckdb.connect()
    con.execute(f"SET file_search_path = '{dest}'")
    con.execute((dest / "views" / "duckdb.sql").read_text())
    return {polars["as_of"]("images", MOMENT).collect().height, len(pandas["as_of"]("images", MOMENT)),
            con.execute("SELECT count(*) FROM images_as_of(?::TIMESTAMPTZ)", [MOMENT]).fetchone()[0]}


def has_duckdb_delta() -> bool:
    try:
        duckdb.connect().execute("SET autoinstall_known_extensions = false; LOAD delta")
    except duckdb.Error:
        return False
    return True


@pytest.fixture(scope="module")
def two_exports(exported, tmp_path_factory):
    """A DEST with two batches, written by a copy of the archive (compacted by the test that asks)."""
    tmp = tmp_path_factory.mktemp("views")
    db = open_database(copy_of(exported.db, tmp / "mirror.db"))
    dest = tmp / "dest"
    export_archive(db, str(dest))
    db.execute("UPDATE images SET score = score + 1, mirrored_at = strftime('%Y-%m-%dT%H:%M:%SZ', 'now')")
    db.conn.commit()
    export_archive(db, str(dest))
    yield db, dest
    db.conn.close()


def read_every_way(dest, spark=None) -> None:
    want = expected(dest)
    assert want["images"][0] > want["images"][1] > 0 and want["filters"][0] >= 0
    assert duckdb_counts(dest) == want
    if has_duckdb_delta():
        assert duckdb_counts(dest, "duckdb_delta.sql") == want
    assert module_counts(dest, "polars.py") == want
    assert module_counts(dest, "pandas.py") == want
    assert len(as_of_counts(dest)) == 1
    if spark is not None:
        views = runpy.run_path(str(dest / "views" / "spark.py"))
        views["register"](spark)
        got = {name: (spark.table(name).count(), spark.table(f"{name}_current").count() if table.key else 0)
               for name, table in EXPORT_TABLES.items()}
        assert got == want
        assert views["as_of"](spark, "images", MOMENT).count() in as_of_counts(dest)


def test_the_view_files_need_nothing_downloaded_and_name_no_folder_of_this_machine(two_exports):
    _, dest = two_exports
    for view in (dest / "views").iterdir():
        text = view.read_text()
        assert str(dest) not in text and "INSTALL " not in text.upper(), view.name
    empty = [name for name, (versions, _) in expected(dest).items() if versions == 0]
    assert empty and all(data_files(dest / name) for name in empty)  # an empty file with the schema


def test_every_table_reads_the_same_through_every_view_moved_and_after_compact(two_exports, tmp_path, request):
    db, dest = two_exports
    try:
        spark = request.getfixturevalue("spark")
    except pytest.skip.Exception:  # no Java here: the other readers still run
        spark = None
    read_every_way(dest, spark)
    export_archive(db, str(dest), compact=True)  # replaced files kept for a week: on disk, no longer live
    assert sum(pl.read_parquet(p).height for p in data_files(dest / "images")) > expected(dest)["images"][0]
    read_every_way(dest, spark)
    moved = tmp_path / "elsewhere" / "copy"
    shutil.copytree(dest, moved)
    read_every_way(moved)
