"""What migration 0041 (first sightings counted) does to an archive made the old way: its history
rows, its live bytes (``(page_count - freelist_count) * page_size``: the pages in use, the freed
ones reused as the archive grows) and the time the migration takes.

Give it a COPY of an archive migrated up to 0040 (never the archive itself: the copy is migrated
in place). It prints the figures before and after with the load average beside the time (the
machines here are shared), and each first-seen answer before and after (`mirror changes`'s
summary, per resource) to show they are the same.

Measured on a copy of the 100,000-image archive imported from a Derpibooru-shaped dump (2 shared
cores, load 4.4): 1.8 s; history 960,925 -> 503,510 rows, live bytes 861.3 -> 779.4 MB (0.905);
every first-seen count and span the same (docs/performance.md, "The whole board").

    .venv/bin/python bench/first_sightings.py COPY_OF_MIRROR.db
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import time
from pathlib import Path

from mirror.store.history_read import first_seen
from mirror.store.schema import apply_migrations
from sqlite_utils import Database


def figures(path: Path) -> dict[str, int]:
    conn = sqlite3.connect(path)
    pages, free, size = (conn.execute(f"PRAGMA {p}").fetchone()[0] for p in ("page_count", "freelist_count",
                                                                             "page_size"))
    rows = conn.execute("SELECT count(*) FROM history").fetchone()[0]
    firsts = conn.execute("SELECT count(*) FROM history WHERE event = 'first_seen'").fetchone()[0]
    conn.close()
    return {"history rows": rows, "first_seen rows": firsts, "live bytes": (pages - free) * size}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("database", type=Path, help="a COPY of an archive (migrated in place)")
    args = parser.parse_args()
    before = figures(args.database)
    summary = first_seen(sqlite3.connect(args.database))
    db = Database(args.database)
    started, load = time.perf_counter(), os.getloadavg()[0]
    apply_migrations(db)
    took = time.perf_counter() - started
    db.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    after = figures(args.database)
    for name in before:
        print(f"{name:>16}: {before[name]:>14,} -> {after[name]:>14,}  ({after[name] / max(1, before[name]):.3f})")
    print(f"migration: {took:.1f} s (load average {load:.2f} before, {os.getloadavg()[0]:.2f} after)")
    again = first_seen(sqlite3.connect(args.database))
    for old, new in zip(summary, again, strict=True):
        print(f"first seen, {old.resource}: {old.count:,} {old.first_at}..{old.last_at} -> "
              f"{new.count:,} {new.first_at}..{new.last_at}")


if __name__ == "__main__":
    main()
