"""`mirror sync posts` (site-wide /search/posts) end to end against the local site on 127.0.0.1."""

from __future__ import annotations

import json
import math

from mirror.store import open_database
from mirror.store.specs import POSTS

from ..support.configs import LONG_TOPIC, site_config, site_pages, sync
from ..support.killing import kill_when, rerun, sync_command
from ..support.mirrored import assert_columns

NO_CHANGE_REQUESTS = 1  # one page of posts updated since the last run (less the overlap): none


def site_posts(site) -> list[dict]:
    """Every post /search/posts returns (hidden posts are left out by the site)."""
    return site_pages(site, "/search/posts", "posts", q="id.gte:0")


def assert_mirror_has(db, site, records: list[dict]) -> None:
    rows = {row["id"]: row for row in db["posts"].rows}
    for record in records:
        assert json.loads(rows[record["id"]]["raw"]) == record
        assert_columns(rows[record["id"]], record, POSTS, site.url)


def test_a_full_sync_mirrors_every_post_search_returns_then_nothing_changed_costs_one_request(site, tmp_path):
    config = site_config(site, tmp_path)
    report, db = sync(config, ["posts"])
    records = site_posts(site)
    assert sorted(row["id"] for row in db["posts"].rows) == sorted(r["id"] for r in records)
    assert_mirror_has(db, site, records)
    assert {row["forum_short_name"] for row in db["posts"].rows} == {None}  # search names no forum
    assert report.new == len(records)
    assert report.requests <= math.ceil(len(records) / 50) + 1

    site.clear_requests()
    report, _ = sync(config, ["posts"])
    assert len(site.requests) == report.requests == NO_CHANGE_REQUESTS and report.fetched == 0


def test_edits_and_new_posts_are_picked_up_and_keep_the_forum_the_forums_crawler_stored(site, tmp_path):
    config = site_config(site, tmp_path)
    sync(config, ["forums"])
    _, db = sync(config, ["posts"])
    editor = site.editor
    old = sorted(p["id"] for p in editor.posts.values() if not p["hidden_from_users"] and p["topic_id"] == LONG_TOPIC)
    edited = old[:3]  # on the topic's first page, which the forums crawler does not read again
    before = {i: db["posts"].get(i) for i in edited}
    for post_id in edited:
        editor.edit_post(post_id, body=f"Edited post {post_id}", edit_reason="typo")
    new_ids = editor.add_posts(LONG_TOPIC, 4)
    site.clear_requests()

    report, db = sync(config, ["posts"])

    assert len(site.requests) == NO_CHANGE_REQUESTS  # the changes fit one page
    assert report.new == 4 and report.updated >= 3
    for post_id in edited:
        row = db["posts"].get(post_id)
        assert row["body"] == f"Edited post {post_id}" and row["edit_reason"] == "typo"
        assert (row["forum_short_name"], row["topic_slug"]) == (before[post_id]["forum_short_name"],
                                                                  before[post_id]["topic_slug"])
    assert [db["posts"].get(i)["topic_slug"] for i in new_ids] == [None] * 4
    sync(config, ["forums"])  # the forums crawler then files the new posts under their topic
    assert {db["posts"].get(i)["topic_slug"] for i in new_ids} == {editor.topics[LONG_TOPIC]["slug"]}
    assert_mirror_has(db, site, site_posts(site))


def snapshot(db) -> list[tuple]:
    return [tuple(r) for r in db.execute("SELECT id, raw, body, updated_at FROM posts ORDER BY id")]


def test_a_sync_killed_mid_walk_resumes_to_the_same_mirror(site, tmp_path):
    site.editor.add_posts(LONG_TOPIC, 700)  # about 20 pages
    killed = site_config(site, tmp_path / "killed", polite={"requests_per_second": 10})
    command = sync_command(killed, tmp_path / "killed.toml", "posts")

    def walked_a_while(db) -> bool:
        return db.execute("SELECT count(*) FROM posts").fetchone()[0] >= 300

    kill_when(command, killed.database, walked_a_while)
    partial = open_database(killed.database)
    assert 300 <= partial["posts"].count < len(site_posts(site))
    rerun(command)
    _, whole = sync(site_config(site, tmp_path / "whole"), ["posts"])
    assert snapshot(open_database(killed.database)) == snapshot(whole)
    assert_mirror_has(whole, site, site_posts(site))
