"""Reverse search: how often a resized, re-encoded copy finds its original first by the site's
own rule, and how fast a local search is on a large archive.

1. A local site with real pictures is mirrored (sync + download); the archive's intensities are
   the site's own (every record carries them; ours equal what the site's program prints, file by
   file: tests/imaging/test_golden.py). For 100 archived images a copy at half size, JPEG quality
   80, of the picture the site reads (an animation's or video's frame at half its duration) is
   searched offline at the default distance, and the original counted when it comes first. How
   copies of an animated GIF's first frame fare is printed apart.
2. 100,000 synthetic intensity rows go into a fresh mirror database; the p50 and p95 of a local
   search (the box query, ordering and the matches' records) are reported, and apart from it
   the time to read the query file.

    .venv/bin/python bench/reverse.py

The rule is the site program's (cli_intensities, intensities.c), which departs from the
reference for even sides (row height/2 and column width/2 in both halves, each sum over a quarter
of the sides rounded up to even) and reads JPEG with libjpeg-turbo's fast integer IDCT. By the
reference's rule the same copies were found 94 times in 100 (the target of 95 was withdrawn when
the program was ruled to win); by the program's rule, the site's, 64 of 100 on the run of
2026-11-23. The misses are small pictures: halving 50 px sides gives odd ones, whose quadrants
share the middle row and column, and the program's divisor reads even-sided originals high in
the north and west. Copies the box rule misses are what the perceptual finder is for.
"""

from __future__ import annotations

import asyncio
import io
import random
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

from PIL import Image

from mirror.commands import runs
from mirror.commands.reverse import search_archive
from mirror.config import make_config
from mirror.imaging import analyze, intensities_of, still_frame
from mirror.localsite.board.editor import BoardEditor
from mirror.localsite.http.server import SiteServer
from mirror.search.reverse import DEFAULT_DISTANCE, ReverseQuery, find_matches
from mirror.store import open_database

FAST = {"requests_per_second": 500, "backoff": 0.05, "max_retries": 8, "give_up_after": 12, "timeout": 10}


def mirror_of_site(folder: Path, images: int, representations: tuple[str, ...] = ("full",)
                   ) -> tuple[sqlite3.Connection, Path]:
    """A mirror (records and ``representations`` kept) of a generated site with real pictures."""
    board = BoardEditor.generate(seed=21, images=images, with_pictures=True)
    with SiteServer(board) as site:
        config = make_config({
            "site": {"base_url": site.url, "filter_id": board.everything_filter_id},
            "polite": FAST,
            "store": {"database": str(folder / "mirror.db"), "files": str(folder / "files")},
            "download": {"requests_per_second": 500, "representations": list(representations),
                         "partial_dir": str(folder / "p")},
        })
        db = open_database(config.database)
        asyncio.run(runs.sync(config, db, ["images"]))
        asyncio.run(runs.download(config, db))
    return db.conn, folder / "files"


def half_size_jpeg(data: bytes, *, first_frame: bool = False) -> bytes:
    """A copy of the picture the site reads from ``data`` (an animation's frame at half its
    duration; its first frame with ``first_frame``), at half size, JPEG quality 80."""
    if first_frame:
        picture = Image.open(io.BytesIO(data))
        picture.seek(0)
    else:
        picture = still_frame(data, analyze(data))
    rgb = picture.convert("RGB")
    out = io.BytesIO()
    rgb.resize((max(1, rgb.width // 2), max(1, rgb.height // 2)), Image.Resampling.LANCZOS).save(out, "JPEG", quality=80)
    return out.getvalue()


def sample(conn: sqlite3.Connection, wanted: int = 100, min_side: int = 0,
           animated_gifs: bool = False) -> list[tuple[int, str, str]]:
    """Id, kept path and size of the first ``wanted`` archived images with intensities."""
    return conn.execute("SELECT d.image_id, d.path, i.width || 'x' || i.height FROM downloads d "
                        "JOIN image_intensities x ON x.image_id = d.image_id "
                        "JOIN images i ON i.id = d.image_id WHERE d.representation = 'full' AND d.status = 'done' "
                        "AND min(i.width, i.height) >= ? AND (i.animated AND i.format = 'gif' OR NOT ?) "
                        "ORDER BY d.image_id LIMIT ?", [min_side, animated_gifs, wanted]).fetchall()


def accuracy(conn: sqlite3.Connection, files: Path, wanted: int = 100, min_side: int = 0, *,
             animated_gifs: bool = False, first_frame: bool = False,
             distance: float | None = None) -> tuple[int, int, list[str]]:
    """Of ``wanted`` archived images (at least ``min_side`` pixels a side), how many copies find them
    first at ``distance`` (the default one when None), and the misses (id and size)."""
    rows = sample(conn, wanted, min_side, animated_gifs)
    first, missed = 0, []
    for image_id, path, size in rows:
        copy = half_size_jpeg((files / path).read_bytes(), first_frame=first_frame)
        records, _ = search_archive(conn, copy, distance)
        if records and records[0]["id"] == image_id:
            first += 1
        else:
            missed.append(f"{image_id} ({size})")
    return first, len(rows), missed


def synthetic(folder: Path, n: int = 100_000) -> sqlite3.Connection:
    open_database(folder / "big.db").close()
    conn = sqlite3.connect(folder / "big.db")
    rng = random.Random(5)
    rows = []
    for image_id in range(1, n + 1):
        base = rng.gauss(120, 45)
        values = [min(255.0, max(0.0, base + rng.gauss(0, 25))) for _ in range(4)]
        aspect = rng.choice([1.0, 4 / 3, 16 / 9, 0.75, 1.5, rng.uniform(0.3, 3)])
        rows.append((image_id, *values, aspect, "full", "2026-01-01T00:00:00Z"))
    conn.executemany("INSERT INTO image_intensities VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
    conn.execute("INSERT INTO images (id, raw_full, mirrored_at) SELECT image_id, '{\"id\": ' || image_id || '}', '' "
                 "FROM image_intensities")
    conn.commit()
    conn.execute("ANALYZE")
    return conn


def timings(conn: sqlite3.Connection, queries: int = 300) -> list[float]:
    rng = random.Random(9)
    rows = conn.execute("SELECT nw, ne, sw, se, aspect_ratio FROM image_intensities ORDER BY random() LIMIT ?",
                        [queries]).fetchall()
    took = []
    for nw, ne, sw, se, aspect in rows:
        query = ReverseQuery(tuple(v + rng.uniform(-0.5, 0.5) for v in (nw, ne, sw, se)), aspect)
        start = time.perf_counter()
        matches, _ = find_matches(conn, query)
        for match in matches:
            conn.execute("SELECT raw FROM images WHERE id = ?", [match.image_id]).fetchone()
        took.append(time.perf_counter() - start)
    return took


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-reverse-") as tmp:
        folder = Path(tmp)
        conn, files = mirror_of_site(folder, 260)
        for min_side, distance in ((0, None), (200, None), (0, 0.5), (0, 1.0)):
            first, tried, missed = accuracy(conn, files, min_side=min_side, distance=distance)
            print(f"accuracy (sides >= {min_side} px): {first} of {tried} half-size JPEG q80 copies find their "
                  f"original first (distance {distance or DEFAULT_DISTANCE}){'; missed ' + ', '.join(missed) if missed else ''}")
        first, tried, _ = accuracy(conn, files, min_side=0, animated_gifs=True, first_frame=True)
        print(f"animated GIFs copied from their first frame instead (the site reads the one at half the "
              f"duration): {first} of {tried} find their original first")
        sample = half_size_jpeg((files / conn.execute("SELECT path FROM downloads WHERE representation = 'full' "
                                                      "AND path LIKE '%.png' LIMIT 1").fetchone()[0]).read_bytes())
        start = time.perf_counter()
        for _ in range(20):
            intensities_of(sample)
        print(f"reading a query file (a half-size JPEG): {(time.perf_counter() - start) / 20 * 1000:.1f} ms")
        big = synthetic(folder)
        took = sorted(timings(big))
        print(f"local search on 100,000 images: p50 {statistics.median(took) * 1000:.2f} ms, "
              f"p95 {took[int(len(took) * 0.95)] * 1000:.2f} ms ({len(took)} searches)")


if __name__ == "__main__":
    main()
