"""`mirror sync forums` end to end against the local site on 127.0.0.1."""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from urllib.parse import parse_qs

import httpx

from mirror.store import open_database
from mirror.store.specs import FORUMS, POSTS, TOPICS
from mirror.sync.forums import next_audit_pages

from ..support.configs import LONG_TOPIC, site_config, sync
from ..support.killing import kill_when, rerun, sync_command
from ..support.mirrored import assert_columns

NO_CHANGE_REQUESTS = 6  # /forums, then the first topics page of each of the 5 public forums
# The tests that count requests exactly turn the audit of old pages off; it has its own test.
NO_AUDIT = {"audit_pages_per_run": 0}


@dataclass
class SiteForums:
    """Everything the site serves about its forums, read page by page."""

    forums: list[dict] = field(default_factory=list)
    topics: dict[str, list[dict]] = field(default_factory=dict)
    posts: dict[tuple[str, str], list[dict]] = field(default_factory=dict)

    def post_pages(self) -> int:
        """Pages of posts a full walk reads: one per 50 positions, and at least one per topic."""
        return sum(max(1, math.ceil(topic["post_count"] / 50)) for topics in self.topics.values() for topic in topics)


def site_forums(site) -> SiteForums:
    view = SiteForums()
    with httpx.Client(base_url=site.api_url) as http:
        def pages(path: str, key: str) -> list[dict]:
            records, number = [], 1
            while True:
                body = http.get(path, params={"page": number, "per_page": 50}).json()
                records += body[key]
                if number * 50 >= body["total"]:
                    return records
                number += 1

        view.forums = pages("/forums", "forums")
        for forum in view.forums:
            name = forum["short_name"]
            view.topics[name] = pages(f"/forums/{name}/topics", "topics")
            for topic in view.topics[name]:
                view.posts[name, topic["slug"]] = pages(f"/forums/{name}/topics/{topic['slug']}/posts", "posts")
    return view


def assert_mirror_matches(db, site) -> SiteForums:
    """Every forum, topic and post the site serves is in the mirror, field by field; nothing else."""
    view = site_forums(site)
    forums = {row["short_name"]: row for row in db["forums"].rows}
    assert sorted(forums) == sorted(f["short_name"] for f in view.forums)
    for record in view.forums:
        assert json.loads(forums[record["short_name"]]["raw"]) == record
        assert_columns(forums[record["short_name"]], record, FORUMS, site.url)
    topics = {(row["forum_short_name"], row["slug"]): row for row in db["topics"].rows}
    assert sorted(topics) == sorted((name, t["slug"]) for name, ts in view.topics.items() for t in ts)
    for name, records in view.topics.items():
        for record in records:
            assert json.loads(topics[name, record["slug"]]["raw"]) == record
            assert_columns(topics[name, record["slug"]], record, TOPICS, site.url)
    posts = {row["id"]: row for row in db["posts"].rows}
    assert sorted(posts) == sorted(p["id"] for ps in view.posts.values() for p in ps)
    for (name, slug), records in view.posts.items():
        for record in records:
            row = posts[record["id"]]
            assert (row["forum_short_name"], row["topic_slug"]) == (name, slug)
            if record["body"] is None:  # hidden: a stub that marks the row
                assert json.loads(row["stub"]) == record and row["hidden_from_users"] == 1
            else:
                assert json.loads(row["raw"]) == record and row["stub"] is None and row["hidden_from_users"] == 0
                assert_columns(row, record, POSTS, site.url)
    return view


def requested(site, path_end: str) -> list[int]:
    """The page numbers asked for on the API path ending in ``path_end``, in order."""
    return [int(parse_qs(r.query).get("page", ["1"])[0]) for r in site.requests
            if r.path.endswith(path_end) and r.path.startswith("/api/")]


def test_full_sync_mirrors_forums_topics_and_posts_field_by_field(site, tmp_path):
    report, db = sync(site_config(site, tmp_path, forums=NO_AUDIT), ["forums"])
    view = assert_mirror_matches(db, site)
    assert len(view.forums) == 5 and any(p["body"] is None for ps in view.posts.values() for p in ps)
    assert report.requests == 1 + len(view.forums) + view.post_pages()
    assert report.fetched == report.new == db["posts"].count
    hits = list(db["posts"].search(json.loads(db["posts"].get(1)["raw"])["body"].split()[0], limit=5))
    assert hits


def test_a_sync_with_nothing_changed_reads_the_forums_and_one_topics_page_per_forum(site, tmp_path):
    config = site_config(site, tmp_path, forums=NO_AUDIT)
    sync(config, ["forums"])
    site.clear_requests()
    report, _ = sync(config, ["forums"])
    assert len(site.requests) == report.requests == NO_CHANGE_REQUESTS
    assert report.fetched == 0


def test_second_sync_with_nothing_changed_costs_the_floor_when_topics_share_a_last_reply_time(site, tmp_path):
    """Three pages of topics replied to in the same second (as on a board whose dates were
    clamped): the topics at the mark are mirrored and unchanged, so the walk stops at the first."""
    site.editor.clock = lambda: datetime(2030, 1, 1, tzinfo=timezone.utc)
    for n in range(120):
        site.editor.add_topic("pony", f"Tied topic {n}", posts=1)
    config = site_config(site, tmp_path, forums=NO_AUDIT)
    sync(config, ["forums"])
    site.clear_requests()
    report, db = sync(config, ["forums"])
    assert len(site.requests) == report.requests == NO_CHANGE_REQUESTS
    assert requested(site, "/forums/pony/topics") == [1]
    site.editor.add_posts(site.editor.topics[LONG_TOPIC]["slug"], 1)  # a reply after the tie still counts
    site.clear_requests()
    sync(config, ["forums"])
    assert len(site.requests) == NO_CHANGE_REQUESTS + 1
    assert_mirror_matches(db, site)


def test_new_posts_cost_requests_proportional_to_them_not_to_the_topic(site, tmp_path):
    config = site_config(site, tmp_path, forums=NO_AUDIT)
    sync(config, ["forums"])
    long_topic = site.editor.topics[LONG_TOPIC]
    new_ids = site.editor.add_posts(LONG_TOPIC, 120)  # positions 80..199: pages 2 to 4 of 4
    fresh = site.editor.add_topic("pony", "A brand new topic", posts=3)
    site.clear_requests()

    report, db = sync(config, ["forums"])

    assert requested(site, f"/{long_topic['slug']}/posts") == [2, 3, 4]
    assert requested(site, f"/{fresh['slug']}/posts") == [1]
    assert len(site.requests) == NO_CHANGE_REQUESTS + 3 + 1
    assert report.new == 123 and set(new_ids) <= {row["id"] for row in db["posts"].rows}
    assert_mirror_matches(db, site)


def test_a_post_hidden_on_the_site_keeps_its_body_in_the_mirror(site, tmp_path):
    config = site_config(site, tmp_path)
    _, db = sync(config, ["forums"])
    editor = site.editor
    topic = next(t for t in editor.topics.values() if not t["hidden"] and t["forum"] in editor.forums  # not a staff forum
                 and 3 <= t["post_count"] < 50)
    post = next(p for p in editor.topic_posts(topic["id"]) if p["topic_position"] == 1)
    if post["hidden_from_users"] or post["destroyed_content"]:
        editor.edit_post(post["id"], hidden=False, destroyed=False)
    _, db = sync(config, ["forums"])
    before = db["posts"].get(post["id"])
    assert before["body"] and before["stub"] is None
    editor.edit_post(post["id"], hidden=True)
    editor.add_posts(topic["id"], 1)  # a reply, so the topic's page is read again

    sync(config, ["forums"])

    after = db["posts"].get(post["id"])
    assert after["hidden_from_users"] == 1 and json.loads(after["stub"])["body"] is None
    assert (after["raw"], after["body"]) == (before["raw"], before["body"])
    assert [r["id"] for r in db["posts"].search(before["body"].split()[0], limit=1000)]


def test_the_audit_reads_old_pages_round_every_topic_and_marks_posts_hidden_since(site, tmp_path):
    config = site_config(site, tmp_path, forums={"audit_pages_per_run": 3})
    _, db = sync(config, ["forums"])
    editor = site.editor
    first = db.execute("SELECT forum_short_name, slug FROM topic_progress ORDER BY forum_short_name, slug "
                       "LIMIT 1 OFFSET 3").fetchone()  # the full sync audited the first three pages
    topic = next(t for t in editor.topics.values() if t["slug"] == first[1])
    hidden = min(p["id"] for p in editor.posts.values() if p["topic_id"] == topic["id"] and not p["hidden_from_users"]
                 and not p["destroyed_content"])
    before = db["posts"].get(hidden)
    editor.edit_post(hidden, hidden=True)  # moves no counter: the walk itself does not read the topic again
    site.clear_requests()

    report, db = sync(config, ["forums"])

    assert len(site.requests) == report.requests == NO_CHANGE_REQUESTS + 3
    assert requested(site, f"/{first[1]}/posts") == [1]
    row = db["posts"].get(hidden)
    assert row["hidden_from_users"] == 1 and json.loads(row["stub"])["body"] is None
    assert row["body"] == before["body"] and row["raw"] == before["raw"]
    audited = [tuple(json.loads(db["sync_state"].get("forums")["cursor"])["audited"])]
    pages = db.execute("SELECT count(*) FROM topic_progress").fetchone()[0]
    for _ in range(pages):  # going round: every page, and back to the start, never stuck
        sync(config, ["forums"])
        audited.append(tuple(json.loads(db["sync_state"].get("forums")["cursor"])["audited"]))
    assert len(set(audited)) > pages / 3 and audited[-1] != audited[-2]


def test_list_pages_past_the_end_repeat_the_last_page_and_are_never_asked_for(site, tmp_path):
    minutes = itertools.count()
    site.editor.clock = lambda: datetime(2030, 1, 1, tzinfo=timezone.utc) + timedelta(minutes=next(minutes))
    for number in range(60):  # forum "art" now spans two topics pages, each topic replied to at its own time
        site.editor.add_topic("art", f"Extra topic {number}", posts=1)
    with httpx.Client(base_url=site.api_url) as http:
        def topics(page: int) -> dict:
            return http.get("/forums/art/topics", params={"page": page, "per_page": 50}).json()

        assert topics(3)["topics"] == topics(2)["topics"] != [] and topics(2)["total"] > 50
        assert http.get("/forums", params={"page": 2}).json() == http.get("/forums", params={"page": 1}).json()
    config = site_config(site, tmp_path, forums=NO_AUDIT)
    site.clear_requests()

    sync(config, ["forums"])
    assert requested(site, "/forums") == [1]
    assert requested(site, "/forums/art/topics") == [1, 2]
    site.clear_requests()
    _, db = sync(config, ["forums"])
    assert requested(site, "/forums/art/topics") == [1]  # the newest topics are unchanged: stop there
    assert len(site.requests) == NO_CHANGE_REQUESTS
    assert_mirror_matches(db, site)


def test_the_forums_option_limits_the_walk(site, tmp_path):
    config = site_config(site, tmp_path, forums={"forums": ["art", "no-such-forum"]})
    _, db = sync(config, ["forums"])
    assert {r.path.split("/")[5] for r in site.requests if r.path.startswith("/api/v1/json/forums/")} == {"art"}
    assert {row["forum_short_name"] for row in db["topics"].rows} == {"art"}
    assert {row["forum_short_name"] for row in db["posts"].rows} == {"art"}


def snapshot(db) -> dict:
    return {
        "forums": [tuple(r) for r in db.execute("SELECT short_name, raw FROM forums ORDER BY short_name")],
        "topics": [tuple(r) for r in db.execute("SELECT forum_short_name, slug, raw FROM topics ORDER BY 1, 2")],
        "posts": [tuple(r) for r in db.execute(
            "SELECT id, forum_short_name, topic_slug, raw, stub, hidden_from_users, body FROM posts ORDER BY id")],
        "progress": [tuple(r) for r in db.execute(
            "SELECT forum_short_name, slug, post_count, last_replied_to_at, next_page FROM topic_progress ORDER BY 1, 2")],
        "cursor": db.execute("SELECT cursor FROM sync_state WHERE name = 'forums'").fetchone(),
    }


def test_a_sync_killed_mid_topic_resumes_to_the_same_mirror(site, tmp_path):
    site.editor.add_posts(LONG_TOPIC, 400)  # 480 posts: ten pages, in the first forum walked
    killed = site_config(site, tmp_path / "killed", polite={"requests_per_second": 10})
    command = sync_command(killed, tmp_path / "killed.toml", "forums")

    def mid_topic(db) -> bool:
        return (db.execute("SELECT max(next_page) FROM topic_progress").fetchone()[0] or 0) >= 3

    kill_when(command, killed.database, mid_topic)
    resume_at = open_database(killed.database).execute("SELECT max(next_page) FROM topic_progress").fetchone()[0]
    assert 3 <= resume_at <= 10
    site.clear_requests()
    rerun(command)
    assert requested(site, f"/{site.editor.topics[LONG_TOPIC]['slug']}/posts")[0] == resume_at  # mid-topic

    _, whole = sync(site_config(site, tmp_path / "whole"), ["forums"])
    assert snapshot(open_database(killed.database)) == snapshot(whole)
    assert_mirror_matches(whole, site)


def test_audit_pages_go_round_every_topic_in_order_never_twice(tmp_path):
    db = open_database(tmp_path / "m.db")
    for forum, slug, posts in [("art", "a", 60), ("art", "b", 0), ("dis", "c", 130)]:
        db["topic_progress"].insert({"forum_short_name": forum, "slug": slug, "post_count": posts,
                                     "updated_at": "2026-01-01T00:00:00Z"})
    everything = [("art", "a", 1), ("art", "a", 2), ("art", "b", 1), ("dis", "c", 1), ("dis", "c", 2), ("dis", "c", 3)]
    assert next_audit_pages(db, None, 4) == everything[:4]
    assert next_audit_pages(db, ["art", "b", 1], 4) == everything[3:] + everything[:1]
    assert next_audit_pages(db, ["art", "a", 2], 100) == everything[2:] + everything[:2]
    assert next_audit_pages(db, ["zzz", "gone", 9], 2) == everything[:2]
    assert next_audit_pages(db, ["dis", "c", 1], 0) == []
