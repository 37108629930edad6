"""The first export's quick routes write what the as-of reading gives, column for column.

A first export writes a record whose history is only its first sighting from its row's columns
(no ``raw`` rebuilt, no as-of reading), and the images table from a process of its own (with a
helper reading half of them: the images' rows come in another order, compared in one order here). Exported
again with every record read back by the as-of reading (:attr:`RecordRows.plain_records` off),
in one process, at the same clock, every table must be the same, row for row: on a board synced
from the local site with edits, hides and a merge, and on one imported from the site's dump (the
site's own tag and source history, records lacking fields the API has).
"""

from __future__ import annotations

import asyncio
import sqlite3

import pytest
from deltalake import DeltaTable
from sqlite_utils import Database

from mirror.commands.import_dump import run_import
from mirror.export import export_archive
from mirror.export.written import Written
from mirror.export.tables import EXPORT_TABLES, RECORDS
from mirror.export.versions import RecordRows
from mirror.localsite.board.editor import BoardEditor
from mirror.localsite.http.server import SiteServer
from mirror.store import open_database

from ..support.configs import mirror_config
from ..support.dumps import make_dump, needs_postgres
from .reading import in_order

NOW = "2031-01-01T00:00:00Z"


def copied(db: Database, path) -> Database:
    """A copy of ``db`` to export from (the session's board is only read by the other tests)."""
    target = sqlite3.connect(path)
    db.conn.backup(target)
    target.close()
    return Database(path)


def every_table(dest) -> dict:
    return {name: DeltaTable(str(dest / name)).to_pyarrow_table() for name in EXPORT_TABLES}


def assert_both_routes_write_the_same(db: Database, tmp_path, monkeypatch) -> None:
    monkeypatch.setattr("mirror.export.run.utc_text", lambda when=None: NOW)
    monkeypatch.setattr("mirror.export.run.SHARED_FROM", 0)  # the images in a process of their own
    export_archive(db, str(tmp_path / "quick"))
    monkeypatch.setattr("mirror.export.run.SHARED_FROM", 1 << 62)
    monkeypatch.setattr(RecordRows, "plain_records", False)
    export_archive(db, str(tmp_path / "read_back"))
    quick, read_back = every_table(tmp_path / "quick"), every_table(tmp_path / "read_back")
    for name, table in EXPORT_TABLES.items():
        assert quick[name].num_rows == read_back[name].num_rows, name
        quick_rows, read_rows = in_order(quick[name]), in_order(read_back[name])
        for column in table.schema().names:
            assert quick_rows[column].equals(read_rows[column]), (name, column)
    assert sum(quick[name].num_rows for name, t in EXPORT_TABLES.items() if t.how == RECORDS) > 0


def first_sighting_only(db: Database, table: str) -> tuple[int, int]:
    """The records of ``table`` (images or comments) whose history is their first sighting alone,
    shown, and the others: the routes each takes."""
    tags = "AND NOT EXISTS (SELECT 1 FROM image_tag_changes c WHERE c.image_id = r.id)" if table == "images" else ""
    plain = db.execute(f"SELECT count(*) FROM {table} r WHERE NOT EXISTS (SELECT 1 FROM history h WHERE "
                       f"h.resource = '{table}' AND h.record_key = CAST(r.id AS TEXT) AND h.event != 'first_seen') "
                       f"{tags} AND NOT coalesce(r.hidden_from_users, 0)").fetchone()[0]
    return plain, db.execute(f"SELECT count(*) FROM {table}").fetchone()[0] - plain


def test_a_synced_board_with_edits_hides_and_a_merge(exported, tmp_path, monkeypatch):
    db = copied(exported.db, tmp_path / "mirror.db")
    plain, others = first_sighting_only(db, "images")
    assert plain > 0 and others > 0
    assert_both_routes_write_the_same(db, tmp_path, monkeypatch)


@needs_postgres
def test_a_board_imported_from_the_sites_dump(tmp_path, monkeypatch):
    editor = BoardEditor.generate(seed=12, images=120)
    retagged = sorted(editor.images)[5]
    editor.edit_image(retagged, tags=[*editor.images[retagged]["tags"], "retagged on the site"])
    with SiteServer(editor) as site:
        config = mirror_config(site, tmp_path / "mirror", editor.everything_filter_id)
        dump = make_dump(editor, tmp_path)
        db = open_database(config.database)
        asyncio.run(run_import(config, db, str(dump)))
    assert first_sighting_only(db, "images")[1] > 0  # each has the site's tag or source history
    assert first_sighting_only(db, "comments")[0] > 0
    assert_both_routes_write_the_same(db, tmp_path, monkeypatch)


def test_the_keys_of_two_ids_are_kept_as_numbers_and_given_back_as_the_store_writes_them():
    written = Written(ids=EXPORT_TABLES["image_faves"].key_ids)
    written.add("[12,345]", 7)
    written.add("[-1,9007199254740993]", -8)
    assert (written.ids, len(written.keys)) == (2, 4)
    assert list(written.digests()) == [("[12,345]", 7), ("[-1,9007199254740993]", -8)]
    written.add('["a",1]', 9)  # no pair of integers after all: every key as text
    assert list(written.digests()) == [("[12,345]", 7), ("[-1,9007199254740993]", -8), ('["a",1]', 9)]
