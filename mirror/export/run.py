"""One export: the versions written since the last one, appended to DEST's Delta tables.

Each export is a numbered batch. Its bounds (records written up to now, history rows up to the
newest) are kept in the database as ``pending`` before any table is written, and the batch is
one commit per table naming its number. Killed at any moment, the next export finds the pending
batch, skips the tables whose commit is there (keeping only their digests, which the kill may
have cut short), writes the others, and only then moves the cursor on: nothing is lost and no
version is written twice. A sync in between writes rows past the batch's bounds, for the next.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from itertools import chain
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from sqlite_utils import Database

from ..dates import utc_text
from ..progress import Reporter
from ..store.export_state import (dest_number, forget_export, load_export_cursor, reading_connection,
                                  save_digests, save_export_cursor)
from ..urls import error_text, redact, shortened
from . import delta
from .batches import Bounds, Written, record_batches
from .describe import describe_files
from .report import ExportFailure, ExportReport
from .tables import APPENDED, EXPORT_TABLES, ExportTable
from .views import EMPTY_FILE, view_files

__all__ = ["export_archive", "location"]


def location(dest: str) -> str:
    """DEST as it is kept and written into the views: a URL as given, a folder as an absolute path."""
    return dest.rstrip("/") if "://" in dest else str(Path(dest).expanduser().resolve())


def export_archive(db: Database, dest: str, *, endpoint_url: str | None = None, compact: bool = False,
                   retention_hours: float = 168.0, timeout: float = 60.0,
                   reporter: Reporter | None = None) -> ExportReport:
    """Append to DEST's tables every version the store holds that no export has written yet; a
    call to DEST unanswered for ``timeout`` seconds ends it (:class:`ExportFailure`)."""
    where = delta.destination(location(dest), endpoint_url, timeout=timeout, say=reporter.warn if reporter else None)
    report = ExportReport(dest=redact(where.url))
    try:
        cursor = _cursor_for(db, where)
        resumed = bool(cursor.get("pending"))
        pending = cursor.get("pending") or _new_batch(db, cursor)
        save_export_cursor(db, {**cursor, "dest": where.url, "pending": pending})
        bounds = Bounds(pending["low"], pending["high"], pending["after"], pending["upto"],
                        dest_number(db, where.url))
        report.batch = pending["batch"]
        conn = reading_connection(db)
        try:
            for table in EXPORT_TABLES.values():
                if resumed:  # a killed run's half-written files, which no Delta reader reads and a Parquet reader would
                    delta.remove_orphans(where, table.name)
                _export_table(db, conn, where, table, bounds, report)
                if reporter:
                    reporter.update(report)
        finally:
            conn.close()
        save_export_cursor(db, {"dest": where.url, "batch": pending["batch"], "through": pending["high"],
                                "ids": pending["upto"], "exported_at": utc_text()})
        if compact:
            report.compacted = _compact(where, retention_hours)
        _write_texts(where)
    except delta.DESTINATION_ERRORS as e:
        raise ExportFailure(f"export: cannot write {redact(where.url)} ({_reason(e)}); what is exported so far is "
                            "kept, and the next export goes on from it. Check DEST and its credentials (a call "
                            f"unanswered for export.timeout = {timeout:g} s is given up on).") from e
    return report


def _reason(error: BaseException) -> str:
    return shortened(error_text(error))


def _cursor_for(db: Database, where: delta.Destination) -> dict[str, Any]:
    """The export cursor for DEST (each DEST has its own); a first export to a new, empty DEST starts afresh."""
    cursor = load_export_cursor(db, where.url)
    if cursor:
        return cursor
    if any(delta.exists(where, name) for name in EXPORT_TABLES):
        raise ExportFailure(f"export: {redact(where.url)} already holds tables this database did not export; "
                            "nothing was written. Export to an empty DEST, or to one this database exported to.")
    forget_export(db, where.url)
    return {}


def _new_batch(db: Database, cursor: dict[str, Any]) -> dict[str, Any]:
    """The bounds of the next batch: records written since the last one, up to now; history rows too."""
    upto = {t.name: db.execute(f'SELECT coalesce(max(id), 0) FROM "{t.table}"').fetchone()[0]
            for t in EXPORT_TABLES.values() if t.how == APPENDED}
    return {"batch": cursor.get("batch", 0) + 1, "low": cursor.get("through", ""), "high": utc_text(),
            "after": cursor.get("ids", {}), "upto": upto}


def _export_table(db: Database, conn: sqlite3.Connection, where: delta.Destination, table: ExportTable,
                  bounds: Bounds, report: ExportReport) -> None:
    written = Written(numeric=table.numeric_key)
    if delta.has_batch(where, table.name, report.batch):  # a killed run's commit: its digests only
        for _ in record_batches(conn, table, bounds, written, write=False):
            pass
    else:
        before = delta.data_bytes(where, table.name)
        batches = record_batches(conn, table, bounds, written)
        first = next(batches, None)
        if first is not None or not delta.exists(where, table.name):
            delta.append(where, table.name, table.schema(), _then(first, batches), report.batch)
            report.bytes += delta.data_bytes(where, table.name) - before
        report.tables[table.name] = written.rows
        report.fetched += written.rows
    save_digests(db, bounds.dest, table.name, written.digests())


def _then(first: pa.RecordBatch | None, rest: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    return chain([first] if first is not None else [], rest)


def _write_texts(where: delta.Destination) -> None:
    """DEST's README.md, datapackage.json and views/, written whole each time (they are no data),
    with each table's live files, and an empty table's empty file (after a compaction too: its
    vacuum deletes what no Delta version lists)."""
    fs, root = where.files()
    files = {name: delta.live_files(where, name) for name in EXPORT_TABLES}
    for name, table in EXPORT_TABLES.items():
        empty = f"{root}/{name}/{EMPTY_FILE}"
        with where.waiting(f"table {name}'s files"):
            if not files[name]:
                fs.makedirs(f"{root}/{name}", exist_ok=True)
                with fs.open(empty, "wb") as out:  # no row group at all: an empty one trips `datasets`
                    pq.ParquetWriter(out, table.schema()).close()
                files[name] = [f"{name}/{EMPTY_FILE}"]
            elif fs.exists(empty):
                fs.rm_file(empty)
    for name, text in {**describe_files(files), **view_files(files)}.items():
        path = f"{root}/{name}"
        with where.waiting(name):
            fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
            fs.pipe_file(path, text.encode())


def _compact(where: delta.Destination, retention_hours: float) -> dict[str, int]:
    totals: dict[str, int] = {}
    for name in EXPORT_TABLES:
        for key, value in delta.compact(where, name, retention_hours).items():
            totals[key] = totals.get(key, 0) + value
    return totals
