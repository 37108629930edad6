"""A history for the generated board, as a month of nightly syncs and an imported dump would leave it:
what bench/browse.py's history pages (an image's history, /-/changes, a tag's latest gains and losses)
are measured on.

The generated board is written by the local site's generator, not synced, so its history is empty.
Written once into the cached board (kept with it, found again next time), in SQL and batches:

- a first sync: every record of every resource "first seen" (about 1.7 million rows at a million images);
- 30 nights after it, each the whole-board model's night (bench/history.py): 27,000 images' counts
  moving, 2,500 retags (a tag off, a tag on, by name), 500 description edits, 5 deletions, 3 merges,
  2 hidings, 500 tags' image counts moving;
- the site's own tag history from its dump: 300,000 tag changes of 1-3 tags each, spread over the
  years before the first sync, by 5,000 users.
"""

from __future__ import annotations

import json
import random
import sqlite3
import time
from datetime import UTC, datetime, timedelta

FIRST_SYNC = datetime(2025, 10, 1, 3, 0, tzinfo=UTC)
NIGHTS = 30
NIGHT = {"counters": 27_000, "retags": 2_500, "descriptions": 500, "deleted": 5, "merged": 3, "hidden": 2,
         "tag counters": 500}
SITE_TAG_CHANGES = 300_000
FIRST_SEEN = {  # resource: the key each record is kept under
    "images": "CAST(id AS TEXT)", "tags": "CAST(id AS TEXT)", "users": "CAST(id AS TEXT)",
    "comments": "CAST(id AS TEXT)", "posts": "CAST(id AS TEXT)", "galleries": "CAST(id AS TEXT)",
    "filters": "CAST(id AS TEXT)", "forums": "short_name", "topics": "json_array(forum_short_name, slug)"}


def stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _dumps(value: object) -> str:
    return json.dumps(value, separators=(",", ":"))


class Writer:
    """History rows and their tag rows, ids given here so a tag row can name its history row."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.next_id = (conn.execute("SELECT coalesce(max(id), 0) FROM history").fetchone()[0] or 0) + 1
        self.rows: list[tuple] = []
        self.tags: list[tuple] = []

    def add(self, resource: str, key: str, run: int | None, at: str, event: str, changes: object = None,
            user: int | None = None, tags: tuple = ()) -> None:
        history_id = self.next_id
        self.next_id += 1
        self.rows.append((history_id, resource, key, run, at, event, None if changes is None else _dumps(changes),
                          user))
        self.tags += [(history_id, int(key), tag_id, name, sign, at, run) for sign, tag_id, name in tags]
        if len(self.rows) >= 50_000:
            self.flush()

    def flush(self) -> None:
        self.conn.executemany("INSERT INTO history (id, resource, record_key, run_id, seen_at, event, changes, "
                              "user_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", self.rows)
        self.conn.executemany("INSERT INTO image_tag_changes (history_id, image_id, tag_id, tag_name, change, seen_at) "
                              "VALUES (?, ?, ?, ?, ?, ?)", [tag[:6] for tag in self.tags])
        self.rows, self.tags = [], []


def ensure_history(path: str, seed: int = 1) -> tuple[int, float | None]:
    """(history rows, seconds spent writing them now, or None when the board had them already)."""
    conn = sqlite3.connect(path)
    try:
        kept = conn.execute("SELECT count(*) FROM (SELECT 1 FROM history LIMIT 1)").fetchone()[0]
        if kept:
            return conn.execute("SELECT max(id) FROM history").fetchone()[0], None
        started = time.perf_counter()
        with conn:
            _write(conn, random.Random(seed))
        return conn.execute("SELECT max(id) FROM history").fetchone()[0], time.perf_counter() - started
    finally:
        conn.close()


def _write(conn: sqlite3.Connection, rng: random.Random) -> None:
    at = stamp(FIRST_SYNC)
    for resource, key in FIRST_SEEN.items():
        conn.execute(f"INSERT INTO history (resource, record_key, run_id, seen_at, event, changes) "
                     f"SELECT ?, {key} AS k, 1, ?, 'first_seen', NULL FROM {resource} ORDER BY k", [resource, at])
    images = [row[0] for row in conn.execute("SELECT id FROM images")]
    tags = conn.execute("SELECT id, name FROM tags").fetchall()
    tag_ids = [row[0] for row in tags]
    writer = Writer(conn)
    for night in range(1, NIGHTS + 1):
        _night(writer, rng, images, tags, tag_ids, night)
    writer.flush()
    site_start = datetime(2012, 1, 1, tzinfo=UTC)
    span = (FIRST_SYNC - site_start).total_seconds()
    for _ in range(SITE_TAG_CHANGES):
        moment = stamp(site_start + timedelta(seconds=rng.random() * span))
        changed = [(rng.choice("+-"), *rng.choice(tags)) for _ in range(rng.randint(1, 3))]
        writer.add("images", str(rng.choice(images)), None, moment, "site_tags", user=rng.randint(1, 5000),
                   tags=tuple(changed))
    writer.flush()


def _night(writer: Writer, rng: random.Random, images: list[int], tags: list, tag_ids: list[int], night: int) -> None:
    run = night + 1
    moment = FIRST_SYNC + timedelta(days=night)
    for image in rng.sample(images, NIGHT["counters"]):
        score = rng.randint(0, 500)
        writer.add("images", str(image), run, stamp(moment), "counters",
                   {"score": [score, score + 3], "upvotes": [score, score + 3], "faves": [score // 3, score // 3 + 1]})
    moment += timedelta(minutes=20)
    for image in rng.sample(images, NIGHT["retags"]):
        off, on = rng.sample(tags, 2)
        writer.add("images", str(image), run, stamp(moment), "changed", tags=(("-", *off), ("+", *on)))
    for image in rng.sample(images, NIGHT["descriptions"]):
        words = " ".join(rng.choice(("pony", "friendship", "magic", "apple", "sky")) for _ in range(30))
        writer.add("images", str(image), run, stamp(moment), "changed", {"description": [words, words + " (edited)"]})
    for event, count in (("deleted", NIGHT["deleted"]), ("merged", NIGHT["merged"]), ("hidden", NIGHT["hidden"])):
        for image in rng.sample(images, count):
            changes = ({"deletion_reason": [None, "Rule #2"]} if event == "deleted" else
                       {"duplicate_of": [None, rng.choice(images)]} if event == "merged" else None)
            writer.add("images", str(image), run, stamp(moment), event, changes)
    moment += timedelta(minutes=10)
    for tag in rng.sample(tag_ids, NIGHT["tag counters"]):
        count = rng.randint(1, 5000)
        writer.add("tags", str(tag), run, stamp(moment), "counters", {"images": [count, count + 1]})
