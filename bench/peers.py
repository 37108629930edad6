"""Peers: the same metadata crawl by gallery-dl and by the mirror, at the same pace.

A board of ``--images`` images is served by `mirror site` in its own process. gallery-dl (its
Philomena extractor, the site configured as a custom instance) dumps every image's metadata
(``--dump-json``, no files) sleeping ``1 / --rate`` s between API requests; `mirror sync
images` walks the same images at ``polite.requests_per_second = --rate``. Each is timed, its
requests counted from the site's log, and what it keeps measured. Files: bench/download_files.py
compares `mirror download` with gallery-dl.

    .venv/bin/python bench/peers.py [--images 10000] [--rate 5]
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import subprocess
import tempfile
import time
from pathlib import Path

from common import SiteProcess, gallery_dl, gallery_dl_config, mirror_config, print_table, sync


def gallery_dl_crawl(site: SiteProcess, executable: Path, work: Path, rate: float) -> tuple[float, int, int, int]:
    """(wall s, requests, records, bytes kept) of a gallery-dl metadata dump of every image."""
    config = gallery_dl_config(site.url, site.everything_filter_id, work / "gallery-dl", work / "gallery-dl.json",
                               sleep=1 / rate)
    dump = work / "gallery-dl.jsonl"
    site.clear_requests()
    started = time.perf_counter()
    with dump.open("w") as out:
        result = subprocess.run([str(executable), "--config-ignore", "--config", str(config), "--dump-json",
                                 f"{site.url}/search?q=*"], stdout=out, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - started
    if result.returncode != 0:
        raise RuntimeError(f"gallery-dl exited {result.returncode}: {result.stderr[-400:]}")
    requests = sum(r.path.startswith("/api/") for r in site.requests())
    return wall, requests, records_in_dump(dump), dump.stat().st_size


def records_in_dump(dump: Path) -> int:
    """Images in a ``--dump-json`` output: one [type, url, metadata] message per file."""
    return sum(1 for message in json.loads(dump.read_text() or "[]") if message[0] == 3)


def mirror_crawl(site: SiteProcess, work: Path, rate: float) -> tuple[float, int, int, int]:
    """(wall s, requests, records, bytes kept) of a first `mirror sync images`."""
    config = mirror_config(site.url, site.everything_filter_id, work, polite={"requests_per_second": rate})
    site.clear_requests()
    _, wall, _ = sync(config)
    requests = sum(r.path.startswith("/api/") for r in site.requests())
    with sqlite3.connect(work / "mirror.db") as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        records = conn.execute("SELECT count(*) FROM images").fetchone()[0]
    return wall, requests, records, sum(p.stat().st_size for p in work.glob("mirror.db*"))


KEEPS = {
    "gallery-dl": "each visible image's API record (hidden ones are not asked for) in one JSON dump; "
                  "no tags table, no search, no cursor: a second run walks everything again",
    "mirror": "every record (typed columns + raw), tags and links, FTS5 indexes, cursor: "
              "a second run asks only what changed",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=10_000)
    parser.add_argument("--rate", type=float, default=5.0, help="requests per second for both")
    args = parser.parse_args()
    executable = gallery_dl()
    if isinstance(executable, str):
        print(f"gallery-dl not measured: {executable}")
        return
    with SiteProcess(args.images, seed=8) as site, tempfile.TemporaryDirectory() as tmp:
        site.warm()
        (Path(tmp) / "g").mkdir()
        (Path(tmp) / "m").mkdir()
        peer = gallery_dl_crawl(site, executable, Path(tmp) / "g", args.rate)
        ours = mirror_crawl(site, Path(tmp) / "m", args.rate)
    rows = [(name, wall, requests, records, size / 2**20, requests / wall, KEEPS[name])
            for name, (wall, requests, records, size) in (("gallery-dl", peer), ("mirror", ours))]
    print(f"metadata of {args.images:,} images at {args.rate:g} requests/s (gallery-dl: sleep-request {1 / args.rate:g} s)")
    print_table(["client", "wall (s)", "requests", "images kept", "kept (MB)", "requests/s", "keeps"], rows)
    print(f"mirror / gallery-dl: wall {ours[0] / peer[0]:.2f}x, requests {ours[1] / peer[1]:.2f}x, "
          f"bytes kept {ours[3] / peer[3]:.2f}x")


if __name__ == "__main__":
    main()
