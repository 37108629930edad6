"""Run every benchmark in turn and print their tables: the one command behind docs/performance.md.

Each script in bench/ runs in its own process with this interpreter (so one's memory or threads
never colour the next), in the order below; a script added later (such as bench/serve.py) is
picked up and run after them with its defaults. ``--quick`` passes small sizes down, for a
check that everything still runs; ``--args NAME "ARGS"`` passes any script its own options.

    .venv/bin/python bench/run_all.py [--quick] [--only crawl_cost,cadence] [--args memory "--sizes 10000,100000"]
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
NOT_BENCHMARKS = {"common", "run_all", "board_history"}  # board_history: what browse.py measures on
# Known benchmarks in the order they run, with the sizes --quick passes them.
QUICK = {
    "crawl_cost": "--images 500 --changes 200",
    "cadence": "--requests 60",
    "client_cost": "--images 1000 --rounds 1",
    "memory": "--sizes 1000,5000",
    "peers": "--images 1000 --rate 20",
    "whole_board_paper": "--sample 500",
    "whole_board_dump": "--images 20000",
    "whole_board": "--images 20000 --rounds 5",
    "store_images": "--records 2000 --rounds 1",
    "download_files": "--files 100 --big-mb 20",
    "reverse": "",
    "serve": "--images 20000 --rounds 5 --sql-rounds 2 --shows 500",
    "similar": "--quick",
    "history": "--images 3400 --scale 0.1 --days 30",
    "browse": "--images 20000 --rounds 2",
    "import_dump": "--images 20000",
}


def scripts() -> list[str]:
    """Every benchmark in bench/: the known ones in order, then any others found."""
    found = sorted(p.stem for p in HERE.glob("*.py") if p.stem not in NOT_BENCHMARKS)
    return [name for name in QUICK if name in found] + [name for name in found if name not in QUICK]


def run(name: str, args: list[str]) -> tuple[int, float]:
    """One benchmark, its output passed straight through: (exit code, seconds)."""
    print(f"\n{'=' * 100}\n{name} {' '.join(args)}\n{'=' * 100}", flush=True)
    started = time.perf_counter()
    code = subprocess.run([sys.executable, str(HERE / f"{name}.py"), *args], cwd=HERE.parent).returncode
    return code, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes: a check that everything runs")
    parser.add_argument("--only", default="", help="comma-separated benchmark names")
    parser.add_argument("--args", nargs=2, action="append", default=[], metavar=("NAME", "ARGS"),
                        help="options for one benchmark (repeatable)")
    options = parser.parse_args()
    extra = {name: shlex.split(text) for name, text in options.args}
    wanted = [n for n in scripts() if not options.only or n in options.only.split(",")]
    results = []
    for name in wanted:
        args = shlex.split(QUICK.get(name, "")) if options.quick else []
        results.append((name, *run(name, args + extra.get(name, []))))
    print(f"\n{'=' * 100}")
    for name, code, seconds in results:
        print(f"{name:16} {'ok' if code == 0 else f'FAILED (exit {code})':18} {seconds:7.0f} s")
    sys.exit(max((code != 0 for _, code, _ in results), default=0))


if __name__ == "__main__":
    main()
