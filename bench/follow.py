"""`mirror follow` measured: an edit sent on the local site, then in the mirror, at a modest rate.

    .venv/bin/python bench/follow.py [--images 300] [--rate 25] [--seconds 8] [--flat EDITS]

The local site runs in this process's threads (uvicorn), the follower in the main thread's event
loop, over a real socket. A sender thread edits image descriptions through the board's editor at
``--rate`` edits a second (each edit is two events, ``image:description_update`` then
``image:update``, as on the real site). For each edit: from the moment it is sent to the moment
the follower has committed its ``image:update`` (the record with the new description), p50 and
p95; the events stored a second; the follower's CPU per event (``time.thread_time`` of the loop's
thread: the site's threads are not counted).

Compared in the same run: the catch-up walk after a gap in which the same number of images
changed (CPU per record stored, and wall time), against the live events' CPU per record.

The issue's targets: p95 <= 1 s at 50 events/s, CPU <= 2 ms an event. Measured 2026-11-28 on 2
cores shared with other test runs (load 9.0), 300 images, 25 edits/s for 8 s: p50 27 ms, p95 66
ms, 49.7 events/s, 1.30 ms of CPU an event; the catch-up of 100 changed images 5 requests (3 of
images, the fewest, 1 of comments, 1 of posts), 379 ms, 0.62 ms a record (0.24x the live events'
CPU per record). With ``--flat 4000``: 8,000 events at 194/s, the process's RSS (site and
follower together) 124 -> 128 MB (load 6.4).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import threading
import time
from pathlib import Path

from mirror.follow import FollowOptions, FollowReport
from mirror.follow.run import Follower
from mirror.localsite.board.editor import BoardEditor
from mirror.localsite.http.server import SiteServer
from mirror.store import open_database
from mirror.wiring import make_client

from common import mirror_config, percentile, sync


def load() -> str:
    return "load {:.1f} {:.1f} {:.1f}".format(*os.getloadavg())


async def measure(site: SiteServer, config, rate: float, seconds: float, flat: int = 0) -> None:
    db = open_database(config.database)
    ids = [i for i in site.editor.images if not site.editor.images[i].get("hidden_from_users")][:100]
    sent: dict[str, float] = {}
    stored: dict[str, float] = {}
    async with make_client(config) as client:
        report = FollowReport()
        follower = Follower(client, db, FollowOptions(), report, lambda line: None)
        apply = follower.applier.apply

        async def timed(event, payload, seen_at, also):  # noqa: ANN001, ANN202
            reason = await apply(event, payload, seen_at, also)
            if event == "image:update":
                stored.setdefault(payload["image"]["description"], time.time())
            return reason

        follower.applier.apply = timed
        task = asyncio.create_task(follower.run())
        while not (report.connected and report.catch_ups and not report.catching_up):
            await asyncio.sleep(0.02)

        def send() -> None:
            start = time.monotonic()
            for n in range(int(rate * seconds)):
                time.sleep(max(0.0, start + n / rate - time.monotonic()))
                text = f"bench edit {n}"
                sent[text] = time.time()
                site.editor.edit_image(ids[n % len(ids)], description=text)

        events_before, cpu_before, wall_before = sum(report.events.values()), time.thread_time(), time.time()
        sender = threading.Thread(target=send)
        sender.start()
        while sender.is_alive() or len(stored) < len(sent):
            await asyncio.sleep(0.05)
            if time.time() - wall_before > seconds * 3 + 10:
                break
        cpu, wall = time.thread_time() - cpu_before, time.time() - wall_before
        events = sum(report.events.values()) - events_before
        latencies = [stored[text] - sent[text] for text in sent if text in stored]
        print(f"live: {len(latencies)}/{len(sent)} edits in the mirror; edit -> mirror p50 "
              f"{statistics.median(latencies) * 1000:.0f} ms, p95 {percentile(latencies, 0.95) * 1000:.0f} ms; "
              f"{events / wall:.1f} events/s; CPU {cpu / events * 1000:.2f} ms an event; {load()}")
        live_cpu_per_record = cpu / max(1, len(latencies))

        if flat:
            await memory_over(site, ids, report, flat, stored)

        # The same number of changes made during a gap, then repaired by the catch-up walk.
        site.set_faults("wsrefuse")
        site.app.state.firehose.close_all()
        while report.connected:
            await asyncio.sleep(0.02)
        for n, image_id in enumerate(ids):
            site.editor.edit_image(image_id, description=f"missed {n}")
        walks, cpu_before, wall_before = report.catch_ups, time.thread_time(), time.time()
        records_before, requests_before = report.catch_up_records, report.catch_up_requests
        site.set_faults("")
        while not (report.catch_ups > walks and not report.catching_up and report.connected):
            await asyncio.sleep(0.01)
        cpu, wall = time.thread_time() - cpu_before, time.time() - wall_before
        records = report.catch_up_records - records_before
        print(f"catch-up: {len(ids)} images changed in the gap, {records} records walked in "
              f"{report.catch_up_requests - requests_before} requests, {wall * 1000:.0f} ms; CPU {cpu / max(1, records) * 1000:.2f} ms "
              f"a record; {load()}")
        print(f"ratio: a record by the catch-up walk costs {cpu / max(1, records) / live_cpu_per_record:.2f}x "
              f"the CPU of one by a live edit's events; {load()}")
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
    db.close()


def rss_mb() -> float:
    """This process's resident memory now (the site's threads and the follower both)."""
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:")) / 1024


async def memory_over(site: SiteServer, ids: list[int], report: FollowReport, edits: int,
                      stored: dict[str, float]) -> None:
    """``edits`` more edits sent as fast as the editor takes them; the process's memory as they go."""
    done = threading.Event()

    def send() -> None:
        for n in range(edits):
            site.editor.edit_image(ids[n % len(ids)], description=f"flat {n}")
        done.set()

    first, samples, start = sum(report.events.values()), [rss_mb()], time.time()
    threading.Thread(target=send, daemon=True).start()
    while not (done.is_set() and f"flat {edits - 1}" in stored):
        await asyncio.sleep(0.5)
        if len(samples) < 2 or sum(report.events.values()) - first >= len(samples) * edits // 5:
            samples.append(rss_mb())
    events = sum(report.events.values()) - first
    print(f"memory: {events} events in {time.time() - start:.0f} s ({events / (time.time() - start):.0f}/s); "
          f"RSS {' -> '.join(f'{m:.0f}' for m in samples)} MB; {load()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=300)
    parser.add_argument("--rate", type=float, default=25.0, help="edits a second (two events each)")
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--flat", type=int, default=0, help="then this many edits as fast as they go, memory sampled")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, SiteServer(BoardEditor.generate(seed=1, images=args.images)) as site:
        config = mirror_config(site.url, site.editor.everything_filter_id, Path(tmp))
        sync(config)
        print(f"board of {args.images} images mirrored; {args.rate:g} edits/s for {args.seconds:g} s; pid {os.getpid()}")
        asyncio.run(measure(site, config, args.rate, args.seconds, args.flat))


if __name__ == "__main__":
    main()
