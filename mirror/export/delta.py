"""Delta Lake tables: appends that name their batch, and compaction.

The data files are written by pyarrow (:mod:`.parquet_files`, any process may write a table's
files) and made part of the table by delta-rs (``deltalake``) in one commit; compaction is delta-rs'.

One timeout rule for every call to DEST (``export.timeout``): delta-rs' requests and retries
(``timeout``, ``retry_timeout``) and s3fs' (botocore's ``connect_timeout`` and ``read_timeout``,
one attempt, s3fs' own retries off) each give up after it, where botocore's defaults under s3fs
held a silent endpoint, and the mirror's lock, for 425 s without a word. A call that has waited
half of it says so in one line (:meth:`Destination.waiting`).

Each export batch is one commit per table, carrying ``booru_mirror.batch`` in its commit info;
a run that was killed after a table's commit finds it there and does not write it twice. Writes
only append (a data file, once written, is never rewritten by an export); :func:`compact` is the
one thing that rewrites, and only when asked.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import fsspec
import pyarrow as pa
import pyarrow.compute as pc
from deltalake import CommitProperties, DeltaTable, Schema, WriterProperties
from deltalake.exceptions import DeltaError, TableNotFoundError
from deltalake.transaction import AddAction, create_table_with_add_actions

from ..urls import redact
from .parquet_files import TARGET_FILE_SIZE, written_files

try:  # the s3 extra: s3fs over botocore
    from botocore.exceptions import BotoCoreError, ClientError
    _S3_ERRORS: tuple[type[Exception], ...] = (BotoCoreError, ClientError)
except ImportError:  # pragma: no cover (no S3 without it)
    _S3_ERRORS = ()

__all__ = ["Destination", "DESTINATION_ERRORS", "append", "write_files", "commit", "has_batch", "data_bytes", "live_files", "compact",
           "remove_orphans"]

BATCH_KEY = "booru_mirror.batch"
# How many of a table's latest commits are looked at for a killed run's batch: an export makes one
# commit per table, and only a compaction (which comes after) can follow it.
LOOK_BACK = 20
# What reaching DEST can raise: delta-rs' errors, fsspec's OSErrors, and botocore's, which s3fs
# passes on as they are for an endpoint it cannot reach at all (EndpointConnectionError).
DESTINATION_ERRORS: tuple[type[Exception], ...] = (DeltaError, OSError, *_S3_ERRORS)


@dataclass(frozen=True)
class Destination:
    """DEST: a folder or an ``s3://`` URL, the options delta-rs needs to reach it, the seconds a
    call may go unanswered, and where a line is said when one waits."""

    url: str
    options: Mapping[str, str]
    timeout: float = 60.0
    say: Callable[[str], None] | None = field(default=None, compare=False)

    def table(self, name: str) -> str:
        return f"{self.url.rstrip('/')}/{name}"

    def files(self) -> tuple[Any, str]:
        """DEST as an fsspec file system and the root path in it (an S3 one with the timeout rule)."""
        if not self.url.startswith("s3://"):
            return fsspec.core.url_to_fs(self.url)
        options: dict[str, Any] = {"config_kwargs": {"connect_timeout": self.timeout, "read_timeout": self.timeout,
                                                     "retries": {"max_attempts": 1, "mode": "standard"}}}
        if "AWS_ENDPOINT_URL" in self.options:
            options["endpoint_url"] = self.options["AWS_ENDPOINT_URL"]
        fs, root = fsspec.core.url_to_fs(self.url, **options)
        fs.retries = 1  # s3fs retries a timed-out call 5 times of its own, past the rule
        return fs, root

    @contextmanager
    def waiting(self, what: str) -> Iterator[None]:
        """Around a call to DEST that should answer at once: one line once it has waited half its timeout."""
        half = self.timeout / 2
        timer = threading.Timer(half, lambda: self.say and self.say(
            f"export: waiting for {redact(self.url)} ({what}): no answer for {half:g} s; it is given up on after "
            f"export.timeout = {self.timeout:g} s"))
        timer.daemon = True
        timer.start()
        try:
            yield
        finally:
            timer.cancel()


def destination(url: str, endpoint_url: str | None = None, *, timeout: float = 60.0,
                say: Callable[[str], None] | None = None) -> Destination:
    """DEST as the file store reaches it: credentials from the environment (``AWS_ACCESS_KEY_ID``,
    ``AWS_SECRET_ACCESS_KEY``, ``AWS_REGION``...), an S3-compatible endpoint from ``store.endpoint_url``;
    every call given up on after ``timeout`` seconds unanswered, retries included."""
    options: dict[str, str] = {}
    if url.startswith("s3://"):
        # One writer at a time (the mirror's lock), so delta-rs needs no locking service.
        options["AWS_S3_ALLOW_UNSAFE_RENAME"] = "true"
        options.update({"timeout": f"{timeout:g}s", "connect_timeout": f"{timeout:g}s",
                        "retry_timeout": f"{timeout:g}s", "max_retries": "3"})
        if endpoint_url:
            options["AWS_ENDPOINT_URL"] = endpoint_url
            options["AWS_ALLOW_HTTP"] = "true" if endpoint_url.startswith("http://") else "false"
            options.setdefault("AWS_REGION", "us-east-1")
    return Destination(url, options, timeout, say)


def _open(where: Destination, name: str) -> DeltaTable | None:
    try:
        with where.waiting(f"table {name}"):
            return DeltaTable(where.table(name), storage_options=dict(where.options))
    except TableNotFoundError:
        return None


def has_batch(where: Destination, name: str, batch: int) -> bool:
    """Whether table ``name`` already holds export batch ``batch`` (a killed run's commit)."""
    table = _open(where, name)
    return table is not None and any(entry.get(BATCH_KEY) == str(batch) for entry in table.history(LOOK_BACK))


def exists(where: Destination, name: str) -> bool:
    return _open(where, name) is not None


def append(where: Destination, name: str, schema: pa.Schema, batches: Iterator[pa.RecordBatch], batch: int) -> None:
    """Append ``batches`` to table ``name`` (created if it is not there) in one commit naming ``batch``."""
    commit(where, name, schema, write_files(where, name, schema, batches), batch)


def write_files(where: Destination, name: str, schema: pa.Schema, batches: Iterator[pa.RecordBatch]) -> list[AddAction]:
    """``batches`` written by pyarrow into new files of table ``name`` (:mod:`.parquet_files`), not
    yet part of it: their add actions, for :func:`commit`."""
    fs, root = where.files()
    folder = f"{root}/{name}"
    with where.waiting(f"table {name}'s files"):
        fs.makedirs(folder, exist_ok=True)
    return list(written_files(fs, folder, schema, batches))


def commit(where: Destination, name: str, schema: pa.Schema, added: list[AddAction], batch: int) -> None:
    """The files of ``added`` made part of table ``name`` (created if it is not there) by delta-rs,
    in one commit naming ``batch``. A column ``schema`` has that the table lacks is added to it (a
    newer mirror's)."""
    properties = CommitProperties(custom_metadata={BATCH_KEY: str(batch)})
    table = _open(where, name)
    with where.waiting(f"table {name}'s commit"):
        if table is None:
            create_table_with_add_actions(where.table(name), Schema.from_arrow(schema), added, mode="append",
                                          storage_options=dict(where.options), commit_properties=properties)
        else:
            _add_columns(table, schema)
            table.create_write_transaction(added, mode="append", schema=table.schema(),
                                           commit_properties=properties)


def _add_columns(table: DeltaTable, schema: pa.Schema) -> None:
    """The columns of ``schema`` the table lacks, and the fields its structs lack, added to the
    table's schema (a commit of their own, before the batch's: a newer mirror's export)."""
    present = {field.name: field.type for field in table.schema().fields}
    new = [field for field in Schema.from_arrow(schema).fields
           if field.name not in present or present[field.name] != field.type]
    if new:
        table.alter.add_columns(new)
        table.update_incremental()


def data_bytes(where: Destination, name: str) -> int:
    """The bytes of the data files the table's current version reads."""
    table = _open(where, name)
    if table is None:
        return 0
    actions = pa.table(table.get_add_actions(flatten=True))
    return int(pc.sum(actions["size_bytes"]).as_py() or 0) if actions.num_rows else 0


def live_files(where: Destination, name: str) -> list[str]:
    """The data files table ``name``'s current version reads, oldest first, relative to DEST
    (``images/part-....parquet``): what a reader without Delta must read, and nothing else."""
    table = _open(where, name)
    if table is None:
        return []
    actions = pa.table(table.get_add_actions(flatten=True))
    if not actions.num_rows:
        return []
    paths = actions["path"].to_pylist()
    times = actions["modification_time"].to_pylist() if "modification_time" in actions.column_names else paths
    return [f"{name}/{path}" for _, path in sorted(zip(times, paths))]


def compact(where: Destination, name: str, retention_hours: float) -> dict[str, Any]:
    """Rewrite ``name``'s small files into large ones, then delete the files no version younger than
    ``retention_hours`` reads. Returns delta-rs' figures (files added and removed).

    A file the export wrote full (``TARGET_FILE_SIZE``) is left as it is: delta-rs' own target
    (100 MB) would have every file of the first export rewritten at each compaction, the whole
    board's tables, where only the nights' small files need it."""
    table = _open(where, name)
    if table is None:
        return {}
    figures = table.optimize.compact(target_size=TARGET_FILE_SIZE,
                                     writer_properties=WriterProperties(compression="ZSTD"))
    removed = table.vacuum(retention_hours=round(retention_hours), enforce_retention_duration=False, dry_run=False)
    return {"files_added": figures.get("numFilesAdded", 0), "files_removed": figures.get("numFilesRemoved", 0),
            "files_deleted": len(removed)}


def remove_orphans(where: Destination, name: str) -> int:
    """Delete the data files a killed export left in table ``name`` without committing them.

    A plain Parquet reader of the folder would read them as rows; Delta readers never do. They
    are the files written after the table's last commit that no version reads: a file a
    compaction replaced is older than the commit that replaced it, and is left to :func:`compact`."""
    fs, root = where.files()
    folder = f"{root}/{name}"
    with where.waiting(f"table {name}'s files"):
        if not fs.exists(folder):
            return 0
    table = _open(where, name)
    kept: set[str] = set()
    since = None
    if table is not None:
        kept = {path.rsplit("/", 1)[-1] for path in pa.table(table.get_add_actions(flatten=True))["path"].to_pylist()}
        since = datetime.fromtimestamp(table.history(1)[0]["timestamp"] / 1000, timezone.utc)
    orphans = []
    with where.waiting(f"table {name}'s files"):
        listed = fs.find(folder, detail=True).items()
    for path, info in listed:
        relative = path[len(folder):].lstrip("/")
        if any(part.startswith(("_", ".")) for part in relative.split("/")) or relative.rsplit("/", 1)[-1] in kept:
            continue
        if since is None or _modified(info) >= since:
            orphans.append(path)
    for path in orphans:
        fs.rm_file(path)
    return len(orphans)


def _modified(info: Mapping[str, Any]) -> datetime:
    """When a listed file was last written, in UTC (local folders give seconds, S3 a datetime)."""
    value = info.get("LastModified") or info.get("mtime") or info.get("created")
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    return datetime.fromtimestamp(float(value or 0), timezone.utc)
