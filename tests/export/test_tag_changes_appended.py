"""An export to a DEST exported to before the tag changes lost their numbers (migration 0045) goes on
appending them where it stopped: by history row, each change once, ``id`` null in the rows since."""

from __future__ import annotations

import json

import polars as pl

from mirror.export import export_archive
from mirror.export.run import location
from mirror.store import open_database
from mirror.store.history import SiteChange, save_site_changes

from ..store.test_tag_changes_layout import old_archive


def test_an_export_cursor_kept_before_the_migration_appends_each_tag_change_once(tmp_path):
    dest = tmp_path / "dest"
    old, ids = old_archive(tmp_path / "m.db")
    # where an export before 0045 stopped: the first nine history rows and their changes written
    last_written = old.execute("SELECT max(id) FROM image_tag_changes WHERE history_id <= 9").fetchone()[0]
    written = old.execute("SELECT count(*) FROM image_tag_changes WHERE history_id <= 9").fetchone()[0]
    cursor = {"dest": location(str(dest)), "batch": 1, "through": "2026-01-01T00:00:00Z",
              "ids": {"history": 9, "image_tag_changes": last_written}}
    old.execute("INSERT INTO export_dests (url, cursor) VALUES (?, ?)", [cursor["dest"], json.dumps(cursor)])
    total = old.execute("SELECT count(*) FROM image_tag_changes").fetchone()[0]
    old.conn.commit()
    old.close()
    db = open_database(tmp_path / "m.db")

    assert export_archive(db, str(dest)).tables["image_tag_changes"] == total - written
    rows = pl.read_delta(str(dest / "image_tag_changes"))
    assert rows["history_id"].min() == 10 and rows["id"].null_count() == rows.height
    assert rows.select(["image_id", "history_id", "tag_id", "change"]).is_unique().all()

    with db.atomic():
        save_site_changes(db, None, [SiteChange(ids[0], "2026-02-01T00:00:00Z", None, "site_tags",
                                                (("+", 5, "five"), ("-", 6, None)))])
    assert export_archive(db, str(dest)).tables["image_tag_changes"] == 2
    assert export_archive(db, str(dest)).tables.get("image_tag_changes", 0) == 0
    rows = pl.read_delta(str(dest / "image_tag_changes"))
    assert rows.height == total - written + 2
    assert rows.filter(pl.col("seen_at").is_not_null()).height == rows.height
