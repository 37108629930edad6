"""``mirror status``: what the mirror holds, where each crawler stands, how the last runs went."""

from __future__ import annotations

import json

from sqlite_utils import Database

from .store.state import all_cursors, last_runs

COUNTS = {
    "images": "SELECT count(*) FROM images",
    "images hidden, deleted or merged": "SELECT count(*) FROM images WHERE hidden_from_users = 1",
    "tags": "SELECT count(*) FROM tags",
    "image-tag links": "SELECT count(*) FROM image_tags",
    "rejected records": "SELECT count(*) FROM rejects",
}


def counts(db: Database) -> dict[str, int]:
    return {label: db.execute(sql).fetchone()[0] for label, sql in COUNTS.items()}


def describe(db: Database) -> str:
    """A plain-text report, readable in a terminal and in a cron mail."""
    lines = [f"Mirror: {db.conn.execute('PRAGMA database_list').fetchone()[2]}", "", "Records:"]
    lines += [f"  {label:<34} {value:>10,}" for label, value in counts(db).items()]
    lines += ["", "Cursors:"]
    cursors = all_cursors(db)
    lines += [f"  {name:<12} {json.dumps(cursor, sort_keys=True)}" for name, cursor in cursors.items()] or ["  (none)"]
    lines += ["", "Last runs:"]
    for run in last_runs(db) or []:
        outcome = run["status"] + (f" ({run['message']})" if run["message"] else "")
        lines.append(f"  {run['resource']:<12} {run['started_at']} -> {run['finished_at'] or '...'}  {outcome}; "
                     f"{run['fetched'] or 0} fetched, {run['new'] or 0} new, {run['updated'] or 0} updated, "
                     f"{run['requests'] or 0} requests")
    if not last_runs(db):
        lines.append("  (none)")
    return "\n".join(lines)
