"""The layout of ``image_tag_changes``: a table clustered by image, with no row id of its own.

A whole board keeps some 37 million tag changes. Kept as a row-id table with three indexes (by
image and tag, by history row, by tag) they took 4.95 GB, 134 bytes a change whose values are
some 40: each index repeated the values it was sorted by. Clustered by its key
(:data:`KEY`: the image, its history row, the tag and the change) the table is its own index by image: an
image's changes are one range of it, a history row's are the range (image, history row) (its
``record_key`` names the image), and "every change after history row N" is the history's own
row-id range joined to it by that key. Only the index by tag (a tag's changes by time, for the
checkpoints and a tag's recent changes) is kept beside it.

No change has a number of its own: ``(history_id, tag_id)`` orders the changes of one moment as
the old ``id`` did, since a history row is written before its tags, and the site names a tag at
most once in one of its changes (``tag_change_tags`` has a unique index on the change and the
tag), as a sync's diff of two tag lists does. The key ends with ``change`` all the same, at two
bytes a change in the index by tag: a damaged dump that adds and removes one tag in one change
keeps both.

A WITHOUT ROWID table filled in random key order splits pages all over and ends a third larger,
slowly; so a migration copies an old table sorted by the key (:func:`cluster`), a tenth of its
changes at a time with a line said after each, and a first import writes its changes into a plain
table in the order they come, sorted into this layout once at its end (:mod:`.upkeep`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from sqlite_utils import Database

from .stderr_lines import say_to_stderr

__all__ = ["TABLE", "KEY", "LAYOUT", "BY_TAG", "UNSORTED", "clustered", "cluster", "of_history_row"]

TABLE = "image_tag_changes"
KEY = "image_id, history_id, tag_id, change"
COLUMNS = ("image_id", "history_id", "tag_id", "change", "tag_name", "seen_at")
_COLUMNS = """
        image_id INTEGER NOT NULL,
        history_id INTEGER NOT NULL REFERENCES history (id),
        tag_id INTEGER NOT NULL,
        change TEXT NOT NULL CHECK (change IN ('+', '-')),
        tag_name TEXT,
        seen_at TEXT NOT NULL"""
LAYOUT = f"CREATE TABLE {TABLE} ({_COLUMNS},\n        PRIMARY KEY ({KEY})) WITHOUT ROWID"
# What a first import appends to, in the order its changes come (:mod:`.upkeep`).
UNSORTED = f"CREATE TABLE {TABLE} ({_COLUMNS})"
BY_TAG = f"CREATE INDEX image_tag_changes_by_tag ON {TABLE} (tag_id, seen_at)"
LOUD_FROM = 500_000  # changes from which the copy says how far it has got


def of_history_row(history: str = "h", changes: str = "c") -> str:
    """SQL true for the tag changes ``changes`` of the history row ``history``: the key's range
    (image, history row). The unary ``+`` keeps SQLite from carrying a bound on the history's ids
    over to the changes' ``history_id``: it then sought each history row's changes by a range of
    history ids, every change of the image in the bounds for each of its rows (quadratic in an
    image's history: the whole board's 36.6 million changes took minutes), not by one."""
    return f"{changes}.image_id = CAST({history}.record_key AS INTEGER) AND {changes}.history_id = +{history}.id"


def clustered(db: Database) -> bool:
    """Whether the table is in :data:`LAYOUT` (not a first import's plain table, nor an old one)."""
    sql = db.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", [TABLE]).fetchone()
    return bool(sql) and "WITHOUT ROWID" in sql[0].upper()


def cluster(db: Database, say: Callable[[str], None] | None = None) -> None:
    """Copy the tag changes into :data:`LAYOUT`, sorted by its key, and put the copy in the table's
    place with its triggers and its index by tag (where it was built: a first import may have left
    it to its end); the other indexes go. Nothing is lost: only a change kept twice shares a key
    (the same tag added, or removed, twice in one change), and it is kept once. A table already clustered is left as it is."""
    if clustered(db):
        return
    say = say or say_to_stderr
    triggers = [row[0] for row in db.execute(
        "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = ?", [TABLE])]
    had_by_tag = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = 'image_tag_changes_by_tag'"
                            ).fetchone() is not None
    new = f"{TABLE}_clustered"
    db.execute(f"DROP TABLE IF EXISTS {new}")
    db.execute(LAYOUT.replace(f"CREATE TABLE {TABLE}", f"CREATE TABLE {new}", 1))
    total = db.execute(f"SELECT count(*) FROM {TABLE}").fetchone()[0]
    names = ", ".join(COLUMNS)
    done = copied = 0
    for low, high, count in _tenths(db, total):
        copied += db.execute(f"INSERT OR IGNORE INTO {new} ({names}) SELECT {names} FROM {TABLE} "
                             f"WHERE image_id >= ? AND image_id <= ? ORDER BY {KEY}", [low, high]).rowcount
        done += count
        if total >= LOUD_FROM:
            say(f"{TABLE}: {done:,} of {total:,} tag changes clustered by image")
    if copied < total:
        say(f"{TABLE}: {total - copied:,} changes were each the same change of a tag kept twice, now kept once")
    db.execute(f"DROP TABLE {TABLE}")
    db.execute("PRAGMA legacy_alter_table = ON")  # the triggers on tags that name the table are kept as written
    try:
        db.execute(f"ALTER TABLE {new} RENAME TO {TABLE}")
    finally:
        db.execute("PRAGMA legacy_alter_table = OFF")
    if had_by_tag:
        db.execute(BY_TAG)
    for sql in triggers:
        db.execute(sql)


def _tenths(db: Database, total: int) -> Iterator[tuple[int, int, int]]:
    """Ranges of image ids (first, last, changes in it) holding a tenth of the changes each, or
    more where one image holds more, read from the old index by image; the whole table at once
    where it is small or has no such index."""
    by_image = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = 'image_tag_changes_by_image_tag'"
                          ).fetchone()
    if total < LOUD_FROM or not by_image:  # a first import's table: one sort, not ten scans
        yield -(2 ** 63), 2 ** 63 - 1, total
        return
    step, low, count = -(-total // 10), None, 0
    for image_id, changes in db.execute(f"SELECT image_id, count(*) FROM {TABLE} GROUP BY image_id ORDER BY image_id"):
        low = image_id if low is None else low
        count += changes
        if count >= step:
            yield low, image_id, count
            low, count = None, 0
    if low is not None:
        yield low, 2 ** 63 - 1, count
