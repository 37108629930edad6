"""What migration 0038 (absent fields as a mask, kept-aside fields patched only where they differ)
does to an archive: its bytes, and the time SQLite takes to rebuild ``raw``.

Give it a copy of an archive of the layout before 0038 (never the archive itself: the copy is
rewritten). It copies that once more beside it (the layout before), moves the three tables of the
first (:func:`mirror.store.relayout.relayout`, what 0038 runs), checks that every ``raw`` reads the
same bytes in both, then measures both: the file's size after the move and after ``VACUUM`` (both
copies vacuumed, so that free pages do not count), the bytes of images, comments and posts
(``dbstat``: each table with its indexes), and the time to read ``raw`` of the first N images,
the two files in turns, five rounds. The load average is printed beside the timings: the machines
here are shared.

Measured on a 100,000-image board imported from a Derpibooru-shaped dump (2 shared cores, load
4-5): the move took 62 s and every one of the 418,911 records read back the same; vacuumed, the
file 907.6 -> 839.5 MB (0.92), images 220.6 -> 187.4 MB, comments 171.5 -> 138.3 MB, posts 13.4 ->
11.7 MB; an image's patch 264 -> 33 bytes (what is left: floats of 16 digits, which SQLite prints
with 15), a comment's 105 -> 1.4; reading ``raw`` of 20,000 images took 0.92 (best) to 1.09
(median) of the time before: no change the noise lets one see.

    .venv/bin/python bench/raw_layout.py COPY_OF_MIRROR.db [--images 20000]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import statistics
import time
from pathlib import Path

from common import print_table

from mirror.store.raw_rebuilt import REBUILT
from mirror.store.relayout import relayout
from sqlite_utils import Database


def table_bytes(conn: sqlite3.Connection, table: str) -> int:
    """Bytes of ``table`` with its indexes, by ``dbstat``."""
    names = [table, *(n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index' "
                                                 "AND tbl_name = ?", [table]))]
    marks = ",".join("?" * len(names))
    return conn.execute(f"SELECT sum(pgsize) FROM dbstat WHERE name IN ({marks})", names).fetchone()[0]


def sizes(path: Path) -> dict[str, float]:
    conn = sqlite3.connect(path)
    found = {"file MB (vacuumed)": path.stat().st_size / 1e6}
    for table in REBUILT:
        found[f"{table} MB"] = table_bytes(conn, table) / 1e6
        found[f"{table} patch B/row"] = conn.execute(f"SELECT total(length(raw_rest)) / count(*) FROM {table}"
                                                     ).fetchone()[0]
    conn.close()
    return found


def same_raw(before: Path, after: Path) -> int:
    """How many records read back otherwise after the move (asserted none)."""
    old, new = sqlite3.connect(before), sqlite3.connect(after)
    differ = 0
    for table in REBUILT:
        a = old.execute(f"SELECT id, raw FROM {table} ORDER BY id")
        b = new.execute(f"SELECT id, raw FROM {table} ORDER BY id")
        while True:
            x, y = a.fetchmany(5000), b.fetchmany(5000)
            if not x and not y:
                break
            differ += sum(p != q for p, q in zip(x, y)) + abs(len(x) - len(y))
    return differ


def read_seconds(paths: list[Path], images: int, rounds: int = 5) -> list[list[float]]:
    """The time to read ``raw`` of the first ``images`` images of each file, the files in turns."""
    conns = [sqlite3.connect(path) for path in paths]
    times: list[list[float]] = [[] for _ in paths]
    for _ in range(rounds):
        for conn, kept in zip(conns, times):
            began = time.perf_counter()
            assert len(conn.execute("SELECT raw FROM images ORDER BY id LIMIT ?", [images]).fetchall()) == images
            kept.append(time.perf_counter() - began)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("database", type=Path, help="a COPY of an archive (it is rewritten)")
    parser.add_argument("--images", type=int, default=20_000)
    args = parser.parse_args()
    after = args.database
    before = after.with_name(after.name + ".before")
    shutil.copyfile(after, before)
    try:
        unmoved = after.stat().st_size / 1e6
        db = Database(after)
        began = time.perf_counter()
        with db.conn:
            for spec in REBUILT.values():
                relayout(db, spec)
        db.conn.close()
        print(f"moved the three tables in {time.perf_counter() - began:.1f} s (load {os.getloadavg()[0]:.1f}); "
              f"the file {unmoved:.1f} MB before, {after.stat().st_size / 1e6:.1f} MB after (not vacuumed)")
        differ = same_raw(before, after)
        print(f"records whose raw reads otherwise after the move: {differ}")
        assert differ == 0
        for path in (before, after):
            sqlite3.connect(path).execute("VACUUM")
        old, new = sizes(before), sizes(after)
        print_table(["", "before 0038", "after 0038", "ratio"],
                    [[name, f"{old[name]:.1f}", f"{new[name]:.1f}",
                      f"{new[name] / old[name]:.2f}" if old[name] else "-"] for name in old])
        slow, fast = read_seconds([before, after], args.images)
        print(f"raw of {args.images:,} images, before / after: best {min(slow):.3f} / {min(fast):.3f} s "
              f"(ratio {min(fast) / min(slow):.2f}), median {statistics.median(slow):.3f} / "
              f"{statistics.median(fast):.3f} s (ratio {statistics.median(fast) / statistics.median(slow):.2f}); "
              f"load {os.getloadavg()[0]:.1f}")
    finally:
        before.unlink(missing_ok=True)


if __name__ == "__main__":
    main()
