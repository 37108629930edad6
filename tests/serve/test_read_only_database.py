"""`mirror serve` and `mirror browse` on a database they may only read (issue 31, item 7): a read-only
mount, or another user's file in a folder they cannot write. Both serve it, as `mirror status` reads it.

SQLite reads a WAL database by creating its ``-shm`` (and ``-wal``) files beside it; where it cannot,
a plain read-only open fails ("unable to open database file"). The tests make that real: root ignores
file modes, so one test mounts a read-only file system, the other runs the server as ``nobody``.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

import httpx
import pytest

from mirror.config import Config
from mirror.localsite.board.editor import BoardEditor
from mirror.localsite.http.server import SiteServer

from ..support.browsing import browsing, serving
from ..support.configs import RESOURCES, changed, mirror_config, sync, write_config
from ..support.disks import mounted_tmpfs


@pytest.fixture(scope="module")
def mirrored(tmp_path_factory) -> Config:
    tmp = tmp_path_factory.mktemp("read-only")
    with SiteServer(BoardEditor.generate(seed=9, images=30)) as site:
        config = mirror_config(site, tmp, site.editor.everything_filter_id)
        sync(config, RESOURCES)
    return config


def copy_database(config: Config, folder: Path) -> Path:
    """A complete copy of the mirror (no -wal beside it), in WAL mode as a sync leaves it."""
    target = folder / "mirror.db"
    with closing(sqlite3.connect(config.database)) as source, closing(sqlite3.connect(target)) as copy:
        source.backup(copy)
        assert copy.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert not target.with_name("mirror.db-wal").exists()
    return target


def assert_served(config_path: Path, image_id: int, run_as=None) -> None:
    """The API answers a search and the board answers its pages, all with 200."""
    with serving(config_path, preexec_fn=run_as) as (api, _):
        search = httpx.get(f"{api}/search/images", params={"q": "*", "filter_id": 2}, timeout=10)
        assert search.status_code == 200 and search.json()["total"] > 0, search.text[:300]
        assert httpx.get(f"{api}/images/{image_id}", timeout=10).status_code == 200
    with browsing(config_path, preexec_fn=run_as) as url:
        for path in ("", "-/tags", "-/booru?q=*", f"-/image/{image_id}", "-/changes"):
            answer = httpx.get(url + path, timeout=10)
            assert answer.status_code == 200, (path, answer.text[-500:])


def shown_image(config: Config) -> int:
    with sqlite3.connect(config.database) as db:
        return db.execute("SELECT min(id) FROM images WHERE coalesce(hidden_from_users, 0) = 0").fetchone()[0]


def test_a_database_on_a_read_only_mount_is_served_and_browsed(mirrored, tmp_path):
    with mounted_tmpfs(tmp_path / "disk", "64m") as disk:
        database = copy_database(mirrored, disk)
        remounted = subprocess.run(["mount", "-o", "remount,ro", str(disk)], capture_output=True, text=True)
        if remounted.returncode:
            pytest.skip(f"remounting the tmpfs read-only was refused: {remounted.stderr.strip()}")
        with pytest.raises(OSError):
            (disk / "probe").write_text("")  # truly read-only, for root too
        config = changed(mirrored, store={"database": str(database)})
        assert_served(write_config(config, tmp_path / "mirror.toml"), shown_image(mirrored))
        assert sorted(p.name for p in disk.iterdir()) == ["mirror.db"]


NOBODY = 65534


def as_nobody() -> None:
    os.setgid(NOBODY)
    os.setuid(NOBODY)


def as_root_bound_by_file_modes() -> None:
    """Root without the capabilities that override file modes (dropped from the bounding set, so the
    program run keeps none): another user's files are as closed to it as to anyone."""
    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH):
        if libc.prctl(PR_CAPBSET_DROP, capability, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) refused")


PR_CAPBSET_DROP, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH = 24, 1, 2
# (who runs the servers, who owns the database and its folder)
WAYS = {"nobody, root's file": (as_nobody, 0), "root bound by file modes, nobody's file": (as_root_bound_by_file_modes,
                                                                                          NOBODY)}


@contextmanager
def folder_of(owner: int) -> Iterator[Path]:
    """A fresh folder outside the checkout (CI clones into a 0700 folder), mode 0755, given to ``owner``
    once filled."""
    folder = Path(tempfile.mkdtemp(prefix="mirror-not-yours-"))
    try:
        folder.chmod(0o755)
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def cannot_run_as(run_as) -> str | None:
    """Why the venv's python cannot be run that way here, or None."""
    try:
        tried = subprocess.run([sys.executable, "-c", "import mirror.cli"], preexec_fn=run_as, capture_output=True,
                               text=True, cwd="/")
    except (OSError, subprocess.SubprocessError) as e:
        return str(e)
    return (tried.stderr.strip().splitlines() or ["?"])[-1] if tried.returncode else None


@pytest.mark.parametrize("way", list(WAYS))
def test_another_users_database_is_served_and_browsed(mirrored, way):
    """A database (0644) in its folder (0755) that the server may read and not write."""
    run_as, owner = WAYS[way]
    if os.geteuid() != 0:
        pytest.skip("making another user's file needs root")
    if problem := cannot_run_as(run_as):
        pytest.skip(f"cannot run this venv's python ({sys.executable}) as {way.split(',')[0]} here "
                    f"(a venv inside a folder only root may enter?): {problem}")
    with folder_of(owner) as folder:
        database = copy_database(mirrored, folder)
        files = folder / "files"
        shutil.copytree(mirrored.store.files, files)
        config_path = write_config(changed(mirrored, store={"database": str(database), "files": str(files)}),
                                   folder / "mirror.toml")
        for path in (folder, *folder.rglob("*")):
            os.chown(path, owner, owner)
            path.chmod(0o755 if path.is_dir() else 0o644)
        assert_served(config_path, shown_image(mirrored), run_as=run_as)
        assert sorted(p.name for p in folder.iterdir()) == ["files", "mirror.db", "mirror.toml"]
