"""The follower's soak: edits streaming while its connections are dropped, refused, stalled and the
follower itself stopped and started again, at random; then the mirror must hold what the site holds."""

from __future__ import annotations

import asyncio
import json
import random

import pytest

from mirror.follow import FollowOptions, FollowReport, follow
from mirror.store import open_database
from mirror.wiring import make_client

from ..support.waiting import eventually

ROUNDS = 30
OPTIONS = FollowOptions(backoff_min=0.02, backoff_max=0.1, heartbeat=0.2, connect_timeout=0.4)


@pytest.mark.soak
async def test_nothing_is_lost_across_random_disconnects_stops_and_stalls(site, config):
    rng = random.Random(51)
    db = open_database(config.database)
    ids = [i for i in site.editor.images if not site.editor.images[i].get("hidden_from_users")]
    disruptions = {"close": 0, "refused": 0, "stall": 0, "drops": 0, "restart": 0}
    async with make_client(config) as client:
        report = FollowReport()
        task = asyncio.create_task(follow(client, db, OPTIONS, report=report))
        for n in range(ROUNDS):
            for _ in range(rng.randint(1, 4)):  # edits, whether or not the follower is there to see them
                image_id = rng.choice(ids)
                if rng.random() < 0.5:
                    await asyncio.to_thread(site.editor.edit_image, image_id, description=f"round {n} {rng.random()}")
                else:
                    kept = [t for t in site.editor.images[image_id]["tags"] if t != "safe"][:3]
                    await asyncio.to_thread(site.editor.edit_image, image_id, tags=["safe", *kept, f"soak {n}"])
            if rng.random() < 0.2:
                ids += await asyncio.to_thread(site.editor.add_images, 1)
            kind = rng.choice(list(disruptions))
            disruptions[kind] += 1
            if kind == "close":
                site.app.state.firehose.close_all()
            elif kind == "refused":
                site.set_faults("wsrefuse")
                site.app.state.firehose.close_all()
            elif kind == "stall":
                site.set_faults("wsstall")
            elif kind == "drops":
                site.set_faults(f"wsdrop:{rng.randint(1, 3)}")
            else:  # stopped and started again, as SIGTERM and systemd's restart would
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task
                report = FollowReport()
                task = asyncio.create_task(follow(client, db, OPTIONS, report=report))
            await asyncio.sleep(rng.uniform(0.05, 0.4))
            site.set_faults("")
        await eventually(lambda: report.connected and not report.catching_up and report.catch_ups, timeout=20)
        await asyncio.to_thread(site.editor.edit_image, ids[0], description="the last edit")
        await eventually(lambda: "the last edit" in db.execute("SELECT raw FROM images WHERE id = ?",
                                                               [ids[0]]).fetchone()[0], timeout=10)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    kept = {row[0]: json.loads(row[1]) for row in db.execute("SELECT id, raw FROM images")}
    lost = [i for i in ids if i not in kept or kept[i]["description"] != site.editor.images[i]["description"]
            or sorted(kept[i]["tags"]) != sorted(site.editor.images[i]["tags"])]
    db.close()
    assert all(disruptions.values()), disruptions
    assert lost == []
