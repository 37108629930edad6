"""Worker processes leave with the process that started them (mirror.workers)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

PARENT = """
import os, sys
from mirror.workers import worker_pool
pool = worker_pool(2)
print(*sorted({pool.submit(os.getpid).result() for _ in range(8)} | {pool.submit(os.getpid).result()}), flush=True)
sys.stdin.read()  # until killed
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:  # a zombie waiting for its parent is gone too
        return stat.read().split(") ")[1][0] != "Z"


def test_a_pool_s_workers_leave_when_their_parent_is_sigkilled():
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    workers = [int(pid) for pid in parent.stdout.readline().split()]
    assert workers and all(_alive(pid) for pid in workers)
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 30  # half a second each on a quiet machine; a loaded one is slower
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [pid for pid in workers if _alive(pid)]
