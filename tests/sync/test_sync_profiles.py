"""`mirror sync profiles` end to end against the local site on 127.0.0.1."""

from __future__ import annotations

import asyncio

import httpx

from mirror.commands.import_dump import run_import
from mirror.store import open_database
from mirror.store.specs import USERS

from ..support.configs import site_config, sync
from ..support.dumps import make_dump, needs_postgres
from ..support.mirrored import assert_rows_match


def named_users(db) -> set[int]:
    return {row[0] for row in db.execute("""
        SELECT uploader_id FROM images UNION SELECT user_id FROM filters UNION SELECT user_id FROM comments
        UNION SELECT user_id FROM posts UNION SELECT user_id FROM topics UNION SELECT creator_id FROM galleries""")
        if row[0] is not None}


def served_profiles(site, ids) -> tuple[dict[int, dict], set[int]]:
    """(profiles the site serves, ids it answers 404 for)."""
    found, gone = {}, set()
    with httpx.Client(base_url=site.api_url) as http:
        for user_id in ids:
            response = http.get(f"/profiles/{user_id}")
            if response.status_code == 404:
                gone.add(user_id)
            else:
                found[user_id] = response.json()["user"]
    return found, gone


def profile_paths(site) -> list[str]:
    return [r.path.rsplit("/", 1)[1] for r in site.requests if "/profiles/" in r.path]


def mirrored(site, tmp_path, **profiles):
    config = site_config(site, tmp_path, api_key=next(iter(site.editor.api_keys)), profiles=profiles)
    sync(config, ["images"])
    sync(config, ["filters"])
    return config


def test_full_sync_fetches_each_named_user_once_and_remembers_deleted_accounts(site, tmp_path):
    config = mirrored(site, tmp_path)
    site.editor.delete_user(sorted(u for u in site.editor.users if u != 1)[4])  # an uploader, named by images
    site.clear_requests()
    report, db = sync(config, ["profiles"])
    named = named_users(db)
    assert sorted(map(int, profile_paths(site))) == sorted(named) and report.requests == len(named)
    found, gone = served_profiles(site, named)
    assert gone
    assert_rows_match(db, USERS, found, site.url)
    assert {row[0] for row in db.execute("SELECT id FROM gone_users")} == gone
    assert report.new == len(found) and any(f"{len(gone)} deleted accounts" in n for n in report.notes)
    links = {(r["user_id"], r["tag_id"]) for r in db.query("SELECT * FROM user_links")}
    assert links and links == {(u["id"], link["tag_id"]) for u in found.values() for link in u["links"]}
    awards = {(r["user_id"], r["badge_id"], r["awarded_on"]) for r in db.query("SELECT * FROM user_awards")}
    assert awards and awards == {(u["id"], a["id"], a["awarded_on"]) for u in found.values() for a in u["awards"]}

    site.clear_requests()
    report, _ = sync(config, ["profiles"])
    assert len(site.requests) == report.requests == 0  # deleted accounts included: not asked again


def test_new_users_and_stale_profiles_cost_one_request_each(site, tmp_path):
    config = mirrored(site, tmp_path, refresh_days=30)
    _, db = sync(config, ["profiles"])
    newcomer = site.editor.add_user("Newcomer ★")
    image_id = site.editor.add_images(1)[0]
    site.editor.edit_image(image_id, uploader_id=newcomer["id"], uploader=newcomer["name"])
    stale = sorted(named_users(db) & {row[0] for row in db.execute("SELECT id FROM users")})[:3]
    site.editor.edit_user(stale[0], description="Edited on the site")  # no signal reaches the mirror
    db.execute(f"UPDATE users SET mirrored_at = '2000-01-01T00:00:00Z' WHERE id IN ({','.join(map(str, stale))})")
    db.conn.commit()
    sync(config, ["images"])
    site.clear_requests()
    report, db = sync(config, ["profiles"])
    assert sorted(profile_paths(site)) == sorted(map(str, [*stale, newcomer["id"]])) and report.requests == 4
    assert report.new == 1 and report.updated == 1
    found, _ = served_profiles(site, [*stale, newcomer["id"]])
    assert_rows_match(db, USERS, found, site.url, where=f"id IN ({','.join(map(str, found))})")


def test_a_deleted_account_keeps_its_profile_and_is_asked_again_only_when_due(site, tmp_path):
    config = mirrored(site, tmp_path, refresh_days=30)
    _, db = sync(config, ["profiles"])
    user_id = min(row[0] for row in db.execute("SELECT id FROM users"))
    kept = db["users"].get(user_id)
    site.editor.delete_user(user_id)
    db.execute("UPDATE users SET mirrored_at = '2000-01-01T00:00:00Z' WHERE id = ?", [user_id])
    db.conn.commit()
    site.clear_requests()
    report, db = sync(config, ["profiles"])
    assert profile_paths(site) == [str(user_id)] and report.requests == 1
    assert db["users"].get(user_id)["raw"] == kept["raw"]  # lossless: the last profile seen stays
    assert db["gone_users"].get(user_id)
    site.clear_requests()
    sync(config, ["profiles"])
    assert profile_paths(site) == []


def test_stale_profiles_are_refreshed_a_few_a_night_oldest_first(site, tmp_path):
    config = mirrored(site, tmp_path, refresh_days=30, refresh_per_run=2)
    _, db = sync(config, ["profiles"])
    users = sorted(row[0] for row in db.execute("SELECT id FROM users"))
    assert len(users) > 4
    for age, user_id in enumerate(users):  # all stale at once, as on the night refresh_days after the first
        db.execute("UPDATE users SET mirrored_at = ? WHERE id = ?", [f"2000-01-{age + 1:02d}T00:00:00Z", user_id])
    db.conn.commit()
    newcomer = site.editor.add_user("Second night")
    image_id = site.editor.add_images(1)[0]
    site.editor.edit_image(image_id, uploader_id=newcomer["id"], uploader=newcomer["name"])
    sync(config, ["images"])
    site.clear_requests()
    report, _ = sync(config, ["profiles"])
    assert profile_paths(site) == [str(newcomer["id"]), str(users[0]), str(users[1])] and report.requests == 3
    site.clear_requests()
    sync(config, ["profiles"])
    assert profile_paths(site) == [str(users[2]), str(users[3])]


def newest_activity_first(db, ids) -> list[int]:
    """``ids`` by the latest upload, comment or post each made, read row by row."""
    latest: dict[int, str] = {}
    for table, column in (("images", "uploader_id"), ("comments", "user_id"), ("posts", "user_id")):
        for user_id, created in db.execute(f"SELECT {column}, created_at FROM {table}"):
            if user_id in ids and created:
                latest[user_id] = max(created, latest.get(user_id, created))
    by_id = sorted(ids, reverse=True)
    return sorted(by_id, key=lambda u: latest.get(u, ""), reverse=True)  # stable: ties stay newest id first


@needs_postgres
def test_users_a_dump_names_get_their_profiles_a_few_a_night_newest_activity_first(site, tmp_path):
    """A dump's users are their id and name: the syncs after `mirror import-dump` fetch them,
    ``refresh_per_run`` a night, though the rows are younger than ``refresh_days``."""
    deleted = sorted(u for u in site.editor.users if u != 1)[4]  # an uploader, named by images
    dump = make_dump(site.editor, tmp_path)
    site.editor.delete_user(deleted)
    config = site_config(site, tmp_path, **{name: {"enabled": True} for name in ("images", "comments", "posts")},
                         profiles={"refresh_days": 30, "refresh_per_run": 5})
    db = open_database(config.database)
    asyncio.run(run_import(config, db, str(dump)))
    names_only = {row[0] for row in db.execute("SELECT id FROM users WHERE created_at IS NULL")} & named_users(db)
    assert len(names_only) > 10 and deleted in names_only
    order = newest_activity_first(db, names_only)
    asked: list[int] = []
    for night in range(len(names_only) // 5 + 1):
        site.clear_requests()
        report, _ = sync(config, ["profiles"])
        paths = list(map(int, profile_paths(site)))
        assert paths == order[len(asked):len(asked) + 5], night
        asked += paths
        assert any("users known by name only" in note for note in report.notes) == (len(asked) < len(names_only))
    assert sorted(asked) == sorted(names_only)
    found, gone = served_profiles(site, names_only)
    assert gone == {deleted}
    assert_rows_match(db, USERS, found, site.url, where=f"id IN ({','.join(map(str, found))})")
    site.clear_requests()
    sync(config, ["profiles"])
    assert profile_paths(site) == []  # the deleted account included: asked again after refresh_days
