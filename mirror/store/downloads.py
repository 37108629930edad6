"""Download state: which (image, representation) files are pending, kept, or given up on.

The plan is derived from the ``images`` table, so a sync that sees ``thumbnails_generated`` flip
to true is all it takes for a file to become pending. Images still processing, and hidden,
merged or deleted ones, are never planned; rows already ``done`` are never touched here, so files
kept for an image that is later hidden stay kept.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from sqlite_utils import Database

from ..dates import utc_text
from .derived import SIZED, has_representation_sql, made_by_rule_sql
from .originals import ORIGINAL_REPRESENTATION, SVG_ORIGINAL
from .raw_rebuilt import absent_sql

PENDING, DONE, FAILED = "pending", "done", "failed"

def _ready_sql(alias: str) -> str:
    """An image whose files may be downloaded: processed by the site, and not hidden. A record from
    the site's dump does not say whether it was processed (the key is absent, not false): the site
    dumps what it shows, processed long before, so its files are planned as the record names them."""
    unknown = absent_sql("images", alias, "thumbnails_generated")
    return (f"({alias}.thumbnails_generated = 1 OR ({alias}.thumbnails_generated IS NULL AND {unknown})) "
            f"AND coalesce({alias}.hidden_from_users, 0) = 0")


def _waiting_sql(alias: str) -> str:
    """Visible images the site has not finished processing."""
    return (f"coalesce({alias}.thumbnails_generated, 0) = 0 AND NOT ({absent_sql('images', alias, 'thumbnails_generated')}) "
            f"AND coalesce({alias}.hidden_from_users, 0) = 0")


def _by_rule_sql(alias: str) -> str:
    """Ready images whose files follow from the view URL by the site's rule (nearly all): every size
    and ``full``, a GIF's videos too (:func:`.derived.has_representation_sql`'s first branch)."""
    return (f"{_ready_sql(alias)} AND ({alias}.representations_kept IS NULL OR {alias}.representations_kept = "
            f"'{SIZED}') AND {alias}.view_url LIKE '%/view/%'")


def _not_by_rule_sql(alias: str) -> str:
    """Every image not in :func:`_by_rule_sql`'s class: hidden, still processing, or with its files
    listed (a few in a hundred)."""
    return f"NOT coalesce({_by_rule_sql(alias)}, 0)"


def _as_kept_sql(alias: str) -> str:
    """Ready images whose files are listed in ``representations_kept`` (another host, odd files: rare)."""
    return (f"{_ready_sql(alias)} AND NOT ({alias}.representations_kept IS NULL OR "
            f"{alias}.representations_kept = '{SIZED}')")


# The partial indexes the counts of `mirror status` read instead of every image row (some 2 kB),
# each holding the images of one of the classes above (migration 0039). A query uses one only if
# its WHERE holds every term of the index's WHERE as written: the expressions are shared, so keep
# them so (tests/download/test_status_counts.py checks the plans). Changing an expression here
# needs a migration that builds the index again: a database keeps the SQL it was made with.
COUNTING_INDEXES = {
    "images_waiting_for_thumbnails": f"ON images (id) WHERE {_waiting_sql('images')}",
    "images_files_by_rule": f"ON images (format, mime_type) WHERE {_by_rule_sql('images')}",
    "images_files_as_kept": f"ON images (id) WHERE {_as_kept_sql('images')}",
    "images_files_not_by_rule": f"ON images (id) WHERE {_not_by_rule_sql('images')}",
}
# The files kept or given up on, by name, and the originals kept, counted from an index (it
# replaces the one on status alone) rather than from the rows (some 300 bytes each).
DOWNLOADS_BY_STATUS = "downloads_by_status ON downloads (status, representation, original)"

_READY = _ready_sql("i")

# Every (image, representation) pair that may be downloaded now; :names is a JSON list of names.
_ELIGIBLE = f"""
    SELECT i.id AS image_id, r.value AS representation, {ORIGINAL_REPRESENTATION.format(name="r.value")} AS original
    FROM images i, json_each(:names) r
    WHERE {_READY}
      AND ({has_representation_sql("i", "r.value")}
           OR (r.value = :svg AND i.format = 'svg' AND {has_representation_sql("i", "'full'")}))
"""

def _has_by_rule_sql(alias: str, name: str) -> str:
    """SQL true where image row ``alias``, of the class by the rule, has file ``name``: what
    :data:`_ELIGIBLE` says of it (its view URL is one the rule reads, so it has ``full``)."""
    return f"({made_by_rule_sql(alias, name)} OR ({name} = :svg AND {alias}.format = 'svg'))"


# Not kept nor given up on: pending, or never planned.
_UNSETTLED = f"""NOT EXISTS (SELECT 1 FROM downloads d WHERE d.image_id = i.id AND d.representation = r.value
                                AND d.status != '{PENDING}')"""


def _params(names: Sequence[str]) -> dict[str, Any]:
    return {"names": json.dumps(list(names)), "svg": SVG_ORIGINAL, "now": utc_text()}


def plan(db: Database, names: Sequence[str]) -> int:
    """Bring the pending rows in line with the images table; return how many are pending.

    Adds the pairs that became eligible, drops pending pairs that no longer are (the image was
    hidden, or the representation is no longer wanted), and re-queues a kept original whose
    record now states another hash (the site replaced the file). A pending pair that was kept
    once (re-queued by ``mirror verify --repair``) is not dropped but marked failed, so the
    mirror keeps its record of the file it had.
    """
    params = _params(names)
    not_eligible = f"(image_id, representation) NOT IN (SELECT image_id, representation FROM ({_ELIGIBLE}))"
    with db.atomic():
        db.execute(f"""
            INSERT OR IGNORE INTO downloads (image_id, representation, original, status, attempts, updated_at)
            SELECT image_id, representation, original, '{PENDING}', 0, :now FROM ({_ELIGIBLE})""", params)
        db.execute(f"""
            UPDATE downloads SET status = '{FAILED}', updated_at = :now,
                reason = 'the kept copy was lost and the site no longer offers the file (hidden, or not wanted)'
            WHERE status = '{PENDING}' AND path IS NOT NULL AND {not_eligible}""", params)
        db.execute(f"DELETE FROM downloads WHERE status = '{PENDING}' AND {not_eligible}", params)
        db.execute(f"""
            UPDATE downloads SET status = '{PENDING}', reason = 'the site replaced the file', updated_at = :now
            WHERE status = '{DONE}' AND original = 1 AND EXISTS (
                SELECT 1 FROM images i WHERE i.id = downloads.image_id AND {_READY}
                  AND lower(i.sha512_hash) != downloads.sha512)""", params)
    return db.execute(f"SELECT count(*) FROM downloads WHERE status = '{PENDING}'").fetchone()[0]


def outstanding(db: Database, names: Sequence[str]) -> int:
    """Eligible pairs neither kept nor failed: what the next download would fetch (read-only).

    The pairs are :data:`_ELIGIBLE`'s, counted without reading an image row: the few images whose
    files are listed pair by pair; those whose files follow by the rule file name by file name, from
    their partial index. The other ready images, whose view URL the rule cannot read, name no file.
    """
    params = _params(names)
    having = {name: (images, with_file) for name, images, with_file in db.execute(f"""
        SELECT r.value, sum(g.images), sum(CASE WHEN {_has_by_rule_sql("g", "r.value")}
                                           THEN g.images ELSE 0 END)
        FROM (SELECT i.format, i.mime_type, count(*) AS images FROM images i WHERE {_by_rule_sql("i")}
              GROUP BY i.format, i.mime_type) g, json_each(:names) r
        GROUP BY r.value""", params)}
    return sum(_outstanding_by_rule(db, name, *having.get(name, (0, 0))) for name in names) + db.execute(f"""
        SELECT count(*) FROM images i, json_each(:names) r
        WHERE {_as_kept_sql("i")}
          AND ({has_representation_sql("i", "r.value")}
               OR (r.value = :svg AND i.format = 'svg' AND {has_representation_sql("i", "'full'")}))
          AND {_UNSETTLED}""", params).fetchone()[0]


def _outstanding_by_rule(db: Database, name: str, images: int, having: int) -> int:
    """File ``name`` of the ``images`` whose files follow by the rule (``having`` of them have
    one), neither kept nor failed.

    A name every such image has (a size, ``full``: nearly all the files) is counted as those images
    less the files of that name kept or failed, less those of them that belong to other images
    (hidden, still processing, listed). That every such file belongs to an image of the mirror holds
    because :func:`plan` makes the rows from images, the others only update them, and no image row
    is ever deleted (the test of these counts checks the last). Other names (a GIF's videos, an
    SVG) are counted image by image, over the images that have them.
    """
    params = {"name": name, "svg": SVG_ORIGINAL}
    if having < images:
        return db.execute(f"""
            SELECT count(*) FROM images i WHERE {_by_rule_sql("i")} AND {_has_by_rule_sql("i", ":name")}
              AND NOT EXISTS (SELECT 1 FROM downloads d WHERE d.image_id = i.id AND d.representation = :name
                                AND d.status != '{PENDING}')""", params).fetchone()[0]
    settled = sum(db.execute("SELECT count(*) FROM downloads WHERE status = ? AND representation = ?",
                             [status, name]).fetchone()[0] for status in _statuses(db) if status != PENDING)
    elsewhere = db.execute(f"""
        SELECT count(*) FROM images i CROSS JOIN downloads d ON d.image_id = i.id AND d.representation = :name
        WHERE {_not_by_rule_sql("i")} AND d.status != '{PENDING}'""", params).fetchone()[0]
    return images - (settled - elsewhere)


def _statuses(db: Database) -> list[str]:
    """The statuses the downloads rows hold, each found by one step along their index."""
    return [row[0] for row in db.execute("""
        WITH RECURSIVE found(status) AS (
            SELECT min(status) FROM downloads
            UNION ALL SELECT (SELECT min(status) FROM downloads WHERE status > found.status) FROM found
            WHERE found.status IS NOT NULL)
        SELECT status FROM found WHERE status IS NOT NULL""")]


def waiting_for_thumbnails(db: Database) -> int:
    """Visible images the site has not finished processing: not downloadable yet."""
    return db.execute(f"SELECT count(*) FROM images i WHERE {_waiting_sql('i')}").fetchone()[0]


def pending(db: Database, *, batch: int = 500) -> Iterator[dict[str, Any]]:
    """Pending rows with what fetching needs from their image, in (id, representation) order.

    Read in keyset batches, so a backlog of millions costs memory for one batch only.
    """
    after: tuple[int, str] = (-1, "")
    while True:
        rows = list(db.query(f"""
            SELECT d.image_id, d.representation, d.original, d.attempts, i.format, i.representations,
                   i.sha512_hash
            FROM downloads d JOIN images i ON i.id = d.image_id
            WHERE d.status = '{PENDING}' AND {_READY}
              AND (d.image_id, d.representation) > (?, ?)
            ORDER BY d.image_id, d.representation LIMIT ?""", [*after, batch]))
        yield from rows
        if len(rows) < batch:
            return
        after = (rows[-1]["image_id"], rows[-1]["representation"])


def mark_done(db: Database, image_id: int, representation: str, *, url: str, path: str, size: int, sha512: str,
              attempts: int = 0) -> None:
    """Record a file as kept: where, how big, its sha512, and when."""
    now = utc_text()
    db.execute(f"""
        INSERT INTO downloads (image_id, representation, status, url, path, bytes, sha512, downloaded_at,
                               attempts, reason, updated_at)
        VALUES (?, ?, '{DONE}', ?, ?, ?, ?, ?, ?, NULL, ?)
        ON CONFLICT (image_id, representation) DO UPDATE SET
            status = excluded.status, url = excluded.url, path = excluded.path, bytes = excluded.bytes,
            sha512 = excluded.sha512, downloaded_at = excluded.downloaded_at,
            attempts = downloads.attempts + excluded.attempts, reason = NULL, updated_at = excluded.updated_at""",
               [image_id, representation, url, path, size, sha512, now, attempts, now])
    db.conn.commit()


def mark_failed(db: Database, image_id: int, representation: str, reason: str, *, url: str | None = None,
                attempts: int = 0) -> None:
    """Record that a file could not be fetched, and why; it is not tried again unless re-queued."""
    db.execute(f"""
        UPDATE downloads SET status = '{FAILED}', reason = ?, url = coalesce(?, url),
            attempts = attempts + ?, updated_at = ?
        WHERE image_id = ? AND representation = ?""", [reason, url, attempts, utc_text(), image_id, representation])
    db.conn.commit()


# The reason of a kept file its fingerprint could not be read from, and never will be.
NOT_FINGERPRINTED = "not fingerprinted"


def mark_not_fingerprinted(db: Database, image_id: int, representation: str, why: str) -> None:
    """Note on a kept file that its fingerprint is not read, and ``why``: later runs leave it be."""
    with db.conn:
        db.execute("UPDATE downloads SET reason = ?, updated_at = ? WHERE image_id = ? AND representation = ? "
                   "AND status = 'done'", [f"{NOT_FINGERPRINTED}: {why}", utc_text(), image_id, representation])


def requeue(db: Database, keys: Sequence[tuple[int, str]], reason: str) -> None:
    """Make kept or failed files pending again (``mirror verify --repair``)."""
    with db.atomic():
        db.conn.executemany(
            f"UPDATE downloads SET status = '{PENDING}', reason = ?, updated_at = ? "
            "WHERE image_id = ? AND representation = ?",
            [(reason, utc_text(), image_id, representation) for image_id, representation in keys])


def requeue_failed(db: Database) -> int:
    """Make every failed file pending again; returns how many."""
    with db.atomic():
        cursor = db.execute(f"UPDATE downloads SET status = '{PENDING}', updated_at = ? WHERE status = '{FAILED}'",
                            [utc_text()])
    return cursor.rowcount


# The slice of the kept files a file belongs to, for ``mirror verify --sample K/N``: 1 to :parts.
SLICE = "(image_id % :parts) + 1"


def kept(db: Database, part: int = 1, parts: int = 1, *, batch: int = 500) -> Iterator[dict[str, Any]]:
    """The files recorded as kept (of slice ``part`` of ``parts``: an image's files share one), for
    ``mirror verify``; read in keyset batches, so that marking them checked as they go is safe."""
    after: tuple[int, str] = (-1, "")
    while True:
        rows = list(db.query(f"""
            SELECT image_id, representation, original, path, bytes, sha512 FROM downloads
            WHERE status = '{DONE}' AND {SLICE} = :part AND (image_id, representation) > (:image, :name)
            ORDER BY image_id, representation LIMIT :batch""",
                             {"parts": parts, "part": part, "image": after[0], "name": after[1], "batch": batch}))
        yield from rows
        if len(rows) < batch:
            return
        after = (rows[-1]["image_id"], rows[-1]["representation"])


def kept_in_slice(db: Database, part: int = 1, parts: int = 1) -> int:
    """How many kept files slice ``part`` of ``parts`` holds."""
    return db.execute(f"SELECT count(*) FROM downloads WHERE status = '{DONE}' AND {SLICE} = :part",
                      {"parts": parts, "part": part}).fetchone()[0]


def mark_checked(db: Database, keys: Sequence[tuple[int, str]]) -> None:
    """Record that these kept files were re-hashed now."""
    now = utc_text()
    with db.atomic():
        db.conn.executemany("UPDATE downloads SET verified_at = ? WHERE image_id = ? AND representation = ?",
                            [(now, image_id, representation) for image_id, representation in keys])


def stalest_slice(db: Database, parts: int) -> int:
    """The slice (1 to ``parts``) whose files were checked longest ago, a download counting as a
    check; the lowest such slice when several tie (an empty one never wins over one with files)."""
    oldest = db.execute(f"""
        SELECT {SLICE} AS part FROM downloads WHERE status = '{DONE}'
        GROUP BY part ORDER BY min(coalesce(verified_at, downloaded_at, '')), part LIMIT 1""",
                        {"parts": parts}).fetchone()
    return oldest[0] if oldest else 1


def check_ages(db: Database) -> dict[str, Any]:
    """When the kept files were last checked: the oldest and newest check (a download counts as
    one) and how many were never re-hashed by ``mirror verify``."""
    # `mirror status` reads a mirror an older version made without migrating it: no verified_at yet.
    verified = "verified_at" if "verified_at" in db["downloads"].columns_dict else "NULL"
    oldest, newest, never = db.execute(f"""
        SELECT min(coalesce({verified}, downloaded_at)), max({verified}), sum({verified} IS NULL)
        FROM downloads WHERE status = '{DONE}'""").fetchone()
    return {"oldest_check": oldest, "last_verified": newest, "never_verified": never or 0}


def not_kept(db: Database, keys: Sequence[tuple[int, str]]) -> int:
    """How many of these files are not recorded as kept."""
    return sum(1 for image_id, representation in keys if db.execute(
        f"SELECT 1 FROM downloads WHERE image_id = ? AND representation = ? AND status = '{DONE}'",
        [image_id, representation]).fetchone() is None)


def counts(db: Database) -> dict[str, int]:
    """Rows by status: pending, done and failed (zero when absent)."""
    found = dict(db.execute("SELECT status, count(*) FROM downloads GROUP BY status").fetchall())
    return {status: found.get(status, 0) for status in (PENDING, DONE, FAILED)}


def kept_originals(db: Database) -> int:
    """How many of the kept files are originals (the rest are thumbnails and renderings)."""
    return db.execute(f"SELECT count(*) FROM downloads WHERE status = '{DONE}' AND original = 1").fetchone()[0]
