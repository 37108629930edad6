"""Worker processes that leave with the process that started them.

A ``ProcessPoolExecutor``'s workers outlive a parent that is SIGKILLed (a systemd timeout, the
OOM killer, ``kill -9``): they wait on their task queue for ever, each holding its imports. A
nightly job killed once a month would collect them. Each worker here watches its parent and
leaves once it is gone. Spawned, not forked: a fork of a process running an event loop and
threads (the download run) is not safe, and a spawned worker imports only the module of the
function it is given.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from concurrent.futures import ProcessPoolExecutor

__all__ = ["usable_cores", "worker_pool"]

POLL_SECONDS = 0.5


def usable_cores() -> int:
    """The cores this process may run on (its affinity, where the system tells it)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def worker_pool(processes: int) -> ProcessPoolExecutor:
    """A pool of ``processes`` spawned workers, each gone within a second of its parent."""
    return ProcessPoolExecutor(processes, mp_context=multiprocessing.get_context("spawn"),
                               initializer=_leave_with, initargs=(os.getpid(),))


def _leave_with(parent: int) -> None:
    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(POLL_SECONDS)
        os._exit(1)

    threading.Thread(target=watch, name="leave-with-parent", daemon=True).start()
