"""The local site's JSON API, exercised over real HTTP like the mirror will use it."""

from __future__ import annotations

import json
import os

import httpx
import pytest

from mirror.localsite.board.editor import BoardEditor
from mirror.localsite.http.server import SiteServer

from ..support.real_fixtures import REAL

FIXTURES = REAL
KEY = "testkey-3"


@pytest.fixture(scope="module")
def board() -> BoardEditor:
    return BoardEditor.generate(seed=3, images=150)


@pytest.fixture(scope="module")
def site(board):
    with SiteServer(board) as server:
        yield server


@pytest.fixture(scope="module")
def api(site):
    with httpx.Client(base_url=site.api_url, timeout=10) as client:
        yield client


def everything(board: BoardEditor, **params) -> dict:
    return {"filter_id": board.everything_filter_id, **params}


def visible_ids(board: BoardEditor) -> list[int]:
    return sorted(i for i, im in board.images.items() if not im["hidden_from_users"])


def fixture_keys(path: str, wrapper: str) -> set[str]:
    data = json.loads((FIXTURES / path).read_text())
    records = data if isinstance(data, list) else data[wrapper]
    return set(records[0])


# ---------------------------------------------------------------------------- image search


def test_image_search_defaults_to_15_newest_first_seen(board, api):
    response = api.get("/search/images", params=everything(board, q="*"))
    assert response.status_code == 200
    assert response.headers["cache-control"] == "no-store, no-cache"
    body = response.json()
    assert set(body) == {"images", "interactions", "total"}
    assert body["total"] == len(visible_ids(board))
    assert body["interactions"] == []
    images = body["images"]
    assert len(images) == 15
    keys = [(im["first_seen_at"], im["id"]) for im in images]
    assert keys == sorted(keys, reverse=True)


def test_alias_route_and_per_page_clamping(board, api):
    total = len(visible_ids(board))
    assert len(api.get("/search", params=everything(board, q="*", per_page=100)).json()["images"]) == 50
    assert len(api.get("/search/images", params=everything(board, q="*", per_page=0)).json()["images"]) == 1
    assert len(api.get("/search/images", params=everything(board, q="*", per_page=-4)).json()["images"]) == 1
    assert len(api.get("/search/images", params=everything(board, q="*", per_page="abc")).json()["images"]) == 25
    assert len(api.get("/search/images", params=everything(board, q="*", per_page="7xyz")).json()["images"]) == 7
    first = api.get("/search/images", params=everything(board, q="*", per_page=5)).json()["images"]
    for page in ("0", "-3", "1", "junk"):
        same = api.get("/search/images", params=everything(board, q="*", per_page=5, page=page)).json()["images"]
        assert same == first
    second = api.get("/search/images", params=everything(board, q="*", per_page=5, page="2abc")).json()["images"]
    assert second[0]["id"] != first[0]["id"]
    past = api.get("/search/images", params=everything(board, q="*", page=999)).json()
    assert past == {"images": [], "interactions": [], "total": total}


def test_sorting_with_same_direction_id_tie_breaker(board, api):
    def ids(**params):
        return [im["id"] for im in api.get("/search/images", params=everything(board, q="*", per_page=50, **params))
                .json()["images"]]

    assert ids(sf="id", sd="asc") == visible_ids(board)[:50]
    assert ids(sf="id") == sorted(visible_ids(board), reverse=True)[:50]
    images = api.get("/search/images", params=everything(board, q="*", per_page=50, sf="score", sd="asc")).json()["images"]
    keys = [(im["score"], im["id"]) for im in images]
    assert keys == sorted(keys)
    assert len({im["score"] for im in images}) < len(images)  # ties exist, so the tie-breaker matters
    assert ids(sf="created_at") == ids()  # not an allowed sort field: the default
    assert ids(sf="nonsense", sd="sideways") == ids()
    wilson = api.get("/search/images", params=everything(board, q="*", per_page=50, sf="wilson_score")).json()["images"]
    assert [im["wilson_score"] for im in wilson] == sorted((im["wilson_score"] for im in wilson), reverse=True)


def test_gallery_query_and_gallery_sort(board, api):
    gallery = max(board.galleries.values(), key=lambda g: len(g["image_ids"]))
    wanted = [i for i in gallery["image_ids"] if not board.images[i]["hidden_from_users"]]
    body = api.get("/search/images", params=everything(
        board, q=f"gallery_id:{gallery['id']}", sf=f"gallery_id:{gallery['id']}", sd="asc", per_page=50)).json()
    assert body["total"] == len(wanted)
    assert [im["id"] for im in body["images"]] == wanted
    reverse = api.get("/search/images", params=everything(
        board, q=f"gallery_id:{gallery['id']}", sf=f"gallery_id:{gallery['id']}", sd="desc", per_page=50)).json()
    assert [im["id"] for im in reverse["images"]] == wanted[::-1]


def test_query_fields_ranges_and_aliases(board, api):
    ids = visible_ids(board)
    low, high = ids[10], ids[20]
    body = api.get("/search/images", params=everything(board, q=f"id.gt:{low}, id.lte:{high}", per_page=50)).json()
    assert sorted(im["id"] for im in body["images"]) == [i for i in ids if low < i <= high]

    twilight = {i for i in ids if "twilight sparkle" in board.images[i]["tags"]}
    assert twilight
    for query in ("twilight sparkle", "twilight", "ts", "TWILIGHT_SPARKLE"):
        got = api.get("/search/images", params=everything(board, q=query, per_page=50)).json()
        assert got["total"] == len(twilight), query

    wide = api.get("/search/images", params=everything(board, q="aspect_ratio.gt:1.5 || width:100", per_page=50)).json()
    assert all(im["aspect_ratio"] > 1.5 or im["width"] == 100 for im in wide["images"])
    dated = api.get("/search/images", params=everything(board, q="created_at.lt:2014", per_page=50)).json()
    assert dated["total"] > 0 and all(im["created_at"] < "2014" for im in dated["images"])
    pngs = api.get("/search/images", params=everything(board, q="mime_type:image/png, -safe", per_page=50)).json()
    assert all(im["format"] == "png" and "safe" not in im["tags"] for im in pngs["images"])
    word = next(board.images[i]["description"].split()[1] for i in ids if len(board.images[i]["description"].split()) > 3)
    described = api.get("/search/images", params=everything(board, q=f"description:{word}", per_page=50)).json()
    assert described["total"] > 0
    assert all(word.lower() in im["description"].lower() for im in described["images"])


def test_bad_and_empty_queries(board, api):
    bad = api.get("/search/images", params={"q": "(safe"})
    assert bad.status_code == 400
    assert bad.json() == {"error": "Imbalanced parentheses."}
    assert api.get("/search/images", params={"q": "id.gt:abc"}).status_code == 400
    for params in ({}, {"q": ""}, {"q": "   "}):
        assert api.get("/search/images", params=params).json() == {"images": [], "interactions": [], "total": 0}
    for endpoint, name in (("tags", "tags"), ("comments", "comments"), ("posts", "posts"),
                           ("galleries", "galleries"), ("filters", "filters")):
        assert api.get(f"/search/{endpoint}").json() == {name: [], "total": 0}
        assert api.get(f"/search/{endpoint}", params={"q": "(("}).status_code == 400


def test_default_filter_hides_and_spoilers(board, api):
    explicit = board.tag_by_name("explicit")["id"]
    anonymous = api.get("/search/images", params={"q": "*", "per_page": 50, "sf": "id"}).json()
    assert anonymous["total"] == sum(1 for i in visible_ids(board) if explicit not in board.images[i]["tag_ids"]
                                     and "grotesque" not in board.images[i]["tags"]
                                     and board.images[i]["score"] >= -5) or anonymous["total"] < len(visible_ids(board))
    assert all("explicit" not in im["tags"] for im in anonymous["images"])
    assert any(im["spoilered"] for im in anonymous["images"])
    assert all(im["spoilered"] == bool({"questionable", "semi-grimdark", "grimdark"} & set(im["tags"])
                                       or im["score"] < -5) for im in anonymous["images"])
    # an explicit image is hidden from search but still shown, spoilered, by id
    hidden = next(i for i in visible_ids(board) if explicit in board.images[i]["tag_ids"])
    shown = api.get(f"/images/{hidden}").json()["image"]
    assert shown["id"] == hidden and shown["spoilered"] is True
    assert api.get(f"/images/{hidden}", params=everything(board)).json()["image"]["spoilered"] is False
    # unknown filters are ignored, malformed ones are a 400
    assert api.get("/search/images", params={"q": "*", "filter_id": 999999}).json()["total"] == anonymous["total"]
    for value in ("abc", "", "1.5"):
        response = api.get("/search/images", params={"q": "*", "filter_id": value})
        assert (response.status_code, response.json()) == (400, {"error": "Bad Request"})
    # another user's private filter is not accessible: ignored
    private = next(f for f in board.filters.values() if not f["system"] and not f["public"]
                   and f["user_id"] != board.api_keys[KEY])
    assert api.get("/search/images", params={"q": "*", "filter_id": private["id"]}).json()["total"] == anonymous["total"]


def test_hidden_and_merged_images_are_stubs(board, api):
    deleted = next(im for im in board.images.values() if im["hidden_from_users"] and im["duplicate_of"] is None)
    merged = next(im for im in board.images.values() if im["duplicate_of"] is not None)
    stub = api.get(f"/images/{deleted['id']}").json()
    assert stub["interactions"] == []
    assert stub["image"] == {
        "id": deleted["id"], "created_at": deleted["created_at"], "updated_at": deleted["updated_at"],
        "first_seen_at": deleted["first_seen_at"], "deletion_reason": deleted["deletion_reason"],
        "duplicate_of": None, "hidden_from_users": True,
    }
    merged_stub = api.get(f"/images/{merged['id']}").json()["image"]
    assert merged_stub["duplicate_of"] == merged["duplicate_of"] and merged_stub["deletion_reason"] is None
    assert len(merged_stub) == 7
    without = api.get("/search/images", params=everything(board, q="*", per_page=50, sf="id", sd="asc")).json()
    with_deleted = api.get("/search/images", params=everything(board, q="*", per_page=50, sf="id", sd="asc",
                                                               **{"del": "1"})).json()
    assert with_deleted["total"] == len(board.images) > without["total"]
    stubs = [im for im in with_deleted["images"] if im["hidden_from_users"]]
    assert stubs and all(len(im) == 7 for im in stubs)


def test_record_shapes_match_recorded_responses(board, api):
    image = api.get("/search/images", params=everything(board, q="*")).json()["images"][0]
    recorded = fixture_keys("derpibooru-2024/images.json", "images")
    assert set(image) == recorded | {"hides", "orig_size", "source_url"}
    assert len(image) == 40
    assert set(image["representations"]) == {"thumb_tiny", "thumb_small", "thumb", "small", "medium", "large",
                                              "tall", "full"}
    tag = api.get("/search/tags", params={"q": "*"}).json()["tags"][0]
    assert set(tag) == fixture_keys("derpibooru-2024/tags.json", "tags")
    comment = api.get("/search/comments", params={"q": "*"}).json()["comments"][0]
    assert set(comment) == fixture_keys("derpibooru-2024/comments.json", "comments")
    post = api.get("/search/posts", params={"q": "*"}).json()["posts"][0]
    assert set(post) == fixture_keys("derpibooru-2024/posts.json", "posts")
    gallery = api.get("/search/galleries", params={"q": "*"}).json()["galleries"][0]
    assert set(gallery) == fixture_keys("derpibooru-2024/galleries.json", "galleries")
    forum = api.get("/forums").json()["forums"][0]
    assert set(forum) == fixture_keys("derpibooru-2024/forums.json", "forums")
    topic = api.get(f"/forums/{forum['short_name']}/topics").json()["topics"][0]
    assert set(topic) == fixture_keys("derpibooru-2024/topics.json", "topics")
    flt = api.get("/filters/system").json()["filters"][0]
    assert set(flt) == fixture_keys("derpibooru-2024/filters.json", "filters")
    user = next(u for u in board.users.values() if u["links"] and u["awards"] and not u["deleted"])
    profile = api.get(f"/profiles/{user['id']}").json()["user"]
    recorded_user = json.loads((FIXTURES / "derpibooru-2024/users.json").read_text())[0]
    assert set(profile) == set(recorded_user)
    assert set(profile["links"][0]) == set(recorded_user["links"][0])
    assert set(profile["awards"][0]) == set(recorded_user["awards"][0])


def test_image_record_values(board, api):
    images = api.get("/search/images", params=everything(board, q="*", per_page=50, sf="id", sd="asc")).json()["images"]
    for im in images:
        assert im["tag_count"] == len(im["tags"]) == len(im["tag_ids"])
        assert im["source_url"] == (im["source_urls"][0] if im["source_urls"] else "")
        assert im["aspect_ratio"] == pytest.approx(im["width"] / im["height"])
        assert im["score"] == im["upvotes"] - im["downvotes"]
        if im["upvotes"] == 0:
            assert im["wilson_score"] == 0 and isinstance(im["wilson_score"], int)
        else:
            assert 0 <= im["wilson_score"] <= 1
        created = im["created_at"]
        y, m, d = int(created[:4]), int(created[5:7]), int(created[8:10])
        ext = "png" if im["format"] == "svg" else im["format"]
        root = api.base_url.copy_with(path="/img", query=None)
        assert im["representations"]["full"] == f"{root}/view/{y}/{m}/{d}/{im['id']}.{ext}"
        assert im["view_url"].startswith(f"{root}/view/{y}/{m}/{d}/{im['id']}__")
        for name, (w, h) in {"thumb_tiny": (50, 50), "medium": (800, 600), "tall": (1024, 4096)}.items():
            expected = name if im["width"] > w or im["height"] > h else "full"
            assert im["representations"][name] == f"{root}/{y}/{m}/{d}/{im['id']}/{expected}.{ext}"
        assert ("webm" in im["representations"]) == (im["format"] == "gif")


def test_show_endpoints_and_error_bodies(board, api):
    assert api.get("/images/999999").json() == {"error": "Not found"}
    assert api.get("/images/999999").status_code == 404
    assert api.get("/images/99999999999").status_code == 500
    for path in ("/images/abc", "/comments/abc", "/posts/1x", "/profiles/x"):
        response = api.get(path)
        assert (response.status_code, response.json()) == (400, {"error": "Bad Request"}), path
    for path in ("/filters/abc", "/tags/no-such-tag", "/comments/999999", "/posts/999999", "/profiles/999999",
                 "/forums/nope", "/forums/mod", "/forums/art/topics/nope"):
        response = api.get(path)
        assert (response.status_code, response.json()) == (404, {"error": "Not found"}), path
    tag = board.tag_by_name("twilight sparkle")
    shown = api.get(f"/tags/{tag['slug']}").json()["tag"]
    assert shown["name"] == "twilight sparkle" and "twilight" in shown["aliases"]
    assert shown["images"] == sum(1 for i in visible_ids(board) if tag["id"] in board.images[i]["tag_ids"])
    assert api.get("/tags/twilight sparkle").status_code == 404  # by slug only
    alias = api.get("/tags/ts").json()["tag"]
    assert alias["aliased_tag"] == "twilight+sparkle"
    artist = next(t for t in board.tags.values() if t["namespace"] == "artist")
    assert api.get(f"/tags/{artist['slug']}").json()["tag"]["category"] == "origin"

    on_hidden = next(c for c in board.comments.values() if board.images[c["image_id"]]["hidden_from_users"]
                     and not c["destroyed_content"])
    forbidden = api.get(f"/comments/{on_hidden['id']}")
    assert (forbidden.status_code, forbidden.text) == (403, "")
    destroyed = next(c for c in board.comments.values() if c["destroyed_content"])
    assert api.get(f"/comments/{destroyed['id']}").status_code == 404
    hidden = next(c for c in board.comments.values() if c["hidden_from_users"] and not c["destroyed_content"]
                  and not board.images[c["image_id"]]["hidden_from_users"])
    assert api.get(f"/comments/{hidden['id']}").json()["comment"]["body"] is None
    deleted_user = next((u for u in board.users.values() if u["deleted"]), None)
    if deleted_user:
        assert api.get(f"/profiles/{deleted_user['id']}").status_code == 404
    assert api.get("/nothing/here").json() == {"error": "Not Found"}
    assert api.get("/images/1.json").status_code == 400


def test_featured_and_oembed(board, api):
    featured = api.get("/images/featured").json()
    newest = max(board.features, key=lambda f: f["created_at"])
    assert featured["image"]["id"] == newest["image_id"]
    image_id = featured["image"]["id"]
    for url in (f"https://derpibooru.org/images/{image_id}", f"/{image_id}",
                featured["image"]["representations"]["thumb"], featured["image"]["view_url"]):
        body = api.get("/oembed", params={"url": url}).json()
        assert body["derpibooru_id"] == image_id and body["cache_age"] == 7200, url
        assert body["title"].startswith(f"#{image_id} - ") and body["title"].endswith(" - Derpibooru")
    for url in ("https://derpibooru.org/", "https://derpibooru.org/img/foo", "/images/99999999999", ""):
        response = api.get("/oembed", params={"url": url})
        assert (response.status_code, response.json()) == (404, {"error": "Not found"}), url


def test_key_gives_interactions_and_user_filters(board, api):
    user_id = board.api_keys[KEY]
    mine = [i for i in board.interactions if i["user_id"] == user_id]
    image_id = mine[0]["image_id"]
    shown = api.get(f"/images/{image_id}", params={"key": KEY, **everything(board)}).json()
    assert shown["interactions"] and all(i["image_id"] == image_id for i in shown["interactions"])
    assert set(shown["interactions"][0]) == {"image_id", "user_id", "interaction_type", "value"}
    assert api.get(f"/images/{image_id}", params={"key": "wrong"}).json()["interactions"] == []

    forbidden = api.get("/filters/user")
    assert (forbidden.status_code, forbidden.text, forbidden.headers["content-type"].split(";")[0]) == \
        (403, "", "text/plain")
    assert api.get("/filters/user", params={"key": "wrong"}).status_code == 403
    own = api.get("/filters/user", params={"key": KEY}).json()
    assert own["total"] == sum(1 for f in board.filters.values() if f["user_id"] == user_id)
    assert all(f["user_id"] == user_id and not f["system"] for f in own["filters"])
    private = next(f for f in own["filters"] if not f["public"])
    assert api.get(f"/filters/{private['id']}").status_code == 404
    assert api.get(f"/filters/{private['id']}", params={"key": KEY}).json()["filter"]["id"] == private["id"]


def test_system_filters_and_scrivener_last_page(board, api):
    system = api.get("/filters/system").json()
    assert [f["id"] for f in system["filters"]] == sorted(f["id"] for f in board.filters.values() if f["system"])
    assert {"Default", "Everything"} <= {f["name"] for f in system["filters"]}
    last = api.get("/filters/system", params={"per_page": 1, "page": 99}).json()
    assert last["filters"] == system["filters"][-1:] and last["total"] == system["total"]
    forums = api.get("/forums").json()
    assert [f["name"] for f in forums["forums"]] == sorted(f["name"] for f in forums["forums"])
    assert "mod" not in {f["short_name"] for f in forums["forums"]}
    assert api.get("/forums", params={"per_page": 2, "page": 50}).json()["forums"] == forums["forums"][4:6]
    assert api.get("/forums/mod/topics").json() == {"topics": [], "total": 0}
    assert api.get("/forums/nope/topics").json() == {"topics": [], "total": 0}


def test_topics_and_topic_posts(board, api):
    topic = board.topics[2]  # the long one
    forum = topic["forum"]
    listed = api.get(f"/forums/{forum}/topics", params={"per_page": 50}).json()["topics"]
    assert listed[0]["sticky"] or not any(t["sticky"] for t in listed)
    non_sticky = [t["last_replied_to_at"] for t in listed if not t["sticky"]]
    assert non_sticky == sorted(non_sticky, reverse=True)
    past = api.get(f"/forums/{forum}/topics", params={"per_page": 1, "page": 999}).json()
    assert past["topics"] == listed[-1:]

    base = f"/forums/{forum}/topics/{topic['slug']}"
    assert api.get(base).json()["topic"]["post_count"] == topic["post_count"] == 80
    page = api.get(base + "/posts").json()
    assert page["total"] == 80
    positions = {p["id"]: p["topic_position"] for p in board.posts.values() if p["topic_id"] == topic["id"]}
    assert all(positions[p["id"]] < 25 for p in page["posts"])
    third = api.get(base + "/posts", params={"page": 3, "per_page": 30}).json()["posts"]
    assert all(60 <= positions[p["id"]] < 90 for p in third)
    assert api.get(base + "/posts", params={"page": 9}).json() == {"posts": [], "total": 80}
    one = api.get(base + "/posts", params={"per_page": 0}).json()["posts"]
    assert len(one) <= 1
    post_id = page["posts"][1]["id"]
    assert api.get(f"{base}/posts/{post_id}").json()["post"]["id"] == post_id
    assert api.get(f"{base}/posts/abc").status_code == 404
    assert api.get(f"/posts/{post_id}").json()["post"]["id"] == post_id
    hidden_topic = next(t for t in board.topics.values() if t["hidden"])
    assert api.get(f"/forums/{hidden_topic['forum']}/topics/{hidden_topic['slug']}").status_code == 404


def test_other_searches(board, api):
    tags = api.get("/search/tags", params={"q": "namespace:artist", "per_page": 50}).json()
    assert tags["total"] == sum(1 for t in board.tags.values() if t["namespace"] == "artist")
    counts = [t["images"] for t in tags["tags"]]
    assert counts == sorted(counts, reverse=True)
    comments = api.get("/search/comments", params={"q": "*", "per_page": 50}).json()
    dates = [c["created_at"] for c in comments["comments"]]
    assert dates == sorted(dates, reverse=True)
    assert all(c["body"] is not None for c in comments["comments"])
    image_id = comments["comments"][0]["image_id"]
    on_image = api.get("/search/comments", params={"q": f"image_id:{image_id}"}).json()
    assert on_image["total"] >= 1 and all(c["image_id"] == image_id for c in on_image["comments"])
    posts = api.get("/search/posts", params={"q": "forum:art", "per_page": 50}).json()
    assert posts["total"] > 0
    galleries = api.get("/search/galleries", params={"q": f"user_id:{board.api_keys[KEY]}"}).json()
    assert galleries["total"] >= 1
    filters = api.get("/search/filters", params={"q": "*", "per_page": 50}).json()
    assert all(f["public"] or f["system"] for f in filters["filters"])
    names = [(f["name"], -f["id"]) for f in filters["filters"]]
    assert names == sorted(names)
    with_key = api.get("/search/filters", params={"q": "*", "per_page": 50, "key": KEY}).json()
    assert with_key["total"] > filters["total"]
    past = api.get("/search/tags", params={"q": "*", "page": 999}).json()
    assert past["tags"] == [] and past["total"] == len(board.tags)


# ---------------------------------------------------------------------------- files


def test_representation_files_match_hashes(board, site):
    import hashlib

    with httpx.Client(timeout=10) as http:
        formats_seen = set()
        images = httpx.get(site.api_url + "/search/images",
                           params=everything(board, q="thumbnails_generated:true", per_page=50)).json()["images"]
        for image in images:
            original = image["representations"]["full"]
            if image["format"] == "svg":  # the record names PNG renderings; the SVG is the original
                original = original.removesuffix(".png") + ".svg"
            full = http.get(original)
            assert full.status_code == 200
            assert hashlib.sha512(full.content).hexdigest() == image["sha512_hash"]
            assert int(full.headers["content-length"]) == image["size"] == len(full.content)
            thumb = http.get(image["representations"]["thumb_small"])
            assert thumb.status_code == 200 and thumb.headers["content-type"].startswith(
                "image/" if image["format"] != "webm" else "video/")
            assert http.get(image["view_url"]).content == http.get(image["representations"]["full"]).content
            formats_seen.add(image["format"])
        assert {"png", "jpg"} <= formats_seen
        gif = next(im for im in images if im["format"] == "gif")
        assert http.get(gif["representations"]["webm"]).headers["content-type"] == "video/webm"
        assert http.get(gif["representations"]["mp4"]).headers["content-type"] == "video/mp4"


def test_svg_renderings_are_png_and_the_svg_is_at_its_svg_url(board, site):
    """As the real file host: every URL the record names is a PNG rendering; the same view (or
    download) URL ending in .svg is the SVG, which sha512_hash describes."""
    import hashlib

    svg = next(im for im in board.images.values() if im["format"] == "svg" and not im["hidden_from_users"]
               and im["thumbnails_generated"])
    record = httpx.get(f"{site.api_url}/images/{svg['id']}").json()["image"]
    assert record["mime_type"] == "image/svg+xml"
    for name, url in record["representations"].items():
        assert url.endswith(".png"), name
        rendering = httpx.get(url)
        assert rendering.headers["content-type"] == "image/png" and rendering.content.startswith(b"\x89PNG"), name
    assert hashlib.sha512(httpx.get(record["representations"]["full"]).content).hexdigest() != record["sha512_hash"]
    for url in (record["representations"]["full"], record["view_url"],
                record["representations"]["full"].replace("/view/", "/download/")):
        original = httpx.get(url.removesuffix(".png") + ".svg")
        assert original.headers["content-type"] == "image/svg+xml", url
        assert hashlib.sha512(original.content).hexdigest() == record["sha512_hash"] == record["orig_sha512_hash"]
        assert len(original.content) == record["size"]


def test_range_requests_and_missing_files(board, site):
    image = httpx.get(f"{site.api_url}/images/{visible_ids(board)[3]}").json()["image"]
    url = image["representations"]["full"]
    whole = httpx.get(url).content
    part = httpx.get(url, headers={"Range": "bytes=10-19"})
    assert part.status_code == 206 and part.content == whole[10:20]
    assert part.headers["content-range"] == f"bytes 10-19/{len(whole)}"
    assert part.headers["content-length"] == "10"
    assert httpx.get(url, headers={"Range": "bytes=-5"}).content == whole[-5:]
    assert httpx.get(url, headers={"Range": "bytes=20-"}).content == whole[20:]
    assert httpx.get(url, headers={"Range": f"bytes={len(whole)}-"}).status_code == 416
    assert httpx.get(url.replace("/view/", "/view/1999/")).status_code == 404
    assert httpx.get(f"{site.url}/img/2012/1/2/999999/thumb.png").status_code == 404
    hidden = next(im for im in board.images.values() if im["hidden_from_users"])
    from mirror.localsite.board.render import representations

    assert httpx.get(representations(hidden, site.url + "/img")["full"]).status_code == 404
    pending = next(im for im in board.images.values() if not im["thumbnails_generated"]
                   and not im["hidden_from_users"])
    urls = representations(pending, site.url + "/img")
    assert httpx.get(urls["thumb"]).status_code == 404
    assert httpx.get(urls["full"]).status_code == 200


def test_if_range_gives_the_tail_only_while_the_file_is_unchanged(board, site):
    image = httpx.get(f"{site.api_url}/images/{visible_ids(board)[4]}").json()["image"]
    url = image["representations"]["thumb"]
    whole = httpx.get(url)
    etag, modified = whole.headers["etag"], whole.headers["last-modified"]
    assert etag.startswith('"') and modified.endswith(" GMT") and httpx.get(url).headers["etag"] == etag
    assert httpx.get(image["representations"]["full"]).headers["etag"] != etag  # a hash of the bytes served
    for current in (etag, modified):
        tail = httpx.get(url, headers={"Range": "bytes=20-", "If-Range": current})
        assert tail.status_code == 206 and tail.content == whole.content[20:]
        assert tail.headers["etag"] == etag
    for stale in ('"0123abcd"', f"W/{etag}", "Sat, 01 Jan 2000 00:00:00 GMT", "not a date"):
        again = httpx.get(url, headers={"Range": "bytes=20-", "If-Range": stale})
        assert again.status_code == 200 and again.content == whole.content
        assert "content-range" not in again.headers


def test_a_regenerated_file_has_a_new_etag_and_a_stale_if_range_gets_it_whole():
    board = BoardEditor.generate(seed=5, images=5)
    image_id = next(i for i, im in sorted(board.images.items())
                    if not im["hidden_from_users"] and im["thumbnails_generated"])
    with SiteServer(board) as server:
        url = httpx.get(f"{server.api_url}/images/{image_id}").json()["image"]["representations"]["thumb"]
        old = httpx.get(url)
        board.replace_file(image_id, "regenerated")
        new = httpx.get(url, headers={"Range": "bytes=20-", "If-Range": old.headers["etag"]})
        assert new.status_code == 200 and new.content != old.content
        assert new.headers["etag"] != old.headers["etag"]


def test_view_url_and_representations_match_a_recorded_image():
    from mirror.localsite.board.render import representations, view_url
    from mirror.search.slugs import slug

    recorded = json.loads((FIXTURES / "derpibooru-2024/images.json").read_text())["images"][0]
    categories = {"artist needed": "error", "safe": "rating", "derpy hooves": "character", "pegasus": "species",
                  "pony": "species", "g4": "body-type"}
    tags = {i: {"id": i, "name": n, "slug": slug(n), "category": categories.get(n)}
            for i, n in zip(recorded["tag_ids"], recorded["tags"])}
    image = {key: recorded[key] for key in ("id", "created_at", "width", "height", "format", "mime_type", "tag_ids")}
    root = "https://derpicdn.net/img"
    assert view_url(image, root, tags) == recorded["view_url"]
    assert representations(image, root) == recorded["representations"]


def test_recorded_tags_are_searched_by_the_names_of_their_relations():
    """The index stores tag names in aliases/implies/alias_of; recorded tags list their relations by slug."""
    with SiteServer(BoardEditor.from_fixtures(FIXTURES)) as site:
        def names(q: str) -> list[str]:
            body = httpx.get(site.api_url + "/search/tags", params={"q": q, "per_page": 50}).json()
            return [t["name"] for t in body["tags"]]

        assert names("aliases:plain background") == ["simple background"]
        assert names("aliases:plain+background") == []


def test_my_and_filter_id_query_fields(board, api):
    user_id = board.api_keys[KEY]
    faved = {i["image_id"] for i in board.interactions if i["user_id"] == user_id and i["interaction_type"] == "faved"}
    anonymous = api.get("/search/images", params={"q": "my:faves"})
    assert (anonymous.status_code, anonymous.json()) == (400, {"error": "You must be logged in to use `my' queries."})
    mine = api.get("/search/images", params=everything(board, q="my:faves", key=KEY, per_page=50, hidden=1)).json()
    assert {im["id"] for im in mine["images"]} == {i for i in faved if not board.images[i]["hidden_from_users"]}
    assert api.get("/search/images", params={"q": "my:nonsense", "key": KEY}).status_code == 400
    default = board.default_filter_id
    explicit = api.get("/search/images", params=everything(board, q=f"explicit, filter_id:{default}")).json()
    assert explicit["total"] == 0
    unfiltered = api.get("/search/images", params=everything(board, q=f"safe, filter_id:{board.everything_filter_id}"))
    assert unfiltered.json()["total"] == api.get("/search/images", params=everything(board, q="safe")).json()["total"]
    assert api.get("/search/images", params={"q": "filter_id:999999"}).json() == {"error": "Invalid filter `999999`."}


def test_mirror_site_generates_its_board_apart_and_serves_it(tmp_path):
    """`mirror site` as a user runs it: the board generated in a process of its own, then served."""
    import re
    import subprocess
    import sys

    temporary = tmp_path / "tmp"
    temporary.mkdir()
    site = subprocess.Popen([sys.executable, "-m", "mirror.cli", "site", "--images", "30", "--port", "0"],
                            stdout=subprocess.PIPE, text=True, cwd=tmp_path, env={**os.environ, "TMPDIR": str(temporary)})
    try:
        lines = [site.stdout.readline() for _ in range(4)]
        api = re.search(r"API: +(\S+)", lines[2]).group(1)
        everything = re.search(r"Everything filter: (\d+)", lines[3]).group(1)
        body = httpx.get(api + "/search/images", params={"q": "*", "filter_id": everything, "del": "1"}).json()
        assert lines[0].startswith("Generating a board of 30 images") and body["total"] == 30
        assert len(list(temporary.iterdir())) == 1  # the board's folder
    finally:
        site.terminate()
        site.wait(timeout=10)
    assert not list(temporary.iterdir())  # stopped as systemd stops it, it leaves no board behind


def test_an_svgs_intensities_are_those_of_the_png_rendering_served(board, site):
    """The site computes an SVG's intensities from the PNG rendering it serves (every non-download
    URL of an SVG), so a reverse search with that PNG finds the image."""
    from mirror.imaging import intensities_of

    svgs = [im for im in board.images.values() if im["format"] == "svg" and not im["hidden_from_users"]]
    assert svgs
    for image in svgs[:3]:
        record = httpx.get(f"{site.api_url}/images/{image['id']}").json()["image"]
        rendering = httpx.get(record["representations"]["full"]).content
        served, _ = intensities_of(rendering)
        assert tuple(record["intensities"][corner] for corner in ("nw", "ne", "sw", "se")) == pytest.approx(
            served.as_tuple(), abs=1e-5)
        found = httpx.post(f"{site.api_url}/search/reverse", data={"distance": "0.25"},
                           files={"image[image]": ("q.png", rendering, "image/png")}).json()
        assert image["id"] in [im["id"] for im in found["images"]]
