"""The featured image of the day, and oEmbed, through the client against the local site."""

from __future__ import annotations

import asyncio
import json

import httpx

from mirror.api import PhilomenaClient
from mirror.store import open_database
from mirror.sync.featured import record_featured, utc_day


def test_the_featured_image_is_recorded_at_most_once_a_day(site, tmp_path):
    db = open_database(tmp_path / "mirror.db")
    db["images"].insert({"id": max(site.editor.images), "raw_full": "{}", "mirrored_at": "2020-01-01T00:00:00Z"})

    async def twice() -> tuple[bool, bool]:
        async with PhilomenaClient(site.url) as client:
            return await record_featured(client, db), await record_featured(client, db)

    image_id = max(i for i, im in site.editor.images.items() if not im["hidden_from_users"])
    assert image_id == max(site.editor.images), "the newest image is visible in this data set"
    site.editor.feature_image(image_id)
    site.clear_requests()
    assert asyncio.run(twice()) == (True, False)
    assert [r.path for r in site.requests] == ["/api/v1/json/images/featured"]
    assert list(db.query("SELECT day, image_id FROM featured_images")) == [{"day": utc_day(), "image_id": image_id}]
    served = httpx.get(f"{site.api_url}/images/featured").json()["image"]
    assert json.loads(db["images"].get(image_id)["raw"]) == served
    assert db.execute("SELECT count(*) FROM image_tags WHERE image_id = ?", [image_id]).fetchone()[0] == \
        len(served["tag_ids"])


def test_a_featured_image_outside_the_mirror_is_noted_but_not_mirrored(site, tmp_path):
    db = open_database(tmp_path / "mirror.db")

    async def once() -> bool:
        async with PhilomenaClient(site.url) as client:
            return await record_featured(client, db)

    image_id = next(i for i, im in site.editor.images.items() if not im["hidden_from_users"])
    site.editor.feature_image(image_id)
    assert asyncio.run(once()) is True
    assert [r["image_id"] for r in db["featured_images"].rows] == [image_id]
    assert db["images"].count == 0


def test_a_site_featuring_nothing_is_not_asked_twice_a_day(site, tmp_path):
    db = open_database(tmp_path / "mirror.db")
    site.editor.clear_features()

    async def twice() -> tuple[bool, bool]:
        async with PhilomenaClient(site.url) as client:
            return await record_featured(client, db), await record_featured(client, db)

    site.clear_requests()
    assert asyncio.run(twice()) == (False, False)
    assert len(site.requests) == 1 and db["featured_images"].count == 0


def test_oembed_through_the_client(site):
    image = next(im for im in site.editor.images.values() if not im["hidden_from_users"] and im["tag_ids"])

    async def fetch(url: str) -> dict:
        async with PhilomenaClient(site.url) as client:
            return await client.oembed(url)

    record = asyncio.run(fetch(f"https://derpibooru.org/images/{image['id']}"))
    assert record["derpibooru_id"] == image["id"] and record["type"] == "photo" and record["cache_age"] == 7200
    assert record == httpx.get(f"{site.api_url}/oembed", params={"url": f"/{image['id']}"}).json()
