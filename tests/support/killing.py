"""Killing a sync with SIGKILL part-way, for the tests that a rerun ends where an uninterrupted run does."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from sqlite_utils import Database

from mirror.config import Config
from mirror.store import StoreError, open_database

from ..support.configs import write_config

# Our own bookkeeping: when a row was written or checked, how often a file was tried; never what the site said.
BOOKKEEPING = {"mirrored_at", "first_seen_at", "downloaded_at", "seen_at", "checked_at", "done_at", "walked_at",
               "found_gone_at", "attempts", "computed_at"}
# Tables whose ``updated_at`` is the mirror's (elsewhere it is the site's).
OWN_UPDATED_AT = {"downloads", "topic_progress"}
# Tables about runs rather than what was mirrored.
RUN_TABLES = {"_sqlite_migrations", "sync_state", "sync_runs"}
# The history is compared on its own (ids, run ids and times differ from one run to another); the
# first sightings' counts (migration 0027) follow from it, with the times of the run that wrote them.
HISTORY_TABLES = {"history", "image_tag_changes", "history_first_seen"}


def sync_command(config: Config, path: Path, resource: str = "") -> list[str]:
    """``mirror -c <config written to path> sync [resource]`` in a fresh interpreter (every enabled
    resource and the downloads when ``resource`` is empty)."""
    command = [sys.executable, "-m", "mirror.cli", "-c", str(write_config(config, path)), "sync"]
    return [*command, resource] if resource else command


def kill_at(command: list[str], ready: Callable[[], bool], timeout: float = 30, poll: float = 0.02) -> bool:
    """Run ``command`` and SIGKILL it as soon as ``ready()`` holds (at any instant, no warning).

    True when it was killed; False when it ended first, which it must do successfully (whether it
    may end at all is the caller's to say).
    """
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None and not ready():
        time.sleep(poll)
    if process.poll() is None:
        os.kill(process.pid, signal.SIGKILL)
    _, stderr = process.communicate()
    if process.returncode == -signal.SIGKILL:
        return True
    assert process.returncode == 0, stderr.decode(errors="replace")
    return False


def kill_when(command: list[str], database: Path, ready: Callable[[Database], bool], timeout: float = 30) -> None:
    """Run ``command`` and SIGKILL it as soon as ``ready(db)`` holds; it must not end before."""
    assert kill_at(command, lambda: reached(database, ready), timeout), "the sync ended before it could be killed"


def reached(database: Path, ready: Callable[[Database], bool]) -> bool:
    """Whether ``ready(db)`` holds of the database a running command writes (not while it is not made yet)."""
    try:
        db = open_database(database, migrate=False)
    except (sqlite3.Error, StoreError):  # not created yet
        return False
    try:
        return ready(db)
    except sqlite3.Error:  # its tables not created yet
        return False
    finally:
        db.close()


def rerun(command: list[str]) -> None:
    """Run ``command`` to the end; it must succeed."""
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def assert_store_intact(database: Path) -> None:
    """SQLite finds the file sound, and every full-text index agrees with its table, row for row."""
    db = sqlite3.connect(database)
    try:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        for (fts,) in db.execute("SELECT name FROM sqlite_master WHERE sql LIKE 'CREATE VIRTUAL TABLE%USING FTS5%'"):
            table = fts.removesuffix("_fts")
            # Raises "database disk image is malformed" when the index and the content table differ.
            db.execute(f"INSERT INTO {fts}({fts}, rank) VALUES('integrity-check', 1)")
            if not db.execute("SELECT 1 FROM sqlite_master WHERE name = ?", [f"{fts}_docsize"]).fetchone():
                continue  # an index that keeps no lengths (the descriptions' trigrams): the check above holds
            indexed = db.execute(f"SELECT count(*) FROM {fts}_docsize").fetchone()[0]
            assert indexed == db.execute(f"SELECT count(*) FROM {table}").fetchone()[0], fts
    finally:
        db.close()


def history_state(database: Path) -> list[tuple]:
    """The history kept, less ids, runs and times: (resource, key, event, changes), sorted."""
    db = sqlite3.connect(database)
    try:
        return sorted(db.execute("SELECT resource, record_key, event, coalesce(changes, '') FROM history"))
    finally:
        db.close()


def assert_history_agrees(database: Path) -> None:
    """History and rows agree, whatever instant a run was killed at: each record kept has exactly
    one first version in the history, its own row or one of a run's counted first sightings
    (mirror.store.first_sightings: as many as the records with no row), and the history names no
    record the tables do not hold."""
    db = sqlite3.connect(database)
    try:
        first = db.execute("SELECT resource, record_key, count(*) FROM history WHERE event = 'first_seen' "
                           "GROUP BY 1, 2").fetchall()
        assert all(count == 1 for _, _, count in first), [row for row in first if row[2] != 1][:3]
        counted = dict(db.execute("SELECT resource, sum(count) FROM history_first_seen WHERE counted = 1 "
                                  "GROUP BY resource"))
        for table in {resource for resource, _, _ in first} | set(counted):
            key = "json_array(forum_short_name, slug)" if table == "topics" else (
                "short_name" if table == "forums" else "id")
            kept = {str(row[0]) for row in db.execute(f"SELECT {key} FROM {table} WHERE raw IS NOT NULL")}
            seen = {key for resource, key, _ in first if resource == table}
            assert seen <= kept and len(kept - seen) == counted.get(table, 0), (table, sorted(seen ^ kept)[:3],
                                                                                 counted.get(table))
    finally:
        db.close()


def mirror_state(database: Path, files: Path) -> dict[str, list]:
    """Everything mirrored, for comparing two mirrors: every table's rows (raw included) less our
    bookkeeping times, and every kept file's bytes."""
    db = sqlite3.connect(database)
    try:
        state = {}
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        # Full-text indexes (and their shadow tables) and planner statistics are derived data whose
        # layout depends on how the writes were batched; their contents are checked elsewhere.
        virtual = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE sql LIKE 'CREATE VIRTUAL TABLE%'")]
        for table in tables:
            if (table in RUN_TABLES | HISTORY_TABLES or table.startswith("sqlite_stat")
                    or any(table == v or table.startswith(v + "_") for v in virtual)):
                continue
            columns = [r[1] for r in db.execute(f"PRAGMA table_info('{table}')")
                       if r[1] not in BOOKKEEPING and not (r[1] == "updated_at" and table in OWN_UPDATED_AT)]
            listed = ", ".join(f'"{c}"' for c in columns)
            state[table] = db.execute(f"SELECT {listed} FROM {table} ORDER BY {listed}").fetchall()
    finally:
        db.close()
    state["files"] = sorted((str(p.relative_to(files)), p.read_bytes()) for p in files.rglob("*") if p.is_file())
    return state
