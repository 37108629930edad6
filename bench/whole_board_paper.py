"""The whole board, on paper: what mirroring Derpibooru by the API alone would cost, and its files, from figures measured here.

Measured on a sample board (``--sample`` images and what goes with them, every resource mirrored
whole, unpaced): the requests each resource's first sync makes per record (from the site's
request log), the database bytes per record of each kind (SQLite's ``dbstat``: the table, its
indexes and full-text index), and the requests of a sync with nothing changed. Those are scaled
to Derpibooru's size. The board's counts and its daily changes are *assumptions* (flags, printed
with the table); so are the file sizes, since the local site's files are tiny stand-ins.

    .venv/bin/python bench/whole_board_paper.py [--sample 2000] [--images 3500000] [--comments 12000000] ...
"""

from __future__ import annotations

import argparse
import collections
import math
import sqlite3
import tempfile
from pathlib import Path

from common import ALL, PAGE, logged, mirror_config, print_table, sync
from crawl_cost import itemise

from mirror.localsite.board.editor import BoardEditor
from mirror.localsite.http.server import SiteServer

# The record that each resource's requests scale with, and the tables that hold what it keeps.
UNIT = {"images": "images", "tags": "tags", "comments": "comments", "galleries": "galleries",
        "forums": "posts", "posts": "posts", "filters": None, "profiles": "users"}
TABLES = {"images": ("images", "image_tags", "image_intensities"), "tags": ("tags",), "comments": ("comments",),
          "posts": ("posts", "topics", "forums"), "galleries": ("galleries", "gallery_images"), "users": ("users",)}
# Average bytes per file of each representation set (assumed: not measurable on the local site).
FILE_SETS = {"thumb": 0.03, "thumb + full": 0.03 + 1.0,
             "all eight (full, large, tall, medium, small, thumb*)": 1.0 + 0.4 + 0.4 + 0.15 + 0.05 + 0.03 + 0.015 + 0.01}


def bytes_per_record(db: Path, counts: dict[str, int]) -> dict[str, float]:
    """Database bytes per record of each kind: its tables, their indexes and FTS shadow tables."""
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        pages = dict(conn.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name").fetchall())
        owner = dict(conn.execute("SELECT name, tbl_name FROM sqlite_master").fetchall())
    per_kind: collections.Counter[str] = collections.Counter()
    for name, size in pages.items():
        table = owner.get(name, name)
        for kind, tables in TABLES.items():
            if table in tables or any(table.startswith(f"{t}_fts") for t in tables):
                per_kind[kind] += size
    return {kind: per_kind[kind] / counts[kind] for kind in TABLES if counts.get(kind)}


def measure(sample: int, work: Path) -> tuple[dict[str, int], dict[str, int], dict[str, float], int]:
    """(first-sync requests per resource, records per kind, bytes per record, no-change requests)."""
    with SiteServer(BoardEditor.generate(seed=12, images=sample)) as site:
        config = mirror_config(site.url, site.editor.everything_filter_id, work, resources=ALL)
        sync(config, ALL)
        first = collections.Counter()
        for (resource, _), n in itemise(logged(site)).items():
            first[resource] += n
        site.clear_requests()
        sync(config, ALL)
        nightly_floor = len(logged(site))
    with sqlite3.connect(work / "mirror.db") as conn:
        counts = {kind: conn.execute(f"SELECT count(*) FROM {kind}").fetchone()[0] for kind in TABLES}
    return dict(first), counts, bytes_per_record(work / "mirror.db", counts), nightly_floor


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=2000, help="images on the sample board measured")
    board = parser.add_argument_group("the board (assumed, roughly Derpibooru's size)")
    for name, default in (("images", 3_500_000), ("tags", 600_000), ("comments", 12_000_000),
                          ("posts", 5_000_000), ("galleries", 100_000), ("users", 400_000)):
        board.add_argument(f"--{name}", type=int, default=default)
    daily = parser.add_argument_group("a day on the board (assumed)")
    for name, default in (("new-images", 1_500), ("changed-images", 30_000), ("new-comments", 4_000),
                          ("new-posts", 1_000), ("new-users", 300)):
        daily.add_argument(f"--{name}", type=int, default=default)
    parser.add_argument("--full-mb", type=float, default=1.0, help="average original file, MB (assumed)")
    return parser.parse_args()


def main() -> None:
    args = arguments()
    with tempfile.TemporaryDirectory() as tmp:
        first, counts, per_record, floor = measure(args.sample, Path(tmp))
    board = {"images": args.images, "tags": args.tags, "comments": args.comments, "posts": args.posts,
             "galleries": args.galleries, "users": args.users}
    print(f"measured on a sample board of {args.sample:,} images ({', '.join(f'{n:,} {k}' for k, n in counts.items())})")
    rows, total = [], 0
    for resource, unit in UNIT.items():
        per = first.get(resource, 0) / counts[unit] if unit else 0.0
        requests = math.ceil(per * board[unit]) if unit else first.get(resource, 0)
        total += requests
        rows.append((resource, unit or "-", per, requests, requests / 3600, requests / 5 / 3600))
    rows.append(("all", "", total / args.images, total, total / 3600, total / 5 / 3600))
    print_table(["resource", "per record of", "requests per record (sample)", "requests (board)",
                 "hours at 1/s", "hours at 5/s"], rows, "first sync of the whole board")
    size_rows = [(kind, per_record[kind], board[kind], per_record[kind] * board[kind] / 2**30) for kind in TABLES]
    size_rows.append(("all", 0.0, 0, sum(r[3] for r in size_rows)))
    print_table(["records", "bytes each (sample)", "board", "GiB"], size_rows, "database")
    files = [(name, mb, mb * args.images / 2**20) for name, mb in FILE_SETS.items()]
    print_table(["representations", "MB per image (assumed)", "TiB"], files, "file storage")
    print_nightly(args, first, counts, floor)


def print_nightly(args: argparse.Namespace, first: dict[str, int], counts: dict[str, int], floor: int) -> None:
    """A night's requests once current: the no-change floor measured, plus the day's changes."""
    changed = args.new_images + args.changed_images
    tags_per_image = 10 / 1000  # measured by bench/crawl_cost.py: 10 tag lookups per 1,000 new or changed images
    rows = [
        ("nothing changed (measured)", floor),
        ("new + changed images", math.ceil(changed / PAGE) + 1),
        ("their tags", math.ceil(changed * tags_per_image)),
        ("new comments", math.ceil(args.new_comments / PAGE)),
        ("new posts (forums walk and posts search)", 2 * math.ceil(args.new_posts / PAGE)),
        ("new users' profiles", args.new_users),
    ]
    night = sum(r[1] for r in rows)
    rows.append(("a night", night))
    print_table(["part", "requests"], rows, f"nightly once current ({args.new_images:,} new and "
                f"{args.changed_images:,} changed images, {args.new_comments:,} comments, {args.new_posts:,} posts a day)")
    print(f"a night: {night:,} requests, {night / 60:.0f} min at 1/s, {night / 5 / 60:.1f} min at 5/s")


if __name__ == "__main__":
    main()
