"""Opening the mirror's SQLite database."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TypeVar

from sqlite_utils import Database

from .errors import database_errors, store_error
from .schema import apply_migrations, check_schema

# Seconds a write waits for another program's write transaction before the run stops (store.busy_timeout).
DEFAULT_BUSY_TIMEOUT = 30.0


def open_database(path: str | Path, *, migrate: bool = True, busy_timeout: float = DEFAULT_BUSY_TIMEOUT) -> Database:
    """Open (creating if needed) the mirror at ``path`` in WAL mode, migrated to the newest schema.

    WAL lets Datasette read while a sync writes; ``synchronous=NORMAL`` is durable across
    application crashes, which is what resumable syncs rely on. A write waits ``busy_timeout``
    seconds for another program's write transaction, then fails with a StoreError saying so.
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise store_error(e, f"the folder of the database {path}", busy_timeout) from None
    with database_errors(path, busy_timeout):
        db = Database(path)
        db.execute(f"PRAGMA busy_timeout={round(busy_timeout * 1000)}")
        check_schema(db, path)
        db.enable_wal()
        db.execute("PRAGMA synchronous=NORMAL")
        if migrate:
            apply_migrations(db)
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
