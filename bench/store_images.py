"""Image records stored per second: the mirror's store beside hand-written ``sqlite3``.

Both sides do the same work on the same records: shape each record into typed columns plus
``raw``, write 50-record pages (one transaction each, as a sync does) with the FTS triggers
firing, add the tags and write the image-tag links that differ; first into an empty database,
then again with every record changed (a re-sync), and the store once more with nothing changed.
The raw side is the best SQL found by hand: one multi-row statement a page and the store's
connection settings. Compare the ratios, not the absolute figures: the machines here are
shared and noisy.

Measured on 2 shared cores, 20,000 records: the store 2,600 records/s on a first import,
0.95-1.02 of raw sqlite3 in the same rounds; 5,200-5,400/s re-syncing changed records
(0.94-0.97 of raw); 7,600-8,000/s for unchanged ones. Beside the store before it wrote with
plain ``sqlite3`` (same records, rounds alternating): first import 1.87x, changed re-sync
1.79x, unchanged 1.86x.

The 10,000 a second target is out of reach with this schema and one transaction a page: raw
sqlite3 alone reaches about 2,700/s here. Per record (the breakdown printed last): shaping and
JSON 40 us, rows and their ten indexes 48 us, the two FTS5 indexes 73 us, tags and links
200 us. The links are the wall: their by-tag index spreads each page's ~1,100 links over as
many leaf pages, so at 20,000 records a page of 50 writes about 3.4 MiB (WAL and checkpoints),
against 1.1 MiB without links (raw sqlite3 then does about 5,700/s).

    .venv/bin/python bench/store_images.py [--records 20000] [--rounds 2]
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import sqlite3
import tempfile
import time
from pathlib import Path

from common import print_table

from mirror.store import ImageWriter, open_database
from mirror.store.database import WAL_CHECKPOINT_PAGES
from mirror.store.raw_rebuilt import STORED_COLUMNS, stored
from mirror.store.records import column_converters, shape, to_json
from mirror.store.schema import IMAGE_FIELDS
from mirror.store.specs import IMAGES

FIXTURE = Path(__file__).resolve().parents[1] / "tests/fixtures/real/derpibooru-2024/images.json"
PAGE = 50
WORDS = ("pony twilight sparkle rainbow dash fluttershy rarity applejack pinkie pie cute smiling "
         "happy sky cloud forest night moon sun castle book magic wings horn tail mane eyes").split()


def make_records(count: int, seed: int = 7) -> list[dict]:
    """``count`` records shaped like real ones (the 2024 fixture), with varied tags and text."""
    rng = random.Random(seed)
    try:
        template = json.loads(FIXTURE.read_text())["images"][0]
    except OSError:
        template = {"id": 0, "tags": [], "tag_ids": [], "description": "", "representations": {}}
    vocabulary = [(10_000 + i, f"{rng.choice(WORDS)} {rng.choice(WORDS)} {i}") for i in range(3_000)]
    records = []
    for image_id in range(1, count + 1):
        record = copy.deepcopy(template)
        tags = rng.sample(vocabulary, rng.randint(5, 40))
        record.update(id=image_id, tag_ids=[t[0] for t in tags], tags=[t[1] for t in tags], tag_count=len(tags),
                      score=rng.randint(-5, 5000), description=" ".join(rng.choices(WORDS, k=rng.randint(0, 60))))
        records.append(record)
    return records


def changed(records: list[dict], seed: int = 8) -> list[dict]:
    """The same records as a nightly re-sync finds them: every one voted on (score and
    ``updated_at`` move), one in ten retagged (a tag swapped for another)."""
    rng = random.Random(seed)
    out = []
    for record in records:
        record = {**record, "score": record["score"] + 1, "updated_at": "2026-01-02T00:00:00Z"}
        if record["id"] % 10 == 0 and record["tag_ids"]:
            tag_id = 20_000 + rng.randrange(100)
            record.update(tag_ids=[*record["tag_ids"][1:], tag_id], tags=[*record["tags"][1:], f"retagged {tag_id}"])
        out.append(record)
    return out


def with_store(path: Path, records: list[dict]) -> float:
    db = open_database(path)
    writer = ImageWriter(db, "https://derpibooru.org")
    start = time.perf_counter()
    for i in range(0, len(records), PAGE):
        writer.save_page(records[i:i + PAGE])
    elapsed = time.perf_counter() - start
    db.close()
    return elapsed


def with_raw_sqlite(path: Path, records: list[dict], *, fts: bool = True, links: bool = True) -> float:
    """The same schema (created by the store), written with hand-made SQL: each page one
    multi-row upsert of every column (one statement, since FTS5 flushes its pending index at
    every statement), the links that differ, and the store's connection settings.

    ``fts=False`` drops the FTS triggers and ``links=False`` skips the tags and links, to show
    what each part of the work costs.
    """
    open_database(path).conn.close()
    conn = sqlite3.connect(path, isolation_level=None)
    if not fts:
        for trigger in ("images_ai", "images_au", "images_description_ai", "images_description_au"):
            conn.execute(f"DROP TRIGGER {trigger}")
    for pragma in ("journal_mode=WAL", "synchronous=NORMAL", "recursive_triggers=on", "temp_store=MEMORY",
                   f"wal_autocheckpoint={WAL_CHECKPOINT_PAGES}"):
        conn.execute(f"PRAGMA {pragma}")
    converters = column_converters(IMAGE_FIELDS, "https://derpibooru.org")
    columns = [*IMAGE_FIELDS, *STORED_COLUMNS, "stub", "mirrored_at"]
    names = ", ".join(f'"{c}"' for c in columns)
    updates = ", ".join(f'"{c}" = excluded."{c}"' for c in columns if c != "id")
    row_marks = f"({', '.join('?' * len(columns))})"
    now = "2026-01-01T00:00:00Z"
    start = time.perf_counter()
    for i in range(0, len(records), PAGE):
        page = records[i:i + PAGE]
        values, tags, pairs = [], {}, []
        for record in page:
            row = shape(record, converters)
            row.update(stored(IMAGES, record, row), stub=None, mirrored_at=now)
            values += [row[c] for c in columns]
            for tag_id, name in zip(record["tag_ids"], record["tags"]):
                tags[tag_id] = name
                pairs.append((record["id"], tag_id))
        ids = [r["id"] for r in page]
        conn.execute("BEGIN")
        conn.execute(f"SELECT id, raw FROM images WHERE id IN ({','.join('?' * len(ids))})", ids).fetchall()
        conn.execute(f"INSERT INTO images ({names}) VALUES {', '.join([row_marks] * len(page))} "
                     f"ON CONFLICT(id) DO UPDATE SET {updates}", values)
        if links:
            save_links(conn, ids, tags, set(pairs))
        conn.execute("COMMIT")
    elapsed = time.perf_counter() - start
    conn.close()
    return elapsed


def save_links(conn: sqlite3.Connection, ids: list[int], tags: dict[int, str], links: set[tuple[int, int]]) -> None:
    tag_ids = list(tags)
    known = dict(conn.execute(f"SELECT id, name FROM tags WHERE id IN ({','.join('?' * len(tag_ids))})",
                              tag_ids).fetchall())
    added = [v for i, n in tags.items() if i not in known for v in (i, n)]
    if added:
        conn.execute(f"INSERT INTO tags (id, name) VALUES {', '.join(['(?, ?)'] * (len(added) // 2))}", added)
    conn.executemany("UPDATE tags SET name = ? WHERE id = ?",
                     [(n, i) for i, n in tags.items() if i in known and known[i] != n])
    kept = set(conn.execute(f"SELECT image_id, tag_id FROM image_tags WHERE image_id IN "
                            f"({','.join('?' * len(ids))})", ids).fetchall())
    conn.executemany("DELETE FROM image_tags WHERE image_id = ? AND tag_id = ?", sorted(kept - links))
    new = sorted(links - kept)
    if new:
        conn.execute(f"INSERT INTO image_tags (image_id, tag_id) VALUES {', '.join(['(?, ?)'] * len(new))}",
                     [v for pair in new for v in pair])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    records = make_records(args.records)
    again = changed(records)
    n = args.records
    print(f"{n:,} image records, {PAGE} per transaction, FTS5 triggers and tag links on; records/s")
    rows = []
    for round_ in range(1, args.rounds + 1):
        with tempfile.TemporaryDirectory() as tmp:
            store, raw = Path(tmp) / "store.db", Path(tmp) / "raw.db"
            first, raw_first = with_store(store, records), with_raw_sqlite(raw, records)
            resync, raw_resync = with_store(store, again), with_raw_sqlite(raw, again)
            unchanged = with_store(store, again)
        rows.append((round_, n / first, n / raw_first, raw_first / first, n / resync, n / raw_resync,
                     raw_resync / resync, n / unchanged))
    print_table(["round", "store: first import", "raw sqlite3", "ratio", "store: re-sync, changed", "raw sqlite3",
                 "ratio", "store: re-sync, unchanged"], rows)
    print_breakdown(records)


def shaping_time(records: list[dict]) -> float:
    converters = column_converters(IMAGE_FIELDS, "https://derpibooru.org")
    start = time.perf_counter()
    for record in records:
        shape(record, converters)
        to_json(record)
    return time.perf_counter() - start


def print_breakdown(records: list[dict]) -> None:
    """Where a record's time goes, in microseconds, from the raw path with parts switched off."""
    with tempfile.TemporaryDirectory() as tmp:
        shaping = shaping_time(records)
        rows = with_raw_sqlite(Path(tmp) / "rows.db", records, fts=False, links=False)
        fts = with_raw_sqlite(Path(tmp) / "fts.db", records, links=False)
        everything = with_raw_sqlite(Path(tmp) / "all.db", records)
    per = 1e6 / len(records)
    print(f"raw path per record: shaping and JSON {shaping * per:.0f} us, rows and indexes "
          f"{(rows - shaping) * per:.0f} us, FTS triggers {(fts - rows) * per:.0f} us, "
          f"tags and links {(everything - fts) * per:.0f} us")


if __name__ == "__main__":
    main()
