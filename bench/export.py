"""`mirror export` on a large archive, against the targets of issue 50 (not a timed test; prints figures).

The archive is synthesised straight into the store's schema (a migrated database, the image rows
written by one ``INSERT`` a batch, shaped by the store's own converters from the 2024 fixture's
record with varied ids, hashes, tags, dates, scores and descriptions): a sync would take hours.
The images' full-text triggers are dropped in this bench's copy only (the export never reads the
index). Cached in --work by size. With ``--database``, a copy of a mirror that `mirror import-dump`
made is exported instead (Derpibooru's shape, with the site's own deep tag history). Then, each a
``mirror export`` in a subprocess (peak memory from /proc):

- the first export, every version included: wall time and peak memory (targets at the whole
  board's 3,500,000 images: <= 10 min, <= 1 GB);
- bytes per image version on disk, per column (target: <= 300 B a version);
- a night: --changed images edited (a tag swapped, the score moved; their history rows written as a
  sync writes them) and --counters more with their counts moved (kept by ``history.counters =
  daily`` as one history row each): time and bytes written (target for the site's night of 30,000
  changed: <= 30 s and <= 20 MB);
- ``--compact`` after it (target: <= 5 min at 3.5M);
- a count of images by tag over the export in DuckDB and Spark, beside the same in SQLite.

docs/export.md has the figures measured.

    .venv/bin/python bench/export.py [--images 100000] [--history-nights 3] [--changed 10000]
        [--counters 20000] [--database PATH] [--work /tmp/bench-export]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import shutil
import sqlite3
import time
from pathlib import Path

from common import print_table, run_cli_measured

from mirror.store import open_database
from mirror.store.raw_rebuilt import STORED_COLUMNS, stored
from mirror.store.records import column_converters, shape_values
from mirror.store.schema import IMAGE_FIELDS
from mirror.store.specs import IMAGES

FIXTURE = Path(__file__).resolve().parents[1] / "tests/fixtures/real/derpibooru-2024/images.json"
WORDS = ("pony twilight sparkle rainbow dash fluttershy rarity applejack pinkie pie cute smiling "
         "happy sky cloud forest night moon sun castle book magic wings horn tail mane eyes").split()
TAGS = 3_000
TAG = "safe"
BATCH = 5_000
FIRST_SYNC = "2026-01-01T03:00:00Z"


def vocabulary(rng: random.Random) -> list[tuple[int, str]]:
    names = [TAG, "suggestive", "explicit"] + [f"{rng.choice(WORDS)} {rng.choice(WORDS)} {i}" for i in range(TAGS - 3)]
    return [(10_000 + i, name) for i, name in enumerate(names)]


def image_record(template: dict, image_id: int, rng: random.Random, tags: list[tuple[int, str]]) -> dict:
    record = copy.deepcopy(template)
    chosen = [tags[rng.randrange(3)], *rng.sample(tags[3:], rng.randint(4, 39))]
    day = f"20{rng.randint(12, 25)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    stamp = f"{day}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}Z"
    path = f"{day.replace('-', '/')}/{image_id}"
    record.update(
        id=image_id, tag_ids=[t[0] for t in chosen], tags=[t[1] for t in chosen], tag_count=len(chosen),
        score=rng.randint(-5, 5000), upvotes=rng.randint(0, 5000), downvotes=rng.randint(0, 200),
        faves=rng.randint(0, 3000), wilson_score=rng.random(), comment_count=rng.randint(0, 80),
        created_at=stamp, updated_at=stamp, first_seen_at=stamp, uploader_id=rng.randint(1, 400_000),
        width=rng.randint(200, 6000), height=rng.randint(200, 6000), size=rng.randint(10_000, 20_000_000),
        sha512_hash=rng.randbytes(64).hex(), orig_sha512_hash=rng.randbytes(64).hex(),
        description=" ".join(rng.choices(WORDS, k=rng.choice((0, 0, 5, 20, 60)))),
        intensities={k: rng.random() * 255 for k in ("nw", "ne", "sw", "se")},
        view_url=f"https://derpicdn.net/img/view/{path}.png",
        representations={k: f"https://derpicdn.net/img/{path}/{k}.png" for k in template["representations"]},
        source_urls=[f"https://example.com/art/{rng.randrange(10**9)}"] if rng.random() < 0.6 else [],
    )
    record["source_url"] = (record["source_urls"] or [None])[0]
    return record


def build_archive(path: Path, images: int, seed: int = 38) -> float:
    """A migrated mirror of ``images`` synthetic image records (and their tags, first seen in the history)."""
    started = time.perf_counter()
    partial = path.with_suffix(".partial")
    for leftover in path.parent.glob(partial.name + "*"):
        leftover.unlink()
    open_database(partial).close()
    rng = random.Random(seed)
    template = json.loads(FIXTURE.read_text())["images"][0]
    tags = vocabulary(rng)
    converters = column_converters(IMAGE_FIELDS, "https://derpibooru.org")
    fields = list(converters.items())
    conn = sqlite3.connect(partial)
    generated = {row[1] for row in conn.execute("PRAGMA table_xinfo(images)") if row[6] in (2, 3)}
    columns = [n for n in [*IMAGE_FIELDS, *STORED_COLUMNS, "mirrored_at", "stub"] if n not in generated]
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=OFF")
    for name in ("images_ai", "images_ad", "images_au"):
        conn.execute(f'DROP TRIGGER IF EXISTS "{name}"')
    conn.executemany("INSERT INTO tags (id, name, slug, raw, mirrored_at) VALUES (?, ?, ?, '{}', ?)",
                     [(i, n, n.replace(" ", "-"), FIRST_SYNC) for i, n in tags])
    marks = ", ".join("?" * len(columns))
    for start in range(1, images + 1, BATCH):
        rows, history = [], []
        for image_id in range(start, min(start + BATCH, images + 1)):
            record = image_record(template, image_id, rng, tags)
            values = shape_values(record, fields)
            kept = stored(IMAGES, record, dict(zip(IMAGE_FIELDS, values)))
            row = dict(zip([*IMAGE_FIELDS, *kept, "mirrored_at", "stub"],
                           (*values, *kept.values(), FIRST_SYNC, None)))
            rows.append(tuple(row[n] for n in columns))
            history.append(("images", str(image_id), FIRST_SYNC, "first_seen"))
        with conn:
            conn.executemany(f"INSERT INTO images ({', '.join(columns)}) VALUES ({marks})", rows)
            conn.executemany("INSERT INTO history (resource, record_key, seen_at, event) VALUES (?, ?, ?, ?)", history)
        if start % 200_000 < BATCH:
            print(f"  {start + len(rows) - 1:,} images written ({time.perf_counter() - started:.0f} s)", flush=True)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    partial.rename(path)
    for suffix in ("-wal", "-shm"):
        Path(str(partial) + suffix).unlink(missing_ok=True)
    return time.perf_counter() - started


def a_night(path: Path, changed: int, counters: int, seed: int = 39, now: str | None = None) -> None:
    """A night's sync as the store keeps it: ``changed`` images retagged with their score moved (history
    and tag rows), ``counters`` more with their counts moved (one ``counters`` history row each), at
    ``now`` (default: now)."""
    rng = random.Random(seed)
    now = now or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    conn = sqlite3.connect(path)
    ids = [i for (i,) in conn.execute("SELECT id FROM images WHERE hidden_from_users = 0 AND tags IS NOT NULL "
                                      "ORDER BY id")]
    picked = rng.sample(ids, changed + counters)
    with conn:
        for image_id in picked[:changed]:
            tags, ids = (json.loads(v) for v in conn.execute("SELECT tags, tag_ids FROM images WHERE id = ?",
                                                              [image_id]).fetchone())
            gone_name, gone_id = tags.pop(), ids.pop()
            tags.append("retagged tonight")
            ids.append(9_999)
            conn.execute("UPDATE images SET tags = ?, tag_ids = ?, score = score + 3, mirrored_at = ? WHERE id = ?",
                         [json.dumps(tags), json.dumps(ids), now, image_id])
            history_id = conn.execute("INSERT INTO history (resource, record_key, seen_at, event, changes) "
                                      "VALUES ('images', ?, ?, 'changed', '{\"score\": [1, 4]}')",
                                      [str(image_id), now]).lastrowid
            conn.executemany("INSERT INTO image_tag_changes (history_id, image_id, tag_id, tag_name, change, seen_at) "
                             "VALUES (?, ?, ?, ?, ?, ?)", [(history_id, image_id, gone_id, gone_name, "-", now),
                                                           (history_id, image_id, 9_999, "retagged tonight", "+", now)])
        for image_id in picked[changed:]:
            conn.execute("UPDATE images SET score = score + 1, faves = faves + 1, mirrored_at = ? WHERE id = ?",
                         [now, image_id])
            conn.execute("INSERT INTO history (resource, record_key, seen_at, event, changes) "
                         "VALUES ('images', ?, ?, 'counters', '{\"score\": [1, 2], \"faves\": [0, 1]}')",
                         [str(image_id), now])
    conn.close()


def export(config: Path, dest: Path, *options: str) -> tuple[dict, float, str, float]:
    """The export's report, its wall time, peak memory (MB: its own process's, then each process it
    started) and CPU seconds, its processes' all (the machine is shared: CPU time is what scales to
    another machine, the wall time what the load left of it)."""
    measured = run_cli_measured(["-c", str(config), "export", str(dest), "--json", "-q", *options])
    if measured.returncode != 0:
        raise SystemExit(f"mirror export failed: {measured.stderr[-2000:]}")
    others = "".join(f" + {peak:.0f}" for peak in sorted(measured.child_peaks_mb, reverse=True))
    return json.loads(measured.stdout)["export"], measured.wall, f"{measured.peak_mb:.0f}{others}", measured.cpu


def bytes_per_column(dest: Path) -> list[tuple[str, float]]:
    """Bytes on disk per image version, per column (compressed, from the Parquet footers)."""
    import pyarrow.parquet as pq

    sizes: dict[str, int] = {}
    rows = 0
    for part in (dest / "images").glob("part-*.parquet"):
        meta = pq.ParquetFile(part).metadata
        rows += meta.num_rows
        for group in range(meta.num_row_groups):
            for column in range(meta.num_columns):
                chunk = meta.row_group(group).column(column)
                name = chunk.path_in_schema.split(".")[0]
                sizes[name] = sizes.get(name, 0) + chunk.total_compressed_size
    return sorted(((name, size / rows) for name, size in sizes.items()), key=lambda item: -item[1])


def count_by_tag(archive: Path, dest: Path) -> list[tuple[str, int, float]]:
    """Images carrying TAG now: SQLite over the archive, DuckDB over the plain Parquet files, Spark."""
    from mirror.export.tables import EXPORT_TABLES
    from mirror.export.views import current_sql

    table = EXPORT_TABLES["images"]
    found = []
    started = time.perf_counter()
    conn = sqlite3.connect(archive)
    count = conn.execute("SELECT count(*) FROM images, json_each(images.tags) WHERE json_each.value = ?", [TAG])
    found.append(("SQLite (archive, json_each)", count.fetchone()[0], time.perf_counter() - started))
    import duckdb

    started = time.perf_counter()
    con = duckdb.connect()
    con.execute(f"SET file_search_path = '{dest}'")
    con.execute((dest / "views" / "duckdb.sql").read_text())  # the live files, as the export's views read them
    count = con.execute(f"SELECT count(*) FROM ({current_sql(table, 'duckdb', 'images')}) WHERE list_contains(tags, ?)",
                        [TAG]).fetchone()[0]
    found.append(("DuckDB (parquet, current view)", count, time.perf_counter() - started))
    if shutil.which("java"):
        from pyspark.sql import SparkSession

        spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
                 .config("spark.driver.memory", "1g").getOrCreate())
        started = time.perf_counter()
        spark.read.parquet(str(dest / "images")).createOrReplaceTempView("images")
        count = spark.sql(f"SELECT count(*) FROM ({current_sql(table, 'spark', '`images`')}) "
                          f"WHERE array_contains(tags, '{TAG}')").collect()[0][0]
        found.append(("Spark local[2] (parquet, current view)", count, time.perf_counter() - started))
        spark.stop()
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=1_000_000)
    parser.add_argument("--changed", type=int, default=1_000)
    parser.add_argument("--counters", type=int, default=0,
                        help="images whose counts move the same night (the whole-board model: 27,000 at 1M)")
    parser.add_argument("--history-nights", type=int, default=0,
                        help="nights of history before the first export (each: --changed retagged, --counters "
                             "counted), so that the first export writes past versions too")
    parser.add_argument("--database", type=Path,
                        help="export a copy of this mirror (one `mirror import-dump` made: the site's own deep "
                             "tag history) instead of a synthesised archive; it is never written")
    parser.add_argument("--work", type=Path, default=Path("/tmp/bench-export"))
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    cached = args.database or args.work / f"archive-{args.images}.db"
    if not cached.exists():
        print(f"building an archive of {args.images:,} images")
        print(f"  built in {build_archive(cached, args.images):.0f} s")
    archive, dest = args.work / "mirror.db", args.work / "dest"
    for suffix in ("-wal", "-shm"):
        Path(f"{archive}{suffix}").unlink(missing_ok=True)
    shutil.copyfile(cached, archive)
    if args.database:  # its full-text triggers dropped in the copy, as in a synthesised archive
        with sqlite3.connect(archive) as conn:
            for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = "
                                        "'images' AND substr(name, -3) IN ('_ai', '_ad', '_au')").fetchall():
                conn.execute(f'DROP TRIGGER "{name}"')
            args.images = conn.execute("SELECT count(*) FROM images").fetchone()[0]
    shutil.rmtree(dest, ignore_errors=True)
    config = args.work / "mirror.toml"
    config.write_text(f'[store]\ndatabase = "{archive}"\n')
    for night in range(args.history_nights):  # the past the first export rebuilds
        a_night(archive, args.changed, args.counters, seed=100 + night, now=f"2026-02-{night + 1:02d}T03:00:00Z")

    load = os.getloadavg()[0]
    first, wall, peak, cpu = export(config, dest)
    versions = first["tables"]["images"]
    print_table(["", "measured", "target"], [
        ["images", f"{args.images:,}", "3,500,000"],
        ["nights of history before it", f"{args.history_nights}", ""],
        ["load average (1 min) before it", f"{load:.1f}", ""],
        ["first export, wall", f"{wall:.1f} s ({cpu:.1f} s of CPU)", "<= 10 min at 3.5M"],
        ["first export, peak memory (each process)", f"{peak} MB", "<= 1 GB at 3.5M"],
        ["versions written (all tables)", f"{first['versions']:,}", ""],
        ["image versions written", f"{versions:,}", ""],
        ["data files, images", f"{sum(p.stat().st_size for p in (dest / 'images').glob('*.parquet')) / versions:.0f} "
                               "B a version", "<= 300 B"],
    ], title="first export")
    print_table(["column", "bytes a version"], [[n, f"{b:.1f}"] for n, b in bytes_per_column(dest)],
                title="where the bytes of an image version go")

    a_night(archive, args.changed, args.counters)
    load = os.getloadavg()[0]
    night, wall, peak, cpu = export(config, dest)
    print_table(["", "measured", "target"], [
        ["images changed (retagged, score moved)", f"{args.changed:,}", "30,000 changed"],
        ["images whose counts moved", f"{args.counters:,}", ""],
        ["load average (1 min) before it", f"{load:.1f}", ""],
        ["export, wall", f"{wall:.1f} s ({cpu:.1f} s of CPU)", "<= 30 s"],
        ["export, peak memory (each process)", f"{peak} MB", ""],
        ["data written", f"{night['bytes'] / 2**20:.2f} MiB", "<= 20 MB"],
        ["versions written", ", ".join(f"{k} {v}" for k, v in night["tables"].items() if v), ""],
    ], title="a night")
    load = os.getloadavg()[0]
    compacted, wall, peak, cpu = export(config, dest, "--compact")
    print_table(["", "measured", "target"], [
        ["load average (1 min) before it", f"{load:.1f}", ""],
        ["export --compact (nothing new), wall", f"{wall:.1f} s ({cpu:.1f} s of CPU)", "<= 5 min at 3.5M"],
        ["peak memory (each process)", f"{peak} MB", ""],
        ["files", ", ".join(f"{k} {v}" for k, v in (compacted.get("compacted") or {}).items()), ""],
    ], title="compaction")
    print_table(["engine", f"images tagged {TAG}", "seconds"],
                [[name, f"{count:,}", f"{seconds:.2f}"] for name, count, seconds in count_by_tag(archive, dest)],
                title="count by tag, same run")


if __name__ == "__main__":
    main()
