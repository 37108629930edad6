"""A kill at any moment of an export loses nothing: the next export ends with the same tables as
an export never interrupted, and a plain Parquet reader finds no half-written file."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

import polars as pl
import pytest

from mirror.export import export_archive
from mirror.export.tables import COMPARED, EXPORT_TABLES
from mirror.store import open_database
from mirror.store.export_state import load_export_cursor, save_export_cursor

from ..support.configs import changed, write_config
from ..support.killing import kill_at
from .reading import data_files


def copy_of(db, path):
    """The archive copied to ``path`` (SQLite's backup), to export apart from the session's."""
    target = sqlite3.connect(path)
    db.conn.backup(target)
    target.close()
    return path


def table_rows(dest, name: str) -> list[str]:
    """Every row of a table, sorted, as JSON; ``seen_at`` left out where it is the export's own time."""
    drop = {"seen_at"} if EXPORT_TABLES[name].how == COMPARED else set()
    return sorted(json.dumps({k: v for k, v in row.items() if k not in drop}, default=str, sort_keys=True)
                  for row in pl.read_delta(str(dest / name)).to_dicts())


def first_commit_of(table):
    return lambda: (table / "_delta_log" / "00000000000000000000.json").exists()


def any_file_in(table):
    return lambda: table.exists() and any(table.iterdir())


@pytest.mark.parametrize("moment", ["while images are written", "after the images' commit", "after the history's"])
def test_a_killed_export_then_a_rerun_ends_with_the_same_tables(exported, tmp_path, moment):
    killed, clean = tmp_path / "killed", tmp_path / "clean"
    config = changed(exported.config, store={"database": str(copy_of(exported.db, tmp_path / "killed.db"))})
    command = [sys.executable, "-m", "mirror.cli", "-c", str(write_config(config, tmp_path / "mirror.toml")),
               "export", str(killed)]
    ready = {"while images are written": any_file_in(killed / "images"),
             "after the images' commit": first_commit_of(killed / "images"),
             "after the history's": first_commit_of(killed / "history")}[moment]
    assert kill_at(command, ready), "the export ended before it could be killed"
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    db = open_database(copy_of(exported.db, tmp_path / "clean.db"))
    export_archive(db, str(clean))
    for name in EXPORT_TABLES:
        assert table_rows(killed, name) == table_rows(clean, name), name
        plain = sum(pl.read_parquet(p).height for p in data_files(killed / name))
        assert plain == pl.read_delta(str(killed / name)).height, name


def test_the_file_a_killed_write_left_behind_is_removed_by_the_next_export(exported, tmp_path):
    """A kill while a data file is written leaves it without a commit: Delta readers skip it, a plain
    Parquet reader would not. The next export, finding the batch unfinished, deletes it."""
    dest = tmp_path / "dest"
    db = open_database(copy_of(exported.db, tmp_path / "mirror.db"))
    export_archive(db, str(dest))
    cursor = load_export_cursor(db)
    save_export_cursor(db, {**cursor, "pending": {"batch": cursor["batch"] + 1, "low": cursor["through"],
                                                  "high": cursor["through"], "after": cursor["ids"],
                                                  "upto": cursor["ids"]}})
    kept = data_files(dest / "images")[0]
    half = kept.with_name("part-00001-killed-c000.zstd.parquet")
    half.write_bytes(kept.read_bytes())  # what the killed run had written of its file
    export_archive(db, str(dest))
    assert not half.exists() and kept.exists()
    assert sum(pl.read_parquet(p).height for p in data_files(dest / "images")) == \
        pl.read_delta(str(dest / "images")).height
