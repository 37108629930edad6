"""`mirror browse` answers what it cannot show with a page, not a traceback (issue 31, item 6): a page
number past any end, a record it does not have, a forum whose short name holds a `/`."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys

import httpx
import pytest

from ..support.browsing import browse_client
from ..support.configs import synced_board, write_config

HUGE = str(2**66)  # past SQLite's 64-bit integers


@pytest.fixture(scope="module")
def mirrored(tmp_path_factory):
    """A mirror of every resource of a small board, with a forum whose short name holds a `/` (and a topic in it)."""
    tmp = tmp_path_factory.mktemp("browse-errors")
    config = synced_board(tmp, seed=4, images=30)
    with sqlite3.connect(config.database) as db:
        forum = {"short_name": "a/b", "name": "Slashed Forum", "description": "", "topic_count": 1, "post_count": 0}
        db.execute("INSERT INTO forums (short_name, name, description, topic_count, post_count, raw, mirrored_at) "
                   "VALUES ('a/b', 'Slashed Forum', '', 1, 0, ?, '2026-01-01T00:00:00Z')", [json.dumps(forum)])
        db.execute("INSERT INTO topics (slug, title, post_count, forum_short_name, raw, mirrored_at) VALUES "
                   "('x/y', 'A slashed topic', 0, 'a/b', '{}', '2026-01-01T00:00:00Z')")
    return config, write_config(config, tmp / "mirror.toml")


@pytest.fixture
async def client(mirrored):
    config = mirrored[0]
    return await browse_client(config)


def ids(config, sql: str) -> list:
    with sqlite3.connect(config.database) as db:
        return list(db.execute(sql).fetchone())


async def test_a_page_number_past_2_63_is_a_page_past_the_end_never_a_500(mirrored, client):
    config = mirrored[0]
    tag, user, gallery = ids(config, "SELECT (SELECT min(tag_id) FROM image_tags), (SELECT min(uploader_id) FROM "
                                     "images), (SELECT min(gallery_id) FROM gallery_images)")
    forum, topic = ids(config, "SELECT forum_short_name, slug FROM topics WHERE forum_short_name != 'a/b'")
    for path in (f"/-/tag/{tag}", f"/-/user/{user}", f"/-/gallery/{gallery}", f"/-/forum/{forum}",
                 f"/-/topic/{forum}/{topic}", "/-/tags", "/-/galleries", "/-/forums", "/-/booru?q=safe&", "/?"):
        joiner = "" if path.endswith(("?", "&")) else "?"
        answer = await client.get(f"{path}{joiner}page={HUGE}")
        assert answer.status_code == 200, (path, answer.text[-300:])


async def test_a_forum_whose_short_name_holds_a_slash_is_reached_from_the_forums_page(client):
    forums = (await client.get("/-/forums")).text
    link = re.search(r'href="(/-/forum/[^"]+)">Slashed Forum', forums)
    assert link, forums[-2000:]
    page = await client.get(link.group(1))
    assert page.status_code == 200 and "A slashed topic" in page.text
    topic = re.search(r'href="(/-/topic/[^"]+)">A slashed topic', page.text)
    assert topic and (await client.get(topic.group(1))).status_code == 200
    # Typed as it is, the slash makes another path: a page saying so, not an error.
    assert (await client.get("/-/forum/a/b")).status_code == 404


def test_a_404_writes_one_line_to_the_log_at_most(mirrored):
    """Each 404 wrote a 16 KB traceback (Datasette's handler prints one with its locals, then failed doing
    so for a path no route matched: a 500 for a plain 404)."""
    process = subprocess.Popen([sys.executable, "-m", "mirror.cli", "-c", str(mirrored[1]), "browse", "--port", "0"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        found = re.search(r"(http://127\.0\.0\.1:\d+/)", process.stdout.readline())
        assert found
        missing = ["-/tag/999999999", "-/user/999999999", "-/gallery/999999999", "-/forum/nosuch",
                   "-/topic/nosuch/none", "-/image/999999999", "no/such/page", "-/forum/a/b"]
        answers = {path: httpx.get(found.group(1) + path, timeout=10) for path in missing}
    finally:
        process.terminate()
        log, _ = process.communicate(timeout=10)
    assert {path: answer.status_code for path, answer in answers.items()} == {path: 404 for path in missing}
    assert all("<html" in answer.text.lower() for answer in answers.values())
    assert "Traceback" not in log and len(log.splitlines()) <= len(missing) + 2, log[:3000]

