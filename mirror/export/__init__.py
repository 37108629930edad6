"""`mirror export`: the archive's records, as versions, and its history, to Delta Lake tables.

An exporter reads the store and writes elsewhere (a folder or an ``s3://`` URL), for engines that
outgrow one SQLite file: Spark, Trino, DuckDB, Polars. It needs the ``export`` extra (deltalake,
pyarrow); :func:`export_archive` says in one line how to install it when it is missing. Only
:mod:`mirror.store.export_state` writes what the export keeps in the database.
"""

from __future__ import annotations

from typing import Any

from .report import ExportFailure, ExportMissing, ExportReport

__all__ = ["ExportFailure", "ExportMissing", "ExportReport", "export_archive"]

INSTALL = "pip install 'booru-mirror[export]'"


def export_archive(*args: Any, **kwargs: Any) -> ExportReport:
    """:func:`.run.export_archive`, once deltalake and pyarrow are found importable."""
    try:
        from .run import export_archive as run
    except ImportError as e:
        raise ExportMissing(f"export: {e.name or 'deltalake'} is not installed; install the export extra "
                            f"({INSTALL}) and run it again.") from None
    return run(*args, **kwargs)
