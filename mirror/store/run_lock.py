"""One writer per mirror: a lock file beside the database, held for as long as a run lasts.

Cron starts `mirror sync` every night whether or not last night's run has finished (a first sync
of a large board takes a day). Two runs at once would double the load on the site and race for
the same cursors, so the second one stops at once and says why. The lock is ``flock`` on
``<database>.lock``: the kernel releases it when the process ends, however it ends, so a killed
run never leaves a stale lock behind.

A run that created the mirror and failed before its first write removes the database and the
lock file with it (:func:`mirror.store.database.remove_unused`), while it holds the lock. A run
that opened the lock file just before it was removed would then lock a file no longer there, so a
lock taken is kept only when the path still names the file locked; otherwise it is taken again.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from ..errors import EXIT_BUSY, MirrorError
from .errors import StoreError, store_error


class MirrorBusy(MirrorError):
    """Another process is writing to this mirror."""

    exit_code = EXIT_BUSY


def lock_path(database: Path, kind: str = "") -> Path:
    return database.with_name(f"{database.name}{'.' + kind if kind else ''}.lock")


@contextmanager
def run_lock(database: Path, kind: str = "") -> Iterator[None]:
    """Hold the mirror's lock for the body, or raise :class:`MirrorBusy` naming who holds it.

    ``kind`` names the lock of another kind of writer (``follow``: one follower per mirror, which
    writes beside a sync rather than after it: docs/follow.md)."""
    path = lock_path(database, kind)
    handle = _locked(database, path, kind)
    with handle:
        _sign(handle, path)
        try:
            yield
        finally:
            handle.seek(0)
            handle.truncate()


def _locked(database: Path, path: Path, kind: str = "") -> BinaryIO:
    """The lock file at ``path``, opened and locked; raise :class:`MirrorBusy` when another run holds it."""
    while True:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            handle = open(path, "a+b", buffering=0)  # unbuffered: a failed write is not retried on close
        except OSError as e:
            raise _lock_failure(e, path) from None
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().decode(errors="replace").strip() or "another process"
            handle.close()
            if kind:
                raise MirrorBusy(f"{database} is already followed by {holder} (the {kind} lock {path}); "
                                 "this one did nothing: one follower per mirror is enough.") from None
            raise MirrorBusy(
                f"{database} is being written by {holder}; this run did nothing. "
                "If runs keep overlapping, sync less often or wait for the first full sync to finish."
            ) from None
        if _names(path, handle):
            return handle
        handle.close()  # removed by the run that held it (see the module's docstring): take the new one


def _names(path: Path, handle: BinaryIO) -> bool:
    """Whether ``path`` still names the file ``handle`` has open."""
    try:
        return os.stat(path).st_ino == os.fstat(handle.fileno()).st_ino
    except FileNotFoundError:
        return False


def _sign(handle: BinaryIO, path: Path) -> None:
    """Write who holds the lock into it, for the run that finds it taken.

    On a disk that is still full this is the first write of a run: it must end in the same clean
    exit as a full disk later on, not in a traceback.
    """
    try:
        handle.seek(0)
        handle.truncate()
        handle.write(f"mirror (pid {os.getpid()})\n".encode())
    except OSError as e:
        raise _lock_failure(e, path) from None


def _lock_failure(error: OSError, path: Path) -> StoreError:
    return store_error(error, f"the lock file {path}", busy_timeout=0)
