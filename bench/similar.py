"""The perceptual finder (``mirror.imaging.similar``, ``mirror.search.similar``) beside the site's
rule: how often four kinds of copies find their original first, and how fast it searches.

1. A local site with real pictures is mirrored, keeping ``full`` and ``thumb`` files. Each image's
   hashes are computed from its kept thumbnail (250 px; an SVG's from its original, as the local
   site draws an SVG's thumbnail apart from the SVG, where the real site renders it) and stored.
   For 100 archived images, copies of the picture the site reads (an animation's or video's frame
   at half its duration) are made: half size JPEG q80; a 5% crop (a box of 95% of each side, at a
   random place); a full-size JPEG q85 of it; a border of 3% of the longer side in a random
   colour. Each copy is searched by the site's rule (``mirror reverse --local``, default
   distance) and by the finder; the original counts when it comes first (for the finder, strictly
   nearer than every other image).
2. 1,000,000 random fingerprints are searched for their nearest 50: p50 and p95.
3. ``groups`` over 100,000 random fingerprints with 1,000 planted pairs of near-duplicates (a few
   bits apart): time, peak memory (tracemalloc: what Python and numpy allocate), groups found.

    .venv/bin/python bench/similar.py [--quick]

Last measured (2 shared cores), found first by the site's rule / by the finder, of 100: half
size JPEG q80 94 / 100; 5% crop 8 / 100; JPEG q85 at full size 99 / 100; 3% border 1 / 100. The
pHashes alone (no colour words) found 85-88 of each kind: the generated pictures share one layout.
Nearest 50 over 1,000,000 fingerprints: p50 13.6 ms, p95 15.9 ms. groups over 100,000: 0.12 s,
9 MiB peak, all 1,000 planted pairs found and nothing else. Random fingerprints spread evenly over
the bands; real pHashes do not, and a band shared by many images (one layout, many colours)
costs the square of their number, so the groups figure is a floor.
"""

from __future__ import annotations

import argparse
import io
import random
import sqlite3
import statistics
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import numpy as np
from PIL import Image, ImageOps
from reverse import mirror_of_site as mirror_with
from sqlite_utils import Database

from mirror.commands.reverse import search_archive
from mirror.imaging import analyze, still_frame
from mirror.imaging.similar import KINDS, Fingerprint, fingerprint_of
from mirror.search.similar import HashIndex, groups


def mirror_of_site(folder: Path, images: int) -> tuple[Database, Path]:
    """A mirror of a generated site with pictures, its full files and thumbnails kept (their
    fingerprints read as they are kept)."""
    conn, files = mirror_with(folder, images, ("full", "thumb"))
    return Database(conn), files


def sample(conn: sqlite3.Connection, wanted: int = 100) -> list[tuple[int, str]]:
    """Id and kept full file of the first ``wanted`` images with intensities and hashes."""
    return conn.execute("SELECT d.image_id, d.path FROM downloads d JOIN image_intensities x USING (image_id) "
                        "WHERE d.representation = 'full' AND d.status = 'done' "
                        "AND d.image_id IN (SELECT image_id FROM image_hashes) "
                        "ORDER BY d.image_id LIMIT ?", [wanted]).fetchall()


def _jpeg(picture: Image.Image, quality: int) -> bytes:
    out = io.BytesIO()
    picture.save(out, "JPEG", quality=quality)
    return out.getvalue()


def _png(picture: Image.Image) -> bytes:
    out = io.BytesIO()
    picture.save(out, "PNG")
    return out.getvalue()


def copies(rng: random.Random) -> dict[str, Callable[[Image.Image], bytes]]:
    """The kinds of copies, each from the RGB picture the site reads."""
    def half(p: Image.Image) -> bytes:
        return _jpeg(p.resize((max(1, p.width // 2), max(1, p.height // 2)), Image.Resampling.LANCZOS), 80)

    def crop(p: Image.Image) -> bytes:
        cut_x, cut_y = round(p.width * 0.05), round(p.height * 0.05)
        x, y = rng.randint(0, cut_x), rng.randint(0, cut_y)
        return _png(p.crop((x, y, x + p.width - cut_x, y + p.height - cut_y)))

    def border(p: Image.Image) -> bytes:
        colour = tuple(rng.randrange(256) for _ in range(3))
        return _png(ImageOps.expand(p, max(1, round(max(p.size) * 0.03)), colour))

    return {"half size JPEG q80": half, "5% crop": crop, "JPEG q85 at full size": lambda p: _jpeg(p, 85),
            "3% border": border}


def accuracy(db: Database, files: Path) -> None:
    index = HashIndex.load(db)
    rows = sample(db.conn)
    rng = random.Random(3)
    for kind, make in copies(rng).items():
        by_rule = by_finder = 0
        missed = []
        for image_id, path in rows:
            data = (files / path).read_bytes()
            copy = make(still_frame(data, analyze(data)).convert("RGB"))
            records, _ = search_archive(db.conn, copy, None)
            by_rule += bool(records) and records[0]["id"] == image_id
            nearest = index.nearest(fingerprint_of(copy), limit=2)
            if nearest[0].image_id == image_id and (len(nearest) < 2 or nearest[1].distance > nearest[0].distance):
                by_finder += 1
            else:
                missed.append(str(image_id))
        print(f"{kind:22} found first by the site's rule {by_rule:3} of {len(rows)}, by the finder {by_finder:3} "
              f"of {len(rows)}{'; the finder missed ' + ', '.join(missed) if missed else ''}")


def random_index(n: int, rng: np.random.Generator) -> HashIndex:
    return HashIndex(np.arange(1, n + 1), rng.integers(0, 2**64, size=(n, len(KINDS)), dtype=np.uint64))


def nearest_timings(n: int, searches: int = 200) -> list[float]:
    rng = np.random.default_rng(1)
    index = random_index(n, rng)
    took = []
    for position in rng.integers(n, size=searches):
        query = Fingerprint(*(int(v) ^ 0b1011 for v in index.columns[:, position]))
        start = time.perf_counter()
        index.nearest(query, limit=50)
        took.append(time.perf_counter() - start)
    return sorted(took)


def group_figures(n: int, planted: int) -> tuple[float, float, int, int]:
    """Seconds, peak MB, how many planted pairs came out as a group of their own, and groups in all."""
    rng = np.random.default_rng(2)
    hashes = rng.integers(0, 2**64, size=(n, len(KINDS)), dtype=np.uint64)
    flips = np.array([0b1, 0b100000000, 0b1 << 40, 0, 0b11], dtype=np.uint64)  # 5 bits apart
    hashes[1:2 * planted:2] = hashes[0:2 * planted:2] ^ flips
    index = HashIndex(np.arange(1, n + 1), hashes)
    tracemalloc.start()
    start = time.perf_counter()
    found = groups(index)
    seconds = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    pairs = {(2 * k + 1, 2 * k + 2) for k in range(planted)}
    return seconds, peak, sum(tuple(group) in pairs for group in found), len(found)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes: a check that everything runs")
    options = parser.parse_args()
    stored, grouped = (100_000, 10_000) if options.quick else (1_000_000, 100_000)
    with tempfile.TemporaryDirectory(prefix="bench-similar-") as tmp:
        db, files = mirror_of_site(Path(tmp), 260)
        accuracy(db, files)
    took = nearest_timings(stored)
    print(f"nearest 50 over {stored:,} stored fingerprints: p50 {statistics.median(took) * 1000:.1f} ms, "
          f"p95 {took[int(len(took) * 0.95)] * 1000:.1f} ms ({len(took)} searches)")
    seconds, peak, found, total = group_figures(grouped, planted=grouped // 100)
    print(f"groups over {grouped:,} fingerprints: {seconds:.2f} s, peak {peak:.0f} MiB allocated; "
          f"{found} of {grouped // 100} planted pairs found as their own group, {total} groups in all")


if __name__ == "__main__":
    main()
