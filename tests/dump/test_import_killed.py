"""An import killed at any instant (SIGKILL, no warning) resumes, and ends with the same archive
as an import that was never interrupted: nothing lost, nothing twice, the history included."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from mirror.localsite.board.editor import BoardEditor

from ..support.dumps import make_dump, needs_postgres
from ..support.killing import assert_history_agrees, assert_store_intact, history_state, kill_at, kill_when, \
    mirror_state, rerun

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
    def ready(db) -> bool:
        row = db.execute("SELECT cursor FROM sync_state WHERE name = 'import-dump'").fetchone()
        cursor = json.loads(row[0]) if row else {}
        return cursor.get("step") == name and (cursor.get("after") or -1) > after
    return ready


def same_archive(database: Path, uninterrupted: Path) -> None:
    assert_store_intact(database)
    assert_history_agrees(database)
    files = database.parent / "files"
    files.mkdir(exist_ok=True)
    assert mirror_state(database, files) == mirror_state(uninterrupted, files)
    assert history_state(database) == history_state(uninterrupted)
    assert not Path(f"{database}.dump-staging").exists()


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
