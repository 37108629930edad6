"""A large table's first export made on two cores: a helper process reads half its rows.

The images are most of a first export's time (each image's versions read back through its history
in Python: one core's work), and a table is one Delta commit, made by one writer. So the table's
rows are cut in two by rowid (:func:`halves`: as many of the images' tag changes, most of the work,
on either side); a helper process makes the record batches of the upper half and passes them
through a queue, and the writer's process writes them between its own, in the one commit. The
helper's digests follow its last batch. The versions are the same, only their order in the table
differs (``tests/export/test_halves.py``).
"""

from __future__ import annotations

import os
import queue
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from ..store.export_state import reading_connection
from .batches import Bounds, record_batches
from .written import Written, folder_of
from .tables import EXPORT_TABLES, ExportTable

__all__ = ["Channel", "HelperFailed", "feed", "halves", "merged"]

# Batches waiting in the queue at most (4,096 versions each): past that the helper waits for the writer.
QUEUED = 8
# Seconds between two looks at whether the other side is still there.
PATIENCE = 2.0


class HelperFailed(RuntimeError):
    """The helper process stopped before its last batch: the table's commit is not made."""


@dataclass
class Channel:
    """The helper's batches to the writer (a multiprocessing queue), and the writer's word that it
    stopped (an event), so that a helper never waits on a full queue no one reads."""

    batches: Any
    abandoned: Any

    @classmethod
    def made(cls, context: Any) -> Channel:
        return cls(context.Queue(QUEUED), context.Event())


@dataclass
class _Started:
    pid: int


@dataclass
class _Failed:
    reason: str


def halves(conn: sqlite3.Connection, table: ExportTable) -> tuple[tuple[int, int], tuple[int, int]]:
    """The table's rowids cut in two ranges (after the first bound, up to the second): for the
    images, at the median image of their tag changes, where there are more of them than images;
    else at the middle rowid."""
    low, high = conn.execute(f'SELECT coalesce(min(rowid), 1) - 1, coalesce(max(rowid), 0) '
                             f'FROM "{table.table}"').fetchone()
    middle = (low + high) // 2
    if table.name == "images":
        changes = conn.execute("SELECT count(*) FROM image_tag_changes").fetchone()[0]
        if changes > high - low:
            found = conn.execute("SELECT image_id FROM image_tag_changes ORDER BY image_id LIMIT 1 OFFSET ?",
                                 [changes // 2]).fetchone()
            if found is not None and low < found[0] < high:
                middle = found[0]
    return (low, middle), (middle, high)


def feed(path: str, name: str, bounds: Bounds, rowids: tuple[int, int], channel: Channel) -> None:
    """In the helper process: table ``name``'s record batches of the rows in ``rowids`` into the
    channel, then their digests (:class:`Written`), or why it failed."""
    if not _put(channel, _Started(os.getpid())):
        return
    conn = reading_connection(path)
    table = EXPORT_TABLES[name]
    written = Written(ids=table.key_ids, folder=folder_of(conn))
    try:
        for batch in record_batches(conn, table, bounds, written, rowids=rowids):
            if not _put(channel, batch):
                return
        _put(channel, written)
    except BaseException as error:
        _put(channel, _Failed(f"{type(error).__name__}: {error}"))
        raise
    finally:
        conn.close()


def merged(own: Iterator[pa.RecordBatch], channel: Channel, written: Written) -> Iterator[pa.RecordBatch]:
    """The writer's own batches with the helper's between them, as they come; the helper's digests
    added to ``written`` at its end. The helper stopping early raises :class:`HelperFailed`."""
    helper: list[int] = []
    finished = False
    try:
        for batch in own:
            yield batch
            while not finished and (item := _get(channel, helper, wait=False)) is not None:
                finished = yield from _taken(item, written, helper)
        while not finished:
            finished = yield from _taken(_get(channel, helper, wait=True), written, helper)
    finally:
        if not finished:
            channel.abandoned.set()


def _taken(item: Any, written: Written, helper: list[int]) -> Iterator[pa.RecordBatch]:
    """Yields ``item`` if it is a batch; True once it is the helper's digests (merged into ``written``)."""
    if isinstance(item, pa.RecordBatch):
        yield item
        return False
    if isinstance(item, _Started):
        helper.append(item.pid)
        return False
    if isinstance(item, _Failed):
        raise HelperFailed(f"the helper process failed: {item.reason}")
    written.extend(item)
    return True


def _get(channel: Channel, helper: list[int], *, wait: bool) -> Any:
    """The helper's next item (None: nothing yet, when not waiting); waiting, a helper that ended
    without its last item raises :class:`HelperFailed`."""
    while True:
        try:
            return channel.batches.get(timeout=PATIENCE) if wait else channel.batches.get_nowait()
        except queue.Empty:
            if not wait:
                return None
            if helper and not _alive(helper[0]):
                raise HelperFailed("the helper process ended before its last batch") from None


def _put(channel: Channel, item: Any) -> bool:
    """``item`` into the queue, once there is room; False if the writer stopped meanwhile."""
    while not channel.abandoned.is_set():
        try:
            channel.batches.put(item, timeout=PATIENCE)
            return True
        except queue.Full:
            continue
    return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
