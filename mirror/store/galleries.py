"""Each gallery's images in gallery order, and which galleries are due a walk of their images.

A gallery's membership is replaced whole, in one transaction, once its images have all been read,
so ``gallery_images`` never holds half of an old order and half of a new one. ``gallery_walks``
is the work list: a gallery found new or changed is marked due (``CHANGED``) in the transaction
that stores it, and the walk that replaces its images clears the mark, so a killed run resumes
with exactly the galleries still to do. A gallery due only because its last walk is old
(``RECHECK``) may have been deleted since: the crawler asks whether it still exists before
walking it, since a deleted gallery's walk would find no images and wipe the order kept.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta, timezone

from sqlite_utils import Database

from ..dates import utc_text
from .history import note_event, recorder_for
from .table_marks import mark_written

CHANGED, RECHECK = 1, 2  # gallery_walks.due: found new or changed this run; walked long ago


def mark_due(db: Database, gallery_ids: Iterable[int]) -> None:
    """Galleries just stored: due a walk of their images, and (if they were gone) back."""
    ids = [(i,) for i in gallery_ids]
    db.conn.executemany(f"""INSERT INTO gallery_walks (gallery_id, due) VALUES (?, {CHANGED})
                            ON CONFLICT (gallery_id) DO UPDATE SET due = {CHANGED}""", ids)
    db.conn.executemany("DELETE FROM gone_galleries WHERE id = ?", ids)


def unwalked(db: Database, gallery_ids: Iterable[int]) -> list[int]:
    """Those of ``gallery_ids`` whose images were never walked."""
    ids = list(gallery_ids)
    if not ids:
        return []
    walked = {row[0] for row in db.execute(
        f"SELECT gallery_id FROM gallery_walks WHERE walked_at IS NOT NULL AND gallery_id IN ({','.join('?' * len(ids))})",
        ids)}
    return [i for i in ids if i not in walked]


def due_galleries(db: Database, due: int = CHANGED) -> list[int]:
    return [row[0] for row in db.execute("SELECT gallery_id FROM gallery_walks WHERE due = ? ORDER BY gallery_id",
                                         [due])]


def mark_gone(db: Database, gallery_ids: Iterable[int]) -> None:
    """The site no longer has these galleries: keep their rows and order, note when, walk them no more."""
    now = utc_text()
    rows = [(gallery_id, now) for gallery_id in gallery_ids]
    for gallery_id, _ in rows:
        if db.execute("SELECT 1 FROM gone_galleries WHERE id = ?", [gallery_id]).fetchone() is None:
            note_event(db, "galleries", gallery_id, "gone")
    db.conn.executemany("INSERT INTO gone_galleries (id, found_gone_at) VALUES (?, ?) ON CONFLICT (id) DO NOTHING",
                        rows)
    db.conn.executemany("UPDATE gallery_walks SET due = 0, walked_at = ? WHERE gallery_id = ?",
                        [(at, gallery_id) for gallery_id, at in rows])


def mark_stale_due(db: Database, days: float, limit: int) -> int:
    """Mark due the ``limit`` galleries walked longest ago, if ``days`` or more ago.

    Reordering a gallery does not touch its ``updated_at`` on the real site, so only a walk
    finds it; this spreads those walks over the nights.
    """
    if limit <= 0:
        return 0
    cutoff = utc_text(datetime.now(timezone.utc) - timedelta(days=days))
    cursor = db.execute(f"""UPDATE gallery_walks SET due = {RECHECK} WHERE gallery_id IN (
                               SELECT gallery_id FROM gallery_walks WHERE due = 0 AND walked_at <= ?
                               ORDER BY walked_at, gallery_id LIMIT ?)""", [cutoff, limit])
    return cursor.rowcount


def replace_members(db: Database, gallery_id: int, image_ids: list[int]) -> None:
    """Set the gallery's images, in order (position 0 first), and record the walk."""
    members, listed = [], set()
    for position, image_id in enumerate(image_ids):
        if image_id not in listed:  # an image listed twice keeps its first place
            listed.add(image_id)
            members.append((image_id, position))
    with db.atomic():
        kept = db.execute("SELECT image_id, position FROM gallery_images WHERE gallery_id = ? ORDER BY position",
                          [gallery_id]).fetchall()
        _note_membership(db, gallery_id, [image_id for image_id, _ in kept], image_ids)
        if kept != members:
            db.execute("DELETE FROM gallery_images WHERE gallery_id = ?", [gallery_id])
            db.conn.executemany("INSERT INTO gallery_images (gallery_id, image_id, position) VALUES (?, ?, ?)",
                                [(gallery_id, image_id, position) for image_id, position in members])
            mark_written(db, "gallery_images")
        db.execute("""INSERT INTO gallery_walks (gallery_id, due, walked_at, images) VALUES (?, 0, ?, ?)
                      ON CONFLICT (gallery_id) DO UPDATE SET due = 0, walked_at = excluded.walked_at,
                      images = excluded.images""", [gallery_id, utc_text(), len(image_ids)])


def walked_as_of(db: Database, at: str) -> None:
    """Record every gallery held (and not gone) as walked at ``at``, its images as ``gallery_images``
    holds them: for a mirror whose galleries came from a dump made then, not from its own walks.
    Without it they would never be due a rewalk, and a reorder would go unseen."""
    db.execute("""INSERT INTO gallery_walks (gallery_id, due, walked_at, images)
                  SELECT id, 0, ?, (SELECT count(*) FROM gallery_images WHERE gallery_id = galleries.id)
                  FROM galleries WHERE id NOT IN (SELECT id FROM gone_galleries)
                  ON CONFLICT (gallery_id) DO UPDATE SET due = 0, walked_at = excluded.walked_at,
                  images = excluded.images""", [at])


def _note_membership(db: Database, gallery_id: int, before: list[int], image_ids: list[int]) -> None:
    """Keep in the history which images a walk found added to or removed from a gallery it walked
    before (its images ``before``, in order), and whether the order of those it kept changed (the
    site does not say)."""
    if recorder_for(db) is None or db.execute("SELECT walked_at FROM gallery_walks WHERE gallery_id = ?",
                                               [gallery_id]).fetchone() in (None, (None,)):
        return
    after = list(dict.fromkeys(image_ids))
    was, now = set(before), set(after)
    added, removed = [i for i in after if i not in was], [i for i in before if i not in now]
    kept = was & now
    reordered = [i for i in before if i in kept] != [i for i in after if i in kept]
    if added or removed or reordered:
        note_event(db, "galleries", gallery_id, "gallery_images",
                   {"added": added, "removed": removed, "reordered": reordered})
