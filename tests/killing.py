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

from .conftest import write_config


def sync_command(config: Config, path: Path, resource: str) -> list[str]:
    """``mirror -c <config written to path> sync <resource>`` in a fresh interpreter."""
    return [sys.executable, "-m", "mirror.cli", "-c", str(write_config(config, path)), "sync", resource]


def kill_when(command: list[str], database: Path, ready: Callable[[Database], bool], timeout: float = 30) -> None:
    """Run ``command`` and SIGKILL it as soon as ``ready(db)`` holds (at any instant, no warning)."""
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.02)
        try:
            db = open_database(database, migrate=False)
        except (sqlite3.Error, StoreError):  # not created yet
            continue
        try:
            if ready(db):
                break
        except sqlite3.Error:  # its tables not created yet
            continue
        finally:
            db.close()
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    assert process.returncode == -signal.SIGKILL, "the sync ended before it could be killed"


def rerun(command: list[str]) -> None:
    """Run ``command`` to the end; it must succeed."""
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
