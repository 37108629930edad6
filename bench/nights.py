"""The nights after an import: what the first sync after `mirror import-dump` costs, then a night with
nothing changed, then a night of Derpibooru's size, counted in requests and CPU.

    cp ARCHIVE site.db && cp ARCHIVE mirror.db     # two copies of an archive `mirror import-dump` made
    .venv/bin/python bench/nights.py --database mirror.db --site site.db [--scale 1.0]

Two copies of one imported archive play the two sides, each changed in place (the benchmark copies
nothing itself, so that it can run on the whole board's archive):

- ``--site`` is the site: the local site's app (:mod:`mirror.localsite.http`) serves it as the API,
  as it serves a generated board (an archive is a board in the same schema), from a thread of this
  process, and its request log counts what each sync asked;
- ``--database`` is the user's mirror: ``mirror sync`` of every resource runs on it in a subprocess
  (its CPU is its own) with ``site.base_url`` on the site's loopback address, the filter the
  archive was handed over with (its images cursor says which), downloads off (the dump's files are not real), paced far above what
  the site can answer: wall time is work, and the CPU time is the comparable figure on a shared
  machine. An archive imported with fewer resources enabled is handed over for the others first,
  as ``mirror import-dump`` does at its end with a config that enables them
  (:func:`mirror.sync.handover.hand_over`, from the time the import recorded).

The night is the whole-board model's (bench/history.py, bench/board_history.py): 1,500 new images,
27,000 images' votes (score, faves), 2,500 retags, 500 description edits, 4,000 new comments,
written into the site's archive through the store's writers with the clock's time, as the site
would change them. Then the mirror syncs. Targets (issue 48): a night with nothing changed at
most 20 requests and 60 s of work apart from pacing.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import tempfile
import time
from collections import Counter
from contextlib import closing
from pathlib import Path

from common import FAST, print_table, run_cli_measured, write_toml

from mirror.config import make_config
from mirror.dates import utc_text
from mirror.localsite.board.editor import BoardEditor
from mirror.localsite.http.server import SiteServer
from mirror.store import ImageWriter, open_database
from mirror.store.specs import COMMENTS, TAGS
from mirror.store.state import load_cursor
from mirror.store.writer import RecordWriter
from mirror.sync.handover import hand_over
from mirror.sync.runner import ORDER
from mirror.wiring import crawler_options

BASE = "https://derpibooru.org"
NIGHT = {"new images": 1500, "votes": 27000, "tag edits": 2500, "description edits": 500, "new comments": 4000}
PAGE = 50


def load() -> str:
    return "load {:.1f} {:.1f} {:.1f}".format(*os.getloadavg())


def mirror_config(url: str, work: Path, database: Path, filter_id: int | None):
    return make_config({
        "site": {"base_url": url, "filter_id": filter_id, "user_agent": "bench"},
        "polite": {**FAST, "timeout": 600},
        "store": {"database": str(database), "files": str(work / "files")},
        "download": {"enabled": False},
        **{name: {"enabled": True} for name in ORDER},
    })


def hand_over_the_rest(config, database: Path) -> list[str]:
    """Hand over the resources the import left alone (it hands over the ones its config enabled),
    from the time it recorded: what ``mirror import-dump`` does at its end with this config."""
    db = open_database(database)
    try:
        images = load_cursor(db, "images")
        dump = load_cursor(db, "import-dump").get("dump") or {}
        if not images.get("last_start"):
            raise SystemExit(f"{database}: not an archive `mirror import-dump` made (no images cursor)")
        held = {name for (name,) in db.execute("SELECT name FROM sync_state")}
        crawls = {name: crawler_options(config, name) for name in config.enabled_resources() if name not in held}
        return hand_over(db, images["last_start"], crawls, filter_id=images.get("filter_id"),
                         walked_at=dump.get("dumped_at") or images["last_start"])
    finally:
        db.close()


def handed_filter(database: Path) -> int | None:
    """The filter the archive's images were handed over through: the mirror syncs through it, or
    it would take a change of filter for a new mirror and walk every image again."""
    with closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as conn:
        row = conn.execute("SELECT json_extract(cursor, '$.filter_id') FROM sync_state WHERE name = 'images'").fetchone()
    return row[0] if row else None


def counts(database: Path) -> str:
    with closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as conn:
        found = [f"{conn.execute(f'SELECT count(*) FROM {t}').fetchone()[0]:,} {t}"
                 for t in ("images", "image_tags", "tags", "comments", "posts", "users", "galleries", "history")]
    return ", ".join(found)


def endpoint(path: str) -> str:
    """A request's kind: its path with ids and names cut ("/api/v1/json/profiles/N")."""
    parts = path.removeprefix("/api/v1/json/").split("/")
    return "/".join("N" if p.isdigit() else p for p in parts[:2]) + ("/..." if len(parts) > 2 else "")


def newest_history_id(database: Path) -> int:
    with closing(sqlite3.connect(database)) as conn:
        return conn.execute("SELECT coalesce(max(id), 0) FROM history").fetchone()[0]


def changes_kept(database: Path, after: int) -> str:
    with closing(sqlite3.connect(database)) as conn:
        rows = conn.execute("SELECT resource || ' ' || event, count(*) FROM history WHERE id > ? GROUP BY 1 "
                            "ORDER BY 2 DESC", [after]).fetchall()
    return ", ".join(f"{n:,} {what}" for what, n in rows) or "none"


def measured_sync(site: SiteServer, toml: Path, database: Path, label: str) -> dict:
    site.clear_requests()
    kept = newest_history_id(database)
    before, site_cpu = load(), time.process_time()  # the site answers from this process's threads
    measured = run_cli_measured(["-c", str(toml), "sync"])
    if measured.returncode:
        raise SystemExit(f"mirror sync failed ({label}):\n{measured.stderr[-3000:]}")
    asked = [r.path for r in site.requests if r.path.startswith("/api/")]
    return {"label": label, "requests": len(asked), "kinds": Counter(endpoint(p) for p in asked),
            "cpu": measured.cpu, "wall": measured.wall, "peak_mb": measured.peak_mb,
            "site_cpu": time.process_time() - site_cpu, "load": f"{before} -> {load()}",
            "history": changes_kept(database, kept), "said": measured.stdout + measured.stderr}


def in_pages(items: list, size: int = PAGE):
    for start in range(0, len(items), size):
        yield items[start:start + size]


def write_night(path: Path, night: dict[str, int], rng: random.Random) -> dict[str, float]:
    """The night's changes written into the site's archive through the store's writers, dated now:
    (what, seconds)."""
    db = open_database(path)
    timings: dict[str, float] = {}
    try:
        now = utc_text()
        started = time.perf_counter()
        visible = [row[0] for row in db.execute("SELECT id FROM images WHERE NOT coalesce(hidden_from_users, 0)")]
        chosen = rng.sample(visible, night["votes"] + night["tag edits"] + night["description edits"]
                            + night["new images"])
        images = ImageWriter(db, BASE)
        vocabulary = db.execute("SELECT id, name FROM tags WHERE images > 0 ORDER BY images DESC LIMIT 5000").fetchall()
        edits, moved = [], Counter()
        for n, image_id in enumerate(chosen[:len(chosen) - night["new images"]]):
            record = json.loads(db.execute("SELECT raw FROM images WHERE id = ?", [image_id]).fetchone()[0])
            record["updated_at"] = now
            if n < night["votes"]:
                up = record["upvotes"] + rng.randint(1, 5)
                record.update(upvotes=up, score=up - record["downvotes"], faves=record["faves"] + 1,
                              wilson_score=round(rng.random(), 6))
            elif n < night["votes"] + night["tag edits"]:
                pairs = dict(zip(record["tag_ids"], record["tags"]))
                dropped = rng.choice(sorted(pairs)) if len(pairs) > 1 else None
                pairs.pop(dropped, None)
                added = rng.choice(vocabulary)
                pairs[added[0]] = added[1]
                moved.update({t: 1 for t in set(pairs) - set(record["tag_ids"])})
                moved.update({t: -1 for t in set(record["tag_ids"]) - set(pairs)})
                ordered = sorted(pairs.items(), key=lambda pair: pair[1])
                record.update(tag_ids=[i for i, _ in ordered], tags=[name for _, name in ordered],
                              tag_count=len(ordered))
            else:
                record["description"] = (record.get("description") or "") + " (edited: a typo fixed)"
            edits.append(record)
        for page in in_pages(edits):
            images.save_page(page)
        _count_tags(db, moved)
        timings["image edits"] = time.perf_counter() - started

        started = time.perf_counter()
        first = db.execute("SELECT max(id) FROM images").fetchone()[0] + 1
        new = []
        for n, image_id in enumerate(chosen[-night["new images"]:]):
            record = json.loads(db.execute("SELECT raw FROM images WHERE id = ?", [image_id]).fetchone()[0])
            record.update(id=first + n, created_at=now, updated_at=now, upvotes=0, downvotes=0, score=0, faves=0,
                          comment_count=0, wilson_score=0.0)
            record["view_url"] = record["view_url"].replace(f"/{image_id}/", f"/{first + n}/")  # best effort
            record["representations"] = {k: v.replace(f"/{image_id}/", f"/{first + n}/")
                                         for k, v in (record.get("representations") or {}).items()}
            new.append(record)
        for page in in_pages(new):
            images.save_page(page)
        _count_tags(db, Counter(t for record in new for t in record["tag_ids"]))
        timings["new images"] = time.perf_counter() - started

        started = time.perf_counter()
        comments = RecordWriter(db, COMMENTS, BASE)
        sample = [json.loads(raw) for (raw,) in db.execute(
            "SELECT raw FROM comments WHERE NOT coalesce(hidden_from_users, 0) ORDER BY id DESC LIMIT ?",
            [night["new comments"]])]
        first = db.execute("SELECT max(id) FROM comments").fetchone()[0] + 1
        on = rng.choices(visible, k=len(sample))
        made = [{**comment, "id": first + n, "image_id": image_id, "created_at": now, "updated_at": now}
                for n, (comment, image_id) in enumerate(zip(sample, on))]
        for page in in_pages(made):
            comments.save(page)
        # An image's comment_count moves, its updated_at does not (Philomena counts with update_all).
        bumped = Counter(on)
        for page in in_pages(sorted(bumped)):
            records = [json.loads(raw) for (raw,) in db.execute(
                "SELECT raw FROM images WHERE id IN (SELECT value FROM json_each(?))", [json.dumps(page)])]
            images.save_page([{**r, "comment_count": r["comment_count"] + bumped[r["id"]]} for r in records])
        timings["new comments"] = time.perf_counter() - started
    finally:
        db.close()
    return timings


def _count_tags(db, moved: Counter) -> None:
    """Tags' ``images`` moved by what the night did to their images (as the site counts them)."""
    records = [{**json.loads(raw), "images": count + moved[tag_id]} for tag_id, raw, count in db.execute(
        "SELECT id, raw, images FROM tags WHERE id IN (SELECT value FROM json_each(?)) AND raw IS NOT NULL",
        [json.dumps(sorted(moved))])]
    writer = RecordWriter(db, TAGS, BASE)
    for page in in_pages(records, 500):
        writer.save(page)


def profiles(sync: dict) -> int:
    return sync["kinds"].get("profiles/N", 0)


def report(syncs: list[dict]) -> None:
    print_table(["sync", "API requests", "profiles", "the rest", "CPU s", "wall s", "peak MB", "site's CPU s", "load"],
                [(s["label"], s["requests"], profiles(s), s["requests"] - profiles(s), s["cpu"], s["wall"],
                  s["peak_mb"], s["site_cpu"], s["load"]) for s in syncs],
                "mirror sync of every resource (profiles: the users the dump names by name only, "
                "profiles.refresh_per_run a night until all are fetched; the site's CPU: its thread in this process)")
    kinds = sorted({k for s in syncs for k in s["kinds"]})
    print_table(["requests by endpoint", *(s["label"] for s in syncs)],
                [(kind, *(s["kinds"].get(kind, 0) for s in syncs)) for kind in kinds])
    for s in syncs:
        print(f"\n{s['label']}: history kept: {s['history']}")
        for line in s["said"].splitlines():
            if line.strip() and not line.startswith("BENCH "):
                print(f"  {line}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", type=Path, required=True,
                        help="the user's mirror: a copy of an archive `mirror import-dump` made, synced in place")
    parser.add_argument("--site", type=Path, required=True,
                        help="the site: another copy of the same archive, served and changed in place")
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "bench-nights")
    parser.add_argument("--scale", type=float, default=1.0, help="the night's size, as a share of the model's")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    database, site_path = args.database.resolve(), args.site.resolve()
    if database == site_path:
        raise SystemExit("--database and --site must be two copies of the archive, not one file")
    args.work.mkdir(parents=True, exist_ok=True)
    night = {name: max(1, round(n * args.scale)) for name, n in NIGHT.items()}
    print(f"archive: {counts(database)} ({load()})")

    started = time.perf_counter()
    editor = BoardEditor(site_path)
    print(f"site: the local site's app over {site_path} (opened in {time.perf_counter() - started:.1f} s)")
    with SiteServer(editor) as site:
        site.app.state.board.search_seconds = 300  # a cold search over SQLite, not the site's index
        config = mirror_config(site.url, args.work, database, handed_filter(database))
        toml = write_toml(config, args.work / "mirror.toml")
        handed = hand_over_the_rest(config, database)
        if handed:
            print(f"handed over as an import with every resource enabled would: {', '.join(handed)}")
        syncs = [measured_sync(site, toml, database, "first after the import")]
        print(f"  first sync: {syncs[-1]['requests']:,} requests, {syncs[-1]['cpu']:.1f} s CPU", flush=True)
        syncs.append(measured_sync(site, toml, database, "nothing changed"))
        print(f"  nothing changed: {syncs[-1]['requests']:,} requests, {syncs[-1]['cpu']:.1f} s CPU", flush=True)
        timings = write_night(site_path, night, random.Random(args.seed))
        print("the night written into the site: " + ", ".join(f"{n:,} {name}" for name, n in night.items())
              + " (" + ", ".join(f"{what} {seconds:.0f} s" for what, seconds in timings.items()) + ")", flush=True)
        syncs.append(measured_sync(site, toml, database, "a night of Derpibooru's size"))
    editor.close()
    report(syncs)
    quiet = syncs[1]
    print(f"\ntarget: a night with nothing changed <= 20 requests, <= 60 s of work: {quiet['requests']} requests "
          f"({profiles(quiet)} of them profiles), {quiet['cpu']:.1f} s CPU, {quiet['wall']:.1f} s wall")


if __name__ == "__main__":
    main()
