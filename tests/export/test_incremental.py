"""What each export appends: the records written since the last, each only when it differs from
the version last exported; a tag known only by the name an image gave it is exported too."""

from __future__ import annotations

import polars as pl

from mirror.commands.cursors import describe_cursor
from mirror.export import export_archive
from mirror.store import open_database
from mirror.store.dump_tables import save_dump_rows
from mirror.store.export_state import load_export_cursor
from mirror.store.galleries import replace_members
from mirror.store.table_marks import written_marks

from .reading import data_files
from .test_killed import copy_of


def test_a_tag_an_image_named_before_the_tags_crawler_read_it_is_exported(exported, tmp_path):
    dest = tmp_path / "dest"
    db = open_database(copy_of(exported.db, tmp_path / "mirror.db"))
    # What the image writer keeps of a tag the tags crawler has not read yet: its id and its name.
    db.execute("INSERT INTO tags (id, name) VALUES (900001, 'named by an image')")
    db.conn.commit()
    export_archive(db, str(dest))
    tags = pl.read_delta(str(dest / "tags"))
    (row,) = tags.filter(pl.col("id") == 900001).to_dicts()
    assert row["name"] == "named by an image" and row["seen_at"] is not None
    assert export_archive(db, str(dest)).tables["tags"] == 0  # and only once
    db.execute("UPDATE tags SET slug = 'named-by-an-image', mirrored_at = strftime('%Y-%m-%dT%H:%M:%SZ', 'now') "
               "WHERE id = 900001")
    db.conn.commit()
    assert export_archive(db, str(dest)).tables["tags"] == 1
    assert pl.read_delta(str(dest / "tags")).filter(pl.col("id") == 900001).height == 2


def test_status_says_where_the_export_stands(exported):
    cursor = load_export_cursor(exported.db)
    said = describe_cursor("export", cursor)
    assert said.startswith(f"export batch {cursor['batch']} written to {exported.dest}")


def test_compact_on_request_rewrites_small_files_and_keeps_every_version(exported, tmp_path):
    dest = tmp_path / "dest"
    db = open_database(copy_of(exported.db, tmp_path / "mirror.db"))
    export_archive(db, str(dest))
    db.execute("UPDATE images SET score = score + 1, mirrored_at = strftime('%Y-%m-%dT%H:%M:%SZ', 'now')")
    db.conn.commit()
    export_archive(db, str(dest))
    before = pl.read_delta(str(dest / "images")).sort(["id", "seen_at"])
    assert len(data_files(dest / "images")) == 2
    report = export_archive(db, str(dest), compact=True, retention_hours=0)
    assert report.compacted["files_removed"] >= 2 and report.fetched == 0
    assert len(data_files(dest / "images")) == 1  # the replaced files are gone: a plain reader sees each row once
    assert pl.read_delta(str(dest / "images")).sort(["id", "seen_at"]).equals(before)
    assert pl.read_parquet(data_files(dest / "images")[0]).height == before.height


def test_compact_leaves_alone_the_files_an_export_wrote_full(exported, tmp_path, monkeypatch):
    """At the whole board's size the first export's files are full: a compaction rewrites the
    nights' small files only."""
    dest = tmp_path / "dest"
    db = open_database(copy_of(exported.db, tmp_path / "mirror.db"))
    export_archive(db, str(dest))
    (full,) = data_files(dest / "images")
    monkeypatch.setattr("mirror.export.delta.TARGET_FILE_SIZE", full.stat().st_size - 1)
    for night in range(2):
        db.execute("UPDATE images SET score = score + 1, mirrored_at = strftime('%Y-%m-%dT%H:%M:%SZ', 'now') "
                   "WHERE id IN (SELECT id FROM images ORDER BY id LIMIT 3)")
        db.conn.commit()
        export_archive(db, str(dest))
    before = pl.read_delta(str(dest / "images")).sort(["id", "seen_at"])
    assert len(data_files(dest / "images")) == 3
    report = export_archive(db, str(dest), compact=True, retention_hours=0)
    assert report.compacted["files_removed"] >= 2
    files = data_files(dest / "images")
    assert len(files) == 2 and full in files
    assert pl.read_delta(str(dest / "images")).sort(["id", "seen_at"]).equals(before)


def test_a_table_read_whole_is_read_again_only_after_a_writer_changed_it(exported, tmp_path):
    """The site's dump tables and galleries' images have no column saying what changed: every
    night compared each of their rows with what was exported (19 million on the whole board, some
    two minutes). A table its writers did not write since the last export is not read; one they
    wrote is compared, and its new versions exported."""
    dest = tmp_path / "dest"
    db = open_database(copy_of(exported.db, tmp_path / "mirror.db"))
    image, other = (row[0] for row in db.execute("SELECT id FROM images ORDER BY id LIMIT 2"))
    save_dump_rows(db, "image_faves", [{"image_id": image, "user_id": 7, "created_at": "2020-01-01T00:00:00Z"}])
    db.conn.commit()
    assert export_archive(db, str(dest)).tables["image_faves"] == 1
    # A change no writer made (by hand, in SQL) is not looked for: the table is not read at all.
    db.execute("UPDATE image_faves SET created_at = '2001-01-01T00:00:00Z'")
    db.conn.commit()
    assert export_archive(db, str(dest)).tables["image_faves"] == 0
    save_dump_rows(db, "image_faves", [{"image_id": other, "user_id": 7, "created_at": "2021-01-01T00:00:00Z"}])
    db.conn.commit()
    assert export_archive(db, str(dest)).tables["image_faves"] == 2  # the new row, and the one changed by hand
    assert pl.read_delta(str(dest / "image_faves")).height == 3


def test_a_gallery_walk_that_finds_it_unchanged_leaves_its_images_unwritten(exported, tmp_path):
    db = open_database(copy_of(exported.db, tmp_path / "mirror.db"))
    gallery = db.execute("SELECT gallery_id FROM gallery_images GROUP BY gallery_id HAVING count(*) > 1 "
                         "LIMIT 1").fetchone()[0]
    members = [row[0] for row in db.execute("SELECT image_id FROM gallery_images WHERE gallery_id = ? "
                                            "ORDER BY position", [gallery])]
    before = written_marks(db, ["gallery_images"])["gallery_images"]
    replace_members(db, gallery, members)
    assert written_marks(db, ["gallery_images"])["gallery_images"] == before
    replace_members(db, gallery, members[::-1])
    assert written_marks(db, ["gallery_images"])["gallery_images"] == before + 1
    assert [row[0] for row in db.execute("SELECT image_id FROM gallery_images WHERE gallery_id = ? ORDER BY position",
                                         [gallery])] == members[::-1]
    dest = tmp_path / "dest"
    export_archive(db, str(dest))
    replace_members(db, gallery, members)
    assert export_archive(db, str(dest)).tables["gallery_images"] == len(members)  # every position moved
