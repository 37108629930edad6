"""The counts of `mirror status` read narrow partial indexes, and say what a scan of every image says."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

import mirror
from mirror import philomena
from mirror.store import ImageWriter, downloads, open_database

from ..support.mirrored import BASE
from ..support.real_fixtures import image_records

NAMES = ["thumb", "full", "svg", "webm"]
ROOT = "https://derpicdn.net/img"


def image(image_id: int, fmt: str = "png", mime: str = "image/png", **changes) -> dict:
    """A real record made into image ``image_id`` of format ``fmt``, its files named by the site's rule."""
    record = copy.deepcopy(next(r for _, r in image_records() if r["format"] == "png" and r["thumbnails_generated"]))
    record.update(id=image_id, format=fmt, mime_type=mime, hidden_from_users=False, duplicate_of=None,
                  deletion_reason=None, sha512_hash=f"{image_id:0128x}", orig_sha512_hash=f"{image_id:0128x}")
    record["view_url"] = philomena.view_url(image_id, record["created_at"], fmt, ["safe"], ROOT)
    record["representations"] = philomena.representations(image_id, record["created_at"], record["width"],
                                                          record["height"], fmt, mime, ROOT)
    record.update(changes)
    return record


@pytest.fixture
def board(tmp_path):
    """Images of every kind a count tells apart, with files pending, kept, failed and kept for images
    hidden since."""
    db = open_database(tmp_path / "mirror.db")
    writer = ImageWriter(db, BASE)
    from_dump = image(6)
    del from_dump["thumbnails_generated"]  # the public dump does not say: planned as processed
    elsewhere = image(7)
    elsewhere["representations"] = {name: url.replace("derpicdn.net", "cdn.example")
                                    for name, url in elsewhere["representations"].items() if name != "thumb"}
    svg = ("svg", "image/svg+xml")
    writer.save_page([image(1), image(2), image(3), image(4, "gif", "image/gif"), image(5, thumbnails_generated=False),
                      from_dump, elsewhere, image(8, *svg), image(9, hidden_from_users=True),
                      image(10, "jpg", "image/jpeg"), image(11, *svg)])
    assert downloads.plan(db, NAMES) > 0
    for image_id, name in ((1, "thumb"), (1, "full"), (4, "webm"), (8, "svg"), (10, "thumb"), (10, "full")):
        downloads.mark_done(db, image_id, name, url="u", path=f"{image_id}/{name}", size=1,
                            sha512=f"{image_id:0128x}")
    downloads.mark_failed(db, 2, "full", "gone")
    downloads.mark_failed(db, 7, "full", "gone")
    # A kept file the site no longer offers: image 10 hidden since, and a webm of a PNG.
    downloads.mark_done(db, 3, "webm", url="u", path="3/webm", size=1, sha512="0")
    writer.save_page([{"id": 10, "created_at": "2020-04-07T00:00:00Z", "updated_at": "2020-04-08T00:00:00Z",
                       "first_seen_at": None, "duplicate_of": None, "deletion_reason": "gone",
                       "hidden_from_users": True}])
    return db


def plain_outstanding(db) -> int:
    """The pending count as it was read before the indexes: every eligible pair of every image row."""
    return db.execute(f"""SELECT count(*) FROM ({downloads._ELIGIBLE}) e WHERE NOT EXISTS (
        SELECT 1 FROM downloads d WHERE d.image_id = e.image_id AND d.representation = e.representation
          AND d.status != 'pending')""", {"names": json.dumps(NAMES), "svg": "svg"}).fetchone()[0]


def plans(db, count, table: str = "i") -> set[str]:
    """How SQLite reads ``table`` (the images: ``i``) for the statements ``count`` runs."""
    statements: list[str] = []
    db.conn.set_trace_callback(statements.append)
    count()
    db.conn.set_trace_callback(None)
    return {row[3] for sql in statements if sql.lstrip().upper().startswith(("SELECT", "WITH"))
            for row in db.execute(f"EXPLAIN QUERY PLAN {sql}").fetchall() if row[3].split()[1:2] == [table]}


def test_the_counts_from_the_indexes_are_those_of_a_scan_of_every_image(board):
    db = board
    by_status = downloads.counts(db)
    assert by_status[downloads.PENDING] and by_status[downloads.DONE] and by_status[downloads.FAILED]

    # Pending: 2 thumb; 3 thumb, full (its webm kept is no file of a PNG); 4 thumb, full (webm kept);
    # 6 thumb, full; 8 thumb, full (svg kept); 11 thumb, full, svg. Kept or failed: 1, 7 (no thumb);
    # hidden: 9, 10.
    assert downloads.outstanding(db, NAMES) == plain_outstanding(db) == 12
    scanned = db.execute(f"SELECT count(*) FROM images i NOT INDEXED WHERE {downloads._waiting_sql('i')}").fetchone()[0]
    assert downloads.waiting_for_thumbnails(db) == scanned == 1
    # With no kept original replaced, planning makes exactly the files counted pending.
    assert downloads.plan(db, NAMES) == downloads.outstanding(db, NAMES) == 12


def test_the_counts_read_only_the_partial_indexes(board):
    assert plans(board, lambda: downloads.outstanding(board, NAMES)) == {
        "SCAN i USING INDEX images_files_by_rule", "SCAN i USING INDEX images_files_as_kept",
        "SCAN i USING INDEX images_files_not_by_rule"}
    assert plans(board, lambda: downloads.waiting_for_thumbnails(board)) == {
        "SCAN i USING INDEX images_waiting_for_thumbnails"}
    assert plans(board, lambda: downloads.kept_originals(board), "downloads") == {
        "SEARCH downloads USING COVERING INDEX downloads_by_status (status=?)"}


def test_the_indexes_hold_only_their_images(board):
    held = {name: {row[0] for row in board.execute(f"SELECT id FROM images INDEXED BY {name} WHERE "
                                                    f"{downloads.COUNTING_INDEXES[name].split(' WHERE ', 1)[1]}")}
            for name in downloads.COUNTING_INDEXES}
    assert held == {"images_waiting_for_thumbnails": {5}, "images_files_as_kept": {7},
                    "images_files_by_rule": {1, 2, 3, 4, 6, 8, 11}, "images_files_not_by_rule": {5, 7, 9, 10}}


DELETING_IMAGES = re.compile(r"DELETE\s+FROM\s+\"?images\b(?!_)|\[\"images\"\]\.delete", re.IGNORECASE)


def test_no_image_row_is_ever_deleted():
    """The files kept of the images by the rule are counted as all kept less those of other images,
    which holds while every downloads row has its image: no code deletes one."""
    package = Path(mirror.__file__).parent
    deleting = [path.relative_to(package) for path in package.rglob("*.py")
                if DELETING_IMAGES.search(path.read_text())]
    assert deleting == []
