"""The local site's data: deterministic generation, mutations tests rely on, and recorded fixtures."""

from __future__ import annotations

import gc
import json
import re
from datetime import datetime, timezone
from pathlib import Path

import httpx
import pytest

from mirror.localsite.board.editor import BoardEditor
from mirror.localsite.http.server import SiteServer
from mirror.philomena import RATINGS

from ..support.real_fixtures import REAL

FIXTURES = REAL
ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


@pytest.fixture(scope="module")
def board() -> BoardEditor:
    return BoardEditor.generate(seed=11, images=300)


def test_same_seed_same_bytes_other_seed_other_board():
    assert BoardEditor.generate(seed=7, images=120).to_json() == BoardEditor.generate(seed=7, images=120).to_json()
    assert BoardEditor.generate(seed=7, images=120).to_json() != BoardEditor.generate(seed=8, images=120).to_json()


def test_a_board_made_in_a_temporary_folder_goes_with_its_editor(tmp_path):
    closed = BoardEditor.generate(seed=2, images=10)
    collected = BoardEditor.generate(seed=2, images=10)
    served = BoardEditor.generate(seed=2, images=10)
    kept = BoardEditor.generate(seed=2, images=10, folder=tmp_path)
    folders = [e.path.parent for e in (closed, collected, served)]
    assert all(folder.is_dir() for folder in folders)
    closed.close()
    del collected
    gc.collect()
    assert not folders[0].exists() and not folders[1].exists()
    with SiteServer(served) as site:  # the server keeps its board while it runs
        del served
        gc.collect()
        assert httpx.get(site.api_url + "/images/1").status_code == 200
    del site
    gc.collect()
    assert not folders[2].exists()
    kept.close()
    assert kept.path.is_file()  # a folder the caller gave is the caller's


def test_generation_makes_the_sizes_asked():
    big = BoardEditor.generate(seed=1, images=1000)
    assert len(big.images) == 1000
    assert len(big.comments) == 1500


def test_dates_are_past_and_iso(board):
    def dates(record):
        return [v for k, v in record.items() if k.endswith(("_at", "_on")) and v is not None]

    every = [d for im in board.images.values() for d in dates(im)]
    every += [d for c in board.comments.values() for d in dates(c)]
    every += [d for p in board.posts.values() for d in dates(p)]
    assert every and all(ISO.fullmatch(d) for d in every)
    assert min(every) >= "2011" and max(every) < "2026"
    for image in board.images.values():
        assert image["created_at"] <= image["updated_at"]


def test_board_looks_real(board):
    images = list(board.images.values())
    ids = sorted(board.images)
    assert ids[0] == 0 and ids[-1] > len(ids) - 1  # starts at 0, with gaps
    assert {im["format"] for im in images} == {"png", "jpg", "gif", "svg", "webm"}
    mimes = {im["format"]: im["mime_type"] for im in images}
    assert mimes == {"png": "image/png", "jpg": "image/jpeg", "gif": "image/gif", "svg": "image/svg+xml",
                     "webm": "video/webm"}
    assert any(im["uploader"] is None and im["uploader_id"] is None for im in images)
    assert any(not im["thumbnails_generated"] and not im["processed"] for im in images)
    assert any(im["hidden_from_users"] and im["deletion_reason"] for im in images)
    assert any(im["duplicate_of"] is not None for im in images)
    assert {len(im["source_urls"]) for im in images} >= {0, 1, 2}
    assert any(len(im["description"].encode()) > 2000 for im in images)
    assert any(re.search("[\u3040-\u30ff\u4e00-\u9fff]", im["description"]) for im in images)
    assert any(re.search("[\u0590-\u06ff]", im["description"]) for im in images)
    for im in images:
        ratings = [t for t in im["tags"] if t in RATINGS]
        assert ratings, im["id"]
        assert ratings == ["safe"] or "safe" not in ratings
        assert len([t for t in ratings if t in ("suggestive", "questionable", "explicit")]) <= 1
        assert len([t for t in ratings if t in ("semi-grimdark", "grimdark")]) <= 1
        assert im["tag_ids"] == sorted(im["tag_ids"])
        assert [board.tags[i]["name"] for i in im["tag_ids"]] == im["tags"]
    categories = {t["category"] for t in board.tags.values()}
    assert {"rating", "origin", "character", "oc", "species", "spoiler", "content-fanmade"} <= categories
    assert any(t["dnp_entries"] for t in board.tags.values() if t["namespace"] == "artist")
    assert any(c["author"].startswith("Background Pony #") for c in board.comments.values())
    assert any(c["hidden_from_users"] for c in board.comments.values())
    assert any(c["destroyed_content"] for c in board.comments.values())
    assert any(u["links"] for u in board.users.values()) and any(u["awards"] for u in board.users.values())
    assert {f["name"] for f in board.filters.values() if f["system"]} >= {"Default", "Everything"}
    key_user = board.api_keys["testkey-11"]
    assert any(f["user_id"] == key_user for f in board.filters.values())


def test_add_edit_hide_merge(board):
    editor = BoardEditor.generate(seed=2, images=30)
    top = max(editor.images)
    before = datetime.now(timezone.utc).replace(microsecond=0)
    new = editor.add_images(3)
    assert new == [top + 1, top + 2, top + 3]
    fresh = editor.images[new[0]]
    assert fresh["created_at"] == fresh["first_seen_at"] == fresh["updated_at"]
    assert fresh["created_at"] >= before.strftime("%Y-%m-%dT%H:%M:%SZ")

    old = editor.images[5]
    edited = editor.edit_image(5, tags=["safe", "Twilight", "brand new tag", "artist:someone"], score=42,
                           description="edited ✨", thumbnails_generated=True, faves=9)
    assert "twilight sparkle" in edited["tags"] and "twilight" not in edited["tags"]  # alias followed
    assert {"alicorn", "pony", "brand new tag", "artist:someone"} <= set(edited["tags"])  # implications
    assert editor.tag_by_name("artist:someone")["category"] == "origin"
    assert [editor.tags[i]["name"] for i in edited["tag_ids"]] == edited["tags"]
    assert edited["score"] == 42 == edited["upvotes"] - edited["downvotes"]
    assert edited["faves"] == 9 and edited["description"] == "edited ✨"
    assert edited["updated_at"] >= before.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert editor.images[5] == edited != old  # the board holds the edit

    editor.hide_image(6, reason="Rule #9")
    assert editor.images[6]["hidden_from_users"] and editor.images[6]["deletion_reason"] == "Rule #9"
    editor.merge_image(7, into=8)
    assert editor.images[7]["duplicate_of"] == 8 and editor.images[7]["deletion_reason"] is None
    with pytest.raises(ValueError):
        editor.merge_image(9, into=9)
    with pytest.raises(KeyError):
        editor.edit_image(10**6, score=1)

    comments = editor.add_comments(8, 2, body="hello")
    assert editor.images[8]["comment_count"] >= 2 and editor.comments[comments[0]]["body"] == "hello"
    topic = editor.topics[1]
    count = topic["post_count"]
    posts = editor.add_posts(topic["slug"], 2)
    assert editor.topics[1]["post_count"] == count + 2
    assert [editor.posts[p]["topic_position"] for p in posts] == [count, count + 1]


def test_mutations_show_through_the_api_and_control_api():
    editor = BoardEditor.generate(seed=4, images=30)
    with SiteServer(editor) as site, httpx.Client(base_url=site.url) as http:
        search = {"q": "*", "filter_id": editor.everything_filter_id, "sf": "id", "per_page": 50}
        total = http.get("/api/v1/json/search/images", params=search).json()["total"]
        added = http.post("/_control/images/add", json={"n": 2}).json()["ids"]
        assert http.get("/api/v1/json/search/images", params=search).json()["total"] == total + 2
        image = http.post(f"/_control/images/{added[0]}/edit",
                          json={"tags": ["safe", "pony"], "thumbnails_generated": True}).json()["image"]
        assert image["tags"] == ["safe", "pony"] and image["thumbnails_generated"] is True
        by_tag = http.get("/api/v1/json/search/images",
                          params={**search, "q": f"id:{added[0]}, pony, tag_count:2"}).json()
        assert by_tag["total"] == 1
        stub = http.post(f"/_control/images/{added[0]}/hide", json={"reason": "Rule #3"}).json()["image"]
        assert stub["deletion_reason"] == "Rule #3" and len(stub) == 7
        merged = http.post(f"/_control/images/{added[1]}/merge", json={"into": added[0]}).json()["image"]
        assert merged["duplicate_of"] == added[0]
        assert http.post("/_control/images/999999/hide").status_code == 404
        # Bad input is a 400 that says what is wrong, never a 500 and never a change.
        for path, body in [("/_control/images/add", {"n": None}), ("/_control/images/add", {"n": "2"}),
                           (f"/_control/images/{added[0]}/merge", {}), (f"/_control/images/{added[0]}/merge", {"into": "x"}),
                           (f"/_control/images/{added[0]}/edit", {"tags": "safe, pony"}),
                           (f"/_control/images/{added[0]}/edit", {"score": "many"}),
                           (f"/_control/images/{added[0]}/hide", {"reason": 3})]:
            answer = http.post(path, json=body)
            assert answer.status_code == 400 and answer.json()["error"], (path, body)
        assert http.get(f"/api/v1/json/images/{added[1]}").json()["image"]["duplicate_of"] == added[0]
        log = http.get("/_control/requests").json()["requests"]
        assert log[-1]["path"] == f"/api/v1/json/images/{added[1]}" and log[-1]["status"] == 200
        assert all(not r["path"].startswith("/_control") for r in log)
        assert site.requests[-1].path == log[-1]["path"]
        site.clear_requests()
        assert site.requests == []


def test_every_fixture_file_loads_and_is_served_unchanged():
    editor = BoardEditor.from_fixtures(FIXTURES)
    files = sorted(FIXTURES.rglob("*.json"))
    assert len(files) == 13
    expected: dict[tuple[str, object], tuple[Path, dict]] = {}  # the newest recording of each record wins
    for path in files:
        data = json.loads(path.read_text())
        records = data if isinstance(data, list) else next(
            v if isinstance(v, list) else [v] for k, v in data.items() if k not in ("total", "interactions"))
        assert records, path
        kind = "image" if "image" in path.stem else path.stem
        for record in records:
            expected[kind, record.get("id", record.get("slug") or record.get("short_name"))] = (path, record)
    assert len(expected) > 50
    with SiteServer(editor) as site, httpx.Client(base_url=site.api_url) as api:
        for path, record in expected.values():
            assert _served(api, path, record) == record, (path, record.get("id"))


def _served(api: httpx.Client, path: Path, record: dict) -> dict:
    """Fetch the site's copy of one recorded record through the endpoint that shows it."""
    name = path.stem
    if "images" in name or name.startswith("image_"):
        return api.get(f"/images/{record['id']}").json()["image"]
    if "tags" in name:
        return api.get(f"/tags/{record['slug']}").json()["tag"]
    if name == "comments":
        return api.get(f"/comments/{record['id']}").json()["comment"]
    if name == "posts":
        return api.get(f"/posts/{record['id']}").json()["post"]
    if name == "forums":
        return api.get(f"/forums/{record['short_name']}").json()["forum"]
    if name == "topics":
        found = api.get("/forums/art/topics").json()["topics"]
        return next(t for t in found if t["slug"] == record["slug"])
    if name == "galleries":
        found = api.get("/search/galleries", params={"q": f"id:{record['id']}"}).json()["galleries"]
        return found[0]
    if name == "filters":
        return api.get(f"/filters/{record['id']}").json()["filter"]
    if name == "users":
        return api.get(f"/profiles/{record['id']}").json()["user"]
    raise AssertionError(f"no endpoint for {path}")


def test_fixture_search_works():
    editor = BoardEditor.from_fixtures(FIXTURES)
    with SiteServer(editor) as site, httpx.Client(base_url=site.api_url) as api:
        body = api.get("/search/images", params={"q": "safe", "per_page": 50, "sf": "id", "sd": "asc"}).json()
        assert body["total"] > 0 and body["images"][0]["id"] == 0
        webm = api.get("/search/images", params={"q": "thumbnails_generated:false"}).json()
        assert any(im["format"] == "webm" for im in webm["images"])
        posts = api.get("/forums/art/topics/artists-group-chat/posts").json()
        assert posts["total"] == 14913 and len(posts["posts"]) == 25


def test_a_refused_edit_changes_nothing():
    editor = BoardEditor.generate(seed=1, images=20)
    image_id = next(i for i, im in editor.images.items() if not im["hidden_from_users"])
    before = json.dumps(editor.images[image_id], sort_keys=True)
    with pytest.raises(ValueError, match="cannot edit raw"):
        editor.edit_image(image_id, score=12345, raw=None)
    assert json.dumps(editor.images[image_id], sort_keys=True) == before
    gallery_id = min(editor.galleries)
    title = editor.galleries[gallery_id]["title"]
    with pytest.raises(ValueError, match="cannot edit id"):
        editor.edit_gallery(gallery_id, title="changed", id=999)
    assert editor.galleries[gallery_id]["title"] == title


def test_a_topic_titled_without_ascii_words_still_gets_a_slug():
    editor = BoardEditor.generate(seed=1, images=20)
    forum = next(iter(editor.forums))
    topic = editor.add_topic(forum, "🦄✨🌈")
    assert topic["slug"] == f"topic-{topic['id']}"
