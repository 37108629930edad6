"""What one table's export wrote: how many rows, and the digest of each record's version.

The digests are saved in the store once the table's commit is made (:func:`mirror.store.export_state.save_digests`),
so they are kept until then: for a first export of the whole board, 17.5 million faves and 10.5
million comments. Kept as arrays of 64-bit integers where the key is one id or two, and, past
:data:`KEPT_IN_MEMORY` records, in a temporary file: a table's digests cost the export's memory
a few megabytes however large the table (the faves' took 420 MB as arrays). The file is made
beside the archive (:func:`folder_of`), whose disk holds the archive's 24 bytes a record many times
over, not in the system's temporary folder, which is often memory (tmpfs).
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
from array import array
from pathlib import Path
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any

__all__ = ["Written", "KEPT_IN_MEMORY", "folder_of", "remove_handed"]

# Records whose digests are held in memory before they go to the temporary file (16 MB for ids).
KEPT_IN_MEMORY = 1 << 20
HANDED_PREFIX = "mirror-export-digests-handed-"


@dataclass
class Written:
    """The rows one table's batch wrote: how many, and the digest of each record's version.

    Kept as arrays of 64-bit integers when the key is one id or two (``ids``): 16 bytes a record,
    24 for a pair, and past :data:`KEPT_IN_MEMORY` records written to a temporary file. A key that
    is no pair of integers after all turns the keys to text, kept in memory."""

    ids: int = 1
    rows: int = 0
    keys: Any = field(default_factory=lambda: array("q"))
    values: Any = field(default_factory=lambda: array("q"))
    folder: str | None = None  # where the temporary file goes (None: the system's temporary folder)
    spilled: IO[bytes] | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.ids:
            self.keys = []

    def add(self, key: str, value: int) -> None:
        """A record's digest, by its key as the store writes it (``123``, ``[1,2]``, ``art``)."""
        if self.ids:
            ids = _ids_in(key, self.ids)
            if ids is not None:
                self._append(ids, value)
                return
            self._as_text()
        self.keys.append(key)
        self.values.append(value)

    def add_ids(self, ids: tuple[Any, ...], key: str, value: int) -> None:
        """As :meth:`add`, from the key's own column values where they are the ids kept: no text
        made by SQLite and read back (17.5 million faves)."""
        if self.ids == len(ids) and type(ids[0]) is int and type(ids[-1]) is int:  # one id or two
            self._append(ids, value)
        else:
            self.add(key, value)

    def _append(self, ids: tuple[int, ...], value: int) -> None:
        self.keys.extend(ids)
        self.values.append(value)
        if len(self.values) >= KEPT_IN_MEMORY:
            self._spill()

    def extend(self, other: Written) -> None:
        """The digests and rows another process wrote of the same table, after these."""
        if other.ids and other.ids == self.ids:
            for keys, values in other._chunks():
                self.keys.extend(keys)
                self.values.extend(values)
                if len(self.values) >= KEPT_IN_MEMORY:
                    self._spill()
        else:
            for key, value in other.digests():
                self.add(key, value)
        self.rows += other.rows

    def digests(self) -> Iterator[tuple[str, int]]:
        """(record key as the store writes it, digest) for each record written, in the order written."""
        for keys, values in self._chunks():
            if self.ids == 2:
                pairs = iter(keys)
                yield from zip((f"[{first},{second}]" for first, second in zip(pairs, pairs)), values)
            else:
                yield from zip(map(str, keys), values)

    def close(self) -> None:
        """Let the temporary file go (it goes with the process too)."""
        if self.spilled is not None:
            self.spilled.close()
            self.spilled = None

    def _chunks(self) -> Iterator[tuple[Any, Any]]:
        if self.spilled is not None:
            self.spilled.seek(0)
            while header := self.spilled.read(16):
                lengths = array("q", header)
                keys, values = array("q"), array("q")
                keys.fromfile(self.spilled, lengths[0])
                values.fromfile(self.spilled, lengths[1])
                yield keys, values
            self.spilled.seek(0, 2)
        yield self.keys, self.values

    def _spill(self) -> None:
        if self.spilled is None:
            self.spilled = tempfile.TemporaryFile(prefix="mirror-export-digests-", dir=self.folder)
        _write_chunk(self.spilled, self.keys, self.values)
        self.keys, self.values = array("q"), array("q")

    def _as_text(self) -> None:
        """The keys kept so far as text, and every one after them: a key that is no ids came."""
        pairs = list(self.digests())
        self.close()
        self.keys, self.values, self.ids = [key for key, _ in pairs], array("q", (value for _, value in pairs)), 0

    def __getstate__(self) -> dict[str, Any]:
        """Sent to another process (a helper's digests): past :data:`KEPT_IN_MEMORY` records, in a
        file of their own beside the temporary one, which the receiving process takes and deletes
        (a copy in memory would be the whole table's digests twice, in both processes)."""
        state = dict(self.__dict__)
        state["spilled"] = None
        if self.spilled is not None:
            with tempfile.NamedTemporaryFile(prefix=HANDED_PREFIX, dir=self.folder, delete=False) as handed:
                for keys, values in self._chunks():
                    _write_chunk(handed, keys, values)
            state["keys"], state["values"], state["handed"] = array("q"), array("q"), handed.name
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        handed = state.pop("handed", None)
        self.__dict__.update(state)
        if handed is not None:
            self.spilled = open(handed, "r+b")
            os.unlink(handed)  # the open file stays readable, and goes with it
            self.spilled.seek(0, 2)


def _write_chunk(out: IO[bytes], keys: Any, values: Any) -> None:
    array("q", (len(keys), len(values))).tofile(out)
    keys.tofile(out)
    values.tofile(out)


def _ids_in(key: str, count: int) -> tuple[int, ...] | None:
    """The ``count`` integers a key the store wrote holds (``123``, ``[1,2]``), or None."""
    try:
        ids = tuple(map(int, key[1:-1].split(","))) if count == 2 else (int(key),)
    except ValueError:
        return None
    return ids if len(ids) == count else None


def remove_handed(folder: str | None) -> int:
    """Delete the digests a helper handed to an export that was killed before it took them (the
    files :meth:`Written.__getstate__` makes beside the archive); one export runs at a time."""
    removed = 0
    for path in Path(folder or tempfile.gettempdir()).glob(f"{HANDED_PREFIX}*"):
        path.unlink(missing_ok=True)
        removed += 1
    return removed


def folder_of(conn: sqlite3.Connection) -> str | None:
    """The folder of the database file ``conn`` reads (None for one in memory)."""
    path = conn.execute("PRAGMA database_list").fetchone()[2]
    return str(Path(path).parent) if path else None
