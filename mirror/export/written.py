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

import sqlite3
import tempfile
from array import array
from pathlib import Path
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any

__all__ = ["Written", "KEPT_IN_MEMORY", "folder_of"]

# Records whose digests are held in memory before they go to the temporary file (16 MB for ids).
KEPT_IN_MEMORY = 1 << 20


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
        array("q", (len(self.keys), len(self.values))).tofile(self.spilled)
        self.keys.tofile(self.spilled)
        self.values.tofile(self.spilled)
        self.keys, self.values = array("q"), array("q")

    def _as_text(self) -> None:
        """The keys kept so far as text, and every one after them: a key that is no ids came."""
        pairs = list(self.digests())
        self.close()
        self.keys, self.values, self.ids = [key for key, _ in pairs], array("q", (value for _, value in pairs)), 0

    def __getstate__(self) -> dict[str, Any]:
        """Sent to another process whole (a helper's digests): the temporary file read back."""
        state = dict(self.__dict__)
        if self.spilled is not None:
            chunks = list(self._chunks())
            state["keys"], state["values"] = array("q"), array("q")
            for keys, values in chunks:
                state["keys"].extend(keys)
                state["values"].extend(values)
        state["spilled"] = None
        return state


def _ids_in(key: str, count: int) -> tuple[int, ...] | None:
    """The ``count`` integers a key the store wrote holds (``123``, ``[1,2]``), or None."""
    try:
        ids = tuple(map(int, key[1:-1].split(","))) if count == 2 else (int(key),)
    except ValueError:
        return None
    return ids if len(ids) == count else None


def folder_of(conn: sqlite3.Connection) -> str | None:
    """The folder of the database file ``conn`` reads (None for one in memory)."""
    path = conn.execute("PRAGMA database_list").fetchone()[2]
    return str(Path(path).parent) if path else None
