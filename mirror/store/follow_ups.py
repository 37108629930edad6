"""Which images count as mirrored, and which of them each follow-up crawler has covered.

Comments and galleries (scope ``mirrored``) follow the images the images crawler mirrors. Each
covers an image once (its comments walked, the galleries holding it found) and then learns of
later changes by date, so ``image_progress`` records which images are done; an image mirrored
later, by a new upload or a changed query, is simply not done yet.

The galleries crawler also stores the images of the galleries it walks, so that
``gallery_images`` joins; those that were not mirrored already are listed in
``gallery_only_images`` with the ``mirrored_at`` the galleries crawler wrote. They do not count as
mirrored (else every gallery would pull in the galleries of its images, and so on across the
site) until another crawler rewrites the row, which moves ``mirrored_at``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlite_utils import Database

from ..dates import utc_text
from .database import chunks
from .images import ImageWriter
from .records import record_ids
from .writer import Saved

MIRRORED = """NOT EXISTS (SELECT 1 FROM gallery_only_images AS g
                          WHERE g.image_id = images.id AND g.mirrored_at = images.mirrored_at)"""

# The mirrored, visible images a resource (``?``) has not covered.
_PENDING = f"""FROM images WHERE hidden_from_users = 0 AND {MIRRORED}
              AND NOT EXISTS (SELECT 1 FROM image_progress AS p WHERE p.resource = ? AND p.image_id = images.id)"""


def pending_images(db: Database, resource: str, limit: int) -> list[int]:
    """Up to ``limit`` mirrored, visible images ``resource`` has not covered, by id.

    Hidden images are left out: the site shows nothing of theirs. One unhidden later is pending
    again, since it was never marked.
    """
    return [row[0] for row in db.execute(f"SELECT id {_PENDING} ORDER BY id LIMIT ?", [resource, limit])]


def cover_pending(db: Database, resource: str) -> None:
    """Record that ``resource`` has covered every pending image, as a complete first run would:
    for a mirror whose records came from elsewhere (a dump) rather than from its own walks."""
    db.execute(f"INSERT INTO image_progress (resource, image_id, done_at) SELECT ?, id, ? {_PENDING}",
               [resource, utc_text(), resource])


def mirrored_images_after(db: Database, after: int, limit: int) -> list[int]:
    """Up to ``limit`` mirrored images with ids above ``after``, by id."""
    sql = f"SELECT id FROM images WHERE id > ? AND {MIRRORED} ORDER BY id LIMIT ?"
    return [row[0] for row in db.execute(sql, [after, limit])]


def mirrored_count(db: Database) -> int:
    return db.execute(f"SELECT count(*) FROM images WHERE {MIRRORED}").fetchone()[0]


def mark_covered(db: Database, resource: str, image_ids: Iterable[int]) -> None:
    """Record that ``resource`` has covered these images; call it in the page's transaction."""
    now = utc_text()
    db.conn.executemany("INSERT OR REPLACE INTO image_progress (resource, image_id, done_at) VALUES (?, ?, ?)",
                        [(resource, i, now) for i in image_ids])


def mirrored_among(db: Database, image_ids: Iterable[int]) -> set[int]:
    """Those of ``image_ids`` that are mirrored."""
    ids = sorted(set(image_ids))
    found: set[int] = set()
    for chunk in chunks(ids):
        sql = f"SELECT id FROM images WHERE id IN ({','.join('?' * len(chunk))}) AND {MIRRORED}"
        found |= {row[0] for row in db.execute(sql, chunk)}
    return found


def save_member_images(db: Database, writer: ImageWriter, records: list[Any]) -> Saved:
    """Store a page of a gallery's images, noting those that were not mirrored before."""
    ids = record_ids(records)
    with db.atomic():
        before = _mirrored_at(db, ids)
        only = _gallery_only(db, ids)
        saved = writer.save_page(records)
        after = _mirrored_at(db, ids)
        stale = [i for i in ids if i in only and before.get(i) != only[i]]
        if stale:  # rewritten by another crawler since: mirrored in their own right
            db.execute(f"DELETE FROM gallery_only_images WHERE image_id IN ({','.join('?' * len(stale))})", stale)
        fresh = [(i, after[i]) for i in ids if i in after and (i not in before or only.get(i) == before[i])]
        db.conn.executemany("INSERT OR REPLACE INTO gallery_only_images (image_id, mirrored_at) VALUES (?, ?)", fresh)
    return saved


def _mirrored_at(db: Database, ids: list[int]) -> dict[int, str]:
    if not ids:
        return {}
    return dict(db.execute(f"SELECT id, mirrored_at FROM images WHERE id IN ({','.join('?' * len(ids))})", ids))


def _gallery_only(db: Database, ids: list[int]) -> dict[int, str]:
    if not ids:
        return {}
    sql = f"SELECT image_id, mirrored_at FROM gallery_only_images WHERE image_id IN ({','.join('?' * len(ids))})"
    return dict(db.execute(sql, ids))


def forget_covered(db: Database, resource: str) -> None:
    """Start ``resource`` over: its cursor was reset (a new scope or filter)."""
    db.execute("DELETE FROM image_progress WHERE resource = ?", [resource])
