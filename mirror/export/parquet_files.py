"""A table's new versions written as Parquet files by pyarrow, for one Delta commit to name.

delta-rs writes Parquet too, but fed the whole board's images its writer held 700-810 MB where
pyarrow's, holding the row group it is writing, held 318 MB, for 0.8 times the CPU
(``docs/export.md``): so the files are written here, a row group at a time, and delta-rs only
makes the commit that adds them (:func:`mirror.export.delta.append`). Each file's Delta statistics are its row count, the nulls of
each plain column, and the bounds of its integer columns (ids, counts: what a reader's data
skipping uses); text and time bounds are left out, where a truncated bound would skip rows.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import fsspec
import pyarrow as pa
import pyarrow.fs as pa_fs
import pyarrow.parquet as pq
from deltalake.transaction import AddAction
from fsspec.implementations.local import LocalFileSystem

__all__ = ["written_files", "ROW_GROUP_ROWS", "TARGET_FILE_SIZE"]

# Row groups and files small enough that the writer's buffers stay small, large enough for readers
# (bench/export.py). zstd's level 1: of the first export of 100,000 imported images, 8% less CPU
# than level 9 for 7% more bytes, where the whole board's first export is bound by the CPU.
ROW_GROUP_ROWS = 8_192
TARGET_FILE_SIZE = 64 * 2**20
COMPRESSION = {"compression": "zstd", "compression_level": 1}


def written_files(fs: fsspec.AbstractFileSystem, folder: str, schema: pa.Schema,
                  batches: Iterator[pa.RecordBatch]) -> Iterator[AddAction]:
    """``batches`` written into new files in ``folder`` (of ``fs``), each closed once it reaches
    :data:`TARGET_FILE_SIZE`; yields each file's add action (its path relative to ``folder``)."""
    files = _arrow_files(fs)
    pending: list[pa.RecordBatch] = []
    rows = 0
    open_file: _OpenFile | None = None
    for batch in batches:
        pending.append(batch)
        rows += batch.num_rows
        if rows < ROW_GROUP_ROWS:
            continue
        open_file = open_file or _OpenFile(files, folder, schema)
        open_file.write(pa.Table.from_batches(pending, schema))
        pending, rows = [], 0
        if open_file.size() >= TARGET_FILE_SIZE:
            yield open_file.closed()
            open_file = None
    if pending:
        open_file = open_file or _OpenFile(files, folder, schema)
        open_file.write(pa.Table.from_batches(pending, schema))
    if open_file is not None:
        yield open_file.closed()


class _OpenFile:
    """One Parquet file being written, and its figures for the Delta log."""

    def __init__(self, files: pa_fs.FileSystem, folder: str, schema: pa.Schema) -> None:
        self.name = f"part-00000-{uuid.uuid4()}-c000.zstd.parquet"
        self.sink = files.open_output_stream(f"{folder}/{self.name}")
        self.writer = pq.ParquetWriter(self.sink, schema, **COMPRESSION)
        self.schema = schema

    def write(self, table: pa.Table) -> None:
        self.writer.write_table(table, row_group_size=ROW_GROUP_ROWS)

    def size(self) -> int:
        return self.sink.tell()

    def closed(self) -> AddAction:
        self.writer.close()
        size = self.sink.tell()
        self.sink.close()
        return AddAction(self.name, size, {}, int(time.time() * 1000), True,
                         json.dumps(_statistics(self.writer.writer.metadata, self.schema)))


def _arrow_files(fs: fsspec.AbstractFileSystem) -> pa_fs.FileSystem:
    """``fs`` as pyarrow writes to it: a local folder natively, any other store through fsspec."""
    return pa_fs.LocalFileSystem() if isinstance(fs, LocalFileSystem) else pa_fs.PyFileSystem(pa_fs.FSSpecHandler(fs))


def _statistics(metadata: pq.FileMetaData, schema: pa.Schema) -> dict[str, Any]:
    """The file's Delta statistics from its Parquet footer: rows, nulls of each plain column, and
    the bounds of each integer column (where every row group has them)."""
    plain = {field.name: field.type for field in schema if not pa.types.is_nested(field.type)}
    nulls: dict[str, int] = dict.fromkeys(plain, 0)
    low: dict[str, int] = {}
    high: dict[str, int] = {}
    bounded = {name for name, kind in plain.items() if pa.types.is_integer(kind)}
    for group in range(metadata.num_row_groups):
        row_group = metadata.row_group(group)
        for index in range(row_group.num_columns):
            column = row_group.column(index)
            name = column.path_in_schema
            if name not in plain:
                continue
            stats = column.statistics
            if stats is None or not stats.has_null_count:
                nulls.pop(name, None)
                bounded.discard(name)
                continue
            if name in nulls:
                nulls[name] += stats.null_count
            if name not in bounded:
                continue
            if not stats.has_min_max:
                if stats.null_count < row_group.num_rows:  # values with no bounds: none kept
                    bounded.discard(name)
                continue
            low[name] = min(low.get(name, stats.min), stats.min)
            high[name] = max(high.get(name, stats.max), stats.max)
    bounded &= low.keys()
    return {"numRecords": metadata.num_rows, "nullCount": nulls,
            "minValues": {name: low[name] for name in bounded}, "maxValues": {name: high[name] for name in bounded}}
