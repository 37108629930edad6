"""The peak memory of a program run in a subprocess, measured so that the test process's own size
does not count.

A child forked from the test process starts with that process's memory counted as its own peak
(Linux records the parent's high-water mark at ``exec``): deep into the whole suite, every child
seemed to take over a gigabyte. So the program is started from a small interpreter, which reports
its child's peak on the last line of its standard error.
"""

from __future__ import annotations

import subprocess
import sys

__all__ = ["run_measured"]

_MEASURE = ("import resource, subprocess, sys; code = subprocess.run(sys.argv[1:]).returncode; "
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); sys.exit(code)")


def run_measured(argv: list[str], timeout: float = 300) -> tuple[subprocess.CompletedProcess[str], int]:
    """Run ``argv``; its completed process (text output, the measure's line taken off standard
    error) and its peak resident memory in MB."""
    done = subprocess.run([sys.executable, "-c", _MEASURE, *argv], capture_output=True, text=True, timeout=timeout,
                          check=False)
    stderr, _, peak_kb = done.stderr.rstrip("\n").rpartition("\n")
    done.stderr = stderr
    return done, int(peak_kb) // 1024
