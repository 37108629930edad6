"""What `mirror export` has written, kept in the database: its cursor and each record's digest.

The cursor (``sync_state`` row ``export``) says which batch was last written to which DEST, up
to which ``mirrored_at`` and which history row; a batch begun and not finished is kept as
``pending`` with its bounds, so the run after a kill writes the same batch again, not another.
The digests (``export_digests``) are each record's last exported version, hashed: a record a sync
read again unchanged has a new ``mirrored_at`` and the same digest, and is not a new version.
Only this module writes them; :mod:`mirror.export` reads and calls it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from .database import chunks, database_file
from .state import load_cursor, save_cursor

__all__ = ["EXPORT_CURSOR", "load_export_cursor", "save_export_cursor", "stored_digests", "save_digests",
           "forget_export", "reading_connection"]

EXPORT_CURSOR = "export"


def load_export_cursor(db: Database) -> dict[str, Any]:
    """The export's cursor, or ``{}`` before the first export."""
    return load_cursor(db, EXPORT_CURSOR)


def save_export_cursor(db: Database, cursor: dict[str, Any]) -> None:
    """Keep ``cursor`` (committed at once: it is what a rerun after a kill starts from)."""
    with db.conn:
        save_cursor(db, EXPORT_CURSOR, cursor)


def stored_digests(db: Database, table: str, keys: Sequence[str]) -> dict[str, int]:
    """The digest last exported of each of ``keys`` of ``table`` that has one."""
    found: dict[str, int] = {}
    for chunk in chunks(keys):
        marks = ",".join("?" * len(chunk))
        found.update(db.execute(f"SELECT record_key, digest FROM export_digests WHERE tbl = ? AND record_key IN ({marks})",
                                [table, *chunk]).fetchall())
    return found


def save_digests(db: Database, table: str, digests: Iterable[tuple[str, int]]) -> None:
    """Keep the digests of the versions of ``table`` just exported, in one transaction."""
    with db.conn:
        db.conn.executemany("INSERT INTO export_digests (tbl, record_key, digest) VALUES (?, ?, ?) "
                            "ON CONFLICT (tbl, record_key) DO UPDATE SET digest = excluded.digest",
                            [(table, key, digest) for key, digest in digests])


def forget_export(db: Database) -> None:
    """Start the export afresh (a new, empty DEST): no digest and no cursor kept."""
    with db.conn:
        db.execute("DELETE FROM export_digests")
        db.execute("DELETE FROM sync_state WHERE name = ?", [EXPORT_CURSOR])


def reading_connection(db: Database) -> sqlite3.Connection:
    """A read-only connection to ``db``'s file that another thread may use: the Delta writer pulls
    the rows it writes from its own threads, and SQLite refuses a connection made in another."""
    path = database_file(db)
    conn = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False)
    conn.execute("PRAGMA busy_timeout=30000")
    return conn
