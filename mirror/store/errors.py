"""What went wrong writing the mirror, in words that say what to do about it.

A nightly cron mail should tell the reader whether the disk is full, the permissions are wrong
or another program holds the database: each needs a different fix, so each gets its own words
(and all of them exit 5, see docs/use.md).

    MirrorError
    ├── StoreError      5  the database or the files cannot be written, or must not be touched
    │                      (disk full, permissions, another program's lock, a newer schema,
    │                      another program's database); the message names the file and the fix
    └── MirrorBusy      7  another run is writing to this mirror (mirror.store.run_lock)
"""

from __future__ import annotations

import errno
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import EXIT_STORE, MirrorError

FULL, DENIED, MISSING, LOCKED, NOT_SQLITE, OTHER = "full", "denied", "missing", "locked", "not sqlite", "other"

# What happened, for the kinds whose cause the error itself does not say plainly.
WHAT = {FULL: "no space left on the device", DENIED: "permission denied", MISSING: "it does not exist"}

SQLITE_KINDS = {
    sqlite3.SQLITE_FULL: FULL,
    sqlite3.SQLITE_BUSY: LOCKED,
    sqlite3.SQLITE_LOCKED: LOCKED,
    sqlite3.SQLITE_READONLY: DENIED,
    sqlite3.SQLITE_PERM: DENIED,
    sqlite3.SQLITE_NOTADB: NOT_SQLITE,
}
# Extended result codes whose cause is plain though their primary code (SQLITE_IOERR, "disk I/O
# error") is not: the shared-memory file (-shm) that every reader of a WAL database maps could
# not be grown to its first 32 KB, which on a nearly full disk is all SQLite gets to say of ENOSPC.
SQLITE_EXTENDED_KINDS = {
    sqlite3.SQLITE_IOERR_SHMSIZE: FULL,
}


class StoreError(MirrorError):
    """The database cannot be opened or written; the message says which file and why."""

    exit_code = EXIT_STORE


def os_error_kind(error: OSError) -> str:
    """FULL, DENIED, MISSING or OTHER for an error from the file system."""
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        return FULL
    if isinstance(error, PermissionError) or error.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return DENIED
    if isinstance(error, FileNotFoundError):
        return MISSING
    return OTHER


def error_kind(error: sqlite3.Error | OSError) -> str:
    """The kind of an error from SQLite (by its primary result code) or from the file system."""
    if isinstance(error, OSError):
        return os_error_kind(error)
    code = getattr(error, "sqlite_errorcode", None)
    if code is None:
        return OTHER
    return SQLITE_EXTENDED_KINDS.get(code) or SQLITE_KINDS.get(code & 0xFF, OTHER)


def store_error(error: sqlite3.Error | OSError, where: str, busy_timeout: float) -> StoreError:
    """A StoreError naming ``where`` (e.g. "the database data/mirror.db"), what happened and what to do.

    ``busy_timeout`` is how long SQLite waited for another program's write transaction.
    """
    kind = error_kind(error)
    if kind == LOCKED:
        return StoreError(
            f"{where} is locked by another program (a write transaction held for more than {busy_timeout:g} s); "
            "this run stopped and nothing committed was lost. Let that program finish or close it (a sqlite3 "
            "shell or script with an open transaction, a second copy of the mirror on another machine) and run "
            "again; store.busy_timeout sets how long to wait.")
    if kind == NOT_SQLITE:  # reading it or writing it alike: "cannot write" would send the user to the disk
        return StoreError(f"{where} is not a SQLite database (damaged, or another program's file); it was left "
                          "untouched. Point store.database at the mirror's database, or move that file away to "
                          "start a new one.")
    what = WHAT.get(kind) or (error.strerror if isinstance(error, OSError) else None) or str(error)
    todo = {FULL: "free some disk space", DENIED: "fix the permissions"}.get(kind, "fix the cause")
    return StoreError(f"cannot write {where}: {what}. Nothing committed was lost; {todo} and run again.")


@contextmanager
def database_errors(database: Path, busy_timeout: float) -> Iterator[None]:
    """Turn an SQLite error raised by the body into a StoreError about ``database``."""
    try:
        yield
    except sqlite3.Error as e:
        raise store_error(e, f"the database {database}", busy_timeout) from None
