"""What each export appends: the records written since the last, each only when it differs from
the version last exported; a tag known only by the name an image gave it is exported too."""

from __future__ import annotations

import polars as pl

from mirror.commands.cursors import describe_cursor
from mirror.export import export_archive
from mirror.store import open_database
from mirror.store.export_state import load_export_cursor

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
