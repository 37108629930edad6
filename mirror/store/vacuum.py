"""Giving an archive's free pages back to the disk.

A migration that copies a table into a new layout, or makes the history smaller, leaves the pages
it freed inside the file: SQLite reuses them as the archive grows, and gives them back to the disk
only with ``VACUUM``, which writes the whole archive again, into a scratch copy in the temporary
folder, then through the write-ahead log over the original. It therefore needs about the archive's
live size free in each of the two places, and no other connection in a transaction while it runs
(``mirror serve`` and ``mirror browse`` between two requests are fine; a sync is refused by the lock).
Nothing is lost if it stops: until its last step the original is untouched.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sqlite_utils import Database

from ..words import human_bytes, human_duration
from .errors import StoreError

__all__ = ["Pages", "Vacuumed", "pages", "scratch_folder", "vacuum"]


@dataclass(frozen=True)
class Pages:
    """What the archive's file holds: pages in use, and pages free for reuse."""

    file_bytes: int
    free_bytes: int

    @property
    def live_bytes(self) -> int:
        return self.file_bytes - self.free_bytes


@dataclass(frozen=True)
class Vacuumed:
    before: Pages
    after: Pages
    seconds: float

    def summary(self) -> str:
        if self.before.free_bytes == 0:
            return f"vacuum: nothing to give back ({human_bytes(self.before.file_bytes)}, no free pages)"
        return (f"vacuum: {human_bytes(self.before.file_bytes)} -> {human_bytes(self.after.file_bytes)}, "
                f"{human_bytes(self.before.file_bytes - self.after.file_bytes)} given back to the disk "
                f"in {human_duration(self.seconds)}")


def pages(db: Database) -> Pages:
    size, count, free = (db.execute(f"PRAGMA {name}").fetchone()[0]
                         for name in ("page_size", "page_count", "freelist_count"))
    return Pages(size * count, size * free)


def vacuum(db: Database, path: Path, line: Callable[[str], None] = print,
           scratch: Path | None = None) -> Vacuumed:
    """Write the archive at ``path`` again without its free pages; refused, before anything is
    written, when the disk lacks the room (``scratch``: the temporary folder SQLite writes its copy
    to, :func:`scratch_folder` by default)."""
    before = pages(db)
    if before.free_bytes == 0:
        return Vacuumed(before, before, 0.0)
    _check_room(before.live_bytes, Path(path).parent, scratch or scratch_folder())
    line(f"vacuum: writing the archive's {human_bytes(before.live_bytes)} in use again, to give back "
         f"{human_bytes(before.free_bytes)} of free pages (some minutes a GB; stopping it loses nothing)")
    began = time.monotonic()
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    try:
        db.execute("VACUUM")
    except sqlite3.OperationalError as e:
        raise StoreError(f"vacuum of {path} stopped, the archive untouched: {e} (another program reading it "
                         "in a transaction? Stop it and run `mirror vacuum` again)") from e
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the WAL holds the whole archive until written back
    return Vacuumed(before, pages(db), time.monotonic() - began)


def scratch_folder() -> Path:
    """Where SQLite writes its temporary files on Unix: the first of these that is a writable folder."""
    candidates = [os.environ.get("SQLITE_TMPDIR"), os.environ.get("TMPDIR"), "/var/tmp", "/usr/tmp", "/tmp"]
    for candidate in filter(None, candidates):
        if os.path.isdir(candidate) and os.access(candidate, os.W_OK | os.X_OK):
            return Path(candidate)
    return Path(".")


def _check_room(needed: int, *folders: Path) -> None:
    """Each of ``folders`` (the archive's, the scratch copy's) must have ``needed`` bytes free, and a
    disk holding both, twice that."""
    wanted: dict[int, list[Path]] = {}
    for folder in folders:
        wanted.setdefault(folder.stat().st_dev, []).append(folder)
    for on_one_disk in wanted.values():
        folder, bytes_needed = on_one_disk[0], needed * len(on_one_disk)
        free = shutil.disk_usage(folder).free
        if free < bytes_needed:
            raise StoreError(f"vacuum needs about {human_bytes(bytes_needed)} free in {folder} (a copy of the archive's "
                             f"live pages, and the log it is written back through); {human_bytes(free)} are free. "
                             "Free some space, or point SQLITE_TMPDIR at another disk for the copy, and run it again.")
