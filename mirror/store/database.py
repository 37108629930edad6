"""Opening the mirror's SQLite database."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, TypeVar

from sqlite_utils import Database

from .errors import database_errors, store_error
from .run_lock import lock_path
from .schema import apply_migrations, check_schema

# Seconds a write waits for another program's write transaction before the run stops (store.busy_timeout).
DEFAULT_BUSY_TIMEOUT = 30.0
# WAL pages (4 KiB each) written before SQLite copies them back into the database (its default: 1,000).
WAL_CHECKPOINT_PAGES = 10_000


class MirrorDatabase(Database):
    """A sqlite-utils Database whose transactions take the write lock when they begin.

    sqlite-utils opens transactions with a plain ``BEGIN``, which reads first and asks for the
    write lock at the first write. While another program holds a write transaction, SQLite
    refuses that upgrade at once (waiting could deadlock), so ``store.busy_timeout`` would never
    apply. ``BEGIN IMMEDIATE`` asks for the lock first, and waits for it as long as that says.
    """

    @contextmanager
    def atomic(self) -> Iterator[Database]:
        if self.conn.in_transaction:
            with super().atomic():  # a savepoint inside the transaction already open
                yield self
            return
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            with super().atomic():
                yield self
        except BaseException:
            self.rollback()
            raise
        self.conn.execute("COMMIT")


def open_database(path: str | Path, *, migrate: bool = True, busy_timeout: float = DEFAULT_BUSY_TIMEOUT) -> Database:
    """Open (creating if needed) the mirror at ``path`` in WAL mode, migrated to the newest schema.

    WAL lets Datasette read while a sync writes; ``synchronous=NORMAL`` is durable across
    application crashes, which is what resumable syncs rely on. A write waits ``busy_timeout``
    seconds for another program's write transaction, then fails with a StoreError saying so.

    Two settings of this connection make page writes cheaper without changing what is stored or
    when it is durable. A page of 50 images dirties hundreds of scattered pages (indexes, tag links,
    full-text segments), so SQLite's default checkpoint every 1,000 WAL pages ran every second or
    third commit, copying back pages the next commits dirtied again: :data:`WAL_CHECKPOINT_PAGES`
    lets the WAL grow to about 40 MB first (it is checkpointed and removed when the process closes
    the database). ``temp_store=MEMORY`` keeps a statement's rollback journal in memory instead
    of a temporary file created and deleted for every page; it is set after the migrations, whose
    index builds and table-wide statements would hold gigabytes there (7.4 GiB at 3.5 million
    images before, when the hashes' and tag changes' migrations ran with it).
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise store_error(e, f"the folder of the database {path}", busy_timeout) from None
    with database_errors(path, busy_timeout):
        db = MirrorDatabase(path)
        db.execute(f"PRAGMA busy_timeout={round(busy_timeout * 1000)}")
        check_schema(db, path)
        db.enable_wal()
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute(f"PRAGMA wal_autocheckpoint={WAL_CHECKPOINT_PAGES}")
        if migrate:  # before temp_store=MEMORY: a migration's sorts and statement journals span whole tables
            apply_migrations(db)
        db.execute("PRAGMA temp_store=MEMORY")
    return db


def open_read_only(path: str | Path, *, busy_timeout: float = DEFAULT_BUSY_TIMEOUT) -> Database:
    """Open the mirror at ``path`` only to read it: no migrations, no lock, nothing written.

    ``mirror status`` must work on a snapshot, a backup or a read-only mount, and leave the file as
    it was. While a ``-wal`` file exists a connection is (or was) writing, so ``mode=ro`` reads what
    it committed through the ``-wal`` and ``-shm`` files already there. Without one the file is
    complete as it stands: ``immutable=1`` reads it without creating the ``-wal`` and ``-shm``
    files a read-only WAL connection would otherwise leave behind (or fail to create on a
    read-only mount).
    """
    path = Path(path)
    wal = path.with_name(path.name + "-wal")
    mode = "mode=ro" if wal.exists() else "mode=ro&immutable=1"
    with database_errors(path, busy_timeout):
        db = Database(sqlite3.connect(f"{path.resolve().as_uri()}?{mode}", uri=True))
        db.execute(f"PRAGMA busy_timeout={round(busy_timeout * 1000)}")
        check_schema(db, path)
    return db


def database_file(conn: sqlite3.Connection | Any) -> str:
    """The file of the main database ``conn`` (a connection, or sqlite-utils' Database) reads."""
    return next(row[2] for row in conn.execute("PRAGMA database_list") if row[1] == "main")


def reader_uri(path: str | Path) -> str:
    """The URI a server's long-lived read connections open the mirror at ``path`` with.

    ``mode=ro``, which sees a sync's commits as they come, needs the ``-shm`` and ``-wal`` files
    beside the database, and creates them when they are not there: on a read-only mount, or in
    a folder of another user, it cannot ("unable to open database file"). Such a database is then
    read as ``mirror status`` reads it (:func:`open_read_only`): with no ``-wal`` it is complete as
    it stands, and ``immutable=1`` reads it without them. (Whether the folder can be written is
    found by trying: ``os.access`` says yes to root on a file it may not write.)
    """
    base = Path(path).absolute().as_uri()
    probe = sqlite3.connect(f"{base}?mode=ro", uri=True)
    try:
        probe.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return f"{base}?mode=ro"
    except sqlite3.OperationalError:
        if Path(f"{path}-wal").exists():
            return f"{base}?mode=ro"  # being written: only mode=ro sees it whole; it says why it cannot
        return f"{base}?mode=ro&immutable=1"
    finally:
        probe.close()


# What a sync writes about itself before it has stored anything, by table: the rows that count as
# records are those the condition selects. Its run's row in sync_runs (its end, "failed", is said by
# the run's own error line) and its session (sync_state "sync") are not: a first sync the site
# failed left them in a mirror of nothing, which `mirror status` showed as a mirror of zeros.
RECORD_ROWS = {"sync_runs": "FALSE", "sync_state": "name <> 'sync'"}


def holds_no_record(db: Database) -> bool:
    """Whether ``db`` holds nothing but the mirror's schema: no row in any table of its own (the
    migrations' log, SQLite's statistics, the full-text indexes' own tables and a sync's account of
    itself, :data:`RECORD_ROWS`, aside)."""
    tables = db.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'").fetchall()
    virtual = [name for name, sql in tables if (sql or "").upper().startswith("CREATE VIRTUAL TABLE")]
    for name, _ in tables:
        if name.startswith("sqlite_") or name == "_sqlite_migrations" or name in virtual \
                or any(name.startswith(f"{v}_") for v in virtual):
            continue
        if db.execute(f'SELECT EXISTS (SELECT 1 FROM "{name}" WHERE {RECORD_ROWS.get(name, "TRUE")})').fetchone()[0]:
            return False
    return True


def remove_unused(db: Database, path: str | Path, *, folder_too: bool = False) -> bool:
    """Remove the database at ``path`` that this run created, ``db`` open on it, when it holds no
    record (closing ``db`` first, with its ``-wal``, ``-shm`` and lock file, and the folder when
    ``folder_too`` and nothing else is in it): a run that failed before its first write must not
    leave an empty mirror behind for ``mirror status`` to report as one. The caller holds the
    lock (:func:`~mirror.store.run_lock.run_lock` takes a new one when its file was removed).
    Returns whether it did; ``db`` stays open when it did not."""
    path = Path(path)
    try:
        if not holds_no_record(db):
            return False
    except sqlite3.Error:
        return False  # cannot tell: keep it
    db.close()
    for name in (path.name, f"{path.name}-wal", f"{path.name}-shm", lock_path(path).name):
        path.with_name(name).unlink(missing_ok=True)
    if folder_too:
        with suppress(OSError):  # not empty (a dump's .part, to resume from): kept
            path.parent.rmdir()
    return True


# Keys per ``IN (...)`` query, to stay under SQLite's bound-variable limit.
CHUNK = 400

T = TypeVar("T")




def chunks(items: Sequence[T], size: int = CHUNK) -> Iterator[list[T]]:
    """``items`` in consecutive lists of at most ``size``."""
    for start in range(0, len(items), size):
        yield list(items[start:start + size])
