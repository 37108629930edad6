"""`mirror sync galleries` end to end against the local site on 127.0.0.1."""

from __future__ import annotations

import json

from mirror.store import open_database

from ..support.configs import site_config, site_images, site_pages, sync
from ..support.killing import kill_when, rerun, sync_command


def site_galleries(site, query: str = "id.gte:0") -> dict[int, dict]:
    return {g["id"]: g for g in site_pages(site, "/search/galleries", "galleries", q=query)}


def site_gallery_order(site, gallery_id: int) -> list[int]:
    """The gallery's images as the site lists them with sf=gallery_id:N&sd=asc, hidden ones included."""
    return [r["id"] for r in site_pages(site, "/search/images", "images", q=f"gallery_id:{gallery_id}",
                                   sf=f"gallery_id:{gallery_id}", sd="asc", **{"del": "1"})]


def mirrored_order(db, gallery_id: int) -> list[int]:
    return [r[0] for r in db.execute("SELECT image_id FROM gallery_images WHERE gallery_id = ? ORDER BY position",
                                     [gallery_id])]


def assert_mirror_matches(db, site, expected: dict[int, dict]) -> None:
    """The mirror holds exactly these galleries, field by field, each with the site's image order."""
    rows = {row["id"]: row for row in db.query("SELECT * FROM galleries")}
    assert sorted(rows) == sorted(expected)
    for gallery_id, record in expected.items():
        row = rows[gallery_id]
        assert json.loads(row["raw"]) == record
        assert (row["title"], row["description"], row["spoiler_warning"], row["thumbnail_id"]) == (
            record["title"], record["description"], record["spoiler_warning"], record["thumbnail_id"])
        # The 2024 responses name the creator user/user_id; the columns keep the source's names.
        assert (row["creator"], row["creator_id"]) == (record.get("creator", record.get("user")),
                                                       record.get("creator_id", record.get("user_id")))
        order = site_gallery_order(site, gallery_id)
        assert mirrored_order(db, gallery_id) == order
        stored = {r[0] for r in db.execute(f"SELECT id FROM images WHERE id IN ({','.join('?' * len(order))})", order)}
        assert stored == set(order)


def holding(site, image_ids: set[int]) -> dict[int, dict]:
    return {i: g for i, g in site_galleries(site).items() if set(site.editor.galleries[i]["image_ids"]) & image_ids}


def test_scope_all_mirrors_every_gallery_in_gallery_order(site, tmp_path):
    config = site_config(site, tmp_path, galleries={"scope": "all"})
    report, db = sync(config, ["galleries"])
    expected = site_galleries(site)
    assert len(expected) == len(site.editor.galleries) > 10
    assert_mirror_matches(db, site, expected)
    # One page of galleries, then one page of images per gallery (none holds more than 50).
    assert report.requests == 1 + len(expected)
    assert {r["id"] for r in db["galleries"].search("a*", limit=100)} <= set(expected)


def test_scope_mirrored_follows_the_mirrored_images_only(site, tmp_path):
    config = site_config(site, tmp_path, images={"query": "explicit"})
    sync(config)
    site.clear_requests()
    report, db = sync(config, ["galleries"])
    explicit = {r["id"] for r in site_images(site, "explicit") if "tags" in r}
    expected = holding(site, explicit)
    assert 0 < len(expected) < len(site.editor.galleries)
    assert_mirror_matches(db, site, expected)
    # One search per 50 mirrored images, one walk per gallery found.
    assert report.requests == -(-len(explicit) // 50) + len(expected)
    # The other images of those galleries are stored but do not count as mirrored: the next run
    # does not go on to the galleries that hold them.
    others = db.execute("SELECT count(*) FROM gallery_only_images").fetchone()[0]
    assert others > 0
    site.clear_requests()
    report, db = sync(config, ["galleries"])
    assert report.requests == len(site.requests) == 1
    assert sorted(r["id"] for r in db["galleries"].rows) == sorted(expected)


def test_second_sync_with_nothing_changed_costs_one_request(site, tmp_path):
    config = site_config(site, tmp_path)
    sync(config)
    sync(config, ["galleries"])
    site.clear_requests()
    report, db = sync(config, ["galleries"])
    assert report.requests == len(site.requests) == 1
    assert report.fetched == 0


def test_edited_and_new_galleries_cost_requests_proportional_to_the_change(site, tmp_path):
    config = site_config(site, tmp_path, images={"query": "explicit"})
    sync(config)
    _, db = sync(config, ["galleries"])
    explicit = sorted(r["id"] for r in site_images(site, "explicit") if "tags" in r)
    others = sorted(i for i, im in site.editor.images.items() if not im["hidden_from_users"] and i not in explicit)
    held = sorted(r["id"] for r in db["galleries"].rows)
    grown, shrunk, retitled, reordered = held[:4]
    editor = site.editor
    editor.edit_gallery(grown, add=[i for i in others[:60] if i not in editor.galleries[grown]["image_ids"]][:3])
    editor.edit_gallery(shrunk, remove=editor.galleries[shrunk]["image_ids"][:1])
    editor.edit_gallery(retitled, title="Retitled gallery")
    reorder = list(reversed(editor.galleries[reordered]["image_ids"]))
    editor.edit_gallery(reordered, order=reorder)
    fresh = editor.add_gallery([others[0], explicit[0]], title="Fresh with a mirrored image")
    editor.add_gallery(others[1:4], title="Fresh without one")
    site.clear_requests()

    report, db = sync(config, ["galleries"])

    # One page of changed galleries; one membership test for the two not held, which says one
    # of them holds a mirrored image, then one each to tell which; one walk per gallery changed.
    assert report.requests == len(site.requests) == 1 + 3 + 4
    for gallery_id in (grown, shrunk, retitled, fresh):
        assert mirrored_order(db, gallery_id) == site_gallery_order(site, gallery_id)
    assert db["galleries"].get(retitled)["title"] == "Retitled gallery"
    assert sorted(r["id"] for r in db["galleries"].rows) == sorted(held + [fresh])
    # A reorder leaves updated_at alone on the real site: it waits for the rolling re-walk.
    assert mirrored_order(db, reordered) == list(reversed(reorder))
    rewalk = site_config(site, tmp_path, images={"query": "explicit"},
                         galleries={"rewalk_after_days": 0, "rewalk_per_run": len(held) + 1})
    sync(rewalk, ["galleries"])
    assert_mirror_matches(db, site, holding(site, set(explicit)))


def test_a_deleted_gallery_and_a_hidden_member_are_kept_as_last_seen(site, tmp_path):
    config = site_config(site, tmp_path, galleries={"scope": "all"})
    _, db = sync(config, ["galleries"])
    editor = site.editor
    deleted, holder, *others = sorted(g for g in editor.galleries if len(editor.galleries[g]["image_ids"]) >= 2)
    kept_order = mirrored_order(db, deleted)
    kept_row = db["galleries"].get(deleted)
    hidden = editor.galleries[holder]["image_ids"][1]
    editor.delete_gallery(deleted)
    editor.hide_image(hidden)
    # Every gallery is due a rewalk: one lookup by id (one page of 50) tells which are gone.
    rewalk = site_config(site, tmp_path, galleries={"scope": "all", "rewalk_after_days": 0, "rewalk_per_run": 50})
    site.clear_requests()

    report, db = sync(rewalk, ["galleries"])

    rechecked = min(50, len(editor.galleries) + 1)
    assert report.requests == len(site.requests) == 1 + 1 + (rechecked - 1)  # changes, lookup, walks
    assert db.execute("SELECT id FROM gone_galleries").fetchall() == [(deleted,)]
    assert mirrored_order(db, deleted) == kept_order and db["galleries"].get(deleted) == kept_row
    assert hidden in mirrored_order(db, holder)
    assert mirrored_order(db, holder) == site_gallery_order(site, holder)
    assert db["images"].get(hidden)["hidden_from_users"] == 1
    present = site_galleries(site)
    assert {r["id"] for r in db["galleries"].rows} == set(present) | {deleted}
    for gallery_id in present:
        assert mirrored_order(db, gallery_id) == site_gallery_order(site, gallery_id)


def snapshot(db) -> dict:
    return {
        "galleries": [tuple(r) for r in db.execute("SELECT id, raw, title, creator_id FROM galleries ORDER BY id")],
        "members": [tuple(r) for r in db.execute("SELECT * FROM gallery_images ORDER BY gallery_id, position")],
        "images": [tuple(r) for r in db.execute("SELECT id, raw FROM images ORDER BY id")],
        "walks": [tuple(r) for r in db.execute("SELECT gallery_id, due, images FROM gallery_walks ORDER BY 1")],
    }


def test_a_sync_killed_mid_walk_resumes_to_the_same_mirror(site, tmp_path):
    visible = sorted(i for i, im in site.editor.images.items() if not im["hidden_from_users"])
    for n in range(20):
        site.editor.add_gallery(visible[n:n + 60], title=f"Big gallery {n}")
    killed = site_config(site, tmp_path / "killed", polite={"requests_per_second": 20}, galleries={"scope": "all"})
    command = sync_command(killed, tmp_path / "killed.toml", "galleries")
    kill_when(command, killed.database,
              lambda db: db.execute("SELECT count(*) FROM gallery_walks WHERE due = 0").fetchone()[0] >= 8)
    partial = snapshot(open_database(killed.database))
    assert 8 <= sum(1 for w in partial["walks"] if w[1] == 0) < len(site.editor.galleries)

    rerun(command)
    _, whole = sync(site_config(site, tmp_path / "whole", galleries={"scope": "all"}), ["galleries"])
    assert snapshot(open_database(killed.database)) == snapshot(whole)
    assert_mirror_matches(whole, site, site_galleries(site))
