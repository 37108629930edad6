"""An import killed at any instant (SIGKILL, no warning) resumes, and ends with the same archive
as an import that was never interrupted: nothing lost, nothing twice, the history included."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import pytest

from mirror.localsite.board.editor import BoardEditor
from mirror.store import open_database

from ..store.test_upkeep import upkeep
from ..support.dumps import make_dump, needs_postgres
from ..support.killing import assert_history_agrees, assert_store_intact, history_state, kill_at, kill_when, \
    mirror_state, reached, rerun

pytestmark = needs_postgres


@pytest.fixture(scope="module")
def dump(tmp_path_factory):
    editor = BoardEditor.generate(seed=12, images=2500)
    try:
        yield make_dump(editor, tmp_path_factory.mktemp("dump"))
    finally:
        editor.close()


@pytest.fixture(scope="module")
def uninterrupted(dump, tmp_path_factory):
    database = tmp_path_factory.mktemp("whole") / "mirror.db"
    rerun(command(dump, database))
    return database


def command(dump: Path, database: Path) -> list[str]:
    return [sys.executable, "-c", "import os, sys; from mirror.cli import cli; "
            f"os.environ['MIRROR_DATABASE'] = {str(database)!r}; "
            "os.environ['MIRROR_BASE_URL'] = 'http://127.0.0.1:9'; "
            f"cli(['import-dump', {str(dump)!r}])"]


def step_is(name: str, after: int = 0):
    """Ready once the import has written past ``after`` in step ``name``, or has done that step: a
    step lasts well under a second now (store.upkeep), and a poll must not miss it and let the
    import end before it can be killed."""
    def ready(db) -> bool:
        row = db.execute("SELECT cursor FROM sync_state WHERE name = 'import-dump'").fetchone()
        cursor = json.loads(row[0]) if row else {}
        return (cursor.get("step") == name and (cursor.get("after") or -1) > after) or name in cursor.get("done", ())
    return ready


def same_archive(database: Path, uninterrupted: Path) -> None:
    assert_store_intact(database)
    assert_history_agrees(database)
    files = database.parent / "files"
    files.mkdir(exist_ok=True)
    assert mirror_state(database, files) == mirror_state(uninterrupted, files)
    assert history_state(database) == history_state(uninterrupted)
    assert not Path(f"{database}.dump-staging").exists()
    # a first import leaves its indexes to its end (store.upkeep): every one is back, as migrations make them
    with closing(open_database(database)) as db, closing(open_database(database.parent / "fresh.db")) as fresh:
        assert upkeep(db) == upkeep(fresh)
        assert db.execute("SELECT count(*) FROM deferred_upkeep").fetchone()[0] == 0


def test_killed_while_copying_the_tables(dump, uninterrupted, tmp_path):
    database = tmp_path / "mirror.db"
    staging = Path(f"{database}.dump-staging")
    assert kill_at(command(dump, database), lambda: staging.exists() and staging.stat().st_size > 200_000)
    rerun(command(dump, database))
    same_archive(database, uninterrupted)


@pytest.mark.parametrize("step, after", [("images", 1000), ("comments", 0), ("tag_changes", 1000)])
def test_killed_while_writing_the_records(dump, uninterrupted, tmp_path, step, after):
    database = tmp_path / "mirror.db"
    kill_when(command(dump, database), database, step_is(step, after))
    rerun(command(dump, database))
    same_archive(database, uninterrupted)


def test_sigterm_stops_the_import_at_a_batch_and_the_next_run_resumes(dump, uninterrupted, tmp_path):
    """What `systemctl stop` sends: the import stops at the next batch boundary, not at the end of
    the whole import (it ran on inside the event loop, whose handler could not run until it ended)."""
    database = tmp_path / "mirror.db"
    process = subprocess.Popen(command(dump, database), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while process.poll() is None and not reached(database, step_is("images", 0)) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert process.poll() is None, "the import ended before it could be stopped"
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 1, stderr
    assert "interrupted; everything stored so far is kept and the next run resumes" in stderr
    assert "Traceback" not in stderr
    cursor = import_cursor(database)
    assert not cursor.get("finished") and "images" not in cursor["done"], "it ran on to the end"
    rerun(command(dump, database))
    same_archive(database, uninterrupted)


def import_cursor(database: Path) -> dict:
    db = open_database(database, migrate=False)
    try:
        return json.loads(db.execute("SELECT cursor FROM sync_state WHERE name = 'import-dump'").fetchone()[0])
    finally:
        db.close()


def test_a_killed_first_import_leaves_its_indexes_to_the_next_command_that_writes(dump, tmp_path):
    database = tmp_path / "mirror.db"
    kill_when(command(dump, database), database, step_is("comments", 0))
    with closing(open_database(database)) as db:
        left_out = db.execute("SELECT count(*) FROM deferred_upkeep").fetchone()[0]
    assert left_out > 20
    verify = [sys.executable, "-c", "import os; from mirror.cli import cli; "
              f"os.environ['MIRROR_DATABASE'] = {str(database)!r}; "
              "os.environ['MIRROR_BASE_URL'] = 'http://127.0.0.1:9'; cli(['verify'])"]
    done = subprocess.run(verify, capture_output=True, text=True, timeout=120)
    assert f"building {left_out} indexes" in done.stdout + done.stderr, done.stderr
    with closing(open_database(database)) as db, closing(open_database(tmp_path / "fresh.db")) as fresh:
        assert upkeep(db) == upkeep(fresh)
