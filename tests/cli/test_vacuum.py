"""`mirror vacuum`: the free pages a migration leaves in the file, given back to the disk."""

from __future__ import annotations

import shutil
from collections import namedtuple

from click.testing import CliRunner

from mirror.cli import cli
from mirror.commands import status
from mirror.store import vacuum as vacuum_module
from mirror.store.database import open_database


def _archive_with_free_pages(tmp_path):
    """A mirror whose rejects table held 20 MB, then emptied: the pages stay in the file."""
    path = tmp_path / "mirror.db"
    db = open_database(path)
    with db.conn:
        db.conn.executemany("INSERT INTO rejects (resource, record_key, reason, raw, seen_at) VALUES (?, ?, ?, ?, ?)",
                            [("images", str(n), "test", "x" * 20_000, "2026-01-01T00:00:00Z") for n in range(1000)])
        db.conn.execute("INSERT INTO rejects (resource, record_key, reason, raw, seen_at) "
                        "VALUES ('images', 'kept', 'test', '{\"id\": 1}', '2026-01-01T00:00:00Z')")
        db.conn.execute("DELETE FROM rejects WHERE record_key != 'kept'")
    db.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    config = tmp_path / "m.toml"
    config.write_text(f'[store]\ndatabase = "{path}"\nfiles = "{tmp_path / "files"}"\n')
    return path, config


def test_vacuum_gives_the_free_pages_back_and_keeps_every_record(tmp_path, monkeypatch):
    path, config = _archive_with_free_pages(tmp_path)
    monkeypatch.setattr(status, "FREE_WORTH_SAYING", 1024 * 1024)
    before = path.stat().st_size
    said = CliRunner().invoke(cli, ["-c", str(config), "status"])
    assert "free pages (`mirror vacuum` gives them back" in said.output, said.output

    result = CliRunner().invoke(cli, ["-c", str(config), "vacuum"])

    assert result.exit_code == 0, result.output
    assert "given back to the disk" in result.output
    assert path.stat().st_size < before / 5
    db = open_database(path)
    assert db.execute("SELECT record_key, raw FROM rejects").fetchall() == [("kept", '{"id": 1}')]
    assert vacuum_module.pages(db).free_bytes == 0
    db.close()
    again = CliRunner().invoke(cli, ["-c", str(config), "vacuum"])
    assert again.exit_code == 0 and "nothing to give back" in again.output
    assert "free pages" not in CliRunner().invoke(cli, ["-c", str(config), "status"]).output


def test_vacuum_refuses_before_writing_when_the_disk_lacks_room(tmp_path, monkeypatch):
    path, config = _archive_with_free_pages(tmp_path)
    before = path.stat().st_size
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda folder: usage(10**12, 10**12 - 4096, 4096))

    result = CliRunner().invoke(cli, ["-c", str(config), "vacuum"])

    assert result.exit_code != 0
    assert "vacuum needs about" in result.output and "free in" in result.output
    assert path.stat().st_size == before
    db = open_database(path)
    assert vacuum_module.pages(db).free_bytes > 10 * 1024 * 1024
    db.close()
