"""Every record of every recorded real response comes through the client intact.

The local site serves the recorded records exactly as recorded; the client must parse every
one of them, whatever year's shape it has.
"""

from __future__ import annotations

import asyncio

import pytest

from mirror.api import NotFound, PhilomenaClient
from mirror.api.polite import Politeness
from mirror.localsite.board.editor import BoardEditor
from mirror.localsite.http.server import SiteServer

from ..support.real_fixtures import REAL, fixture_files, records_in


@pytest.fixture(scope="module")
def recorded_sites():
    """One site per recording, since recordings of different years hold the same ids."""
    servers = {folder.name: SiteServer(BoardEditor.from_fixtures(folder)).start() for folder in REAL.iterdir()
               if folder.is_dir()}
    yield servers
    for server in servers.values():
        server.stop()


async def everything(fetch) -> list[dict]:
    records, page = [], 1
    while True:
        result = await fetch(page)
        records += result.records
        if len(result.records) < 50:
            return records
        page += 1


async def served(client: PhilomenaClient, resource: str, record: dict) -> list[dict]:
    """What the client returns for the endpoint that serves ``record``."""
    if resource == "images":
        return [await client.image(record["id"])]
    if resource == "tags":
        return [await client.tag(record["slug"])]
    if resource == "comments":
        return [await client.comment(record["id"])]
    if resource == "posts":
        return [await client.post(record["id"])]
    if resource == "galleries":
        return await everything(lambda p: client.search_galleries(f"id:{record['id']}", page=p))
    if resource == "filters":
        return [await client.filter(record["id"])]
    if resource == "users":
        return [await client.profile(record["id"])]
    if resource == "forums":
        return [await client.forum(record["short_name"])]
    if resource == "topics":
        forums = await everything(lambda p: client.forums(page=p))
        topics = []
        for forum in forums:
            topics += await everything(lambda p, f=forum["short_name"]: client.topics(f, page=p))
        return topics
    raise AssertionError(resource)


def strip_spoilered(record: dict) -> dict:
    """`spoilered` depends on the filter of the request, not on the image."""
    return {k: v for k, v in record.items() if k != "spoilered"}


@pytest.mark.parametrize("path", fixture_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_recorded_record_parses_with_the_client(recorded_sites, path):
    resource, records = records_in(path)
    recorded_site = recorded_sites[path.parent.name]

    async def check() -> None:
        async with PhilomenaClient(recorded_site.url, politeness=Politeness(500)) as client:
            for record in records:
                try:
                    got = await served(client, resource, record)
                except NotFound:
                    pytest.fail(f"{path.name}: the site does not serve {resource} {record.get('id')}")
                assert strip_spoilered(record) in [strip_spoilered(r) for r in got], (path.name, record.get("id"))

    asyncio.run(check())
