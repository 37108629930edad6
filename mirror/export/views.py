"""The views shipped in DEST, in the SQL of DuckDB, Spark and Trino: each record's current version,
and its version as of a moment.

Each table's rows are versions; in a record table the current one is the latest ``valid_from`` of
each key (the latest ``seen_at`` among equals), and the one as of a moment the latest begun at or
before it (``valid_from`` null: in force before anything the history says), as ``/as-of/`` reads
the archive; in a compared table, by ``seen_at`` alone. The same query is written for each engine,
only the way a table is named differs (:data:`SOURCES`), so a test can run it over any source.
DuckDB gets a table macro for "as of"; Spark and Trino cannot take a parameter in a view, so they
get the query with a parameter marker (``:as_of`` for ``spark.sql(args=...)``, ``?`` for Trino's
``EXECUTE ... USING``).
"""

from __future__ import annotations

from collections.abc import Callable

from .tables import EXPORT_TABLES, ExportTable

__all__ = ["current_sql", "as_of_sql", "view_files"]


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


SOURCES: dict[str, Callable[[str, str], str]] = {
    "duckdb": lambda dest, name: f"delta_scan('{dest}/{name}')",
    "spark": lambda dest, name: f"delta.`{dest}/{name}`",
    "trino": lambda dest, name: f'"{name}"',
}

HEADERS = {
    "duckdb": "-- DuckDB: INSTALL delta; LOAD delta; (and httpfs with a CREATE SECRET for s3://), then run this file.\n"
              "-- <table>: every version; <table>_current: the current version; <table>_as_of(TIMESTAMPTZ): as of then.\n",
    "spark": "-- Spark SQL with delta-spark (io.delta:delta-spark): run each statement with spark.sql(...).\n"
             "-- <table>_current: the current version. As of a moment: the queries at the end, with\n"
             "-- spark.sql(query, args={'as_of': datetime(...)}).\n",
    "trino": "-- Trino, Delta Lake connector (catalog `delta`, schema `booru`): register each table, then the views.\n"
             "-- As of a moment: PREPARE q FROM <query at the end>; EXECUTE q USING TIMESTAMP '2025-01-01 00:00:00 UTC';\n",
}


def _duckdb(dest: str) -> list[str]:
    lines = []
    for table in EXPORT_TABLES.values():
        source = SOURCES["duckdb"](dest, table.name)
        lines.append(f'CREATE OR REPLACE VIEW "{table.name}" AS SELECT * FROM {source};')
        if table.key:
            lines.append(f'CREATE OR REPLACE VIEW "{table.name}_current" AS {current_sql(table, "duckdb", table.name)};')
            lines.append(f'CREATE OR REPLACE MACRO "{table.name}_as_of"(as_of) AS TABLE '
                         f'{as_of_sql(table, "duckdb", table.name, "as_of")};')
    return lines


def _spark(dest: str) -> list[str]:
    lines, later = [], []
    for table in EXPORT_TABLES.values():
        source = SOURCES["spark"](dest, table.name)
        lines.append(f"CREATE OR REPLACE TEMP VIEW `{table.name}` AS SELECT * FROM {source};")
        if table.key:
            lines.append(f"CREATE OR REPLACE TEMP VIEW `{table.name}_current` AS "
                         f"{current_sql(table, 'spark', f'`{table.name}`')};")
            later.append(f"-- {table.name} as of :as_of\n{as_of_sql(table, 'spark', f'`{table.name}`', ':as_of')};")
    return lines + later


def _trino(dest: str) -> list[str]:
    lines, later = [], []
    dest = f"file://{dest}" if dest.startswith("/") else dest
    for table in EXPORT_TABLES.values():
        lines.append(f"CALL delta.system.register_table(schema_name => 'booru', table_name => '{table.name}', "
                     f"table_location => '{dest}/{table.name}');")
    for table in EXPORT_TABLES.values():
        if table.key:
            lines.append(f'CREATE OR REPLACE VIEW delta.booru."{table.name}_current" AS '
                         f'{current_sql(table, "trino", f"delta.booru.{table.name}")};')
            later.append(f"-- {table.name} as of ?\n{as_of_sql(table, 'trino', f'delta.booru.{table.name}', '?')};")
    return lines + later


def view_files(dest: str) -> dict[str, str]:
    """The files of views for DEST (its URL or absolute path), by file name."""
    makers = {"duckdb": _duckdb, "spark": _spark, "trino": _trino}
    return {f"views/{dialect}.sql": HEADERS[dialect] + "\n".join(make(dest.rstrip("/"))) + "\n"
            for dialect, make in makers.items()}
