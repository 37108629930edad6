"""Image records stored per second: the mirror's store beside raw ``sqlite3.executemany``.

Both sides do the same work on the same records: shape each record into typed columns plus
``raw``, upsert 50-record pages (one transaction each, as a sync does) with the FTS triggers
firing, upsert the tags and write the image-tag links that differ. Run it twice in one process and compare
the ratio, not the absolute figures: the machines here are shared and noisy.

    .venv/bin/python bench/store_images.py [--records 20000]
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

from mirror.store import ImageWriter, open_database
from mirror.store.records import column_converters, shape, to_json
from mirror.store.schema import IMAGE_FIELDS

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


def with_store(path: Path, records: list[dict]) -> float:
    db = open_database(path)
    writer = ImageWriter(db, "https://derpibooru.org")
    start = time.perf_counter()
    for i in range(0, len(records), PAGE):
        writer.save_page(records[i:i + PAGE])
    return time.perf_counter() - start


def with_raw_sqlite(path: Path, records: list[dict], *, fts: bool = True, links: bool = True) -> float:
    """The same schema (created by the store), written with hand-made SQL and ``executemany``.

    ``fts=False`` drops the FTS triggers and ``links=False`` skips the tags and links, to show
    what each part of the work costs.
    """
    open_database(path).conn.close()
    conn = sqlite3.connect(path, isolation_level=None)
    if not fts:
        conn.execute("DROP TRIGGER images_ai")
        conn.execute("DROP TRIGGER images_au")
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA recursive_triggers=on")
    converters = column_converters(IMAGE_FIELDS, "https://derpibooru.org")
    columns = [*IMAGE_FIELDS, "raw", "stub", "mirrored_at"]
    names = ", ".join(f'"{c}"' for c in columns)
    updates = ", ".join(f'"{c}" = excluded."{c}"' for c in columns if c != "id")
    upsert = (f"INSERT INTO images ({names}) VALUES ({', '.join('?' * len(columns))}) "
              f"ON CONFLICT(id) DO UPDATE SET {updates}")
    now = "2026-01-01T00:00:00Z"
    start = time.perf_counter()
    for i in range(0, len(records), PAGE):
        page = records[i:i + PAGE]
        rows, tags, pairs = [], {}, []
        for record in page:
            row = shape(record, converters)
            row.update(raw=to_json(record), stub=None, mirrored_at=now)
            rows.append(tuple(row[c] for c in columns))
            for tag_id, name in zip(record["tag_ids"], record["tags"]):
                tags[tag_id] = name
                pairs.append((record["id"], tag_id))
        ids = [r["id"] for r in page]
        conn.execute("BEGIN")
        conn.execute(f"SELECT id FROM images WHERE id IN ({','.join('?' * len(ids))})", ids).fetchall()
        conn.executemany(upsert, rows)
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
    conn.executemany("INSERT INTO tags (id, name) VALUES (?, ?)", [(i, n) for i, n in tags.items() if i not in known])
    conn.executemany("UPDATE tags SET name = ? WHERE id = ?",
                     [(n, i) for i, n in tags.items() if i in known and known[i] != n])
    kept = set(conn.execute(f"SELECT image_id, tag_id FROM image_tags WHERE image_id IN "
                            f"({','.join('?' * len(ids))})", ids).fetchall())
    conn.executemany("DELETE FROM image_tags WHERE image_id = ? AND tag_id = ?", kept - links)
    conn.executemany("INSERT INTO image_tags (image_id, tag_id) VALUES (?, ?)", links - kept)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    records = make_records(args.records)
    print(f"{args.records:,} image records, {PAGE} per transaction, FTS5 triggers and tag links on")
    for round_ in range(1, args.rounds + 1):
        with tempfile.TemporaryDirectory() as tmp:
            store = with_store(Path(tmp) / "store.db", records)
            raw = with_raw_sqlite(Path(tmp) / "raw.db", records)
            store_again = with_store(Path(tmp) / "store.db", records)
        print(f"round {round_}: store {args.records / store:,.0f} records/s, "
              f"raw sqlite3 {args.records / raw:,.0f} records/s, ratio {raw / store:.2f} "
              f"(re-sync of the same records: {args.records / store_again:,.0f} records/s)")
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
