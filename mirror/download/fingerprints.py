"""Perceptual fingerprints of kept files, for finding copies the site's rule misses.

An image's fingerprint (:mod:`mirror.imaging.similar`) is read from the best of its kept files
by :data:`SOURCES` (a thumbnail first: quick to decode, and enough, since a thumbnail's hashes
match the full picture's), once an image's files are kept (read once, from the best of them: the
full picture read first and replaced a moment later by the thumbnail's was most of a demo's
download time), and by ``mirror verify`` for kept files of images that have none yet, or one an
older finder computed (its ``version``). Which file a run happened to keep first (or before it
was killed) must not decide the values a mirror ends with, so a better file kept later replaces
what a worse one gave.
A file that cannot be read simply gets no fingerprint. A file larger than the box its
representation is scaled into (a file host serving a 108-megapixel picture as a thumbnail) is
not decoded at all: it stays kept, gets no fingerprint, and the run says so in one line.

A worker process can die mid-file (the OOM killer's SIGKILL, on a picture that decodes into more
memory than the machine has): every file in flight on its pool then fails with
``BrokenProcessPool``. The run starts a fresh pool and goes on; each of those files is read again
on a worker of its own, one at a time, so a kill there is that file's without doubt (it may have
been only in flight on the pool that broke). A file that kills a worker of its own twice is
kept, marked "not fingerprinted" with the reason (the download's ``reason``), and not read again
by later runs.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from types import TracebackType
from typing import Self

from sqlite_utils import Database

from ..imaging import MediaError
from ..imaging.errors import TooLarge
from ..imaging import similar
from ..imaging.similar import VERSION, Fingerprint, fingerprint_of
from ..philomena import SIZE_BOXES
from ..store.downloads import NOT_FINGERPRINTED, mark_not_fingerprinted
from ..store.similar import delete_hashes, fingerprint_source, save_hashes
from ..workers import usable_cores, worker_pool
from .storage import Storage

__all__ = ["SOURCES", "Fingerprinter", "WorkerKilled", "backfill_fingerprints", "keep_best_fingerprint",
           "keep_fingerprint", "said_once"]

# The files a fingerprint is read from, the preferred (the quickest to decode) first.
SOURCES = ("thumb", "small", "thumb_small", "medium", "large", "tall", "full")
# A run of fewer files reads their fingerprints on a thread: a worker process costs some 0.5 s of
# CPU to start (it imports numpy and Pillow), more than a few fingerprints save.
POOL_FROM = 100
MAX_PROCESSES = 4  # a run has at most download.concurrency files in hand; 4 by default


class WorkerKilled(Exception):
    """A file whose reading killed a worker process of its own twice."""


class Fingerprinter:
    """Where a run reads fingerprints: on ``processes`` worker processes of its own, or on a
    thread (0); ``say`` is told, in one line, of a file refused for its size.

    A thumbnail's fingerprint is some 30 ms of CPU, much of it Python holding the GIL: on a thread
    it took turns with the run's own HTTP work (and the demo's local site, served from the same
    process), so a download of many files used one core of two. The values are the same wherever
    they are read.
    """

    def __init__(self, processes: int = 0, say: Callable[[str], None] | None = None) -> None:
        self.say = say
        self._processes = processes
        self._pool = worker_pool(processes) if processes else None
        self._generation = 0  # how many pools were replaced: a broken one is replaced once
        self._solo: ProcessPoolExecutor | None = None  # one worker, for a file read after a pool broke
        self._suspects = asyncio.Lock()

    @classmethod
    def for_run(cls, files: int, say: Callable[[str], None] | None = None) -> Fingerprinter:
        """For a run of ``files``: from :data:`POOL_FROM` files, a process for each core but the
        one the run keeps busy (at most :data:`MAX_PROCESSES`); a thread otherwise."""
        return cls(min(usable_cores() - 1, MAX_PROCESSES) if files >= POOL_FROM else 0, say)

    async def read(self, data: bytes, box: tuple[int, int] | None) -> Fingerprint:
        """The fingerprint of ``data`` (raises :class:`MediaError`)."""
        if self._pool is None:
            return await asyncio.to_thread(fingerprint_of, data, box)
        generation = self._generation
        try:
            return await self._on(self._pool, data, box)
        except BrokenProcessPool:
            self._replace(generation)
        async with self._suspects:  # alone on a worker of its own: a kill there is this file's
            for kills in range(1, 3):
                if self._solo is None:
                    self._solo = worker_pool(1)
                try:
                    return await self._on(self._solo, data, box)
                except BrokenProcessPool:
                    self._solo.shutdown(wait=False, cancel_futures=True)
                    self._solo = None
        raise WorkerKilled(f"reading it killed a worker process of its own {kills} times (out of memory?); "
                           "it is not read again")

    @staticmethod
    async def _on(pool: ProcessPoolExecutor, data: bytes, box: tuple[int, int] | None) -> Fingerprint:
        # By its own module's name: a worker then imports mirror.imaging alone, not this package.
        return await asyncio.get_running_loop().run_in_executor(pool, similar.fingerprint_of, data, box)

    def _replace(self, generation: int) -> None:
        """A fresh pool for the one that broke (once, however many files were in flight on it)."""
        if generation != self._generation or self._pool is None:
            return
        broken, self._pool = self._pool, worker_pool(self._processes)
        self._generation += 1
        broken.shutdown(wait=False, cancel_futures=True)
        if self.say is not None:
            self.say("a fingerprint worker was killed (out of memory?); a fresh one goes on, and the files it "
                     "was reading are read again one at a time")

    def close(self) -> None:
        for pool in (self._pool, self._solo):
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


async def keep_fingerprint(db: Database, storage: Storage, image_id: int, representation: str, path: str,
                           fingerprinter: Fingerprinter | None = None) -> bool:
    """Read the kept file and store the image's fingerprint, unless it has one of this finder's
    version from a file as good; False if not stored. The ``fingerprinter``'s ``say`` is told of a
    file refused for its size."""
    fingerprinter = fingerprinter or Fingerprinter()
    if representation not in SOURCES:
        return False
    current = fingerprint_source(db, image_id)
    if current is not None and current[1] >= VERSION and current[0] in SOURCES \
            and SOURCES.index(current[0]) <= SOURCES.index(representation):
        return False
    data = await asyncio.to_thread(storage.read, path)
    if data is None:
        return False
    try:
        fingerprint = await fingerprinter.read(data, SIZE_BOXES.get(representation))
    except TooLarge as e:
        if fingerprinter.say is not None:
            fingerprinter.say(f"image {image_id} {representation}: kept, but not fingerprinted: {e}")
        return False
    except WorkerKilled as e:
        mark_not_fingerprinted(db, image_id, representation, str(e))
        if fingerprinter.say is not None:
            fingerprinter.say(f"image {image_id} {representation}: kept, but not fingerprinted: {e}")
        return False
    except MediaError:
        if current is not None and current[1] < VERSION:
            delete_hashes(db, image_id)  # an older finder's, of a picture this one tells from nothing
        return False
    save_hashes(db, image_id, [view.hashes() for view in fingerprint.views], representation, VERSION,
                [view.sketch for view in fingerprint.views], [view.crops for view in fingerprint.views])
    return True


async def keep_best_fingerprint(db: Database, storage: Storage, image_id: int, files: Iterable[tuple[str, str]],
                                fingerprinter: Fingerprinter | None = None) -> bool:
    """The image's fingerprint from the best of ``files`` (its kept representations and their
    paths) that can be read, read once: the others are only tried when a better one cannot be.
    False if none was stored."""
    for representation, path in sorted((f for f in files if f[0] in SOURCES), key=lambda f: SOURCES.index(f[0])):
        if await keep_fingerprint(db, storage, image_id, representation, path, fingerprinter):
            return True
    return False


def said_once(say: Callable[[str], None]) -> Callable[[str], None]:
    """``say``, each distinct line once: a run reads a refused file as it keeps it and again when
    it looks for kept files without a fingerprint, and should tell of it once."""
    said: set[str] = set()

    def once(line: str) -> None:
        if line not in said:
            said.add(line)
            say(line)

    return once


async def backfill_fingerprints(db: Database, storage: Storage, fingerprinter: Fingerprinter | None = None) -> int:
    """Fingerprints for the images with kept files and none yet, one from a worse file than the
    best kept now, or one an older finder computed; returns how many were stored."""
    marks = ", ".join("?" for _ in SOURCES)
    rows = db.execute(f"SELECT d.image_id, d.representation, d.path FROM downloads d "
                      f"LEFT JOIN (SELECT image_id, min(source_representation) AS source, min(version) AS version "
                      f"FROM image_hashes "
                      f"GROUP BY image_id) h ON h.image_id = d.image_id "
                      f"WHERE d.status = 'done' AND d.representation IN ({marks}) "
                      f"AND coalesce(d.reason, '') NOT LIKE '{NOT_FINGERPRINTED}%' "
                      f"AND (h.source IS NULL OR h.source != d.representation OR h.version < ?) "
                      f"ORDER BY d.image_id", [*SOURCES, VERSION]).fetchall()
    stored = 0
    for image_id, files in itertools.groupby(rows, key=lambda row: row[0]):
        stored += await keep_best_fingerprint(db, storage, image_id, [(name, path) for _, name, path in files],
                                              fingerprinter)
    return stored
