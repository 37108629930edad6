"""A search's trend, measured: 179 monthly totals of a tag search in one walk back
(:func:`mirror.asof.trend.trend`) against one search as of each month, on bench/as_of.py's archive.

    .venv/bin/python bench/as_of_trend.py [--images 50000] [--history 150000] [--work DIR]
    .venv/bin/python bench/as_of_trend.py --database WORK/images-3500000/mirror.db   # bench/whole_board.py's archive

With ``--database``, an existing archive is measured instead, and a diff between two moments a
year apart (:func:`mirror.asof.trend.diff`, target <= 1 s) is timed beside the trend.

The archive is bench/as_of.py's (built and cached the same way). For each tag (the most common and
a middling one), the 179 months from 2012-01 to 2026-11 are answered both ways in the same run,
twice each (today's lists read before either is timed), and checked equal; the load average is
printed beside each figure.

Measured on 2026-11-28 at 100,000 images and 300,000 history rows (load average 7.2): ``safe``
(66,572 images) 148 ms by the walk against 1,161 ms by a search per month (7.8x); a tag of 1,275
images 72 ms against 601 ms (8.4x); the first trend after the database changed 1,161 and 488 ms
(it reads every upload time once, as the first as-of search does).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from as_of import BOARD_VERSION, build

from mirror.asof import parse_moment
from mirror.asof import search as as_of_search
from mirror.asof.trend import diff, steps, trend
from mirror.search import images
from mirror.search.bitmap_search import ImageScope
from mirror.search.postings import Postings


def per_step(conn, postings, node, moments) -> list[int]:
    """The totals by one search as of each moment (what the trend summarises)."""
    return [images.search(conn, postings, node, ImageScope(), sf="id", sd="desc", limit=1, offset=0, columns="{t}.id",
                          seconds=600, reader=as_of_search.reader(m)).total for m in moments]


def timed(work) -> tuple[float, object]:
    started = time.perf_counter()
    found = work()
    return (time.perf_counter() - started) * 1000, found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=50_000)
    parser.add_argument("--history", type=int, default=None, help="history rows (default: three per image)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "booru-mirror-as-of-bench")
    parser.add_argument("--database", type=Path, help="measure this archive instead (bench/whole_board.py's)")
    args = parser.parse_args()
    history = args.history if args.history is not None else 3 * args.images
    args.work.mkdir(parents=True, exist_ok=True)
    path = args.database or args.work / f"as-of-{args.images}-{history}-{args.seed}-v{BOARD_VERSION}.db"
    if args.database:
        with images.open_reader(path) as counting:
            args.images, history = (counting.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("images", "history"))
    elif not path.exists():
        print(f"building {path} ({args.images:,} images, {history:,} history rows)")
        build(path, args.images, history, args.seed)
    moments = steps(parse_moment("2012-01-01"), parse_moment("2026-11-01"), "month")
    conn = images.open_reader(path)
    tags = conn.execute("SELECT name, images FROM tags ORDER BY images DESC").fetchall()
    chosen = [tags[0], tags[len(tags) // 20]]
    print(f"{args.images:,} images, {history:,} history rows, {len(moments)} monthly steps")
    for name, count in chosen:
        node = images.image_query(f'"{name}"')
        postings = Postings()  # today's lists read once, before either is timed
        images.search(conn, postings, node, ImageScope(), sf="id", sd="desc", limit=1, offset=0, columns="{t}.id",
                      seconds=600)
        for attempt in ("first", "again"):
            walked_ms, walked = timed(lambda: trend(conn, postings, node, ImageScope(), moments, seconds=600))
            load_walk = os.getloadavg()[0]
            searched_ms, searched = timed(lambda: per_step(conn, postings, node, moments))
            load_search = os.getloadavg()[0]
            assert walked == searched, (name, walked, searched)
            print(f"  {name!r} ({count:,} images), {attempt}: trend {walked_ms:,.0f} ms (load {load_walk:.1f}); "
                  f"a search per month {searched_ms:,.0f} ms (load {load_search:.1f}); "
                  f"ratio {searched_ms / walked_ms:.1f}x; last total {walked[-1]:,}")
        if args.database:
            start, end = parse_moment("2019-06-01"), parse_moment("2020-06-01")
            diff_ms, found = timed(lambda: diff(conn, postings, node, ImageScope(), start, end, seconds=600))
            print(f"  {name!r}: the diff between {start.text} and {end.text} {diff_ms:,.0f} ms "
                  f"(load {os.getloadavg()[0]:.1f}); {len(found.entered):,} entered, {len(found.left):,} left")
    conn.close()


if __name__ == "__main__":
    main()
