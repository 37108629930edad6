"""``mirror sync profiles``: the users the mirrored records name, through /profiles/:id.

The API has no user list or search, so every profile costs one request. Profiles change slowly
(counts, links, awards), so a user is fetched when never fetched before or when the kept profile
is older than ``refresh_days``. A user with no row is fetched the night it is named. A row that is
a name only (``mirror import-dump`` writes the dump's users as their id and name: a dump holds no
more) has never been fetched either, but a dump names every user at once, a hundred thousand on a
large board, so those come ``refresh_per_run`` a run, the user with the newest activity (upload,
comment, post) first, ahead of the profiles due a refresh, which take what is left of those
``refresh_per_run``, oldest first. A 404 (a deleted account) is remembered in ``gone_users`` and
asked again no sooner than ``refresh_days``, so deleted uploaders do not cost a request every night.

Each profile is committed as it arrives and then counts as fresh, so the database itself is the
cursor: a run killed at any instant resumes by leaving out the profiles already fetched. The saved
cursor only says how far the last run got, for ``mirror status``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from sqlite_utils import Database

from ..api import NotFound, PhilomenaClient
from ..dates import utc_text
from ..store.specs import USERS
from ..store.writer import RecordWriter
from .report import Progress, SyncReport, recorded_run
from .saving import PageSaver

STATE_NAME = "profiles"

# Where mirrored records name a user: (table, column).
USER_COLUMNS = (("images", "uploader_id"), ("comments", "user_id"), ("posts", "user_id"), ("topics", "user_id"),
                ("galleries", "creator_id"), ("filters", "user_id"))


# Each user's latest upload, comment and post, read from indexes: an uploader's newest image is its
# highest id (ids follow upload order), and comments and posts are indexed by user and date.
ACTIVITY = """
    SELECT uploader_id AS id, created_at AS latest FROM images
    WHERE id IN (SELECT max(id) FROM images WHERE uploader_id IS NOT NULL GROUP BY uploader_id)
    UNION ALL SELECT user_id, max(created_at) FROM comments WHERE user_id IS NOT NULL GROUP BY user_id
    UNION ALL SELECT user_id, max(created_at) FROM posts WHERE user_id IS NOT NULL GROUP BY user_id"""


def _named() -> str:
    return " UNION ".join(f'SELECT "{column}" AS id FROM "{table}"' for table, column in USER_COLUMNS)


def due_user_ids(db: Database, cutoff: str, refresh_limit: int | None = None) -> tuple[list[int], int]:
    """Users named by mirrored records never asked for; then, up to ``refresh_limit`` in all, those
    held as a name only (:func:`name_only_user_ids`) and those whose profile (or 404) is older than
    ``cutoff``, oldest first. Also how many held as a name only wait for a later run."""
    new = [row[0] for row in db.execute(f"""
        SELECT id FROM ({_named()})
        WHERE id IS NOT NULL AND id NOT IN (SELECT id FROM users) AND id NOT IN (SELECT id FROM gone_users)
        ORDER BY id""")]
    waiting = name_only_user_ids(db, cutoff)
    names = waiting[:refresh_limit]
    left = -1 if refresh_limit is None else refresh_limit - len(names)
    stale = [row[0] for row in db.execute(f"""
        SELECT id, max(asked) AS last_asked FROM (
          SELECT id, mirrored_at AS asked FROM users UNION ALL SELECT id, checked_at FROM gone_users)
        WHERE id IN ({_named()}) AND id NOT IN (SELECT id FROM users WHERE created_at IS NULL)
        GROUP BY id HAVING last_asked < ?
        ORDER BY last_asked, id LIMIT ?""", [cutoff, left])] if left else []
    return new + names + stale, len(waiting) - len(names)


def name_only_user_ids(db: Database, cutoff: str) -> list[int]:
    """Users named by mirrored records whose row is a name only (no ``created_at``: no profile was
    ever fetched), newest activity first; a 404 since ``cutoff`` leaves one out."""
    if db.execute("SELECT 1 FROM users WHERE created_at IS NULL LIMIT 1").fetchone() is None:
        return []  # a mirror made by the API: no need to read its records' dates
    return [row[0] for row in db.execute(f"""
        SELECT users.id FROM users
        LEFT JOIN (SELECT id, max(latest) AS latest FROM ({ACTIVITY}) GROUP BY id) AS activity USING (id)
        WHERE users.created_at IS NULL AND users.id IN ({_named()})
          AND users.id NOT IN (SELECT id FROM gone_users WHERE checked_at >= ?)
        ORDER BY activity.latest IS NULL, activity.latest DESC, users.id DESC""", [cutoff])]


def cutoff_for(refresh_days: float) -> str:
    return utc_text(datetime.now(timezone.utc) - timedelta(days=refresh_days))


@dataclass(frozen=True)
class ProfilesOptions:
    """Profiles older than ``refresh_days`` are fetched again, at most ``refresh_per_run`` a run
    (None: all of them); new users always come."""

    refresh_days: float = 30
    refresh_per_run: int | None = None


async def sync(client: PhilomenaClient, db: Database, options: ProfilesOptions,
               progress: Progress | None = None) -> SyncReport:
    """Fetch the profiles that are due; see the module docstring."""
    refresh_days = options.refresh_days
    gone = 0
    with recorded_run(db, client, STATE_NAME) as report:
        saver = PageSaver(db, RecordWriter(db, USERS, client.base_url), report, progress, STATE_NAME)
        due, waiting = due_user_ids(db, cutoff_for(refresh_days), options.refresh_per_run)
        report.expected = len(due)
        for user_id in due:
            try:
                record = await client.profile(user_id)
            except NotFound:
                gone += 1
                record = None
            found = record is not None
            saver.save([record] if found else [], {"last_id": user_id}, also=lambda _, u=user_id, f=found: _settle(db, u, f))
        if gone:
            report.note(f"{gone} deleted accounts (404) not asked again for {refresh_days:g} days")
        if waiting:
            report.note(f"{waiting:,} users known by name only (from a dump) wait for their profiles: "
                        f"{options.refresh_per_run} a run (profiles.refresh_per_run)")
    return report


def _settle(db: Database, user_id: int, found: bool) -> None:
    """A profile found is no longer gone; a 404 is remembered with when it was asked."""
    if found:
        db.execute("DELETE FROM gone_users WHERE id = ?", [user_id])
    else:
        db["gone_users"].upsert({"id": user_id, "checked_at": utc_text()}, pk="id")
