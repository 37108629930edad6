"""Benchmark: downloading files from the local site, 50 ms of latency per file.

Prints files/s for `mirror download` at concurrency 1 and 4, the same job done by gallery-dl
(its Philomena extractor pointed at the local site as a custom instance), and the peak resident
memory of a `mirror download` process fetching one 200 MB file. Not part of the test run:

    .venv/bin/python bench/download_files.py [--files 1000] [--latency 0.05] [--big-mb 200]

gallery-dl is installed into the running venv with pip when missing.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import subprocess
import tempfile
import textwrap
import time
from pathlib import Path

from common import gallery_dl, gallery_dl_config, run_cli_measured

from mirror.commands import runs
from mirror.config import Config, make_config
from mirror.localsite.board.editor import BoardEditor
from mirror.localsite.http.server import SiteServer
from mirror.store import open_database

FAST_API = {"requests_per_second": 500, "backoff": 0.05}


def board(files: int) -> BoardEditor:
    """A board of ``files`` images, every one visible and processed: one `full` file each."""
    board = BoardEditor.generate(seed=1, images=files)
    for image_id, image in list(board.images.items()):
        if image["hidden_from_users"]:
            board.unhide_image(image_id)
        if not image["thumbnails_generated"]:
            board.edit_image(image_id, thumbnails_generated=True)
    return board


def config_for(site: SiteServer, work: Path, *, concurrency: int = 4, query: str = "*") -> Config:
    return make_config({
        "site": {"base_url": site.url, "filter_id": site.editor.everything_filter_id},
        "polite": FAST_API,
        "store": {"database": str(work / "mirror.db"), "files": str(work / "files")},
        "images": {"query": query},
        # The pacing budget is set far above what the latency allows, so it is latency-bound.
        "download": {"representations": ["full"], "concurrency": concurrency, "requests_per_second": 1000},
    })


def mirror_rate(site: SiteServer, work: Path, concurrency: int, files: int) -> float:
    """files/s for `mirror download` at ``concurrency``, on metadata already mirrored."""
    config = config_for(site, work, concurrency=concurrency)
    db = open_database(config.database)
    db.execute("DELETE FROM downloads")
    db.conn.commit()
    shutil.rmtree(work / "files", ignore_errors=True)
    started = time.perf_counter()
    report = asyncio.run(runs.download(config, db))
    elapsed = time.perf_counter() - started
    svgs = sum(image["format"] == "svg" for image in site.editor.images.values())
    # Keeping `full` keeps an SVG image's PNG rendering and its SVG original: one more file each.
    assert report.downloaded == files + svgs and report.failed == 0, report.summary()
    return report.downloaded / elapsed


def gallery_dl_rate(site: SiteServer, work: Path, files: int, latency: float) -> tuple[float, float] | str:
    """(files/s over the whole job, files/s less its API pages) for gallery-dl, or why it could not run."""
    executable = gallery_dl()
    if isinstance(executable, str):
        return executable
    target = work / "gallery-dl"
    # "svg": False fetches `full` as listed (the mirror also fetches SVG originals: counted apart).
    config_path = gallery_dl_config(site.url, site.editor.everything_filter_id, target, work / "gallery-dl.json",
                                    svg=False)
    started = time.perf_counter()
    result = subprocess.run([str(executable), "--config-ignore", "--config", str(config_path), "-q",
                             f"{site.url}/search?q=*"], capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    got = sum(1 for p in target.rglob("*") if p.is_file())
    if result.returncode != 0 or got != files:
        return f"gallery-dl exited {result.returncode} with {got} of {files} files: {result.stderr.strip()[-400:]}"
    pages = -(-files // 50) + 1
    return files / elapsed, files / max(elapsed - pages * latency, 1e-9)


def peak_memory_mb(site: SiteServer, work: Path, image_id: int) -> float:
    """Peak resident memory (VmHWM) of a `mirror download` process fetching image ``image_id``'s full."""
    work.mkdir()
    config = config_for(site, work, query=f"id:{image_id}")
    asyncio.run(runs.sync(config, open_database(config.database), ["images"]))
    path = work / "mirror.toml"
    path.write_text(textwrap.dedent(f"""
        [site]
        base_url = "{site.url}"
        filter_id = {site.editor.everything_filter_id}
        [store]
        database = "{work / 'mirror.db'}"
        files = "{work / 'files'}"
        [download]
        representations = ["full"]
        requests_per_second = 100
    """))
    run = run_cli_measured(["-c", str(path), "download"])
    if run.returncode != 0:
        raise RuntimeError(run.stderr)
    return run.peak_mb


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.05, help="seconds added to every response")
    parser.add_argument("--big-mb", type=int, default=200)
    args = parser.parse_args()

    with SiteServer(board(args.files)) as site, tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        asyncio.run(runs.sync(config_for(site, work), open_database(work / "mirror.db"), ["images"]))
        site.set_faults(f"slow:{args.latency:g}")
        print(f"{args.files} files of {sum(i['size'] for i in site.editor.images.values()) // args.files} bytes "
              f"on average, {args.latency * 1000:.0f} ms latency per response")
        rates = {c: mirror_rate(site, work, c, args.files) for c in (1, 4)}
        for c, rate in rates.items():
            print(f"  mirror download, concurrency {c}: {rate:7.1f} files/s")
        print(f"  concurrency 4 / concurrency 1: {rates[4] / rates[1]:.2f}x")
        gallery = gallery_dl_rate(site, work, args.files, args.latency)
        if isinstance(gallery, str):
            print(f"  gallery-dl: not measured: {gallery}")
        else:
            whole, files_only = gallery
            print(f"  gallery-dl (one file at a time): {whole:7.1f} files/s for the whole job, "
                  f"{files_only:.1f} files/s less its {-(-args.files // 50) + 1} API pages")
            print(f"  mirror download at concurrency 4 / gallery-dl: {rates[4] / files_only:.2f}x "
                  f"(against its files-only rate)")
        site.set_faults("")

        small = peak_memory_mb(site, work / "small", 1)
        site.editor.replace_file(0, "big", padding=args.big_mb * 1_000_000)
        big = peak_memory_mb(site, work / "big", 0)
        print(f"peak resident memory of `mirror download`: {small:.0f} MB for one small file, "
              f"{big:.0f} MB for one {args.big_mb} MB file (limit 100 MB)")


if __name__ == "__main__":
    main()
