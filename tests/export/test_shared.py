"""A first export whose images are shared by two processes writes what one process writes.

With the images cut in pieces two processes take in turn (:mod:`mirror.export.shared`), every table
of the export must hold the same rows, value for value, as an export made in one process, at the
same clock; only the order of the images' rows may differ. The digests kept for the next export
must be the same too, and a helper that fails must leave the table uncommitted.
"""

from __future__ import annotations

import asyncio
import multiprocessing
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool

import pytest
from sqlite_utils import Database

from mirror.commands.import_dump import run_import
from mirror.export import export_archive
from mirror.export import delta
from mirror.export.batches import Bounds
from mirror.export.shared import HelperFailed, Part, Share, joined, pieces, write_pieces
from mirror.export.tables import EXPORT_TABLES
from mirror.export.written import Written
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


def assert_shared_writes_what_one_process_writes(db: Database, tmp_path, monkeypatch) -> None:
    ranges = pieces(db.conn, EXPORT_TABLES["images"], 4)
    count = "SELECT count(*) FROM images WHERE rowid > ? AND rowid <= ?"
    assert len(ranges) > 1 and all(db.execute(count, piece).fetchone()[0] > 0 for piece in ranges)
    assert sum(db.execute(count, piece).fetchone()[0] for piece in ranges) == db.execute(
        "SELECT count(*) FROM images").fetchone()[0]  # every row in one piece
    monkeypatch.setattr("mirror.export.shared.PIECES", 4)
    monkeypatch.setattr("mirror.export.run.utc_text", lambda when=None: NOW)
    monkeypatch.setattr("mirror.export.run.SHARED_FROM", 0)  # the images shared with a helper
    shared = export_archive(db, str(tmp_path / "two"))
    # Each process writes one stream of files across the pieces it took: no piece leaves a small file.
    assert 1 <= len(delta.live_files(delta.destination(str(tmp_path / "two")), "images")) <= 2
    monkeypatch.setattr("mirror.export.run.SHARED_FROM", 1 << 62)  # one process, no helper
    one = export_archive(db, str(tmp_path / "one"))
    assert shared.tables == one.tables and shared.tables["images"] > 0
    new, old = every_table(tmp_path / "two"), every_table(tmp_path / "one")
    for name in EXPORT_TABLES:
        assert new[name].schema == old[name].schema, name
        shared_rows, one_rows = in_order(new[name]), in_order(old[name])
        for column in new[name].schema.names:
            assert shared_rows[column].equals(one_rows[column]), (name, column)
    assert digests(db, tmp_path / "two") == digests(db, tmp_path / "one") != []


def test_a_synced_board_with_edits_hides_and_a_merge(exported, tmp_path, monkeypatch):
    db = copied(exported.db, tmp_path / "mirror.db")
    assert_shared_writes_what_one_process_writes(db, tmp_path, monkeypatch)


@needs_postgres
def test_a_board_imported_from_the_sites_dump_is_cut_at_its_tag_changes(tmp_path, monkeypatch):
    editor = BoardEditor.generate(seed=13, images=120)
    with SiteServer(editor) as site:
        config = mirror_config(site, tmp_path / "mirror", editor.everything_filter_id)
        dump = make_dump(editor, tmp_path)
        db = open_database(config.database)
        asyncio.run(run_import(config, db, str(dump)))
    changes, images = (db.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("image_tag_changes", "images"))
    assert changes > images  # so the cuts are at the quantiles of the tag changes
    most = db.execute("SELECT max(n) FROM (SELECT count(*) n FROM image_tag_changes GROUP BY image_id)").fetchone()[0]
    ranges = pieces(db.conn, EXPORT_TABLES["images"], 4)
    assert len(ranges) == 4
    for low, high in ranges[:-1]:  # the last takes what is left
        within = db.execute("SELECT count(*) FROM image_tag_changes WHERE image_id > ? AND image_id <= ?",
                            [low, high]).fetchone()[0]
        assert abs(within - changes // 4) <= most
    assert_shared_writes_what_one_process_writes(db, tmp_path, monkeypatch)


def test_the_two_processes_take_each_piece_once_and_none_after_a_failure():
    context = multiprocessing.get_context("spawn")
    share = Share.made(context, [(0, 1), (1, 2), (2, 3)])
    assert [share.take(), share.take()] == [(0, 1), (1, 2)]
    share.stopped.set()  # the export's process failed
    assert share.take() is None and share.taken.value == 2


def failed(error: BaseException) -> Future:
    future: Future = Future()
    future.set_exception(error)
    return future


def test_a_helper_that_failed_or_ended_fails_the_table_and_nothing_is_committed(exported, tmp_path):
    db = copied(exported.db, tmp_path / "mirror.db")
    where = delta.destination(str(tmp_path / "dest"))
    conn = db.conn
    table = EXPORT_TABLES["images"]
    share = Share.made(multiprocessing.get_context("spawn"), pieces(conn, table, 2))
    bounds = Bounds("", NOW, {}, {"history": 1 << 40})
    written = Written()
    own = Part(write_pieces(conn, where, table, bounds, share, written), written)
    assert own.files and share.take() is None  # this process took every piece
    for error, said in ((OSError("disk I/O error"), "helper process failed: OSError: disk I/O error"),
                        (BrokenProcessPool(), "ended before its last piece")):
        with pytest.raises(HelperFailed, match=said):
            joined(own, failed(error))
    assert not delta.exists(where, "images")  # its files were written, never committed
