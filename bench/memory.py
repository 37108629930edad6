"""Memory: peak resident memory (VmHWM) of `mirror sync` as the board grows.

For each size a `mirror site --images N` process serves the board (its data set lives in its own
memory, not the measured one) and a `mirror sync` subprocess mirrors it, unpaced, into a fresh
database; VmHWM is read from /proc as that process exits. The sizes are compared in one run:
a sync that streams page by page stays flat however big the board.

    .venv/bin/python bench/memory.py [--sizes 10000,50000] [--resources images]
    .venv/bin/python bench/memory.py --board PATH   # also a sync of a board served by `mirror serve`

``--board`` takes a board database (bench/serve.py generates a 1,000,000-image one): `mirror serve`
answers from it, and `mirror sync images` mirrors every image of it, as from the site.
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
from pathlib import Path

from common import (
    SiteProcess,
    mirror_config,
    print_table,
    run_cli_measured,
    serve_process,
    write_toml,
)

LIMIT_MB = 100.0


def measure(images: int, resources: list[str], work: Path) -> tuple[float, float, float, int]:
    """(peak MB, wall s, CPU s, database bytes) of one `mirror sync` of a board of ``images``."""
    with SiteProcess(images, seed=6) as site:
        site.warm()
        config = mirror_config(site.url, site.everything_filter_id, work, resources=resources)
        toml = write_toml(config, work / "mirror.toml")
        run = run_cli_measured(["-c", str(toml), "sync", *resources])
    if run.returncode != 0:
        raise RuntimeError(f"mirror sync exited {run.returncode}: {run.stderr[-500:]}")
    size = sum(p.stat().st_size for p in work.glob("mirror.db*"))
    return run.peak_mb, run.wall, run.cpu, size


def measure_served(board: Path, resources: list[str], work: Path) -> tuple[int, float, float, float, int]:
    """(images, peak MB, wall s, CPU s, database bytes) of a `mirror sync` of ``board`` served by `mirror serve`."""
    with sqlite3.connect(f"{board.absolute().as_uri()}?mode=ro", uri=True) as conn:
        images = conn.execute("SELECT count(*) FROM images").fetchone()[0]
        everything = conn.execute("SELECT id FROM filters WHERE name = 'Everything' AND system").fetchone()
    server = serve_process(board, work)
    try:
        config = mirror_config(server.url.removesuffix("/api/v1/json"), everything and everything[0], work,
                               resources=resources)
        run = run_cli_measured(["-c", str(write_toml(config, work / "mirror.toml")), "sync", *resources])
    finally:
        server.stop()
    if run.returncode != 0:
        raise RuntimeError(f"mirror sync exited {run.returncode}: {run.stderr[-500:]}")
    return images, run.peak_mb, run.wall, run.cpu, sum(p.stat().st_size for p in work.glob("mirror.db*"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,50000", help="board sizes, comma-separated (100000 takes the local site long to generate)")
    parser.add_argument("--resources", default="images", help="what to sync, comma-separated")
    parser.add_argument("--board", type=Path, help="also mirror this board database, served by `mirror serve`")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    resources = args.resources.split(",")
    rows = []
    for images in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            peak, wall, cpu, size = measure(images, resources, Path(tmp))
        rows.append([images, peak, wall, cpu, size / 2**20])
    if args.board:
        with tempfile.TemporaryDirectory() as tmp:
            images, peak, wall, cpu, size = measure_served(args.board.resolve(), resources, Path(tmp))
        rows.append([images, peak, wall, cpu, size / 2**20])
    for row in rows:
        row.append(row[1] / rows[0][1])
    print(f"`mirror sync {' '.join(resources)}`, unpaced, against `mirror site` in its own process"
          + (f" (the last row: {args.board.name} served by `mirror serve`)" if args.board else ""))
    print_table(["images", "peak RSS (MB)", "wall (s)", "CPU (s)", "database (MB)", f"peak / at {rows[0][0]:,}"], rows)
    flat = rows[-1][-1] <= 1.1
    under = all(r[1] < LIMIT_MB for r in rows)
    print(f"target (flat, under {LIMIT_MB:g} MB): {'met' if flat and under else 'NOT met'} "
          f"(largest {max(r[1] for r in rows):.0f} MB; {rows[-1][-1]:.2f}x from {rows[0][0]:,} to {rows[-1][0]:,} images)")


if __name__ == "__main__":
    main()
