"""Fingerprint workers killed as the OOM killer kills them: SIGKILL, mid-file.

:func:`poisoned_pool` stands in for :func:`mirror.workers.worker_pool`; its spawned workers read
fingerprints as usual but SIGKILL themselves on a file whose SHA-256 is listed: always (a file
that kills every worker reading it), or only the first time (a worker killed by chance, the next
one reads it), counted in a file per picture in a folder (a byte per kill), since each worker is a
new process.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import signal
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ALWAYS, ONCE, MARKS = "POISON_ALWAYS", "POISON_ONCE", "POISON_MARKS"


def poisoned_pool(processes: int) -> ProcessPoolExecutor:
    return ProcessPoolExecutor(processes, mp_context=multiprocessing.get_context("spawn"), initializer=_poison,
                               initargs=(os.environ[ALWAYS], os.environ[ONCE], os.environ[MARKS]))


def _poison(always: str, once: str, marks: str) -> None:
    from mirror.imaging import similar

    real = similar.fingerprint_of

    def fingerprint_of(data, box=None):  # noqa: ANN001, ANN202 (as similar.fingerprint_of)
        digest = hashlib.sha256(data).hexdigest()
        mark = Path(marks) / digest
        if digest in always.split(",") or (digest in once.split(",") and not mark.exists()):
            with open(mark, "a") as kills:  # a byte per worker killed
                kills.write("x")
            os.kill(os.getpid(), signal.SIGKILL)
        return real(data, box)

    similar.fingerprint_of = fingerprint_of
