"""The board as it was at a moment, measured: `mirror serve`'s ``/as-of/WHEN/`` on a large archive.

    .venv/bin/python bench/as_of.py [--images 1000000] [--history 3000000] [--work DIR] [--requests 400]
    .venv/bin/python bench/as_of.py --database WORK/images-350000/mirror.db   # bench/whole_board.py's archive
    .venv/bin/python bench/as_of.py --database COPY.db --checkpoints   # then builds the checkpoints, measures again

The archive is synthesised straight into the store's schema (plain ``sqlite3``, indexes, triggers
and full-text indexes made once after the rows, as bench/store_images.py's raw path writes rows)
and cached in the work folder: ``--images`` images with 5-25 tags each from a vocabulary of 3,000
(a few of them very common, as ``safe`` is), uploaded from 2012 to the first sync, then
``--history`` history rows: every image first seen (2023-06-01), three and a half years of nightly
changes after it (counters, retags, description edits, hides), and the site's own tag history from
a dump before it (``site_tags`` with 1-3 tag changes each, in ``image_tag_changes``).

Measured through the real ``mirror serve`` in a subprocess, over a socket (httpx), as
bench/serve.py does, WHEN drawn anywhere in the last three years:

- one record as of WHEN (``/as-of/WHEN/api/v1/json/images/N``): p50 and p95 (target p95 <= 5 ms);
- an as-of tag search, total and first page, and one with words (targets p95 <= 50 ms and <= 100 ms)
  and the first as-of search after start (<= 1 s);
- today's answers: bench/serve.py's mix of searches on the same server, in the same run;
- serve's peak memory (<= 300 MB) and the index bytes the as-of reading adds per million images
  (<= 25 MB): the indexes it reads, and which of them exist for it alone.

Measured at 200,000 images and 600,000 history rows (a million did not build in five minutes on 2
cores shared with six test runs; 200,000 built in 364 s), on the loaded machine: one record as of
WHEN p50 5.7 ms, p95 12.3 ms over HTTP, the same image today asked in turn p50 4.0 ms, p95 10.6
ms; the as-of reading alone p50 0.52 ms. As-of tag search p50 20.4 ms, p95 129.5 ms; with words
p50 779 ms, p95 1,688 ms; the first after start 3,406 ms. Serve's peak memory 128 MiB. New index
bytes: 0. Today's searches, bench/serve.py's mix on the same server: p50 9.3 ms, p95 15.5 ms.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import sqlite3
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
from common import ServerProcess, percentile, serve_process
import serve
from serve import report_searches, time_searches

from mirror.asof import Moment, record_as_of
from mirror.serve.board import Board
from mirror.store import checkpoints, open_database

FIRST_SYNC = datetime(2023, 6, 1, 3, 0, tzinfo=UTC)
TODAY = datetime(2026, 11, 27, tzinfo=UTC)
SITE_START = datetime(2012, 1, 1, tzinfo=UTC)
# The tags people search most, as bench/serve.py's mix names them, the most common first.
COMMON = ["safe", "cute", "pony", "twilight sparkle", "fluttershy", "rainbow dash", "pinkie pie", "pegasus",
          "unicorn", "solo", "smiling", "rarity", "applejack", "open mouth", "artist:foo"]
WORDS = ("pony friendship magic apple sky cloud forest night moon sun castle book wings horn tail mane "
         "eyes happy smiling sparkle rainbow").split()
VOCABULARY = 3_000
# How the history's rows are shared: nights after the first sync, and the site's own (from its dump).
NIGHTLY_SHARE = 0.5
INDEXED = ("images", "image_tags", "history", "image_tag_changes")
# The full-text indexes over images (external content: rebuilt from the table once the rows are in).
FTS = ("images_fts", "images_description")
# What the as-of reading of a record reads, beside the row: one record's history and its tag changes
# (since migration 0045 the table itself, clustered by image).
AS_OF_INDEXES = ("history_by_record_time", "image_tag_changes")
BOARD_VERSION = 1


def stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def tags_of(rng: random.Random) -> list[tuple[int, str]]:
    """The vocabulary: (id, name), the common names first; a tag's weight falls with its rank."""
    names = COMMON + [f"{rng.choice(WORDS)} {rng.choice(WORDS)} {n}" for n in range(VOCABULARY - len(COMMON))]
    return [(n + 1, name) for n, name in enumerate(names)]


def image_record(image_id: int, created: datetime, tags: list[tuple[int, str]], rng: random.Random) -> dict:
    """A compact record in the API's shape (the fields serve and the search read)."""
    ordered = sorted(tags)
    score = rng.randint(-5, 800)
    return {"id": image_id, "created_at": stamp(created), "updated_at": stamp(FIRST_SYNC),
            "first_seen_at": stamp(FIRST_SYNC), "tag_ids": [t for t, _ in ordered], "tags": [n for _, n in ordered],
            "tag_count": len(ordered), "score": score, "upvotes": score + 3, "downvotes": 3, "faves": score // 3,
            "wilson_score": 0.5, "comment_count": 0, "uploader_id": rng.randint(1, 5_000), "format": "png",
            "width": 800, "height": 600, "aspect_ratio": 1.333, "mime_type": "image/png",
            "description": " ".join(rng.choices(WORDS, k=rng.randint(0, 30))), "hidden_from_users": False,
            "source_url": f"https://example.com/{image_id}", "thumbnails_generated": True, "processed": True,
            "sha512_hash": f"{image_id:0128x}", "orig_sha512_hash": f"{image_id:0128x}"}


def build(path: Path, images: int, history: int, seed: int) -> float:
    """Write the archive at ``path``; the seconds it took."""
    started = time.perf_counter()
    open_database(path).close()
    conn = sqlite3.connect(path, isolation_level=None)
    for pragma in ("journal_mode=OFF", "synchronous=OFF", "temp_store=MEMORY", "cache_size=-400000"):
        conn.execute(f"PRAGMA {pragma}")
    deferred = conn.execute("SELECT type, name, sql FROM sqlite_master WHERE tbl_name IN (%s) AND type IN ('index', "
                            "'trigger') AND sql IS NOT NULL AND name != 'history_first_seen_counted'"
                            % ",".join("?" * len(INDEXED)), INDEXED).fetchall()
    for kind, name, _sql in deferred:
        conn.execute(f'DROP {kind} "{name}"')
    rng = random.Random(seed)
    vocabulary = tags_of(rng)
    weights = list(itertools.accumulate(1 / (rank + 1) ** 0.9 for rank in range(len(vocabulary))))
    conn.execute("BEGIN")
    conn.executemany("INSERT INTO tags (id, name, slug, category, images, raw) VALUES (?, ?, ?, ?, 0, ?)",
                     [(t, n, slug, category, json.dumps({"id": t, "name": n, "slug": slug, "category": category}))
                      for t, n in vocabulary for slug in [n.replace(" ", "-").replace(":", "-colon-")]
                      for category in ["origin" if n.startswith("artist:") else None]])
    _images(conn, images, vocabulary, weights, rng)
    conn.execute("UPDATE tags SET images = counted.n FROM (SELECT tag_id, count(*) AS n FROM image_tags "
                 "GROUP BY tag_id) AS counted WHERE tags.id = counted.tag_id")
    _said("images and their tags", started)
    _history(conn, images, history, vocabulary, rng)
    conn.execute("COMMIT")
    _said("history", started)
    for _kind, _name, sql in deferred:
        conn.execute(sql)
    _said("indexes and triggers", started)
    for fts in FTS:
        conn.execute(f"INSERT INTO {fts} ({fts}) VALUES ('rebuild')")
    _said("full-text indexes", started)
    conn.execute("ANALYZE")
    conn.execute("PRAGMA journal_mode=WAL")
    conn.close()
    return time.perf_counter() - started


def _said(what: str, started: float) -> None:
    print(f"  {what} written ({time.perf_counter() - started:.0f} s)", flush=True)


def _images(conn: sqlite3.Connection, count: int, vocabulary: list, weights: list[float], rng: random.Random) -> None:
    span = (FIRST_SYNC - SITE_START).total_seconds()
    columns = ("id", "created_at", "updated_at", "first_seen_at", "score", "faves", "upvotes", "downvotes",
               "wilson_score", "comment_count", "uploader_id", "format", "width", "height", "description",
               "tags", "tag_ids", "tag_count", "source_url", "hidden_from_users", "thumbnails_generated",
               "processed", "sha512_hash_bytes", "raw_full", "mirrored_at")
    insert = f"INSERT INTO images ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"
    rows, links = [], []
    for image_id in range(1, count + 1):
        created = SITE_START + timedelta(seconds=span * image_id / (count + 1))
        tags = {vocabulary[i] for i in _weighted(rng, weights, rng.randint(5, 25))}
        record = image_record(image_id, created, list(tags), rng)
        rows.append((image_id, record["created_at"], record["updated_at"], record["first_seen_at"], record["score"],
                     record["faves"], record["upvotes"], record["downvotes"], record["wilson_score"], 0,
                     record["uploader_id"], "png", 800, 600, record["description"], json.dumps(record["tags"]),
                     json.dumps(record["tag_ids"]), record["tag_count"], record["source_url"], 0, 1, 1,
                     bytes.fromhex(record["sha512_hash"]), json.dumps(record, separators=(",", ":")),
                     stamp(FIRST_SYNC)))
        links += [(image_id, tag_id) for tag_id in record["tag_ids"]]
        if len(rows) >= 20_000:
            conn.executemany(insert, rows)
            conn.executemany("INSERT INTO image_tags (image_id, tag_id) VALUES (?, ?)", links)
            rows, links = [], []
    conn.executemany(insert, rows)
    conn.executemany("INSERT INTO image_tags (image_id, tag_id) VALUES (?, ?)", links)


def _weighted(rng: random.Random, cumulative: list[float], k: int) -> list[int]:
    return rng.choices(range(len(cumulative)), cum_weights=cumulative, k=k) if k else []


def _history(conn: sqlite3.Connection, images: int, total: int, vocabulary: list, rng: random.Random) -> None:
    """The first sighting of every image, then the nights after it and the site's own tag history."""
    conn.execute("INSERT INTO history (id, resource, record_key, run_id, seen_at, event, changes) "
                 "SELECT id, 'images', CAST(id AS TEXT), 1, ?, 'first_seen', NULL FROM images", [stamp(FIRST_SYNC)])
    left = max(0, total - images)
    nightly = int(left * NIGHTLY_SHARE)
    next_id = images + 1
    rows, tag_rows = [], []
    nights = (TODAY - FIRST_SYNC).days
    for n in range(nightly):
        at = stamp(FIRST_SYNC + timedelta(days=1 + n * nights // max(nightly, 1), minutes=rng.randint(0, 90)))
        image = rng.randint(1, images)
        kind = rng.random()
        if kind < 0.6:
            score = rng.randint(0, 500)
            rows.append((next_id, str(image), 2, at, "counters", json.dumps({"score": [score, score + 2]})))
        elif kind < 0.9:
            (off_id, off), (on_id, on) = rng.sample(vocabulary, 2)
            rows.append((next_id, str(image), 2, at, "changed", None))
            tag_rows += [(next_id, image, off_id, off, "-", at, 2), (next_id, image, on_id, on, "+", at, 2)]
        elif kind < 0.998:
            words = " ".join(rng.choices(WORDS, k=12))
            edit = {"description": [words, words + " edited"]}
            rows.append((next_id, str(image), 2, at, "changed", json.dumps(edit)))
        else:
            rows.append((next_id, str(image), 2, at, "hidden", json.dumps({"deletion_reason": [None, "Rule #2"]})))
        next_id += 1
    span = (FIRST_SYNC - SITE_START).total_seconds()
    for _ in range(left - nightly):
        at = stamp(SITE_START + timedelta(seconds=rng.random() * span))
        image = rng.randint(1, images)
        rows.append((next_id, str(image), None, at, "site_tags", None))
        tag_rows += [(next_id, image, t, name, rng.choice("+-"), at, None)
                     for t, name in rng.sample(vocabulary, rng.randint(1, 3))]
        next_id += 1
    conn.executemany("INSERT INTO history (id, resource, record_key, run_id, seen_at, event, changes) "
                     "VALUES (?, 'images', ?, ?, ?, ?, ?)", rows)
    conn.executemany("INSERT INTO image_tag_changes (history_id, image_id, tag_id, tag_name, change, seen_at) "
                     "VALUES (?, ?, ?, ?, ?, ?)", [row[:6] for row in tag_rows])


# Where the moments are drawn: the last three years of the synthesised board, or (``--database``) an
# archive's whole span, from its first upload to its newest change.
SPAN = [TODAY - timedelta(days=3 * 365), TODAY]
# The searches timed: the synthesised board's vocabulary, or (``--database``) a board of Derpibooru's shape.
SEARCHES = {"first as-of search after start": "twilight sparkle", "as-of tag search": "fluttershy",
            "as-of tag search, with words": "pony, description:magic"}
WHOLE_BOARD_SEARCHES = {"first as-of search after start": "solo", "as-of tag search": "pony",
                        "as-of tag search, most used tag": "safe", "as-of tag search, with words": "pony, description:magic"}

# Today's mix on such a board (bench/whole_board.py's).
WHOLE_BOARD_TODAY = [("safe (2 images in 3)", "safe", None, None), ("one common tag", "pony", None, None),
                     ("two tags", "safe, solo", None, None), ("tag and NOT tag", "pony, -safe", None, None),
                     ("description words", "description:orchard", None, None),
                     ("score range", "score.gt:100", None, None), ("sorted by score", "safe", "score", "desc")]


def moments(rng: random.Random, count: int) -> list[Moment]:
    """``count`` moments anywhere in :data:`SPAN`."""
    start, end = SPAN
    return [Moment.of(start + timedelta(seconds=rng.random() * (end - start).total_seconds())) for _ in range(count)]


def archive_span(path: Path) -> list[datetime]:
    """An archive's first upload and its newest history row: where "as of" means something."""
    conn = sqlite3.connect(path)
    try:
        first, = conn.execute("SELECT min(created_at) FROM images").fetchone()
        last, = conn.execute("SELECT max(seen_at) FROM history").fetchone()
    finally:
        conn.close()
    return [datetime.fromisoformat(first.replace("Z", "+00:00")), datetime.fromisoformat(last.replace("Z", "+00:00"))]


def time_records(server: ServerProcess, images: int, count: int,
                 rng: random.Random) -> tuple[list[float], list[float], int]:
    """(seconds of each as-of show, of the same image's show today asked in turn with it, how many
    as-of shows answered 404: uploaded after their moment). A loaded machine slows both alike."""
    root = server.url.removesuffix("/api/v1/json")
    then, today, absent = [], [], 0
    with httpx.Client(base_url=root, timeout=60) as http:
        for moment in moments(rng, count + 1):
            image = rng.randint(1, images)
            for path, times in ((f"/as-of/{moment.digits}/api/v1/json/images/{image}", then),
                                (f"/api/v1/json/images/{image}", today)):
                started = time.perf_counter()
                answer = http.get(path)
                times.append(time.perf_counter() - started)
                if answer.status_code not in (200, 404):
                    raise SystemExit(f"{path}: {answer.status_code} {answer.text[:200]}")
                absent += answer.status_code == 404 and times is then
    return then[1:], today[1:], absent  # the first found the server cold


def in_process(path: Path, images: int, count: int, rng: random.Random) -> list[float]:
    """The as-of reading alone, without HTTP: the row read and :func:`record_as_of`, in this process."""
    conn = sqlite3.connect(path)
    conn.row_factory = sqlite3.Row
    times = []
    for moment in moments(rng, count):
        image = rng.randint(1, images)
        started = time.perf_counter()
        row = conn.execute("SELECT id, raw, stub, hidden_from_users FROM images WHERE id = ?", [image]).fetchone()
        if row is None:  # an id the board never had (a dump's ids have gaps)
            continue
        record_as_of(conn, "images", str(image), dict(row), moment)
        times.append(time.perf_counter() - started)
    conn.close()
    return times


def time_as_of_searches(server: ServerProcess, count: int, rng: random.Random) -> dict[str, list[float] | str]:
    """Each as-of search's seconds (the first after start apart), or why there are none."""
    root = server.url.removesuffix("/api/v1/json")
    found: dict[str, list[float] | str] = {}
    with httpx.Client(base_url=root, timeout=60) as http:
        for label, q in SEARCHES.items():
            times: list[float] = []
            for moment in moments(rng, 1 if label.startswith("first") else count):
                started = time.perf_counter()
                answer = http.get(f"/as-of/{moment.digits}/api/v1/json/search/images", params={"q": q})
                if answer.status_code != 200:
                    raise SystemExit(f"{label}: {answer.status_code} {answer.text[:200]}")
                times.append(time.perf_counter() - started)
            found[label] = times
    return found


def index_bytes(path: Path) -> dict[str, int]:
    """The bytes of each index the as-of reading of a record uses (SQLite's dbstat)."""
    conn = sqlite3.connect(path)
    try:
        marks = ",".join("?" * len(AS_OF_INDEXES))
        return dict(conn.execute(f"SELECT name, sum(pgsize) FROM dbstat WHERE name IN ({marks}) GROUP BY name",
                                 AS_OF_INDEXES).fetchall())
    finally:
        conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=1_000_000)
    parser.add_argument("--history", type=int, default=None, help="history rows (default: three per image)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "booru-mirror-as-of-bench")
    parser.add_argument("--requests", type=int, default=400, help="as-of shows timed")
    parser.add_argument("--searches", type=int, default=30, help="times each as-of search is run")
    parser.add_argument("--rounds", type=int, default=10, help="times each of today's searches is run")
    parser.add_argument("--checkpoints", action="store_true",
                        help="then build the tags' checkpoints in the archive (mirror checkpoints) and measure again")
    parser.add_argument("--database", type=Path, help="measure this archive instead (bench/whole_board.py's: a board of "
                                                     "Derpibooru's shape), moments over its whole span")
    args = parser.parse_args()
    history = args.history if args.history is not None else 3 * args.images
    path = args.work.resolve() / f"as-of-{args.images}-{history}-seed{args.seed}-v{BOARD_VERSION}.db"
    if args.database:
        path = args.database.resolve()
        conn = sqlite3.connect(path)
        args.images, history = (conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
                                for table in ("images", "history"))
        conn.close()
        SPAN[:] = archive_span(path)
        SEARCHES.clear()
        SEARCHES.update(WHOLE_BOARD_SEARCHES)
        serve.QUERIES[:] = WHOLE_BOARD_TODAY
        print(f"archive: {args.images:,} images, {history:,} history rows, moments from {SPAN[0]:%Y-%m-%d} "
              f"to {SPAN[1]:%Y-%m-%d}")
    elif not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".partial")
        partial.unlink(missing_ok=True)
        seconds = build(partial, args.images, history, args.seed)
        partial.rename(path)
        print(f"archive: {args.images:,} images, {history:,} history rows, built in {seconds:.0f} s")
    else:
        print(f"archive: {args.images:,} images, {history:,} history rows (cached)")
    print(f"  {path} ({path.stat().st_size / 2**30:.2f} GiB)")
    rng = random.Random(args.seed)
    before = measure(path, args, rng)
    if not args.checkpoints:
        return
    print("\n--- building the tags' checkpoints (mirror checkpoints) ---")
    db = open_database(path)
    started = time.perf_counter()
    built = checkpoints.build(db, print)
    seconds = time.perf_counter() - started
    size = db.execute("SELECT coalesce(sum(length(bits)), 0) + 0 FROM tag_checkpoints").fetchone()[0]
    table = db.execute("SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name IN ('tag_checkpoints', "
                       "'sqlite_autoindex_tag_checkpoints_1', 'upload_order')").fetchone()[0]
    db.conn.close()
    per_million = 1e6 / args.images
    print(f"built {built.checkpoints:,} checkpoints of {built.tags:,} tags in {seconds:.1f} s "
          f"({seconds * per_million:.0f} s per million images); bitmaps {size / 2**20:.2f} MiB; their table, its key "
          f"and the upload order "
          f"{table / 2**20:.2f} MiB ({table * per_million / 2**20:.1f} MiB per million images; target <= 25 MB)")
    print("\n--- the same run, through the checkpoints ---")
    after = measure(path, args, random.Random(args.seed))
    print(f"\n{'measured':<44}{'before p95':>12}{'after p95':>12}{'ratio':>8}")
    for label in before:
        if label in after and before[label] and after[label]:
            print(f"{label:<44}{before[label] * 1e3:>10.1f}ms{after[label] * 1e3:>10.1f}ms"
                  f"{before[label] / after[label]:>8.1f}")


def measure(path: Path, args: argparse.Namespace, rng: random.Random) -> dict[str, float]:
    """One pass of every measure over a fresh ``mirror serve``: printed, and each p95 (the first
    search after start: its time) returned by label."""
    figures: dict[str, float] = {}
    started = time.perf_counter()
    server = serve_process(path, path.parent)
    print(f"mirror serve listening after {time.perf_counter() - started:.1f} s (load {_load()})")
    try:
        for label, times in time_as_of_searches(server, args.searches, rng).items():
            if isinstance(times, str):
                print(f"{label}: {times}")
            else:
                figures[label] = percentile(times, 0.95)
                print(f"{label}: p50 {percentile(times, 0.5) * 1e3:.1f} ms, p95 {percentile(times, 0.95) * 1e3:.1f} ms "
                      f"(load {_load()})")
        shows, today, absent = time_records(server, args.images, args.requests, rng)
        figures["one record as of WHEN"] = percentile(shows, 0.95)
        figures["the same image today"] = percentile(today, 0.95)
        print(f"\none record as of WHEN ({SPAN[0]:%Y-%m-%d} to {SPAN[1]:%Y-%m-%d}): p50 {percentile(shows, 0.5) * 1e3:.1f} ms, "
              f"p95 {percentile(shows, 0.95) * 1e3:.1f} ms over {len(shows)} requests ({absent} not uploaded yet "
              f"then: 404); target p95 <= 5 ms (load {_load()})")
        print(f"the same image today, asked in turn: p50 {percentile(today, 0.5) * 1e3:.1f} ms, "
              f"p95 {percentile(today, 0.95) * 1e3:.1f} ms")
        alone = in_process(path, args.images, args.requests, rng)
        print(f"the as-of reading alone (row and record_as_of, no HTTP): p50 {percentile(alone, 0.5) * 1e3:.2f} ms, "
              f"p95 {percentile(alone, 0.95) * 1e3:.2f} ms")
        print(f"\ntoday's answers (bench/serve.py's mix, same server, same run; load {_load()}):")
        timings = time_searches(server, Board(path), args.rounds, 1)
        report_searches(timings)
        figures["today's searches (all)"] = percentile([x for t in timings.values() for x in t.http], 0.95)
        memory = server.memory()
    finally:
        server.stop()
    print(f"\nserve's memory: peak {memory['VmHWM'] / 1024:.0f} MiB (VmHWM); target <= 500 MB")
    sizes = index_bytes(path)
    per_million = 1e6 / args.images
    for name, size in sizes.items():
        print(f"index {name}: {size / 2**20:.1f} MiB ({size * per_million / 2**20:.1f} MiB per million images), "
              "there before issue 37 (the history pages read it)")
    return figures


def _load() -> str:
    return ", ".join(f"{x:.1f}" for x in os.getloadavg())

if __name__ == "__main__":
    main()
