"""When the database cannot be written, the run stops with exit 5 and says what happened and what to do."""

from __future__ import annotations

import sqlite3
import time

import pytest
from click.testing import CliRunner

from mirror.cli import cli
from mirror.errors import EXIT_STORE

from ..support.configs import changed, site_config, write_config
from ..support.disks import fill, mounted_tmpfs


@pytest.fixture
def tiny_disk(tmp_path):
    """A real 8 MB file system (tmpfs) to fill up."""
    with mounted_tmpfs(tmp_path / "disk", "8m") as mount_point:
        yield mount_point


def mirror(config_path, *args):
    return CliRunner().invoke(cli, ["-c", str(config_path), *args])


def test_a_run_while_the_disk_is_still_full_stops_cleanly(site, tmp_path, tiny_disk):
    config = site_config(site, tiny_disk)
    config_path = write_config(config, tmp_path / "mirror.toml")
    assert mirror(config_path, "sync").exit_code == 0
    images = sqlite3.connect(config.database).execute("SELECT count(*) FROM images").fetchone()[0]
    fill(tiny_disk)

    full = mirror(config_path, "sync")

    assert full.exit_code == EXIT_STORE, full.output
    assert "no space left on the device" in full.output and "free some disk space" in full.output
    assert str(tiny_disk / "mirror.db.lock") in full.output and full.exception.__class__ is SystemExit
    (tiny_disk / "filler").unlink()
    assert mirror(config_path, "sync").exit_code == 0
    assert sqlite3.connect(config.database).execute("SELECT count(*) FROM images").fetchone()[0] == images


def test_another_programs_write_transaction_is_named_not_blamed_on_the_disk(site, tmp_path):
    config = changed(site_config(site, tmp_path), store={"busy_timeout": 1.5})
    config_path = write_config(config, tmp_path / "mirror.toml")
    assert mirror(config_path, "sync").exit_code == 0
    other = sqlite3.connect(config.database, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another program's write transaction, left open

    started = time.monotonic()
    locked = mirror(config_path, "sync")
    waited = time.monotonic() - started

    assert locked.exit_code == EXIT_STORE, locked.output
    assert (f"the database {config.database} is locked by another program "
            "(a write transaction held for more than 1.5 s)") in locked.output
    assert "disk space" not in locked.output and waited >= 1.5
    other.execute("ROLLBACK")
    assert mirror(config_path, "sync").exit_code == 0


# --- a database this version must not touch ---------------------------------------------------------

def test_a_database_from_a_newer_version_is_refused_untouched(site, tmp_path):
    config = site_config(site, tmp_path)
    config_path = write_config(config, tmp_path / "mirror.toml")
    assert mirror(config_path, "sync").exit_code == 0
    newer = sqlite3.connect(config.database)
    with newer:
        newer.execute("INSERT INTO _sqlite_migrations (migration_set, name, applied_at) "
                      "VALUES ('booru-mirror', '0099_from_the_future', '2030-01-01')")
    runs = newer.execute("SELECT count(*) FROM sync_runs").fetchone()[0]
    site.clear_requests()

    refused = mirror(config_path, "sync")

    assert refused.exit_code == EXIT_STORE, refused.output
    assert "newer version" in refused.output and "0099_from_the_future" in refused.output
    assert str(config.database) in refused.output
    assert site.requests == [] and newer.execute("SELECT count(*) FROM sync_runs").fetchone()[0] == runs


def test_a_database_of_another_program_is_refused_untouched(site, tmp_path):
    config = site_config(site, tmp_path)
    config_path = write_config(config, tmp_path / "mirror.toml")
    other = sqlite3.connect(config.database)
    with other:
        other.execute("CREATE TABLE photos (id INTEGER PRIMARY KEY, path TEXT)")
        other.execute("INSERT INTO photos (path) VALUES ('holiday.jpg')")
    other.close()
    before = config.database.read_bytes()

    refused = mirror(config_path, "sync")

    assert refused.exit_code == EXIT_STORE, refused.output
    assert "not a mirror" in refused.output and "photos" in refused.output
    assert config.database.read_bytes() == before and site.requests == []
