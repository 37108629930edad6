"""A first export whose images are read by two processes writes what one process writes.

With the images halved (:mod:`mirror.export.halves`: a helper process reads the upper half of the
rows and passes its batches to the writer), every table of the export must hold the same rows, value
for value, as an export made the way it was before (every table in one process, no helper), at the
same clock; only the order of the images' rows may differ. The digests kept for the next export
must be the same too.
"""

from __future__ import annotations

import asyncio
import queue
import subprocess
import threading
from array import array

import pyarrow as pa
import pytest
from sqlite_utils import Database

from mirror.commands.import_dump import run_import
from mirror.export import export_archive
from mirror.export.written import Written
from mirror.export.halves import Channel, HelperFailed, _Failed, _Started, halves, merged
from mirror.export.tables import EXPORT_TABLES
from mirror.localsite.board.editor import BoardEditor
from mirror.localsite.http.server import SiteServer
from mirror.store import open_database

from ..support.configs import mirror_config
from ..support.dumps import make_dump, needs_postgres
from .reading import in_order
from .test_first_export_routes import NOW, copied, every_table


def digests(db: Database, dest) -> list[tuple]:
    return db.execute("SELECT tbl, record_key, digest FROM export_digests WHERE dest = (SELECT id FROM export_dests "
                      "WHERE url = ?) ORDER BY tbl, record_key", [str(dest)]).fetchall()


def assert_halved_writes_what_one_process_writes(db: Database, tmp_path, monkeypatch) -> None:
    low, high = halves(db.conn, EXPORT_TABLES["images"])
    count = "SELECT count(*) FROM images WHERE rowid > ? AND rowid <= ?"
    assert db.execute(count, low).fetchone()[0] > 0 and db.execute(count, high).fetchone()[0] > 0
    monkeypatch.setattr("mirror.export.run.utc_text", lambda when=None: NOW)
    monkeypatch.setattr("mirror.export.run.BESIDE_FROM", 0)  # the images beside, halved
    halved = export_archive(db, str(tmp_path / "halved"))
    monkeypatch.setattr("mirror.export.run.BESIDE_FROM", 1 << 62)  # as before: one process, no helper
    one = export_archive(db, str(tmp_path / "one"))
    assert halved.tables == one.tables and halved.tables["images"] > 0
    new, old = every_table(tmp_path / "halved"), every_table(tmp_path / "one")
    for name in EXPORT_TABLES:
        assert new[name].schema == old[name].schema, name
        halved_rows, one_rows = in_order(new[name]), in_order(old[name])
        for column in new[name].schema.names:
            assert halved_rows[column].equals(one_rows[column]), (name, column)
    assert digests(db, tmp_path / "halved") == digests(db, tmp_path / "one") != []


def test_a_synced_board_with_edits_hides_and_a_merge(exported, tmp_path, monkeypatch):
    db = copied(exported.db, tmp_path / "mirror.db")
    assert_halved_writes_what_one_process_writes(db, tmp_path, monkeypatch)


@needs_postgres
def test_a_board_imported_from_the_sites_dump_is_halved_at_its_tag_changes(tmp_path, monkeypatch):
    editor = BoardEditor.generate(seed=13, images=120)
    with SiteServer(editor) as site:
        config = mirror_config(site, tmp_path / "mirror", editor.everything_filter_id)
        dump = make_dump(editor, tmp_path)
        db = open_database(config.database)
        asyncio.run(run_import(config, db, str(dump)))
    changes, images = (db.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("image_tag_changes", "images"))
    assert changes > images  # so the cut is at the median image of the tag changes
    (_, middle), _ = halves(db.conn, EXPORT_TABLES["images"])
    below = db.execute("SELECT count(*) FROM image_tag_changes WHERE image_id <= ?", [middle]).fetchone()[0]
    assert abs(2 * below - changes) <= 2 * db.execute(
        "SELECT max(n) FROM (SELECT count(*) n FROM image_tag_changes GROUP BY image_id)").fetchone()[0]
    assert_halved_writes_what_one_process_writes(db, tmp_path, monkeypatch)


def batch(*ids: int) -> pa.RecordBatch:
    return pa.record_batch([pa.array(ids, pa.int64())], names=["id"])


def channel_of(*items) -> Channel:
    batches: queue.Queue = queue.Queue()
    for item in items:
        batches.put(item)
    return Channel(batches, threading.Event())


def test_the_helpers_batches_come_between_the_writers_and_its_digests_join_the_writers():
    theirs = Written(rows=2, keys=array("q", [5, 6]), values=array("q", [50, 60]))
    written = Written(rows=1, keys=array("q", [1]), values=array("q", [10]))
    channel = channel_of(_Started(1), batch(5), batch(6), theirs)
    got = [b.column(0).to_pylist() for b in merged(iter([batch(1)]), channel, written)]
    assert got == [[1], [5], [6]]
    assert list(written.digests()) == [("1", 10), ("5", 50), ("6", 60)] and written.rows == 3
    assert not channel.abandoned.is_set()


def test_a_helper_that_failed_fails_the_table_and_one_that_ended_silently_too(monkeypatch):
    monkeypatch.setattr("mirror.export.halves.PATIENCE", 0.05)
    channel = channel_of(batch(5), _Failed("OperationalError: disk I/O error"))
    with pytest.raises(HelperFailed, match="disk I/O error"):
        list(merged(iter([batch(1)]), channel, Written()))
    assert channel.abandoned.is_set()  # the helper stops waiting on a queue no one reads

    gone = subprocess.Popen(["true"])
    gone.wait()
    ended = channel_of(_Started(gone.pid))  # a process that ended without its last batch
    with pytest.raises(HelperFailed, match="ended before its last batch"):
        list(merged(iter([]), ended, Written()))
