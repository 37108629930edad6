"""`mirror import-dump` given what it cannot import (a mistyped path, a folder, a pipe, an address
that answers 404, a host that trickles): one line, its exit code, and no empty mirror left behind.

Run through the real CLI in a process of its own (a pipe opened for reading would block a test in
process for ever), against real sockets on 127.0.0.1.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mirror.errors import EXIT_UNAVAILABLE, EXIT_USAGE
from mirror.localsite.board.editor import BoardEditor
from mirror.localsite.http.server import SiteServer

from ..support.file_host import FileHost


def import_dump(tmp_path: Path, source: str, *, config: str = "") -> subprocess.CompletedProcess:
    """``mirror import-dump SOURCE`` into ``tmp_path/data/mirror.db``, in its own process."""
    config_path = tmp_path / "mirror.toml"
    config_path.write_text(f'[store]\ndatabase = "{tmp_path / "data" / "mirror.db"}"\n{config}')
    return subprocess.run([sys.executable, "-m", "mirror.cli", "-c", str(config_path), "import-dump", source],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)


def made(tmp_path: Path) -> list[str]:
    """What the run left in the mirror's folder."""
    folder = tmp_path / "data"
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


@pytest.mark.parametrize("source, said", [
    ("missing.pgdump", "missing.pgdump: no such file; check the path"),
    ("folder", "folder is a folder, not a dump: give the .pgdump file in it"),
    ("file://{tmp}/missing.pgdump", "{tmp}/missing.pgdump: no such file; check the path"),
    ("pipe", "pipe is not a regular file (a pipe, socket or device)"),
    ("ftp://example.org/d.pgdump", "ftp://example.org/d.pgdump: import-dump takes a file's path or its https://"),
])
def test_what_is_not_a_dump_file_is_one_line_exit_2_and_creates_nothing(tmp_path, source, said):
    (tmp_path / "folder").mkdir()
    os.mkfifo(tmp_path / "pipe")
    done = import_dump(tmp_path, source.format(tmp=tmp_path))
    assert done.returncode == EXIT_USAGE, done.stderr
    assert done.stderr.startswith(f"Error: {said.format(tmp=tmp_path)}") and done.stderr.count("\n") == 1, done.stderr
    assert not (tmp_path / "data").exists()  # no folder, no lock, no empty mirror.db


def test_an_address_that_answers_404_leaves_nothing_behind(tmp_path):
    served = tmp_path / "served"
    served.mkdir()
    with SiteServer(BoardEditor.generate(seed=2, images=3), dumps_dir=served) as site:
        done = import_dump(tmp_path, f"{site.url}/dumps/none.pgdump")
    assert done.returncode == EXIT_USAGE and "it has no such dump" in done.stderr, done.stderr
    assert not (tmp_path / "data").exists()  # the database, its lock and the folder it made: all removed


def test_a_trickling_host_is_cut_off_by_the_configured_stall_rule_and_its_part_kept(tmp_path):
    data = bytes(range(256)) * 1000
    with FileHost(data, trickle=(20, 0.05)) as host:  # 400 bytes/s, for ever
        done = import_dump(tmp_path, f"{host.url}/board.pgdump",
                           config="[download]\ndump_stall_seconds = 1\ndump_min_rate = 1000\n"
                                  "[polite]\nmax_retries = 0\n")
    assert done.returncode == EXIT_UNAVAILABLE, done.stderr
    assert "the transfer stalled: only" in done.stderr and "download.dump_min_rate" in done.stderr, done.stderr
    assert made(tmp_path) == ["board.pgdump.part"]  # kept to resume from; no empty mirror, no lock
    assert 0 < (tmp_path / "data" / "board.pgdump.part").stat().st_size < len(data)
