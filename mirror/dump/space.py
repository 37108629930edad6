"""The disk an import needs, said before it starts, and refused in one line when it is not there.

An import that runs out of disk an hour in loses nothing (every batch is committed with its
cursor), but it has cost that hour and leaves a full disk behind. What it will need is known
closely enough beforehand from the size of the dump's tables (their data blocks, compressed): the
archive grows by about :data:`ARCHIVE_PER_DUMP_BYTE` bytes for each byte of a table the mirror
keeps as records, history and search, :data:`ARCHIVE_PER_FAVE_BYTE` for the favourites (pairs of
ids, the real dump's largest table), and the scratch copy of the dump's tables (:mod:`.staging`,
removed at the end) takes about :data:`STAGING_PER_DUMP_BYTE` for each byte of the dump. All three
were measured on a 350,000-image board of Derpibooru's shape (``docs/performance.md``, "The whole
board"). A resumed import needs only what the files it already wrote do not hold yet.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from ..store.errors import StoreError
from ..words import human_bytes
from .archive import Archive

__all__ = ["ARCHIVE_PER_DUMP_BYTE", "ARCHIVE_PER_FAVE_BYTE", "STAGING_PER_DUMP_BYTE", "Space", "space_needed", "say_space"]

ARCHIVE_PER_DUMP_BYTE = 16.5
ARCHIVE_PER_FAVE_BYTE = 5.0
STAGING_PER_DUMP_BYTE = 5.0
_SLACK = 1.1  # the estimate is an estimate: a tenth more is asked for


@dataclass(frozen=True)
class Space:
    """What the import will write (archive and scratch copy), and what the disk has free."""

    folder: Path
    needed: int
    free: int

    @property
    def enough(self) -> bool:
        return self.free >= self.needed

    def line(self) -> str:
        return (f"the import needs about {human_bytes(self.needed)} free in {self.folder} (the archive and a scratch copy "
                f"of the dump's tables, removed at the end); {human_bytes(self.free)} are free")


def space_needed(dump: Path, database: Path, staging: Path) -> Space:
    """The disk the import of ``dump`` into ``database`` still needs, on the disk that holds both."""
    size = dump.stat().st_size
    faves = _table_bytes(dump).get("image_faves", 0)
    archive = (size - faves) * ARCHIVE_PER_DUMP_BYTE + faves * ARCHIVE_PER_FAVE_BYTE
    written = _size_of(database) + _size_of(staging)
    needed = max(0, round((archive + size * STAGING_PER_DUMP_BYTE) * _SLACK) - written)
    folder = database.parent
    return Space(folder, needed, shutil.disk_usage(folder).free)


def say_space(dump: Path, database: Path, staging: Path, *, refuse: bool = True) -> str:
    """The line saying what the import needs; :class:`StoreError` (exit 5) when the disk lacks it,
    unless not ``refuse`` (``--ignore-space``: the estimate is an estimate)."""
    space = space_needed(dump, database, staging)
    if refuse and not space.enough:
        raise StoreError(f"not enough disk for the import: {space.line()}. Free some space, point store.database "
                         "at a larger disk, or give --ignore-space; nothing was written")
    return space.line()


def _table_bytes(dump: Path) -> dict[str, int]:
    """Each table's data block's size, from the offsets of the archive's table of contents."""
    archive = Archive.open(dump)
    starts = sorted((entry.offset, name) for name, entry in archive.tables.items() if entry.offset)
    ends = [offset for offset, _ in starts[1:]] + [dump.stat().st_size]
    return {name: end - offset for (offset, name), end in zip(starts, ends)}


def _size_of(path: Path) -> int:
    return sum(p.stat().st_size for p in (path, Path(f"{path}-wal")) if p.exists())

