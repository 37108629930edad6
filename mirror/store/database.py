"""Opening the mirror's SQLite database."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TypeVar

from sqlite_utils import Database

from .schema import apply_migrations


class StoreError(Exception):
    """The database cannot be opened or written; the message says which file and why."""


def open_database(path: str | Path, *, migrate: bool = True) -> Database:
    """Open (creating if needed) the mirror at ``path`` in WAL mode, migrated to the newest schema.

    WAL lets Datasette read while a sync writes; ``synchronous=NORMAL`` is durable across
    application crashes, which is what resumable syncs rely on.
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        db = Database(path)
        db.enable_wal()
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("PRAGMA busy_timeout=30000")
        if migrate:
            apply_migrations(db)
    except (sqlite3.Error, OSError) as e:
        raise StoreError(f"cannot open the database {path}: {e}") from None
    return db


DATE_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
# Keys per ``IN (...)`` query, to stay under SQLite's bound-variable limit.
CHUNK = 400

T = TypeVar("T")


def utc_text(when: datetime | None = None) -> str:
    """``when`` (default now) as the API writes dates: ISO 8601, UTC, seconds, trailing Z."""
    return (when or datetime.now(timezone.utc)).astimezone(timezone.utc).strftime(DATE_FORMAT)


utc_now = utc_text


def chunks(items: Sequence[T], size: int = CHUNK) -> Iterator[list[T]]:
    """``items`` in consecutive lists of at most ``size``."""
    for start in range(0, len(items), size):
        yield list(items[start:start + size])
