"""`mirror sync comments` end to end against the local site on 127.0.0.1."""

from __future__ import annotations

import json
import math

from mirror.store import open_database
from mirror.store.state import load_cursor

from ..support.configs import site_config, site_images, site_pages, sync
from ..support.killing import kill_when, rerun, sync_command


def site_comments(site, query: str = "id.gte:0") -> list[dict]:
    """Every comment the site's search returns for ``query`` (it leaves hidden ones out)."""
    return [r for r in site_pages(site, "/search/comments", "comments", q=query) if r is not None]


def mirrored_comments(db) -> dict[int, dict]:
    return {row["id"]: row for row in db.query("SELECT * FROM comments")}


def assert_mirror_matches(db, records) -> None:
    """The mirror holds exactly ``records``, field by field, and each row keeps it raw."""
    rows = mirrored_comments(db)
    assert sorted(rows) == sorted(r["id"] for r in records)
    for record in records:
        row = rows[record["id"]]
        assert json.loads(row["raw"]) == record
        for field in ("image_id", "user_id", "author", "body", "created_at", "updated_at", "edited_at", "edit_reason"):
            assert row[field] == record[field], field
        assert row["stub"] is None and row["hidden_from_users"] == 0


def on_images(records, image_ids) -> list[dict]:
    return [r for r in records if r["image_id"] in image_ids]


def test_full_sync_mirrors_the_comments_of_the_mirrored_images(site, tmp_path):
    config = site_config(site, tmp_path, images={"query": "safe"})
    sync(config)
    site.clear_requests()
    report, db = sync(config, ["comments"])
    requests = len(site.requests)
    mirrored = {r["id"] for r in site_images(site, "safe") if "tags" in r}
    expected = on_images(site_comments(site), mirrored)
    assert len(expected) > 100
    assert_mirror_matches(db, expected)
    # One query per 50 mirrored images, each a page or two: never one request per image; and
    # one request for each of the audit's two batches.
    assert report.requests == requests <= math.ceil(len(mirrored) / 50) * 2 + 2
    assert {r["id"] for r in db["comments"].search("the", limit=1000)} <= {r["id"] for r in expected}


def test_scope_all_mirrors_every_comment_and_then_costs_one_request(site, tmp_path):
    config = site_config(site, tmp_path, comments={"scope": "all"})
    report, db = sync(config, ["comments"])
    expected = site_comments(site)
    assert_mirror_matches(db, expected)
    # A keyset walk: each page repeats only the comments of its oldest second.
    assert report.requests <= math.ceil(len(expected) / 45)
    site.clear_requests()
    report, db = sync(config, ["comments"])
    assert report.requests == len(site.requests) == 1 and report.fetched == 0


def test_second_sync_with_nothing_changed_costs_one_request_and_one_per_audited_batch(site, tmp_path):
    config = site_config(site, tmp_path)
    sync(config)
    sync(config, ["comments"])
    site.clear_requests()
    report, db = sync(config, ["comments"])
    assert report.requests == len(site.requests) == 1 + 2
    assert report.fetched == 0 and report.new == 0


def test_new_edited_and_hidden_comments_cost_requests_proportional_to_the_change(site, tmp_path):
    config = site_config(site, tmp_path, images={"query": "safe"}, comments={"audit_per_run": 0})
    sync(config)
    _, db = sync(config, ["comments"])
    before = mirrored_comments(db)
    mirrored = sorted({r["id"] for r in site_images(site, "safe") if "tags" in r})
    unmirrored = next(i for i, im in site.editor.images.items() if i not in mirrored and not im["hidden_from_users"])
    added = site.editor.add_comments(mirrored[0], 3, body="first!") + site.editor.add_comments(mirrored[5], 2)
    elsewhere = site.editor.add_comments(unmirrored, 2)
    edited, hidden = sorted(before)[:2], sorted(before)[2]
    for comment_id in edited:
        site.editor.edit_comment(comment_id, body="edited: fixed a typo", edit_reason="typo")
    site.editor.edit_comment(hidden, hidden=True)
    new_images = site.editor.add_images(3)
    for image_id in new_images:
        site.editor.edit_image(image_id, tags=["safe", "pony", "new"])
    new_image_comments = site.editor.add_comments(new_images[0], 4)
    sync(config)
    site.clear_requests()

    report, db = sync(config, ["comments"])

    # One page of changes since the last run, one batch for the three new images.
    assert report.requests == len(site.requests) == 2
    rows = mirrored_comments(db)
    assert set(added + new_image_comments) <= set(rows) and not set(elsewhere) & set(rows)
    assert report.new == len(added + new_image_comments) and report.updated >= 2  # the edits
    for comment_id in edited:
        assert rows[comment_id]["body"] == "edited: fixed a typo" and rows[comment_id]["edit_reason"] == "typo"
    # Search leaves hidden comments out: the kept body stays; without the audit it is not marked.
    assert rows[hidden]["raw"] == before[hidden]["raw"] and rows[hidden]["body"] == before[hidden]["body"]
    assert_mirror_matches(db, [r for r in on_images(site_comments(site), set(mirrored + new_images))]
                          + [json.loads(before[hidden]["raw"])])


def test_more_comments_in_one_second_than_a_page_are_all_mirrored(site, tmp_path):
    site.editor.clock = lambda: site.editor.date("2030-01-01T00:00:00Z")
    burst = site.editor.add_comments(7, 120)
    config = site_config(site, tmp_path, comments={"scope": "all"})
    report, db = sync(config, ["comments"])
    assert set(burst) <= set(mirrored_comments(db))
    assert_mirror_matches(db, site_comments(site))


def snapshot(db) -> dict:
    return {
        "comments": [tuple(r) for r in db.execute(
            "SELECT id, image_id, body, raw, stub, hidden_from_users, updated_at FROM comments ORDER BY id")],
        "covered": [r[0] for r in db.execute("SELECT image_id FROM image_progress WHERE resource = 'comments' ORDER BY 1")],
    }


def test_a_sync_killed_mid_walk_resumes_to_the_same_mirror(site, tmp_path):
    for image_id in list(site.editor.images)[:200:4]:
        site.editor.add_comments(image_id, 8)
    killed = site_config(site, tmp_path / "killed", polite={"requests_per_second": 10})
    sync(killed)
    command = sync_command(killed, tmp_path / "killed.toml", "comments")

    def mid_batch(db) -> bool:
        covered = db.execute("SELECT count(*) FROM image_progress").fetchone()[0]
        batch = (load_cursor(db, "comments").get("run") or {}).get("batch") or {}
        return covered >= 100 and bool(batch.get("walk"))

    kill_when(command, killed.database, mid_batch)
    partial = snapshot(open_database(killed.database))
    assert 0 < len(partial["covered"]) < len(site.editor.images) - 10

    rerun(command)
    whole = site_config(site, tmp_path / "whole")
    sync(whole)
    _, db = sync(whole, ["comments"])
    assert snapshot(open_database(killed.database)) == snapshot(db)


def test_the_audit_marks_comments_hidden_or_destroyed_since_they_were_mirrored(site, tmp_path):
    config = site_config(site, tmp_path, comments={"audit_per_run": 3})
    sync(config)
    _, db = sync(config, ["comments"])
    audited = [r[0] for r in db.execute("SELECT id FROM images ORDER BY id LIMIT 150")]
    before = mirrored_comments(db)
    on_first = sorted(c for c, row in before.items() if row["image_id"] in audited[:50])
    hidden, destroyed = on_first[0], on_first[1]
    site.editor.edit_comment(hidden, hidden=True)
    site.editor.edit_comment(destroyed, destroyed=True)
    sync(config, ["comments"])  # audits the second hundred and fifty images: nothing changed there
    site.clear_requests()

    report, db = sync(config, ["comments"])  # back to the first batches

    paths = [r.path for r in site.requests]
    # The changes walk, three counts, a re-read of the batch that differs, two lookups by id.
    reread = math.ceil((len(on_first) - 2) / 50)
    assert len(paths) == report.requests == 1 + 3 + reread + 2
    assert sorted(p for p in paths if "/comments/" in p) == sorted(f"/api/v1/json/comments/{c}"
                                                                  for c in (hidden, destroyed))
    rows = mirrored_comments(db)
    for comment_id in (hidden, destroyed):
        assert rows[comment_id]["hidden_from_users"] == 1
        assert rows[comment_id]["body"] == before[comment_id]["body"]
        assert rows[comment_id]["raw"] == before[comment_id]["raw"]
    assert json.loads(rows[hidden]["stub"])["body"] is None and rows[destroyed]["stub"] == "null"
    assert all(row["hidden_from_users"] == 0 for c, row in rows.items() if c not in (hidden, destroyed))
