"""What `mirror export` has written, kept in the database per DEST: its cursor and each record's digest.

A DEST's cursor (``export_dests``, one row per DEST by its URL) says which batch was last written
there, up to which ``mirrored_at`` and which history row; a batch begun and not finished is kept
as ``pending`` with its bounds, so the run after a kill writes the same batch again, not another.
The digests (``export_digests``, by the DEST's number) are each record's last version exported
there, hashed: a record a sync read again unchanged has a new ``mirrored_at`` and the same digest,
and is not a new version. Kept per DEST, a one-off export to another folder leaves the nightly
DEST's state as it was. The cursor of the last export, wherever it went, is also the ``sync_state``
row ``export``, which `mirror status` shows. Only this module writes them; :mod:`mirror.export`
reads and calls it.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from .database import chunks, database_file
from .state import load_cursor, save_cursor

__all__ = ["EXPORT_CURSOR", "load_export_cursor", "save_export_cursor", "dest_number", "stored_digests",
           "save_digests", "forget_export", "reading_connection"]

EXPORT_CURSOR = "export"


def load_export_cursor(db: Database, dest: str | None = None) -> dict[str, Any]:
    """DEST's cursor (the last export's, wherever it went, without ``dest``), or ``{}`` before the
    first export there."""
    if dest is None:
        return load_cursor(db, EXPORT_CURSOR)
    row = db.execute("SELECT cursor FROM export_dests WHERE url = ?", [dest]).fetchone()
    return json.loads(row[0]) if row else {}


def save_export_cursor(db: Database, cursor: dict[str, Any]) -> None:
    """Keep ``cursor`` as its DEST's (``cursor["dest"]``) and the last export's (committed at once:
    it is what a rerun after a kill starts from)."""
    with db.conn:
        db.execute("INSERT INTO export_dests (url, cursor) VALUES (?, ?) ON CONFLICT (url) DO UPDATE "
                   "SET cursor = excluded.cursor", [cursor["dest"], json.dumps(cursor)])
        save_cursor(db, EXPORT_CURSOR, cursor)


def dest_number(db: Database, dest: str) -> int:
    """The number DEST's digests are kept under (0 for a DEST never exported to: it has none)."""
    row = db.execute("SELECT id FROM export_dests WHERE url = ?", [dest]).fetchone()
    return row[0] if row else 0


def stored_digests(db: Database, dest: int, table: str, keys: Sequence[str]) -> dict[str, int]:
    """The digest last exported to DEST (its number) of each of ``keys`` of ``table`` that has one."""
    found: dict[str, int] = {}
    for chunk in chunks(keys):
        found.update(db.execute("SELECT record_key, digest FROM export_digests WHERE dest = ? AND tbl = ? "
                                "AND record_key IN (SELECT value FROM json_each(?))",
                                [dest, table, json.dumps(list(chunk))]).fetchall())
    return found


def save_digests(db: Database, dest: int, table: str, digests: Iterable[tuple[str, int]]) -> None:
    """Keep the digests of the versions of ``table`` just exported to DEST (its number), in one
    transaction, read as they are written: a first export of the whole board has millions."""
    with db.conn:
        db.conn.executemany("INSERT INTO export_digests (dest, tbl, record_key, digest) VALUES (?, ?, ?, ?) "
                            "ON CONFLICT (dest, tbl, record_key) DO UPDATE SET digest = excluded.digest",
                            ((dest, table, key, digest) for key, digest in digests))


def forget_export(db: Database, dest: str) -> None:
    """Start the export to DEST afresh (a new, empty DEST): no digest and no cursor kept for it;
    other DESTs' are left as they are."""
    with db.conn:
        db.execute("DELETE FROM export_digests WHERE dest = (SELECT id FROM export_dests WHERE url = ?)", [dest])
        db.execute("DELETE FROM export_dests WHERE url = ?", [dest])


def reading_connection(db: Database | str) -> sqlite3.Connection:
    """A read-only connection to ``db``'s file (or the file named) that another thread may use: the
    Delta writer pulls the rows it writes from its own threads, and SQLite refuses a connection made
    in another."""
    path = db if isinstance(db, str) else database_file(db)
    conn = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False)
    conn.execute("PRAGMA busy_timeout=30000")
    return conn
