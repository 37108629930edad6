"""One writer per mirror: a lock file beside the database, held for as long as a run lasts.

Cron starts `mirror sync` every night whether or not last night's run has finished (a first sync
of a large board takes a day). Two runs at once would double the load on the site and race for
the same cursors, so the second one stops at once and says why. The lock is ``flock`` on
``<database>.lock``: the kernel releases it when the process ends, however it ends, so a killed
run never leaves a stale lock behind.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .database import StoreError


class MirrorBusy(Exception):
    """Another process is writing to this mirror."""


def lock_path(database: Path) -> Path:
    return database.with_name(database.name + ".lock")


@contextmanager
def run_lock(database: Path) -> Iterator[None]:
    """Hold the mirror's lock for the body, or raise :class:`MirrorBusy` naming who holds it."""
    path = lock_path(database)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(path, "a+")
    except OSError as e:
        raise StoreError(f"cannot create the lock file {path}: {e}") from None
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            raise MirrorBusy(
                f"{database} is being written by {holder}; this run did nothing. "
                "If runs keep overlapping, sync less often or wait for the first full sync to finish."
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"mirror (pid {os.getpid()})\n")
        handle.flush()
        try:
            yield
        finally:
            handle.seek(0)
            handle.truncate()
