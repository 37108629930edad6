"""Sync bookkeeping: each crawler's cursor, and one row per run.

A cursor is a small JSON object owned by its crawler. It is written in the same transaction as
the page it describes, so a run killed at any instant resumes exactly where its last committed
page left off.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from sqlite_utils import Database

from ..dates import utc_text
from .history import counters_kept, start_recording, stop_recording


def load_cursor(db: Database, name: str) -> dict[str, Any]:
    """The cursor saved under ``name``, or ``{}`` if that crawler never ran."""
    rows = list(db.execute("SELECT cursor FROM sync_state WHERE name = ?", [name]))
    return json.loads(rows[0][0]) if rows else {}


def save_cursor(db: Database, name: str, cursor: dict[str, Any]) -> None:
    """Save ``cursor``; call it inside the transaction that stored the page it points past."""
    db.execute("INSERT INTO sync_state (name, cursor, updated_at) VALUES (?, ?, ?) ON CONFLICT (name) DO UPDATE "
               "SET cursor = excluded.cursor, updated_at = excluded.updated_at", [name, json.dumps(cursor), utc_text()])


def all_cursors(db: Database) -> dict[str, dict[str, Any]]:
    return {name: json.loads(cursor) for name, cursor in db.execute("SELECT name, cursor FROM sync_state")}


@dataclass
class Run:
    """One run of one crawler, as recorded in ``sync_runs``."""

    id: int
    resource: str

    def finish(self, db: Database, *, status: str, message: str | None = None, **counts: int) -> None:
        stop_recording(db)
        db["sync_runs"].update(self.id, {"finished_at": utc_text(), "status": status, "message": message, **counts})


def start_run(db: Database, resource: str, *, filter_id: int | None = None) -> Run:
    """Record that a run of ``resource`` started; :meth:`Run.finish` records how it ended.

    Until then, what the writers store on ``db`` is kept in its history (:mod:`.history`), with
    counters at the grain set for ``db`` (:func:`.history.keep_counters`)."""
    table = db["sync_runs"]
    table.insert({"resource": resource, "started_at": utc_text(), "status": "running", "filter_id": filter_id})
    run = Run(table.last_pk, resource)
    start_recording(db, run.id, counters_kept(db))
    return run


def last_runs(db: Database) -> list[dict[str, Any]]:
    """The latest run of each resource."""
    return list(db.query("""
        SELECT * FROM sync_runs WHERE id IN (SELECT max(id) FROM sync_runs GROUP BY resource) ORDER BY resource"""))
