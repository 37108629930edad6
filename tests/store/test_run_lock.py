"""The mirror's lock file, removed by a run that created the mirror and failed before its first
write (:func:`mirror.store.remove_unused`): the next run must lock the file the path names."""

from __future__ import annotations

import fcntl

from mirror.store import run_lock
from mirror.store.run_lock import lock_path


def test_a_lock_file_removed_between_open_and_lock_is_taken_again(tmp_path, monkeypatch):
    database = tmp_path / "mirror.db"
    real_flock, calls = fcntl.flock, []

    def flock(handle, operation):
        calls.append(operation)
        if len(calls) == 1:
            lock_path(database).unlink()  # the failing run removes the file this run has just opened
        return real_flock(handle, operation)

    monkeypatch.setattr(fcntl, "flock", flock)
    with run_lock(database):
        assert len(calls) == 2  # the first lock was on a file no longer there: taken again
        assert lock_path(database).read_text().startswith("mirror (pid ")
