"""The export's own Parquet writer and the Delta commit that adds its files (mirror.export.parquet_files)."""

from __future__ import annotations

import json
from unittest.mock import patch
from datetime import datetime, timezone

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
from deltalake import DeltaTable
from hypothesis import given, settings, strategies as st

from mirror.export import delta, parquet_files

SCHEMA = pa.schema([("id", pa.int64()), ("score", pa.int32()), ("name", pa.string()),
                    ("tags", pa.list_(pa.string())), ("seen_at", pa.timestamp("us", tz="UTC"))])


def rows_of(count: int, offset: int = 0) -> list[dict]:
    return [{"id": offset + n * 7 % 1000, "score": None if n % 5 == 0 else n - 50, "name": None if n % 3 else f"n{n}",
             "tags": [f"t{n % 4}"] * (n % 3), "seen_at": datetime(2026, 1, 1, tzinfo=timezone.utc)}
            for n in range(count)]


def batches_of(rows: list[dict], size: int = 700) -> list[pa.RecordBatch]:
    return [pa.RecordBatch.from_pylist(rows[start:start + size], SCHEMA) for start in range(0, len(rows), size)]


@settings(max_examples=12, deadline=None)
@given(count=st.integers(0, 5_000), target=st.sampled_from([1, 20_000, 64 * 2**20]))
def test_every_row_is_written_once_and_each_files_statistics_are_its_own(tmp_path_factory, count, target):
    """Files close at the target size; together they hold the rows in order; each file's Delta
    statistics (rows, nulls, integer bounds) are those of the rows in it, so a reader skipping files
    by them skips none it needs."""
    dest = tmp_path_factory.mktemp("dest")
    rows = rows_of(count)
    with patch.object(parquet_files, "TARGET_FILE_SIZE", target):
        delta.append(delta.destination(str(dest)), "t", SCHEMA, iter(batches_of(rows)), 1)
    table = DeltaTable(str(dest / "t"))
    assert table.to_pyarrow_table().to_pylist() == rows
    files = delta.live_files(delta.destination(str(dest)), "t")
    if target == 1 and count:
        assert len(files) == -(-count // 8192)  # a file a row group: each reached the target at once
    for path in files:
        data = pq.read_table(dest / path)
        (stats,) = [json.loads(s) for s in _add_stats(dest / "t", path.split("/", 1)[1])]
        assert stats["numRecords"] == data.num_rows
        for name in ("id", "score", "name", "seen_at"):
            assert stats["nullCount"][name] == data[name].null_count
        for name in ("id", "score"):
            if data[name].null_count < data.num_rows:
                low, high = pc.min_max(data[name]).values()
                assert (stats["minValues"][name], stats["maxValues"][name]) == (low.as_py(), high.as_py())
        assert "name" not in stats["minValues"] and "seen_at" not in stats["maxValues"]
    for wanted in (0, 7, 993, 5_000):
        found = table.to_pyarrow_dataset().filter(ds.field("id") == wanted).count_rows()
        assert found == sum(row["id"] == wanted for row in rows)


def _add_stats(table_folder, name: str) -> list[str]:
    return [json.loads(line)["add"]["stats"] for entry in sorted((table_folder / "_delta_log").glob("*.json"))
            for line in entry.read_text().splitlines() if '"add"' in line and json.loads(line).get("add", {}).get("path") == name]


def test_a_column_the_table_lacks_is_added_and_older_rows_read_it_null(tmp_path):
    """A newer mirror's export adds a column to a table an older one wrote: the commit adds it to
    the table's schema, and every reader sees the older rows with it null."""
    where = delta.destination(str(tmp_path))
    older = pa.schema([field for field in SCHEMA if field.name != "tags"])
    delta.append(where, "t", older, iter([pa.RecordBatch.from_pylist(rows_of(3), older)]), 1)
    delta.append(where, "t", SCHEMA, iter(batches_of(rows_of(2, offset=5_000))), 2)
    table = DeltaTable(str(tmp_path / "t"))
    assert pa.schema(table.schema().to_arrow()).names == [*older.names, "tags"]  # added at the end
    read = table.to_pyarrow_table().sort_by("id")
    assert read.num_rows == 5
    assert read["tags"].to_pylist()[:3] == [None, None, None]
    assert sorted(map(len, read["tags"].to_pylist()[3:])) == [0, 1]
    assert [entry[delta.BATCH_KEY] for entry in table.history() if delta.BATCH_KEY in entry] == ["2", "1"]


def test_an_append_of_nothing_makes_the_table_with_its_schema(tmp_path):
    where = delta.destination(str(tmp_path))
    delta.append(where, "t", SCHEMA, iter([]), 1)
    table = DeltaTable(str(tmp_path / "t"))
    assert table.to_pyarrow_table().num_rows == 0
    assert delta.live_files(where, "t") == []
    assert pa.schema(table.schema().to_arrow()).names == SCHEMA.names
