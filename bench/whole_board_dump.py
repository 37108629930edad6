"""The whole board's dump written without PostgreSQL: time, peak memory and size at each size.

    .venv/bin/python bench/whole_board_dump.py [--images 100000 350000] [--processes 2] [--work DIR]

Each size is written afresh (not from the cache) by :func:`~mirror.localsite.dump.whole_board.write_whole_board`
into the work folder and removed after. Peak memory is the parent's and the larger of its two
processes' (``ru_maxrss``; the two run at once, so their sum bounds the total). The load average
before and after is printed: the machine is shared, and a busy one stretches the time. The board's
counts and shapes are printed below each size's row, as every benchmark on it prints them.
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
from pathlib import Path

from common import print_table

from mirror.localsite.dump.whole_board import summary_lines, write_whole_board


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, nargs="+", default=[100_000, 350_000])
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--work", type=Path, default=None, help="Where to write the dumps (a temporary folder).")
    args = parser.parse_args()
    rows, shapes = [], []
    with tempfile.TemporaryDirectory(dir=args.work) as work:
        for images in args.images:
            out = Path(work) / f"whole-{images}.pgdump"
            before = os.getloadavg()[0]
            started = time.perf_counter()
            summary = write_whole_board(out, images, args.seed, processes=args.processes)
            wall = time.perf_counter() - started
            rows.append([images, sum(summary["rows"].values()), round(summary["file_bytes"] / 1e6, 1), round(wall, 1),
                         resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
                         resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024,
                         f"{before:.2f} -> {os.getloadavg()[0]:.2f}"])
            shapes += summary_lines(summary)
            out.unlink()
    print_table(["images", "rows", "MB", "seconds", "parent MB", "worker MB", "load (1 min)"], rows,
                f"The whole board's dump, {args.processes} process(es), {os.cpu_count()} cores")
    print("\n".join(shapes))


if __name__ == "__main__":
    main()
