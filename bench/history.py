"""What keeping every change costs: the bytes a night of changes adds to the history, and the time
`mirror changes --since 1d` takes over a year of it.

The night is the whole-board model's (docs/performance.md, "a night once current"): 1,500 new and 30,000
changed images, 4,000 comments and 1,000 posts. The changed images are mostly votes; the mix
is printed. Records come from a board the local site's generator makes, written through the
store's own writers inside a sync run, as `mirror sync` writes them, with the default settings
(counters at most once a day per record). The bytes are SQLite's own count of the pages the
history tables and their indexes take (dbstat), before and after the night.

A year of history is that night's rows copied back day by day, with image keys spread over a
million ids; `mirror changes` reads the history tables only (no join with the records), so the
size of the images table does not enter its time.

    .venv/bin/python bench/history.py [--images 32000] [--scale 1.0] [--days 365]
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mirror.commands.changes import changes, describe, parse_since
from mirror.localsite.board.editor import BoardEditor
from mirror.store import ImageWriter, open_database
from mirror.store.specs import COMMENTS, POSTS
from mirror.store.state import start_run
from mirror.store.writer import RecordWriter

BASE = "https://derpibooru.org"
NIGHT = {"new images": 1500, "votes": 27000, "tag edits": 2500, "description edits": 500,
         "new comments": 4000, "new posts": 1000}
HISTORY_OBJECTS = ("history", "image_tag_changes", "history_by_time", "history_by_record_time",
                   "history_by_resource_event", "image_tag_changes_by_tag", "image_tag_changes_by_image_tag",
                   "image_tag_changes_by_history")


def history_bytes(db) -> int:
    marks = ",".join("?" * len(HISTORY_OBJECTS))
    return db.execute(f"SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name IN ({marks})",
                      list(HISTORY_OBJECTS)).fetchone()[0]


def records(board: Path, table: str) -> list[dict]:
    import sqlite3

    conn = sqlite3.connect(board)
    try:
        return [json.loads(raw) for (raw,) in conn.execute(f"SELECT raw FROM {table} WHERE raw IS NOT NULL ORDER BY id")]
    finally:
        conn.close()


def in_pages(items: list, size: int = 50):
    for start in range(0, len(items), size):
        yield items[start:start + size]


def night(counts: dict[str, int], images: list[dict], rng: random.Random) -> dict[str, list[dict]]:
    """The night's records: new ones held back from the archive, and edited copies of kept ones."""
    kept = images[counts["new images"]:]
    chosen = rng.sample(kept, counts["votes"] + counts["tag edits"] + counts["description edits"])
    votes = chosen[:counts["votes"]]
    tagged = chosen[counts["votes"]:counts["votes"] + counts["tag edits"]]
    described = chosen[counts["votes"] + counts["tag edits"]:]
    vocabulary = sorted({(i, n) for r in kept[:2000] for i, n in zip(r["tag_ids"], r["tags"])})
    changed = []
    for record in votes:
        up = record["upvotes"] + rng.randint(1, 5)
        changed.append({**record, "upvotes": up, "score": up - record["downvotes"], "faves": record["faves"] + 1,
                        "wilson_score": round(rng.random(), 6), "updated_at": "2026-11-24T03:00:00Z"})
    for record in tagged:
        pairs = list(zip(record["tag_ids"], record["tags"]))[1:] + [rng.choice(vocabulary)]
        pairs = sorted(dict(pairs).items())
        changed.append({**record, "tag_ids": [i for i, _ in pairs], "tags": [n for _, n in pairs],
                        "updated_at": "2026-11-24T03:00:00Z"})
    for record in described:
        changed.append({**record, "description": (record.get("description") or "") + " (edited: a typo fixed)",
                        "updated_at": "2026-11-24T03:00:00Z"})
    return {"images": images[:counts["new images"]] + changed}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=34000, help="images on the generated board")
    parser.add_argument("--scale", type=float, default=1.0, help="the night's size, as a share of the model's")
    parser.add_argument("--days", type=int, default=365, help="days of history for the query's timing")
    parser.add_argument("--seed", type=int, default=5)
    options = parser.parse_args()
    counts = {name: max(1, round(n * options.scale)) for name, n in NIGHT.items()}
    rng = random.Random(options.seed)
    work = Path(tempfile.mkdtemp(prefix="bench-history-"))
    started = time.perf_counter()
    editor = BoardEditor.generate(seed=options.seed, images=options.images)
    images, comments, posts = (records(editor.path, t) for t in ("images", "comments", "posts"))
    print(f"board: {len(images):,} images, {len(comments):,} comments, {len(posts):,} posts "
          f"(generated in {time.perf_counter() - started:.0f} s)")
    new_comments, new_posts = comments[-counts["new comments"]:], posts[-counts["new posts"]:]
    db = open_database(work / "mirror.db")
    image_writer = ImageWriter(db, BASE)
    comment_writer, post_writer = RecordWriter(db, COMMENTS, BASE), RecordWriter(db, POSTS, BASE)
    for page in in_pages(images[counts["new images"]:]):  # the archive as it stood: outside a run, no history
        image_writer.save_page(page)
    for page in in_pages(comments[:-counts["new comments"]]):
        comment_writer.save(page)
    for page in in_pages(posts[:-counts["new posts"]]):
        post_writer.save(page)

    tonight = night(counts, images, rng)
    before = history_bytes(db)
    for resource, writer, items in (("images", image_writer.save_page, tonight["images"]),
                                    ("comments", comment_writer.save, new_comments),
                                    ("posts", post_writer.save, new_posts)):
        run = start_run(db, resource)
        for page in in_pages(items):
            writer(page)
        run.finish(db, status="ok")
    added = history_bytes(db) - before
    rows = db.execute("SELECT event, count(*) FROM history GROUP BY event ORDER BY 2 DESC").fetchall()
    print("\nthe night: " + ", ".join(f"{n:,} {name}" for name, n in counts.items()))
    print("history rows: " + ", ".join(f"{n:,} {event}" for event, n in rows)
          + f"; {db.execute('SELECT count(*) FROM image_tag_changes').fetchone()[0]:,} tag changes")
    print(f"bytes the night added to the history (tables and indexes): {added / 2**20:.1f} MiB "
          f"(target: under 20 MB at the model's size; scale {options.scale})")

    a_year(db, options.days, rng)
    since = parse_since("1d")
    timings = []
    for _ in range(5):
        started = time.perf_counter()
        lines = [describe(change) for change in changes(db, since=since)]
        timings.append(time.perf_counter() - started)
    config = work / "mirror.toml"
    config.write_text(f'[store]\ndatabase = "{work / "mirror.db"}"\n')
    cli = []
    for _ in range(3):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "mirror.cli", "-c", str(config), "changes", "--since", "1d"],
                       stdout=subprocess.DEVNULL, check=True)
        cli.append(time.perf_counter() - started)
    total = db.execute("SELECT count(*) FROM history").fetchone()[0]
    print(f"\nhistory of {options.days} days: {total:,} rows, {history_bytes(db) / 2**30:.2f} GiB")
    print(f"changes --since 1d: {len(lines):,} lines; in process {min(timings):.2f} s (best of 5); "
          f"`mirror changes --since 1d` {min(cli):.2f} s (best of 3, process start included; target under 1 s)")


def a_year(db, days: int, rng: random.Random) -> None:
    """The night's rows copied back ``days - 1`` days before it, image keys spread over a million ids,
    with ids in the order of time as a year of syncs would leave them (the night's tag changes
    follow its rows; older nights' are left out: the query reads the last day's only)."""
    night_rows = db.execute("SELECT resource, record_key, run_id, seen_at, event, changes FROM history "
                            "ORDER BY id").fetchall()
    offset = (days - 1) * len(night_rows)
    with db.atomic():
        db.execute("UPDATE history SET id = id + ?", [offset])
        db.execute("UPDATE image_tag_changes SET history_id = history_id + ?", [offset])
        next_id = 1
        for day in range(days - 1, 0, -1):
            shifted = [(next_id + n, resource, str(rng.randint(1, 1_000_000)) if resource == "images" else key,
                        run_id, _days_before(seen_at, day), event, change)
                       for n, (resource, key, run_id, seen_at, event, change) in enumerate(night_rows)]
            next_id += len(shifted)
            db.conn.executemany("INSERT INTO history (id, resource, record_key, run_id, seen_at, event, changes) "
                                "VALUES (?, ?, ?, ?, ?, ?, ?)", shifted)
    db.execute("ANALYZE")


def _days_before(text: str, days: int) -> str:
    from datetime import datetime, timedelta

    when = datetime.fromisoformat(text.replace("Z", "+00:00")) - timedelta(days=days)
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


if __name__ == "__main__":
    main()
