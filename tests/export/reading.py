"""Reading an export back without the exporter's code, and the archive's records to compare with.

The data files are found as a plain Parquet reader finds them (paths with a part starting with
``_`` or ``.`` skipped, as Spark and Hive do); the archive's rows are converted from SQLite here,
on their own, so that a mistake in the exporter's conversions cannot hide in its own test.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa

from mirror.export.views import EMPTY_FILE

# Each record table's key, as the site knows it.
KEYS = {"images": ("id",), "tags": ("id",), "comments": ("id",), "posts": ("id",), "users": ("id",),
        "filters": ("id",), "galleries": ("id",), "forums": ("short_name",), "topics": ("forum_short_name", "slug")}


def in_order(table: pa.Table) -> pa.Table:
    """``table``'s rows in an order that does not depend on how they were written (the images of a
    first export come from two processes, as they come)."""
    texts = [repr(row) for row in table.to_pylist()]
    return table.take(pa.array(sorted(range(len(texts)), key=texts.__getitem__), pa.int64()))


def data_files(table: Path) -> list[Path]:
    """The table's Parquet files as a plain reader lists them (``_delta_log`` and the like skipped)."""
    return sorted(p for p in table.rglob("*.parquet")
                  if not any(part.startswith(("_", ".")) for part in p.relative_to(table).parts))


def file_hashes(dest: Path) -> dict[str, str]:
    """Every data file under DEST, by path, with the sha256 of its bytes (an empty table's empty
    file left out: it goes once the table has rows)."""
    return {str(p.relative_to(dest)): hashlib.sha256(p.read_bytes()).hexdigest()
            for table in dest.iterdir() if table.is_dir() for p in data_files(table) if p.name != EMPTY_FILE}


def as_exported(value, like):
    """The archive's SQLite ``value`` as the engine gives the column whose value is ``like``."""
    if value is None:
        return None
    if isinstance(like, bool):
        return bool(value)
    if isinstance(like, datetime):
        return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(timezone.utc)
    if isinstance(like, dict):
        loaded = json.loads(value)
        return {key: loaded.get(key) for key in like}
    if isinstance(like, list):
        return json.loads(value)
    return value


def assert_same_record(exported: dict, archived: dict, table: str) -> None:
    """Every exported column holds what the archive's row holds; ``seen_at``, when the mirror first
    saw this version, is at or before its ``mirrored_at`` (when it last read the record, unchanged since)."""
    for column, value in exported.items():
        source = "mirrored_at" if column == "seen_at" else column
        if column == "valid_from":  # worked out from the history: tests/export/test_versions.py
            continue
        if column == "seen_at":
            assert value <= as_exported(archived[source], value), (table, column)
        elif value is None:
            assert archived[source] is None, (table, column, archived[source])
        else:
            assert as_exported(archived[source], value) == value, (table, column)
