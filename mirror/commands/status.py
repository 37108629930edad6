"""``mirror status``: what the mirror holds, where each crawler stands, how the last runs went."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from sqlite_utils import Database

from ..store import downloads
from ..store.state import all_cursors, last_runs
from ..store.vacuum import pages
from ..words import counted, human_bytes
from .cursors import describe_cursor

# Free pages worth a vacuum: a twentieth of the archive, and at least this.
FREE_WORTH_SAYING = 100 * 1024 * 1024

COUNTS = {
    "images": "SELECT count(*) FROM images",
    "images hidden, deleted or merged": "SELECT count(*) FROM images WHERE hidden_from_users = 1",
    "tags": "SELECT count(*) FROM tags",
    "tags with full records": "SELECT count(*) FROM tags WHERE raw IS NOT NULL",
    "image-tag links": "SELECT count(*) FROM image_tags",
    "comments": "SELECT count(*) FROM comments",
    "forums": "SELECT count(*) FROM forums",
    "topics": "SELECT count(*) FROM topics",
    "posts": "SELECT count(*) FROM posts",
    "galleries": "SELECT count(*) FROM galleries",
    "gallery-image links": "SELECT count(*) FROM gallery_images",
    "users": "SELECT count(*) FROM users",
    "filters": "SELECT count(*) FROM filters",
    "featured images recorded": "SELECT count(*) FROM featured_images",
    "rejected records": "SELECT count(*) FROM rejects",
}


def counts(db: Database) -> dict[str, int]:
    return {label: db.execute(sql).fetchone()[0] for label, sql in COUNTS.items()}


def download_counts(db: Database, representations: Sequence[str]) -> dict[str, int]:
    """Files pending (what the next download would fetch), kept, failed, and images still processing."""
    by_status = downloads.counts(db)
    originals = downloads.kept_originals(db)
    return {
        "files to download": downloads.outstanding(db, representations),
        "originals kept (checked by sha512)": originals,
        "thumbnails and renderings kept": by_status[downloads.DONE] - originals,
        "files failed": by_status[downloads.FAILED],
        "images waiting for thumbnails": downloads.waiting_for_thumbnails(db),
    }


def describe(db: Database, representations: Sequence[str] = ()) -> str:
    """A plain-text report, readable in a terminal and in a cron mail.

    ``representations`` are the files the config keeps; the pending download count follows them.
    """
    lines = [f"Mirror: {db.conn.execute('PRAGMA database_list').fetchone()[2]}", *_size_lines(db), "", "Records:"]
    lines += [f"  {label:<34} {value:>10,}" for label, value in counts(db).items()]
    lines += ["", f"Downloads ({', '.join(representations) or 'none configured'}):"]
    lines += [f"  {label:<34} {value:>10,}" for label, value in download_counts(db, representations).items()]
    lines += [f"  {label:<34} {value:>10}" for label, value in check_lines(downloads.check_ages(db))]
    lines += ["", "Where each crawler stands:"]
    cursors = all_cursors(db)
    lines += [f"  {name:<12} {describe_cursor(name, cursor)}" for name, cursor in cursors.items()] or ["  (none)"]
    lines += ["", "Last runs:"]
    runs = last_runs(db)
    for run in runs:
        outcome = run["status"] + (f" ({run['message']})" if run["message"] else "")
        lines.append(f"  {run['resource']:<12} {run['started_at']} -> {run['finished_at'] or '...'}  {outcome}; "
                     f"{run['fetched'] or 0} fetched, {run['new'] or 0} new, {run['updated'] or 0} updated, "
                     f"{counted(run['requests'] or 0, 'request')}")
    if not runs:
        lines.append("  (none)")
    return "\n".join(lines)


def _size_lines(db: Database) -> list[str]:
    size = pages(db)
    line = f"Size: {human_bytes(size.file_bytes)}"
    if size.free_bytes >= max(FREE_WORTH_SAYING, size.file_bytes // 20):
        line += f", of it {human_bytes(size.free_bytes)} free pages (`mirror vacuum` gives them back to the disk)"
    return [line]


def check_lines(ages: dict[str, Any]) -> list[tuple[str, str]]:
    """When the kept files were last re-hashed (``mirror verify``; a download counts as a check)."""
    return [("never re-hashed by verify", f"{ages['never_verified']:,}"),
            ("last re-hashed by verify", _day(ages["last_verified"])),
            ("oldest check (or download)", _day(ages["oldest_check"]))]


def _day(when: str | None) -> str:
    return when[:10] if when else "never"


def key(label: str) -> str:
    """A label as a JSON key: ``images hidden, deleted or merged`` -> ``images_hidden_deleted_or_merged``."""
    return re.sub(r"\W+", "_", label).strip("_")


def status_json(db: Database, representations: Sequence[str] = ()) -> dict[str, Any]:
    """What :func:`describe` says, for scripts: the same figures under stable keys (docs/nightly.md)."""
    cursors = all_cursors(db)
    return {
        "database": db.conn.execute("PRAGMA database_list").fetchone()[2],
        "records": {key(label): value for label, value in counts(db).items()},
        "downloads": {key(label): value for label, value in download_counts(db, representations).items()},
        "checks": downloads.check_ages(db),
        "cursors": {name: {"says": describe_cursor(name, cursor), "cursor": cursor} for name, cursor in cursors.items()},
        "last_runs": last_runs(db),
    }
