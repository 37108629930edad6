"""`mirror status`: counts, cursors and the last run of each resource, plainly."""

from __future__ import annotations

import gc
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from mirror.cli import cli
from mirror.errors import EXIT_STORE

from ..support.configs import site_config, sync, write_config


def test_status_shows_counts_cursors_and_last_runs_per_resource(site, tmp_path):
    config = site_config(site, tmp_path, polite={"give_up_after": 2}, comments={"enabled": True})
    images, db = sync(config, ["images", "comments"])
    site.set_faults("down")
    failed = CliRunner().invoke(cli, ["-c", str(write_config(config, tmp_path / "m.toml")), "sync", "comments"])
    assert failed.exit_code == 3

    result = CliRunner().invoke(cli, ["-c", str(tmp_path / "m.toml"), "status"])

    assert result.exit_code == 0, result.stderr
    lines = result.output.splitlines()
    count = db.execute("SELECT count(*) FROM images").fetchone()[0]
    assert any(line.split()[:1] == ["images"] and line.split()[-1] == f"{count:,}" for line in lines)
    comments = db.execute("SELECT count(*) FROM comments").fetchone()[0]
    assert comments and any(line.split() == ["comments", f"{comments:,}"] for line in lines)
    cursors = lines[lines.index("Where each crawler stands:") + 1:lines.index("Last runs:")]
    assert {line.split()[0] for line in cursors if line.strip()} >= {"images", "comments"}
    runs = lines[lines.index("Last runs:") + 1:]
    images_run = next(line for line in runs if line.split()[0] == "images")
    comments_run = next(line for line in runs if line.split()[0] == "comments")
    assert "ok;" in images_run and f"{images.fetched} fetched" in images_run
    assert "failed (gave up" in comments_run


def test_status_without_a_mirror_says_how_to_start_one(tmp_path):
    config = tmp_path / "m.toml"
    config.write_text(f'[store]\ndatabase = "{tmp_path / "none.db"}"\n')
    result = CliRunner().invoke(cli, ["-c", str(config), "status"])
    assert result.exit_code == 0 and "run `mirror sync` to start one" in result.output
    assert not (tmp_path / "none.db").exists()


def files_and_stamps(folder: Path) -> dict[str, tuple[int, bytes]]:
    """Every file in ``folder`` with its mtime and bytes, to tell whether anything wrote there."""
    return {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in sorted(folder.iterdir()) if p.is_file()}


@pytest.fixture
def mirrored_folder(site, tmp_path):
    """A mirror synced by the real CLI in a process that has ended: no connection is left open."""
    folder = tmp_path / "mirror"
    config = site_config(site, folder)
    config_path = write_config(config, tmp_path / "mirror.toml")
    subprocess.run([sys.executable, "-m", "mirror.cli", "-c", str(config_path), "sync"], check=True,
                   capture_output=True)
    return folder, config_path


def test_status_writes_nothing(mirrored_folder):
    folder, config_path = mirrored_folder
    before = files_and_stamps(folder)
    result = CliRunner().invoke(cli, ["-c", str(config_path), "status"])
    assert result.exit_code == 0, result.output
    assert "Records:" in result.output and "Last runs:" in result.output
    assert files_and_stamps(folder) == before  # no -wal, -shm or lock file, the database unchanged


def test_status_works_on_a_read_only_mount(mirrored_folder, tmp_path):
    folder, config_path = mirrored_folder
    read_only = tmp_path / "read-only"
    read_only.mkdir()
    mounted = subprocess.run(["mount", "-o", "bind,ro", str(folder), str(read_only)], capture_output=True, text=True)
    if mounted.returncode:
        pytest.skip(f"a read-only database needs a read-only bind mount, and mounting was refused: {mounted.stderr}")
    try:
        config_path.write_text(config_path.read_text().replace(str(folder / "mirror.db"), str(read_only / "mirror.db")))
        result = CliRunner().invoke(cli, ["-c", str(config_path), "status"])
        assert result.exit_code == 0, result.output
        assert f"Mirror: {read_only / 'mirror.db'}" in result.output and "Records:" in result.output
    finally:
        gc.collect()  # let go of the database before unmounting
        subprocess.run(["umount", "-l", str(read_only)], check=False)


def test_status_refuses_a_database_of_another_program(tmp_path):
    database = tmp_path / "other.db"
    sqlite3.connect(database).execute("CREATE TABLE photos (id INTEGER PRIMARY KEY)").connection.close()
    config = tmp_path / "m.toml"
    config.write_text(f'[store]\ndatabase = "{database}"\n')
    result = CliRunner().invoke(cli, ["-c", str(config), "status"])
    assert result.exit_code == EXIT_STORE and "not a mirror" in result.output


def test_status_on_a_file_that_is_not_sqlite_says_so_in_one_line(tmp_path):
    database = tmp_path / "random.db"
    data = bytes(range(256)) * 40  # not a SQLite header
    database.write_bytes(data)
    config = tmp_path / "m.toml"
    config.write_text(f'[store]\ndatabase = "{database}"\n')
    result = CliRunner().invoke(cli, ["-c", str(config), "status"])
    assert result.exit_code == EXIT_STORE
    assert result.output == (f"Error: the database {database} is not a SQLite database (damaged, or another "
                             "program's file); it was left untouched. Point store.database at the mirror's database, "
                             "or move that file away to start a new one.\n")
    assert database.read_bytes() == data


@pytest.mark.parametrize("command", [["status"], ["status", "--json"], ["changes"], ["duplicates"],
                                     ["serve", "--port", "0"], ["browse", "--port", "0"], ["browse", "--metadata"],
                                     ["reverse", "--local", "x.png"]])
def test_reading_commands_create_no_database_where_there_is_none(tmp_path, command):
    folder = tmp_path / "data"
    config = tmp_path / "m.toml"
    config.write_text(f'[store]\ndatabase = "{folder / "mirror.db"}"\n')
    result = CliRunner().invoke(cli, ["-c", str(config), *command])
    assert "Traceback" not in result.output and result.exception is None or isinstance(result.exception, SystemExit)
    assert not folder.exists(), sorted(p.name for p in folder.iterdir())
