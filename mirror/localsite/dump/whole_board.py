"""The whole board's public dump: Derpibooru's size and shape, written without PostgreSQL.

``mirror site --dump OUT --shape derpibooru --images N`` and the benchmarks of issue 48 need a
dump of 10,000 to 3,500,000 images whose shapes are the site's (:mod:`.board_shape`), in the
archive format the site publishes, in minutes: the route through a real server
(:mod:`.public`) loads every row into PostgreSQL first, hours at that size. So the tables'
COPY text (:mod:`.board_tables`) goes straight into a ``pg_dump -Fc`` archive
(:mod:`.archive_writer`).

The tables are split between two processes (each table depends only on the seed, so either can
write any), each writing its tables' data blocks to a part file of its own, which are then
copied behind the table of contents. The split is fixed, so the bytes are the same whatever the
number of processes. A dump is cached by its parameters (:func:`cached_dump`): written under a
temporary name and renamed, so a killed run leaves no half file, with its summary (counts and
shapes, :func:`summary_lines`) beside it as JSON.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import tempfile
import time
import zlib
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from .archive_writer import ArchiveWriter, write_block
from .board_shape import DUMPED, Shape
from .board_tables import TABLES, Board, Tally
from .tables import LAYOUTS

__all__ = ["GENERATOR_VERSION", "write_whole_board", "cached_dump", "cached_summary", "summary_lines",
           "whole_board_site"]

GENERATOR_VERSION = 1  # bump whenever the same parameters would give other bytes
# The compression level: zlib's default (6, pg_dump's too). On this text it is some 70% of the CPU
# time, five times level 1's, for a file a fifth smaller; the target is met with it (docs/dump.md).
LEVEL = zlib.Z_DEFAULT_COMPRESSION
# The tables of each process, balanced by their measured cost (the history and the taggings are
# the heavy ones, each a pass over every image's tags).
GROUPS = (
    ("tag_change_tags", "tag_changes", "images", "image_intensities", "tag_aliases", "tag_implications", "users",
     "badges", "badge_awards", "artist_links", "forums", "topics", "posts"),
    ("image_taggings", "tags", "comments", "image_faves", "image_sources", "source_changes", "image_hides",
     "image_duplicates", "duplicate_reports", "image_features", "galleries", "gallery_interactions"),
)


def write_whole_board(out: str | Path, images: int, seed: int = 1, *, processes: int = 2,
                      level: int | None = LEVEL) -> dict[str, Any]:
    """Write the dump of a board of ``images`` images (seed ``seed``) to ``out``; returns its summary.

    The archive is written in a scratch folder beside ``out`` (``.NAME.*``, removed at the end)
    and renamed once whole: a run killed or failed leaves no half file under the name."""
    started = time.perf_counter()
    out = Path(out)
    with tempfile.TemporaryDirectory(prefix=f".{out.name}.", dir=out.parent) as scratch:
        parts = [Path(scratch) / f"part-{n}" for n in range(len(GROUPS))]
        jobs = [(images, seed, group, str(part), level) for group, part in zip(GROUPS, parts)]
        if processes > 1:
            with ProcessPoolExecutor(min(processes, len(jobs)), mp_context=multiprocessing.get_context("fork")) as pool:
                done = list(pool.map(_write_group, *zip(*jobs)))
        else:
            done = [_write_group(*job) for job in jobs]
        whole = Path(scratch) / "whole.pgdump"
        writer = ArchiveWriter(whole, LAYOUTS["2026"], datetime.fromtimestamp(DUMPED, timezone.utc), level=level)
        try:
            for part, (starts, _, _) in zip(parts, done):
                writer.append_blocks(part, starts)
                part.unlink()
        finally:
            writer.close()
        os.replace(whole, out)
    return _summary(images, seed, out, done, time.perf_counter() - started)


def _write_group(images: int, seed: int, group: tuple[str, ...], part: str, level: int | None
                 ) -> tuple[dict[str, int], dict[str, int], dict[str, Any]]:
    """One process's share: ``group``'s data blocks, end to end in the file ``part``."""
    tally = Tally()
    board = Board(Shape(images, seed), tally)
    data_ids = ArchiveWriter.data_ids_of(LAYOUTS["2026"])
    starts, sizes = {}, {}
    with open(part, "wb") as handle:
        for name in group:
            starts[name] = handle.tell()
            sizes[name] = write_block(handle, data_ids[name], _counting(TABLES[name](board), tally, name), level)
    return starts, sizes, _tally_json(tally)


def _counting(pieces: Iterator[bytes], tally: Tally, table: str) -> Iterator[bytes]:
    """``pieces`` of COPY text, their rows counted into ``tally``."""
    tally.rows[table], started = 0, time.perf_counter()
    for piece in pieces:
        tally.rows[table] += piece.count(b"\n")
        yield piece
    tally.seconds[table] = round(time.perf_counter() - started, 2)


def _tally_json(tally: Tally) -> dict[str, Any]:
    out: dict[str, Any] = {"rows": tally.rows, "table_seconds": tally.seconds}
    if tally.tags_per_image:
        counts = np.concatenate(tally.tags_per_image)
        out["tags_per_image"] = {**_percentiles(counts), "mean": round(float(counts.mean()), 2),
                                 "share_over_100": round(float((counts > 100).mean()), 5)}
        out["safe_share"] = round(tally.safe / len(counts), 4)
    if tally.change_rows_per_image:
        rows = np.sort(np.concatenate(tally.change_rows_per_image))
        top = rows[-max(1, len(rows) // 100):]
        out["tag_change_rows_per_image"] = {
            **_percentiles(rows), "share_with_none": round(float((rows == 0).mean()), 4),
            "top_1pct_share": round(float(top.sum() / max(1, rows.sum())), 4),
            "largest": [int(v) for v in rows[-2:][::-1]]}
    return out


def _percentiles(values: np.ndarray) -> dict[str, float]:
    return {f"p{q:g}": float(np.percentile(values, q)) for q in (50, 75, 90, 99, 99.9)}


def _summary(images: int, seed: int, out: Path, done: list, seconds: float) -> dict[str, Any]:
    summary: dict[str, Any] = {"generator": GENERATOR_VERSION, "images": images, "seed": seed, "rows": {},
                               "text_bytes": {}, "table_seconds": {}, "file_bytes": out.stat().st_size,
                               "seconds": round(seconds, 1)}
    for _, sizes, tally in done:
        summary["rows"].update(tally.pop("rows"))
        summary["table_seconds"].update(tally.pop("table_seconds"))
        summary["text_bytes"].update(sizes)
        summary.update(tally)
    for key in ("rows", "table_seconds", "text_bytes"):
        summary[key] = dict(sorted(summary[key].items()))
    return summary


def summary_lines(summary: dict[str, Any]) -> list[str]:
    """The board's counts and shapes in a few lines, for a benchmark to print beside its figures."""
    rows, tags, changes = summary["rows"], summary["tags_per_image"], summary["tag_change_rows_per_image"]
    return [
        f"board: {summary['images']:,} images (seed {summary['seed']}, generator v{summary['generator']}), "
        f"{sum(rows.values()):,} rows, dump {summary['file_bytes'] / 1e6:,.1f} MB",
        "rows: " + ", ".join(f"{name} {count:,}" for name, count in rows.items()),
        f"tags per image: p50 {tags['p50']:g}, p75 {tags['p75']:g}, p90 {tags['p90']:g}, p99 {tags['p99']:g}, "
        f"p99.9 {tags['p99.9']:g}, mean {tags['mean']:g}, over 100 {tags['share_over_100']:.3%}; "
        f"safe on {summary['safe_share']:.1%}",
        f"tag changes: {rows['tag_changes']:,} batches, {rows['tag_change_tags']:,} tag rows; images with none "
        f"{changes['share_with_none']:.1%}, the top 1% hold {changes['top_1pct_share']:.1%}, the largest "
        f"{', '.join(f'{v:,}' for v in changes['largest'])} rows",
    ]


def cached_dump(images: int, seed: int, folder: str | Path, *, processes: int = 2) -> Path:
    """The path of the dump of ``images`` images (seed ``seed``, this generator's version) in
    ``folder``, written only when missing (its summary beside it, as ``.json``)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"derpibooru-shape-{images}-seed{seed}-v{GENERATOR_VERSION}.pgdump"
    summary = path.with_suffix(".json")
    if not (path.exists() and summary.exists()):  # a run killed between the two writes them again
        _write_json(summary, write_whole_board(path, images, seed, processes=processes))
    return path


def cached_summary(dump: str | Path) -> dict[str, Any]:
    """The summary written beside a :func:`cached_dump`."""
    return json.loads(Path(dump).with_suffix(".json").read_text())


def _write_json(path: Path, data: dict[str, Any]) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}.partial")
    temporary.write_text(json.dumps(data, indent=1) + "\n")
    os.replace(temporary, path)


def whole_board_site(out: str | Path, *, images: int, seed: int = 1) -> str:
    """``mirror site --dump OUT --shape derpibooru``: the lines that say what was written."""
    summary = write_whole_board(out, images, seed)
    return "\n".join([f"Wrote {out} in {summary['seconds']:.0f} s: the 2026 public dump layout, Derpibooru's shape",
                      *summary_lines(summary)])
