"""A large table's first export made on two cores: its rows cut in pieces two processes take in turn.

The images are most of a first export's time (each image's versions read back through its history
in Python: one core's work). So their rows are cut into :data:`PIECES` ranges of rowids with as
many of the images' tag changes in each, most of the work (:func:`pieces`). A helper process takes
pieces from the start; the export's own process joins it once it has written every other table;
each writes the Parquet files of the pieces it took (:func:`mirror.export.delta.write_files`). The
export's process then makes the table's one commit of both processes' files and keeps both
processes' digests. Two processes share the two cores to the end, however the board's tables weigh
against each other, and no batch crosses from one process to the other. The versions are the same
as one process writes, only their order in the table differs (``tests/export/test_shared.py``).
"""

from __future__ import annotations

import sqlite3
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from itertools import chain
from typing import Any

from deltalake.transaction import AddAction

from ..store.export_state import reading_connection
from . import delta
from .batches import Bounds, record_batches
from .tables import EXPORT_TABLES, ExportTable
from .written import Written, folder_of

__all__ = ["HelperFailed", "PIECES", "Part", "Share", "pieces", "write_pieces", "helper_part"]

# Pieces of the table: enough that neither process waits long for the other at the end (a piece
# of the whole board's images is some 30 s of one core), few enough that each is files of a size.
PIECES = 32


class HelperFailed(RuntimeError):
    """The helper process stopped before its last piece: the table's commit is not made."""


@dataclass
class Share:
    """The table's pieces, and the number of the next one to take (a counter both processes see,
    made by ``multiprocessing``); ``stopped``, an event the export's process sets when it fails,
    so that the helper takes no more."""

    ranges: list[tuple[int, int]]
    taken: Any
    stopped: Any

    @classmethod
    def made(cls, context: Any, ranges: list[tuple[int, int]]) -> Share:
        return cls(ranges, context.Value("i", 0), context.Event())

    def take(self) -> tuple[int, int] | None:
        """The next piece's rowids (after the first, up to the second), or None: none left."""
        if self.stopped.is_set():
            return None
        with self.taken.get_lock():
            number = self.taken.value
            if number >= len(self.ranges):
                return None
            self.taken.value = number + 1
        return self.ranges[number]


@dataclass
class Part:
    """What one process wrote of the table: the files, not yet committed, and the digests."""

    files: list[AddAction]
    written: Written


def pieces(conn: sqlite3.Connection, table: ExportTable, count: int | None = None) -> list[tuple[int, int]]:
    """The table's rowids cut in at most ``count`` ranges (:data:`PIECES`) (after the first bound, up to the second):
    for the images, at the quantiles of their tag changes, where there are more of them than
    images; else at even steps of rowid."""
    count = count or PIECES
    low, high = conn.execute(f'SELECT coalesce(min(rowid), 1) - 1, coalesce(max(rowid), 0) '
                             f'FROM "{table.table}"').fetchone()
    cuts = [low + (high - low) * n // count for n in range(1, count)]
    if table.name == "images":
        changes = conn.execute("SELECT count(*) FROM image_tag_changes").fetchone()[0]
        if changes > high - low:  # each cut a count's share of the changes past the last (one walk of the index)
            cuts, last = [], low
            for _ in range(count - 1):
                found = conn.execute("SELECT image_id FROM image_tag_changes WHERE image_id > ? ORDER BY image_id "
                                     "LIMIT 1 OFFSET ?", [last, changes // count]).fetchone()
                if found is None:
                    break
                cuts.append(last := found[0])
    bounds = sorted({low, high, *(cut for cut in cuts if low < cut < high)})
    return list(zip(bounds, bounds[1:]))


def write_pieces(conn: sqlite3.Connection, where: delta.Destination, table: ExportTable, bounds: Bounds,
                 share: Share, written: Written) -> list[AddAction]:
    """The pieces this process takes, until none is left, written into files of the table (one
    stream of files across the pieces: a piece's last rows share a file with the next's, so a
    compaction finds no small file to rewrite); their digests noted in ``written``."""
    taken = iter(share.take, None)
    batches = chain.from_iterable(record_batches(conn, table, bounds, written, rowids=rowids) for rowids in taken)
    return delta.write_files(where, table.name, table.schema(), batches)


def helper_part(path: str, where: delta.Destination, name: str, bounds: Bounds, share: Share) -> Part:
    """In the helper process: the pieces it takes of table ``name``, written (the database at ``path``)."""
    conn = reading_connection(path)
    table = EXPORT_TABLES[name]
    written = Written(ids=table.key_ids, folder=folder_of(conn))
    try:
        return Part(write_pieces(conn, where, table, bounds, share, written), written)
    finally:
        conn.close()


def joined(own: Part, helper: Future[Part]) -> Part:
    """This process's part and the helper's, once it has written its last piece; the helper failing
    raises :class:`HelperFailed`, naming why."""
    try:
        theirs = helper.result()
    except BrokenProcessPool:
        raise HelperFailed("the helper process ended before its last piece") from None
    except Exception as error:
        raise HelperFailed(f"the helper process failed: {type(error).__name__}: {error}") from error
    own.written.extend(theirs.written)
    theirs.written.close()
    return Part(own.files + theirs.files, own.written)
