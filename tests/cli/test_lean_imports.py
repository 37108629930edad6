"""A command imports what it uses: pandas installed beside the mirror is not loaded by it.

``sqlite_utils`` imports pandas whenever it is installed (:mod:`mirror.sqlite_utils_lean`). The
pandas here is a stand-in on the path that leaves a mark when imported, so the test does not depend
on whether the real one is installed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from mirror.store import open_database


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    fake = tmp_path / "site" / "pandas"
    fake.mkdir(parents=True, exist_ok=True)
    (fake / "__init__.py").write_text("import pathlib, os\npathlib.Path(os.environ['PANDAS_MARK']).touch()\n"
                                      "class Timestamp: pass\n")
    env = {**os.environ, "PYTHONPATH": str(fake.parent), "PANDAS_MARK": str(tmp_path / "pandas-imported")}
    return subprocess.run([sys.executable, *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)


def test_a_command_does_not_import_pandas_though_it_is_installed(tmp_path):
    mark = tmp_path / "pandas-imported"
    done = _run(tmp_path, "-c", "import sqlite_utils")
    assert done.returncode == 0, done.stderr
    assert mark.exists()  # the stand-in is found and marks: sqlite_utils alone imports it
    mark.unlink()
    open_database(tmp_path / "data" / "mirror.db").close()  # a mirror, for status to read
    done = _run(tmp_path, "-c", "import sys; from mirror.cli import cli; sys.argv[0] = 'mirror'; cli()", "status")
    assert done.returncode == 0, done.stderr
    assert "images" in done.stdout, done.stdout
    assert not mark.exists()
    # Imported on purpose afterwards, it is there as usual.
    done = _run(tmp_path, "-c", "import mirror.store, pandas; print(pandas.Timestamp.__name__)")
    assert done.returncode == 0 and done.stdout.strip() == "Timestamp", done.stderr
    assert mark.exists()
