"""The whole board, measured: a dump of Derpibooru's size and shape, imported, then the archive's
size beside PostgreSQL's, where its bytes go, and the commands a user runs on it.

    .venv/bin/python bench/whole_board.py [--images 350000] [--work DIR] [--skip-import] [--no-postgres]

1. The dump (:mod:`mirror.localsite.dump.whole_board`, cached in the work folder by its
   parameters): its counts and shapes are printed first, as every figure below stands on them.
2. ``mirror import-dump`` in a subprocess: wall and CPU time, peak resident memory.
3. The archive's size (after a checkpoint) beside the same dump restored by the test extras'
   PostgreSQL with ``pg_restore`` (tables only: the dump has no index), and the ratio; then the
   archive's largest tables and indexes by ``dbstat``.
4. ``mirror serve`` on the archive: a search mix (anonymous, the Default filter), the first
   search after start, the server's peak memory; ``mirror status`` and ``mirror verify --sample``.

What stays on paper here (``docs/performance.md``): the files (the local board's are stand-ins),
the API-only walk of a whole board (weeks at the polite pace) and the duplicate finder at this
size. The nights after the import and browse's pages are measured on copies of the archive this
imports: ``bench/nights.py --database COPY --site COPY`` (the local site's app serves one copy as
the site, the other syncs from it) and ``bench/browse.py --database COPY``. The load average is
printed beside every step: the machines are shared.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import subprocess
import tempfile
import time
from pathlib import Path

import httpx
from common import percentile, print_table, run_cli_measured, serve_process

from mirror.localsite.dump.whole_board import cached_dump, cached_summary, summary_lines

SEARCHES = {
    "safe (2 images in 3)": "safe",
    "one common tag": "pony",
    "two tags": "safe, solo",
    "tag and NOT tag": "pony, -safe",
    "an artist": "artist:ka",
    "description words": "description:orchard",
    "score range": "score.gt:100",
    "sorted by score": ("safe", "score"),
}


def load() -> str:
    return "load {:.1f} {:.1f} {:.1f}".format(*os.getloadavg())


def import_archive(dump: Path, work: Path) -> tuple[Path, dict]:
    database = work / "mirror.db"
    for leftover in work.glob("mirror.db*"):
        leftover.unlink()
    config = work / "mirror.toml"
    config.write_text(f'[site]\nbase_url = "https://derpibooru.org"\n[store]\ndatabase = "{database}"\n'
                      f'files = "{work / "files"}"\n')
    before = load()
    measured = run_cli_measured(["-c", str(config), "import-dump", str(dump)])
    if measured.returncode:
        raise SystemExit(f"import-dump failed:\n{measured.stderr[-3000:]}")
    said = (measured.stdout + measured.stderr).splitlines()
    steps = [line.split("Z ", 1)[-1] for line in said if " imported in " in line or line.split("Z ", 1)[-1].startswith("copied ")]
    return database, {"wall": measured.wall, "cpu": measured.cpu, "peak_mb": measured.peak_mb, "steps": steps,
                      "load": f"{before} -> {load()}"}


def archive_bytes(database: Path) -> tuple[int, list[tuple[str, float, int]]]:
    with sqlite3.connect(database) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        biggest = conn.execute("SELECT name, sum(pgsize) / 1e6, sum(ncell) FROM dbstat GROUP BY name "
                               "ORDER BY 2 DESC LIMIT 18").fetchall()
    return database.stat().st_size, biggest


def postgres_bytes(dump: Path) -> int:
    """The dump restored by PostgreSQL (its tables: the dump holds no index), in bytes."""
    from mirror.localsite.dump.postgres import running_postgres

    with running_postgres() as server, server.new_database() as pg:
        subprocess.run(pg.client("psql", "-q", "-c", "DROP SCHEMA public CASCADE"), check=True, capture_output=True)
        restore = [str(pg.bin / "pg_restore"), *pg.client("psql")[1:5], "-d", pg.database, "--no-owner", str(dump)]
        subprocess.run(restore, check=True, capture_output=True)
        subprocess.run(pg.client("psql", "-q", "-c", "VACUUM ANALYZE"), check=True, capture_output=True)
        out = subprocess.run(pg.client("psql", "-At", "-c", "SELECT sum(pg_total_relation_size(oid)) FROM pg_class "
                                       "WHERE relkind = 'r' AND relnamespace = 'public'::regnamespace"),
                             check=True, capture_output=True, text=True)
    return int(out.stdout.strip())


def serve_figures(database: Path, work: Path, rounds: int) -> tuple[list[list], dict]:
    started = time.perf_counter()
    server = serve_process(database, work)
    try:
        with httpx.Client(base_url=server.url, timeout=600) as http:
            first = _search(http, "safe")
            first_ms = (time.perf_counter() - started) * 1000
            rows, timings = [], []
            for name, search in SEARCHES.items():
                found, times = 0, []
                for _ in range(rounds):
                    began = time.perf_counter()
                    found = _search(http, *search) if isinstance(search, tuple) else _search(http, search)
                    times.append((time.perf_counter() - began) * 1000)
                timings += times
                rows.append([name, found, percentile(times, 0.5), percentile(times, 0.95)])
            rows.append(["all searches", "", percentile(timings, 0.5), percentile(timings, 0.95)])
        memory = server.memory()
    finally:
        server.stop()
    return rows, {"first_search_ms_after_start": first_ms, "first_total": first, "peak_mib": memory["VmHWM"] / 1024}


def _search(http: httpx.Client, q: str, sf: str | None = None) -> int:
    params = {"q": q, "per_page": 50, **({"sf": sf, "sd": "desc"} if sf else {})}
    answer = http.get("/search/images", params=params)
    answer.raise_for_status()
    return answer.json()["total"]


def command_seconds(database: Path, work: Path, *args: str) -> float:
    config = work / "mirror.toml"
    measured = run_cli_measured(["-c", str(config), *args])
    return measured.wall if measured.returncode in (0, 1) else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=350_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "mirror-whole-board")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--skip-import", action="store_true", help="measure the archive the last run imported")
    parser.add_argument("--no-postgres", action="store_true")
    args = parser.parse_args()
    work = args.work / f"images-{args.images}"
    work.mkdir(parents=True, exist_ok=True)

    started = time.perf_counter()
    dump = cached_dump(args.images, args.seed, args.work)
    print(f"dump {dump} ({time.perf_counter() - started:.0f} s, {load()})")
    for line in summary_lines(cached_summary(dump)):
        print(f"  {line}")

    database = work / "mirror.db"
    if not args.skip_import:
        database, imported = import_archive(dump, work)
        print(f"\nimport-dump: {imported['wall'] / 60:.1f} min wall, {imported['cpu'] / 60:.1f} min CPU, "
              f"peak {imported['peak_mb']:.0f} MB ({imported['load']})")
        for step in imported["steps"]:
            print(f"  {step}")

    size, biggest = archive_bytes(database)
    dump_size = dump.stat().st_size
    print(f"\narchive {size / 1e9:.2f} GB: {size / dump_size:.1f} times the dump ({dump_size / 1e9:.2f} GB)")
    if not args.no_postgres:
        pg = postgres_bytes(dump)
        print(f"PostgreSQL's restore of the same dump (tables, no index): {pg / 1e9:.2f} GB; "
              f"the archive is {size / pg:.2f} times that")
    print_table(["table or index", "MB", "entries"], biggest, "where the archive's bytes go (dbstat)")

    rows, served = serve_figures(database, work, args.rounds)
    print_table(["search", "found", "p50 ms", "p95 ms"], rows, f"mirror serve, {args.rounds} rounds each ({load()})")
    print(f"first search after start {served['first_search_ms_after_start']:.0f} ms (process start included); "
          f"serve's peak memory {served['peak_mib']:.0f} MiB")
    print(f"mirror status {command_seconds(database, work, 'status'):.1f} s; "
          f"mirror verify --sample 1/30 {command_seconds(database, work, 'verify', '--sample', '1/30'):.1f} s "
          f"({load()})")


if __name__ == "__main__":
    main()
