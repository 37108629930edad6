"""`mirror sync tags` end to end against the local site on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import math
from urllib.parse import parse_qs

import httpx

from mirror.api import PhilomenaClient
from mirror.store import open_database
from mirror.store.specs import TAGS

from ..support.configs import site_config, sync
from ..support.killing import kill_when, rerun, sync_command
from ..support.mirrored import assert_rows_match


def site_tags(site, ids=None) -> dict[int, dict]:
    """Every tag the site serves (or those with ``ids``), asked for 50 ids at a time."""
    wanted = sorted(site.editor.tags) if ids is None else sorted(ids)
    out: dict[int, dict] = {}
    with httpx.Client(base_url=site.api_url) as http:
        for start in range(0, len(wanted), 50):
            q = " || ".join(f"id:{i}" for i in wanted[start:start + 50])
            out.update((t["id"], t) for t in http.get("/search/tags", params={"q": q, "per_page": 50}).json()["tags"])
    return out


def tag_requests(site) -> list[str]:
    """The ``q`` of every tag search the site saw, in order."""
    return [parse_qs(r.query)["q"][0] for r in site.requests if r.path.endswith("/search/tags")]


def asked_ids(site) -> list[int]:
    return sorted(int(term.split(":")[1]) for q in tag_requests(site) for term in q.split(" || ")
                  if term.startswith("id:"))


def assert_tags_match(db, site, served: dict[int, dict]) -> None:
    """The tags with a full record are exactly ``served``, field by field."""
    assert_rows_match(db, TAGS, served, site.url, where="raw IS NOT NULL")


def mirrored_tag_ids(db) -> set[int]:
    return {row[0] for row in db.execute("SELECT id FROM tags")}


def test_full_sync_fetches_every_named_tag_in_batches_of_fifty(site, tmp_path):
    config = site_config(site, tmp_path, tags={"refresh_per_run": 0})
    _, db = sync(config, ["images"])
    named = mirrored_tag_ids(db)
    site.clear_requests()
    report, db = sync(config, ["tags"])
    assert len(site.requests) == report.requests == math.ceil(len(named) / 50)
    assert asked_ids(site) == sorted(named)
    assert_tags_match(db, site, site_tags(site, named))
    assert report.new == len(named) and report.updated == 0
    # Aliases, implications and DNP entries are queryable through their views.
    implications = {(r["slug"], r["implied_slug"]) for r in db.query("SELECT * FROM tag_implications")}
    assert implications and implications == {
        (t["slug"], s) for t in site_tags(site, named).values() for s in t["implied_tags"]}
    dnp = list(db.query("SELECT * FROM dnp_entries"))
    assert dnp and {(r["tag_id"], r["id"]) for r in dnp} == {
        (t["id"], e["id"]) for t in site_tags(site, named).values() for e in t["dnp_entries"]}
    aliased = [t for t in site_tags(site, named).values() if t["aliases"]]
    assert aliased, "the generated board aliases some mirrored tags"
    aliases = {(r["tag_id"], r["alias_slug"]) for r in db.query("SELECT * FROM tag_aliases")}
    assert aliases == {(t["id"], s) for t in aliased for s in t["aliases"]}
    assert db["tags"].search("safe", limit=5)


def test_sync_with_nothing_changed_costs_only_the_rolling_refresh(site, tmp_path):
    sync(site_config(site, tmp_path), ["images"])
    sync(site_config(site, tmp_path), ["tags"])
    site.clear_requests()
    report, _ = sync(site_config(site, tmp_path, tags={"refresh_per_run": 0}), ["tags"])
    assert len(site.requests) == 0 and report.fetched == 0
    report, _ = sync(site_config(site, tmp_path, tags={"refresh_per_run": 50}), ["tags"])
    assert len(site.requests) == 1 and report.fetched == 50 and report.new == report.updated == 0


def test_changed_images_refresh_exactly_the_tags_whose_counts_moved(site, tmp_path):
    config = site_config(site, tmp_path, tags={"refresh_per_run": 0})
    _, db = sync(config, ["images"])
    sync(config, ["tags"])
    visible = [r["id"] for r in db.query("SELECT id FROM images WHERE hidden_from_users = 0 ORDER BY id")]
    retagged, voted = visible[:3], visible[3:8]
    before = {image_id: set(site.editor.images[image_id]["tag_ids"]) for image_id in retagged}
    for image_id in retagged:
        site.editor.edit_image(image_id, tags=["safe", "pony", "fresh paint", f"brand new tag {image_id}"])
    for image_id in voted:  # a vote, a description: no tag's count moves
        site.editor.edit_image(image_id, score=site.editor.images[image_id]["score"] + 5, description="Edited.")
    new_ids = site.editor.add_images(2)
    sync(config, ["images"])
    site.clear_requests()
    report, db = sync(config, ["tags"])
    gained_or_lost = {t for i in retagged for t in before[i] ^ set(site.editor.images[i]["tag_ids"])}
    moved = gained_or_lost | {t for image_id in new_ids for t in site.editor.images[image_id]["tag_ids"]}
    assert set(asked_ids(site)) == moved  # the tags the retagged images lost too, none for the votes
    assert len(site.requests) == math.ceil(len(moved) / 50) == report.requests
    assert report.new == 4  # "fresh paint" and the three brand new tags
    served = site_tags(site, moved)
    assert_rows_match(db, TAGS, served, site.url, where=f"id IN ({','.join(map(str, served))})")
    site.clear_requests()
    sync(config, ["tags"])
    assert len(site.requests) == 0


def test_a_cursor_from_before_the_history_mark_refreshes_what_moved_since_the_last_tags_run(site, tmp_path):
    config = site_config(site, tmp_path, tags={"refresh_per_run": 0})
    _, db = sync(config, ["images"])
    sync(config, ["tags"])
    # The cursor an older version left: the images' updated_at mark, no history mark.
    db.execute("UPDATE sync_state SET cursor = json_remove(json_set(cursor, '$.images_mark', "
               "json_object('at', '2000-01-01T00:00:00Z', 'ids', json_array())), '$.history_after') "
               "WHERE name = 'tags'")
    image_id = min(r["id"] for r in db.query("SELECT id FROM images WHERE hidden_from_users = 0"))
    before = set(site.editor.images[image_id]["tag_ids"])
    site.editor.edit_image(image_id, tags=["safe", "pony", "a tag from after the upgrade"])
    sync(config, ["images"])
    site.clear_requests()
    sync(config, ["tags"])
    assert set(asked_ids(site)) == before ^ set(site.editor.images[image_id]["tag_ids"])
    cursor = json.loads(db.execute("SELECT cursor FROM sync_state WHERE name = 'tags'").fetchone()[0])
    assert "images_mark" not in cursor and cursor["history_after"] > 0


def test_tag_edits_arrive_with_the_rolling_refresh_at_a_constant_cost(site, tmp_path):
    config = site_config(site, tmp_path, tags={"refresh_per_run": 50})
    _, db = sync(config, ["images"])
    sync(config, ["tags"])
    named = mirrored_tag_ids(db)
    site.editor.edit_tag("pony", description="A small horse. Edited.", short_description="horse")
    site.editor.alias_tag("ponies", "pony")
    runs = math.ceil(len(named) / 50)
    for _ in range(runs):
        site.clear_requests()
        sync(config, ["tags"])
        assert len(site.requests) == 1
    pony = db["tags"].get(site.editor.tag_by_name("pony")["id"])
    assert pony["description"] == "A small horse. Edited." and "ponies" in json.loads(pony["aliases"])
    assert ("ponies" in {r["alias_slug"] for r in db.query("SELECT alias_slug FROM tag_aliases WHERE tag_id = ?",
                                                           [pony["id"]])})
    assert_tags_match(db, site, site_tags(site, named))


def test_a_tag_the_site_lacks_is_not_asked_again_every_night(site, tmp_path):
    config = site_config(site, tmp_path, tags={"refresh_per_run": 0})
    _, db = sync(config, ["images"])
    db["tags"].insert({"id": 999_999, "name": "gone tag"})
    sync(config, ["tags"])
    ghost = db["tags"].get(999_999)
    assert ghost["raw"] is None and ghost["mirrored_at"] is not None
    site.clear_requests()
    sync(config, ["tags"])
    assert len(site.requests) == 0


def test_scope_all_walks_id_windows_then_only_what_is_new(site, tmp_path):
    config = site_config(site, tmp_path, tags={"scope": "all", "refresh_per_run": 0})
    report, db = sync(config, ["tags"])
    queries = tag_requests(site)
    assert all(q.startswith("id.gte:") for q in queries) and len(queries) == report.requests
    assert report.requests <= math.ceil(len(site.editor.tags) / 25) + 4
    assert not any("page=2" in r.query for r in site.requests)  # windows, never deep pages
    assert_tags_match(db, site, site_tags(site))
    site.clear_requests()
    report, _ = sync(config, ["tags"])
    assert len(site.requests) == 1 and report.fetched == 0  # one probe past the highest id
    site.editor.ensure_tag("brand new tag")
    site.clear_requests()
    report, db = sync(config, ["tags"])
    assert len(site.requests) == 1 and report.new == 1
    assert_tags_match(db, site, site_tags(site))


def test_scope_all_shrinks_a_window_that_does_not_fit_a_page(site, tmp_path):
    for i in range(300):
        site.editor.ensure_tag(f"dense tag {i}")
    report, db = sync(site_config(site, tmp_path, tags={"scope": "all", "refresh_per_run": 0}), ["tags"])
    assert_tags_match(db, site, site_tags(site))
    windows = [q for q in tag_requests(site) if ", id.lt:" in q]
    assert len(windows) > len(site.editor.tags) / 50


def test_a_killed_walk_of_all_tags_resumes_to_the_same_mirror(site, tmp_path):
    for i in range(1500):
        site.editor.ensure_tag(f"filler tag {i}")
    killed = site_config(site, tmp_path / "killed", polite={"requests_per_second": 20},
                         tags={"enabled": True, "scope": "all", "refresh_per_run": 0})
    command = sync_command(killed, tmp_path / "killed.toml", "tags")

    def walked_past_500(db) -> bool:
        row = db.execute("SELECT cursor FROM sync_state WHERE name = 'tags'").fetchone()
        return bool(row) and (json.loads(row[0]).get("walk") or {}).get("start", 0) > 500

    kill_when(command, killed.database, walked_past_500)
    partial = open_database(killed.database).execute("SELECT count(*) FROM tags").fetchone()[0]
    assert 0 < partial < len(site.editor.tags)

    rerun(command)
    _, whole = sync(site_config(site, tmp_path / "whole", tags={"scope": "all", "refresh_per_run": 0}), ["tags"])

    def snapshot(db):
        return [tuple(r) for r in db.execute("SELECT id, name, raw FROM tags ORDER BY id")]

    assert snapshot(open_database(killed.database)) == snapshot(whole)
    assert_tags_match(whole, site, site_tags(site))


def test_one_tag_by_slug_through_the_client(site):
    async def fetch(slug):
        async with PhilomenaClient(site.url) as client:
            return await client.tag(slug)

    tag = site.editor.ensure_tag("artist:some one")
    record = asyncio.run(fetch(tag["slug"]))
    assert record == site_tags(site, [tag["id"]])[tag["id"]]
    assert record["slug"] == "artist-colon-some+one" and record["namespace"] == "artist"
