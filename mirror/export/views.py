"""The views shipped in DEST's ``views/``: each record's current version, and its version as of a
moment, for DuckDB, Spark, Polars, pandas and Trino, readable with nothing downloaded.

Each table's rows are versions; in a record table the current one is the latest ``valid_from`` of
each key (the latest ``seen_at`` among equals), and the one as of a moment the latest begun at or
before it (``valid_from`` null: in force before anything the history says), as ``/as-of/`` reads
the archive; in a compared table, by ``seen_at`` alone. The same query is written for each SQL
engine, only the way a table is named differs, so a test can run it over any source.

Offline: the plain views read the Parquet files each table's Delta log lists as live (the file
list is written again by every export and ``--compact``, as Delta's symlink manifests are for
engines without Delta), so a file a compaction replaced is never read twice and no Delta reader
is needed; an empty table has an empty file with its schema. Every path is relative to DEST: the
SQL files are run from DEST, the Python ones find DEST as the folder above their own, so the
folder can be moved or shared. The Delta readers (DuckDB's ``delta`` extension, delta-spark) get
files of their own, for where they are installed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence

import pyarrow as pa

from .tables import EXPORT_TABLES, ExportTable

__all__ = ["current_sql", "as_of_sql", "view_files", "EMPTY_FILE"]

# The file an empty table's folder holds so that a plain reader finds its schema (no Delta log
# lists it: Delta readers never read it).
EMPTY_FILE = "part-00000-empty.parquet"


def _quote(dialect: str, name: str) -> str:
    return f"`{name}`" if dialect == "spark" else f'"{name}"'


def _versions(table: ExportTable, dialect: str, source: str, moment: str | None) -> str:
    names = ", ".join(_quote(dialect, c.name) for c in table.columns)
    keys = ", ".join(_quote(dialect, k) for k in table.key)
    seen = _quote(dialect, "seen_at")
    if any(c.name == "valid_from" for c in table.columns):  # a record table: by when each version began
        began = _quote(dialect, "valid_from")
        order = f"{began} DESC NULLS LAST, {seen} DESC"
        when = f" WHERE {began} IS NULL OR {began} <= {moment}" if moment else ""
    else:
        order = f"{seen} DESC"
        when = f" WHERE {seen} <= {moment}" if moment else ""
    return (f"SELECT {names} FROM (SELECT {names}, row_number() OVER (PARTITION BY {keys} "
            f"ORDER BY {order}) AS version_rank FROM {source}{when}) AS versions "
            f"WHERE version_rank = 1")


def current_sql(table: ExportTable, dialect: str, source: str) -> str:
    """The query of each record's current version in ``source`` (a table expression of ``dialect``)."""
    return _versions(table, dialect, source, None)


def as_of_sql(table: ExportTable, dialect: str, source: str, moment: str) -> str:
    """The query of each record's version as of ``moment`` (an expression or a parameter marker)."""
    return _versions(table, dialect, source, moment)


Files = Mapping[str, Sequence[str]]  # each table's live data files, relative to DEST


def _sql_list(paths: Sequence[str]) -> str:
    return "[" + ", ".join("'" + p.replace("'", "''") + "'" for p in paths) + "]"


def _duckdb_views(source: Callable[[str], str]) -> list[str]:
    lines = []
    for table in EXPORT_TABLES.values():
        lines.append(f'CREATE OR REPLACE VIEW "{table.name}" AS SELECT * FROM {source(table.name)};')
        if table.key:
            current = current_sql(table, "duckdb", table.name)
            lines.append(f'CREATE OR REPLACE VIEW "{table.name}_current" AS {current};')
            lines.append(f'CREATE OR REPLACE MACRO "{table.name}_as_of"(as_of) AS TABLE '
                         f'{as_of_sql(table, "duckdb", table.name, "as_of")};')
    return lines


def _duckdb(files: Files) -> str:
    return ("-- DuckDB, nothing to install: each table's live Parquet files (as its Delta log lists them).\n"
            "-- Paths are relative to DEST: run it there (cd DEST && duckdb -c '.read views/duckdb.sql'), or\n"
            "-- anywhere after SET file_search_path = 'DEST';\n"
            "-- <table>: every version; <table>_current: the current version; <table>_as_of(TIMESTAMPTZ): as of then.\n"
            + "\n".join(_duckdb_views(lambda name: f"read_parquet({_sql_list(files[name])}, union_by_name = true)"))
            + "\n")


def _duckdb_delta(files: Files) -> str:
    return ("-- DuckDB with its delta extension, where it is installed (LOAD delta; installing it needs the network),\n"
            "-- and httpfs with a CREATE SECRET for s3://. Run from DEST, as views/duckdb.sql.\n"
            + "\n".join(_duckdb_views(lambda name: f"delta_scan('{name}')")) + "\n")


def _spark_sql(files: Files) -> str:
    lines, later = [], []
    for table in EXPORT_TABLES.values():
        lines.append(f"CREATE OR REPLACE TEMP VIEW `{table.name}` AS SELECT * FROM delta.`{table.name}`;")
        if table.key:
            lines.append(f"CREATE OR REPLACE TEMP VIEW `{table.name}_current` AS "
                         f"{current_sql(table, 'spark', f'`{table.name}`')};")
            later.append(f"-- {table.name} as of :as_of\n{as_of_sql(table, 'spark', f'`{table.name}`', ':as_of')};")
    return ("-- Spark SQL with delta-spark (io.delta:delta-spark), where it is installed; run from DEST, each\n"
            "-- statement with spark.sql(...). Without it: views/spark.py, over the plain Parquet files.\n"
            "-- <table>_current: the current version. As of a moment: the queries at the end, with\n"
            "-- spark.sql(query, args={'as_of': datetime(...)}).\n" + "\n".join(lines + later) + "\n")


def _trino(files: Files) -> str:
    lines, later = [], []
    for table in EXPORT_TABLES.values():
        lines.append(f"CALL delta.system.register_table(schema_name => 'booru', table_name => '{table.name}', "
                     f"table_location => '${{DEST}}/{table.name}');")
    for table in EXPORT_TABLES.values():
        if table.key:
            lines.append(f'CREATE OR REPLACE VIEW delta.booru."{table.name}_current" AS '
                         f'{current_sql(table, "trino", f"delta.booru.{table.name}")};')
            later.append(f"-- {table.name} as of ?\n{as_of_sql(table, 'trino', f'delta.booru.{table.name}', '?')};")
    return ("-- Trino, Delta Lake connector (catalog `delta`, schema `booru`): register each table, then the views.\n"
            "-- Trino needs where DEST lives as a URL (s3://bucket/booru, file:///data/export): put it for ${DEST}.\n"
            "-- As of a moment: PREPARE q FROM <query at the end>;\n"
            "-- EXECUTE q USING TIMESTAMP '2025-01-01 00:00:00 UTC';\n"
            + "\n".join(lines + later) + "\n")


def _spark_type(kind: pa.DataType) -> str:
    """An Arrow type in Spark's DDL."""
    if pa.types.is_list(kind):
        return f"ARRAY<{_spark_type(kind.value_type)}>"
    if pa.types.is_struct(kind):
        return "STRUCT<" + ", ".join(f"`{f.name}`: {_spark_type(f.type)}" for f in kind) + ">"
    if pa.types.is_timestamp(kind):
        return "TIMESTAMP"
    return {pa.int64(): "BIGINT", pa.float64(): "DOUBLE", pa.bool_(): "BOOLEAN"}.get(kind, "STRING")


def _tables_json(files: Files) -> str:
    """What the Python views need of each table: its key, its files, its Spark schema."""
    return json.dumps({t.name: {"key": list(t.key), "files": list(files[t.name]),
                                "versions": any(c.name == "valid_from" for c in t.columns),
                                "spark_schema": ", ".join(f"`{c.name}` {_spark_type(c.type)}" for c in t.columns)}
                       for t in EXPORT_TABLES.values()}, indent=1)


_PYTHON_HEAD = '''"""{what}

Reads each table's live Parquet files, as its Delta log lists them (written again by every export
and --compact), with nothing downloaded. Paths are relative to DEST, the folder above this file:

    import runpy
    views = runpy.run_path("DEST/views/{file}")
{usage}"""

import json
from pathlib import Path

TABLES = json.loads(r"""{tables}""")


def _files(name, dest=None):
    root = Path(dest) if dest else Path(__file__).resolve().parent.parent
    return [str(root / path) for path in TABLES[name]["files"]]

'''

_POLARS = '''import polars as pl


def table(name, dest=None):
    """Every version of table ``name`` (a LazyFrame)."""
    # the newest file first: Polars takes the columns of the first, and an older file may lack one
    return pl.scan_parquet(_files(name, dest)[::-1], missing_columns="insert", extra_columns="ignore")


def _latest(frame, name):
    order = ["valid_from", "seen_at"] if TABLES[name]["versions"] else ["seen_at"]
    return frame.sort(order, nulls_last=False).group_by(TABLES[name]["key"]).last()


def current(name, dest=None):
    """Each record's current version."""
    return _latest(table(name, dest), name)


def as_of(name, moment, dest=None):
    """Each record's version as of ``moment`` (a datetime with its time zone)."""
    frame = table(name, dest)
    if TABLES[name]["versions"]:
        frame = frame.filter(pl.col("valid_from").is_null() | (pl.col("valid_from") <= moment))
    else:
        frame = frame.filter(pl.col("seen_at") <= moment)
    return _latest(frame, name)
'''

_PANDAS = '''import pandas as pd
import pyarrow.dataset as ds


def table(name, dest=None):
    """Every version of table ``name`` (a DataFrame)."""
    files = _files(name, dest)
    schema = ds.dataset(files[-1:], format="parquet").schema  # the latest file has every column
    return ds.dataset(files, format="parquet", schema=schema).to_table().to_pandas()


def _latest(frame, name):
    order = ["valid_from", "seen_at"] if TABLES[name]["versions"] else ["seen_at"]
    return frame.sort_values(order, na_position="first", kind="stable").groupby(TABLES[name]["key"]).tail(1)


def current(name, dest=None):
    """Each record's current version."""
    return _latest(table(name, dest), name)


def as_of(name, moment, dest=None):
    """Each record's version as of ``moment`` (a pandas Timestamp or datetime, with its time zone)."""
    frame = table(name, dest)
    if TABLES[name]["versions"]:
        frame = frame[frame["valid_from"].isna() | (frame["valid_from"] <= moment)]
    else:
        frame = frame[frame["seen_at"] <= moment]
    return _latest(frame, name)
'''

_SPARK = '''SQL = json.loads(r"""{sql}""")


def register(spark, dest=None):
    """Temporary views over the plain Parquet files, each with its schema given (nothing inferred):
    <table> (every version) and <table>_current."""
    for name, about in TABLES.items():
        spark.read.schema(about["spark_schema"]).parquet(*_files(name, dest)).createOrReplaceTempView(name)
        if name in SQL:
            spark.sql(SQL[name]["current"]).createOrReplaceTempView(f"{{name}}_current")


def as_of(spark, name, moment):
    """Each record's version as of ``moment`` (a datetime), once :func:`register` has run."""
    return spark.sql(SQL[name]["as_of"], args={{"as_of": moment}})
'''


def _python(files: Files, what: str, file: str, usage: str, body: str) -> str:
    return _PYTHON_HEAD.format(what=what, file=file, usage=usage, tables=_tables_json(files)) + "\n" + body


def _spark_python(files: Files) -> str:
    sql = {t.name: {"current": current_sql(t, "spark", f"`{t.name}`"),
                    "as_of": as_of_sql(t, "spark", f"`{t.name}`", ":as_of")} for t in EXPORT_TABLES.values() if t.key}
    return _python(files, "Spark over the export's plain Parquet files: no delta-spark, no package to fetch.",
                   "spark.py", '    views["register"](spark)   # then spark.sql("SELECT ... FROM images_current")\n'
                   '    views["as_of"](spark, "images", datetime(2025, 1, 1, tzinfo=timezone.utc))\n',
                   _SPARK.format(sql=json.dumps(sql, indent=1)))


def view_files(files: Files) -> dict[str, str]:
    """The files of ``views/``, by file name, for tables whose live data files are ``files``."""
    return {
        "views/duckdb.sql": _duckdb(files),
        "views/duckdb_delta.sql": _duckdb_delta(files),
        "views/spark.py": _spark_python(files),
        "views/spark.sql": _spark_sql(files),
        "views/polars.py": _python(files, "Polars over the export's plain Parquet files.", "polars.py",
                                   '    views["current"]("images").collect()\n', _POLARS),
        "views/pandas.py": _python(files, "pandas over the export's plain Parquet files (with pyarrow).",
                                   "pandas.py", '    views["current"]("images")\n', _PANDAS),
        "views/trino.sql": _trino(files),
    }
