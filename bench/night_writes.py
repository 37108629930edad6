"""What writing a night's changed images costs the store, and how much of it is the full-text index.

    .venv/bin/python bench/night_writes.py --database ARCHIVE [--images 30000]

Takes ``--images`` images of the archive (spread over its ids, none hidden), retags each (one tag
more) and writes them through the store's own writer (:class:`mirror.store.writer.RecordWriter`),
in pages of 50 each in its own transaction, as a sync writes a night; then writes the originals
back, so the archive ends as it began (only ``mirrored_at`` moved; no history is recorded). Then,
for a third of them in one transaction rolled back each time: with the triggers as they are, and
with the full-text index's update trigger dropped. Prints the wall and CPU seconds of each.

On the whole board (3,500,000 images, 2026-11-29): 29,058 retags in 112 s, 93% of it the full-text
index's update trigger (docs/performance.md, "Writing a night into the whole board").
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time
from collections.abc import Callable

from mirror.store import open_database
from mirror.store.specs import SPECS
from mirror.store.writer import RecordWriter

PAGE = 50


def cpu_seconds() -> float:
    used = resource.getrusage(resource.RUSAGE_SELF)
    return used.ru_utime + used.ru_stime


def timed(label: str, work: Callable[[], None], count: int) -> None:
    cpu, wall = cpu_seconds(), time.perf_counter()
    work()
    wall, cpu = time.perf_counter() - wall, cpu_seconds() - cpu
    print(f"{label}: {count} images in pages of {PAGE}: wall {wall:.1f} s, CPU {cpu:.1f} s, "
          f"{1000 * cpu / max(count, 1):.2f} ms an image", flush=True)


def retagged(record: dict) -> dict:
    changed = dict(record)
    changed["tags"] = sorted([*record.get("tags", []), "bench night tag"])
    changed["tag_ids"] = [*record.get("tag_ids", []), 999_999_999]
    changed["tag_count"] = len(changed["tag_ids"])
    return changed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", required=True, help="an archive; it ends as it began")
    parser.add_argument("--images", type=int, default=30_000)
    options = parser.parse_args()
    db = open_database(options.database)
    top = db.execute("SELECT max(id) FROM images").fetchone()[0] or 0
    step = max(1, top // options.images)
    ids = [row[0] for row in db.execute(
        "SELECT id FROM images WHERE id % ? = 0 AND NOT coalesce(hidden_from_users, 0) LIMIT ?", [step, options.images])]
    originals = [json.loads(row[0]) for row in db.execute(
        "SELECT raw FROM images WHERE id IN (SELECT value FROM json_each(?)) ORDER BY id", [json.dumps(ids)])]
    writer = RecordWriter(db, SPECS["images"], "https://derpibooru.org")
    changed = [retagged(record) for record in originals]

    def write(records: list[dict]) -> Callable[[], None]:
        return lambda: [writer.save(records[start:start + PAGE]) for start in range(0, len(records), PAGE)]

    print(f"{len(originals)} images of {top:,}; load {os.getloadavg()}", flush=True)
    timed("retagged, a transaction a page", write(changed), len(changed))
    timed("written back", write(originals), len(originals))
    third = changed[: len(changed) // 3]
    for label, dropped in (("one transaction, rolled back", ()),
                           ("one transaction without the full-text update trigger, rolled back", ("images_au",))):
        db.conn.execute("BEGIN")
        try:
            for name in dropped:
                db.conn.execute(f'DROP TRIGGER "{name}"')
            timed(label, write(third), len(third))
        finally:
            db.conn.rollback()
    print(f"load {os.getloadavg()}")


if __name__ == "__main__":
    main()
