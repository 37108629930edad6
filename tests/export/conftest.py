"""An archive of the local site exported twice: after a first sync, and after edits, hides, a
merge and new records synced again. Built once for the session; the tests only read it."""

from __future__ import annotations

import shutil
import subprocess
import time
from types import SimpleNamespace

import pytest

from mirror.export import export_archive
from mirror.localsite.board.editor import BoardEditor
from mirror.localsite.http.server import SiteServer

from ..support.configs import RESOURCES, changed, mirror_config, sync
from .reading import file_hashes


def edit_board(editor: BoardEditor) -> dict:
    """Edits, a hide, a merge, new images and comments, a tag and a comment changed; what was done."""
    shown = [i for i, image in sorted(editor.images.items()) if not image["hidden_from_users"]]
    edited, hidden, merged, into = shown[2], shown[4], shown[6], shown[7]
    editor.edit_image(edited, tags=["safe", "pony", "exported tag"], score=77)
    editor.hide_image(hidden, "Rule #1")
    editor.merge_image(merged, into)
    added = editor.add_images(3)
    editor.add_comments(added[0], 2)
    editor.edit_tag("pony", description="Edited for the export test.")
    return {"edited": edited, "hidden": hidden, "merged": merged, "into": into, "added": added}


@pytest.fixture(scope="session")
def exported(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("export")
    dest = tmp / "dest"
    with SiteServer(BoardEditor.generate(seed=6, images=60)) as site:
        config = changed(mirror_config(site, tmp, site.editor.everything_filter_id), download={"enabled": False})
        _, db = sync(config, RESOURCES)
        first = export_archive(db, str(dest))
        first_files = file_hashes(dest)
        # seen_at keeps times to the second, as the history does: two versions of one record seen in
        # one second could not be told apart (a fast machine did it: the edits and both exports in one)
        time.sleep(1.1)
        done = edit_board(site.editor)
        sync(config, RESOURCES)
    second = export_archive(db, str(dest))
    yield SimpleNamespace(config=config, db=db, dest=dest, first=first, second=second, first_files=first_files,
                          done=done)
    db.close()


def java_present() -> bool:
    if shutil.which("java") is None:
        return False
    return subprocess.run(["java", "-version"], capture_output=True).returncode == 0


@pytest.fixture(scope="session")
def spark():
    """One local SparkSession for the whole session (starting one costs seconds); skipped without Java."""
    if not java_present():
        pytest.skip("no java: Spark needs Java 17 (.ci/run installs openjdk-17-jre-headless)")
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master("local[1]").appName("booru-mirror-export-test")
               .config("spark.ui.enabled", "false").config("spark.sql.session.timeZone", "UTC")
               .config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1")
               .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    yield session
    session.stop()
