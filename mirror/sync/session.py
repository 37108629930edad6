"""Resuming a killed `mirror sync` where it stopped, not from its first resource.

Each crawler resumes its own walk from its cursor, but a rerun of a full sync used to run every
resource again: the ones the killed run had finished cost their "what changed?" requests once more
(a page of images, the tag refresh, the comment audit, every forum's first page, ...), a dozen
requests a kill for nothing, since those resources had just been brought up to date.

A run of several resources therefore keeps a session in the ``sync`` cursor: which resources it
runs, and the last ``sync_runs`` id before it began. A rerun of the same resources within
:data:`RESUME_WITHIN` skips those that ended ``ok`` in the session (their ``sync_runs`` row is
committed with their last page, so nothing is skipped that did not finish). The session ends,
and its cursor goes, when the run completes, downloads included. An older session is not resumed:
the next nightly run must ask every resource what changed, whatever the night before did.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta, timezone

from sqlite_utils import Database

from ..dates import parse_utc, utc_text
from ..store.state import load_cursor, save_cursor

STATE_NAME = "sync"
# Resources finished this recently are not asked again by a rerun; a nightly run always starts afresh.
RESUME_WITHIN = timedelta(hours=12)


def begin(db: Database, resources: Sequence[str]) -> set[str]:
    """Start a session for ``resources``, or resume the killed one; the resources it already finished."""
    session = load_cursor(db, STATE_NAME)
    if session.get("resources") == list(resources) and _recent(session.get("started_at")):
        return finished_since(db, session["after_run"])
    (after_run,) = db.execute("SELECT coalesce(max(id), 0) FROM sync_runs").fetchone()
    with db.atomic():
        save_cursor(db, STATE_NAME, {"resources": list(resources), "after_run": after_run,
                                     "started_at": utc_text()})
    return set()


def end(db: Database) -> None:
    """The run completed: the next one starts a session of its own."""
    with db.atomic():
        db.execute("DELETE FROM sync_state WHERE name = ?", [STATE_NAME])


def finished_since(db: Database, after_run: int) -> set[str]:
    """Resources with a run that ended ``ok`` after ``sync_runs`` id ``after_run``."""
    return {row[0] for row in db.execute(
        "SELECT DISTINCT resource FROM sync_runs WHERE id > ? AND status = 'ok'", [after_run])}


def _recent(started_at: str | None) -> bool:
    started = parse_utc(started_at) if started_at else None
    return started is not None and datetime.now(timezone.utc) - started < RESUME_WITHIN
