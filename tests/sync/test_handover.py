"""A mirror handed over at time T (:mod:`mirror.sync.handover`) syncs as one made by a first sync at T.

A dump import holds the records as they stood at T and none of the crawlers' bookkeeping. The
tests make such a mirror from a real one (a copy with the bookkeeping deleted), hand it over,
and hold it against the original: the same cursors, the same requests, the same records.
"""

from __future__ import annotations

import pytest

from mirror.dates import utc_text
from mirror.localsite.board.editor import BoardEditor
from mirror.localsite.http.server import SiteServer
from mirror.store import open_database
from mirror.store.state import all_cursors
from mirror.sync.handover import hand_over
from mirror.wiring import crawler_options

from ..support.configs import RESOURCES, site_config, sync

# What a dump import does not write: the crawlers' cursors, runs and progress.
BOOKKEEPING = ("sync_state", "sync_runs", "image_progress", "gallery_walks", "topic_progress", "featured_images")
# Every resource, with the scopes as configured by default (the 17-request nightly sync) or whole.
SCOPES = {"mirrored": {}, "all": {"scope": "all"}}
# Where the audits have got to, which a handed-over mirror starts afresh.
AUDITS = ("audit_after", "audited")


def sections(scope: str) -> dict:
    return {name: {"enabled": True, **(SCOPES[scope] if name in ("comments", "galleries", "tags") else {})}
            for name in RESOURCES}


@pytest.fixture
def small_site():
    with SiteServer(BoardEditor.generate(seed=5, images=60)) as server:
        yield server


@pytest.fixture(params=list(SCOPES))
def mirrors(request, small_site, tmp_path):
    """A mirror made by a full sync that started at T, and a copy of its records handed over at T."""
    as_of = utc_text()
    original_config = site_config(small_site, tmp_path / "original", **sections(request.param))
    _, original = sync(original_config, RESOURCES)
    copy_config = site_config(small_site, tmp_path / "copy", **sections(request.param))
    copy = open_database(copy_config.database)
    original.conn.backup(copy.conn)
    with copy.atomic():
        for table in BOOKKEEPING:
            copy.execute(f"DELETE FROM {table}")
    crawls = {name: crawler_options(copy_config, name) for name in RESOURCES}
    handed = hand_over(copy, as_of, crawls, filter_id=copy_config.site.filter_id)
    assert handed == ["images", "tags", "comments", "galleries", "forums", "posts"]
    return (original_config, original), (copy_config, copy), as_of


def requests_of(site, config) -> int:
    site.clear_requests()
    sync(config, RESOURCES)
    return len(site.requests)


def records(db) -> dict[str, list]:
    """Every record the mirror holds (the ``raw`` of every table that keeps one), and the links."""
    held = {table: db.execute(f"SELECT raw FROM [{table}] ORDER BY raw").fetchall()
            for table in db.table_names() if "raw" in db[table].columns_dict}
    held["image_tags"] = db.execute("SELECT * FROM image_tags ORDER BY image_id, tag_id").fetchall()
    held["gallery_images"] = db.execute("SELECT * FROM gallery_images ORDER BY gallery_id, position").fetchall()
    return held


def test_the_handed_over_cursors_are_those_a_first_sync_at_t_leaves(mirrors):
    (_, original), (_, copy), as_of = mirrors
    theirs, ours = all_cursors(original), all_cursors(copy)
    assert set(ours) == {"images", "tags", "comments", "galleries", "forums", "posts"}
    for name, cursor in ours.items():
        expected = {key: value for key, value in theirs[name].items() if key not in AUDITS}
        if "last_start" in expected:
            expected["last_start"] = as_of
        assert {key: value for key, value in cursor.items() if key not in AUDITS} == expected, name
    for sql in ("SELECT resource, image_id FROM image_progress ORDER BY 1, 2",
                "SELECT gallery_id, due, images FROM gallery_walks ORDER BY 1",
                "SELECT forum_short_name, slug, post_count, last_replied_to_at, next_page FROM topic_progress ORDER BY 1, 2"):
        assert copy.execute(sql).fetchall() == original.execute(sql).fetchall(), sql


def change_the_site(editor: BoardEditor) -> int:
    """A little of everything: images edited and added, comments, posts, a topic, tags, galleries."""
    first, second, third = sorted(editor.images)[5:8]
    editor.edit_image(first, tags=[*editor.images[first]["tags"], "handed over"])
    editor.edit_image(second, score=editor.images[second]["score"] + 3)
    new_image, _ = editor.add_images(2)
    newcomer = editor.add_user("newcomer")["id"]
    editor.add_comments(third, 2)
    editor.add_comments(new_image, 1, user_id=newcomer)
    editor.edit_comment(min(editor.comments), body="an edited comment")
    topic = min(editor.topics)
    editor.add_posts(topic, 2)
    editor.edit_post(sorted(editor.posts)[1], body="an edited post")
    editor.add_topic("dis", "A topic after the dump", posts=3)
    editor.alias_tag("handing", editor.images[first]["tags"][0])
    gallery = min(editor.galleries)
    editor.edit_gallery(gallery, add=[new_image])
    return new_image


def test_after_a_change_the_handed_over_mirror_asks_what_the_original_asks_and_ends_the_same(small_site, mirrors):
    (original_config, original), (copy_config, copy), _ = mirrors
    new_image = change_the_site(small_site.editor)

    asked_by_original = requests_of(small_site, original_config)
    asked_by_copy = requests_of(small_site, copy_config)

    print(f"after a change: original {asked_by_original} requests, handed over {asked_by_copy}")
    # One more: the featured image of the day, which the original asked for on its first sync today.
    assert asked_by_copy == asked_by_original + 1
    assert records(copy) == records(original)
    assert copy.execute("SELECT count(*) FROM comments WHERE image_id = ?", [new_image]).fetchone()[0] == 1
    assert copy.execute("SELECT count(*) FROM topics WHERE title = 'A topic after the dump'").fetchone()[0] == 1
    assert copy.execute("SELECT count(*) FROM users WHERE name = 'newcomer'").fetchone()[0] == 1


def test_a_sync_with_nothing_changed_right_after_the_hand_over_costs_what_a_nightly_one_costs(small_site, mirrors):
    (original_config, _), (copy_config, _), _ = mirrors
    nightly = requests_of(small_site, original_config)
    handed_over = requests_of(small_site, copy_config)
    print(f"nothing changed: original {nightly} requests, handed over {handed_over}")
    assert handed_over == nightly + 1  # the featured image of the day, again
