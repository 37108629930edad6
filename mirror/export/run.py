"""One export: the versions written since the last one, appended to DEST's Delta tables.

Each export is a numbered batch. Its bounds (records written up to now, history rows up to the
newest) are kept in the database as ``pending`` before any table is written, and the batch is
one commit per table naming its number. Killed at any moment, the next export finds the pending
batch, skips the tables whose commit is there (keeping only their digests, which the kill may
have cut short), writes the others, and only then moves the cursor on: nothing is lost and no
version is written twice. A sync in between writes rows past the batch's bounds, for the next.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sqlite3
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, replace
from itertools import chain
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from sqlite_utils import Database

from ..dates import utc_text
from ..progress import Reporter
from ..store.database import database_file
from ..store.export_state import (dest_number, forget_export, load_export_cursor, reading_connection,
                                  save_digests, save_export_cursor)
from ..store.table_marks import written_marks
from ..urls import error_text, redact, shortened
from . import delta
from .batches import Bounds, record_batches
from .written import Written, folder_of, remove_handed
from .describe import describe_files
from .shared import Part, Share, joined, pieces, helper_part, write_pieces
from .report import ExportFailure, ExportReport
from .tables import APPENDED, COMPARED, EXPORT_TABLES, ExportTable
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
                        dest_number(db, where.url), frozenset(pending.get("unchanged", ())))
        report.batch = pending["batch"]
        if resumed:  # a killed run's half-written files, which no Delta reader reads and a Parquet reader would
            for table in EXPORT_TABLES.values():
                delta.remove_orphans(where, table.name)
        remove_handed(folder_of(db.conn))
        share, helper = _shared(db, where, bounds, report.batch)
        conn = reading_connection(db)
        try:
            for table in EXPORT_TABLES.values():
                if share is None or table.name != SHARED:
                    _keep(db, bounds, table, report, _export_table(conn, where, table, bounds, report.batch))
                    if reporter:
                        reporter.update(report)
            if share is not None and helper is not None:
                _keep(db, bounds, EXPORT_TABLES[SHARED], report,
                      _export_shared(conn, where, EXPORT_TABLES[SHARED], bounds, report.batch, share, helper))
                if reporter:
                    reporter.update(report)
        finally:
            conn.close()
            if share is not None:
                share.stopped.set()  # a failed export's helper takes no more pieces
        save_export_cursor(db, {"dest": where.url, "batch": pending["batch"], "through": pending["high"],
                                "ids": pending["upto"], "marks": pending.get("marks"), "exported_at": utc_text()})
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
    upto = {t.name: db.execute(t.bound_sql).fetchone()[0] for t in EXPORT_TABLES.values() if t.how == APPENDED}
    marks = written_marks(db, [t.table for t in EXPORT_TABLES.values() if t.how == COMPARED])
    before = cursor.get("marks")  # None: no batch yet, or one by a version that kept no marks
    unchanged = sorted(name for name, mark in marks.items() if before is not None and before.get(name) == mark)
    return {"batch": cursor.get("batch", 0) + 1, "low": cursor.get("through", ""), "high": utc_text(),
            "after": cursor.get("ids", {}), "upto": upto, "marks": marks, "unchanged": unchanged}


@dataclass
class TableWritten:
    """What writing one table did: the versions written (``None``: a killed run's commit was found,
    its digests read again), the bytes of data files it added, and each record's digest."""

    versions: int | None
    bytes: int
    written: Written


def _export_table(conn: sqlite3.Connection, where: delta.Destination, table: ExportTable, bounds: Bounds,
                  batch: int) -> TableWritten:
    """Write ``table``'s versions in one commit."""
    written = Written(ids=table.key_ids, folder=folder_of(conn))
    if delta.has_batch(where, table.name, batch):  # a killed run's commit: its digests only
        for _ in record_batches(conn, table, bounds, written, write=False):
            pass
        return TableWritten(None, 0, written)
    before = delta.data_bytes(where, table.name)
    batches = record_batches(conn, table, bounds, written)
    first = next(batches, None)
    if first is None and delta.exists(where, table.name):
        return TableWritten(written.rows, 0, written)
    delta.append(where, table.name, table.schema(), _then(first, batches), batch)
    return TableWritten(written.rows, delta.data_bytes(where, table.name) - before, written)


def _export_shared(conn: sqlite3.Connection, where: delta.Destination, table: ExportTable, bounds: Bounds,
                   batch: int, share: Share, helper: Future[Part]) -> TableWritten:
    """Write the pieces of ``table`` this process takes, beside the helper's, then the table's one
    commit of both processes' files (:mod:`.shared`)."""
    before = delta.data_bytes(where, table.name)
    written = Written(ids=table.key_ids, folder=folder_of(conn))
    both = joined(Part(write_pieces(conn, where, table, bounds, share, written), written), helper)
    delta.commit(where, table.name, table.schema(), both.files, batch)
    return TableWritten(both.written.rows, delta.data_bytes(where, table.name) - before, both.written)


def _keep(db: Database, bounds: Bounds, table: ExportTable, report: ExportReport, done: TableWritten) -> None:
    """A table written: its figures in the report, its digests in the store."""
    if done.versions is not None:
        report.bytes += done.bytes
        report.tables[table.name] = done.versions
        report.fetched += done.versions
    save_digests(db, bounds.dest, table.name, done.written.digests())
    done.written.close()


# Shared with a helper process, in a first export on a machine of more than one core: most of its
# time is this table's versions, read and made in Python, which one process does on one core
# (:mod:`.shared`). A process costs a second or two to start: only a table of SHARED_FROM rows or
# more is worth one.
SHARED = "images"
SHARED_FROM = 50_000


def _shared(db: Database, where: delta.Destination, bounds: Bounds,
            batch: int) -> tuple[Share | None, Future[Part] | None]:
    """The pieces of :data:`SHARED` and a helper process begun on them, in a first export of a
    large table on a machine of more than one core (a night's are small: the process would cost
    more than it saves); (None, None) where the table is written in this process alone."""
    table = EXPORT_TABLES[SHARED]
    rows = db.execute(f'SELECT coalesce(max(rowid), 0) FROM "{table.table}"').fetchone()[0]
    if rows < SHARED_FROM or not bounds.first or (os.cpu_count() or 1) < 2 or delta.has_batch(where, SHARED, batch):
        return None, None
    context = multiprocessing.get_context("spawn")
    share = Share.made(context, pieces(db.conn, table))
    # The share goes with the process's start: its counter and event cross to it there only.
    pool = ProcessPoolExecutor(max_workers=1, mp_context=context, initializer=_start_helper,
                               initargs=(os.getpid(), share))
    try:
        quiet = replace(where, say=None)  # a bound method does not cross to the other process
        return share, pool.submit(_helper_in_process, database_file(db), quiet, SHARED, bounds)
    finally:
        pool.shutdown(wait=False)


_share: Share | None = None  # in the helper process: the pieces it takes


def _start_helper(parent: int, share: Share) -> None:
    global _share
    _share = share
    _die_with(parent)


def _helper_in_process(path: str, where: delta.Destination, name: str, bounds: Bounds) -> Part:
    assert _share is not None
    return helper_part(path, where, name, bounds, _share)


def _die_with(parent: int) -> None:
    """End the helper the moment the export that started it ends, killed or not: left running, it
    would write files beside the next export's, which resumes this one."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # ended before the line above
        os._exit(1)

    def watch() -> None:  # where no signal says so
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


PR_SET_PDEATHSIG = 1


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
