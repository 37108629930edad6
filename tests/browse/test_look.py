"""The board's look in `mirror browse` (issue 39): its pages in the board's own frame, grids of boxes
of one size with the counts under each, spoilers as the filter the mirror was synced through, the
authors linked and the anonymous named as the site names them, a tag's implications by name, and
the duplicates page in a real browser (its screenshot for the README)."""

from __future__ import annotations

import asyncio
import json
import re
import time

import pytest
from mirror.browse.cards import filter_in_use
from mirror.localsite.board.editor import BoardEditor
from mirror.localsite.http.server import SiteServer

from ..support.art import artworks, copies, png, upload
from ..support.ports import a_closed_port
from ..support.browsing import assert_boxed_in_the_browser, browse_client, browsing, shown_images
from ..support.configs import RESOURCES, mirror_config, sync, write_config
from .test_image_page import screenshot

CARD = re.compile(r'<figure class="booru-image" data-image-id="(\d+)">(.*?)</figure>', re.DOTALL)
PORTRAIT = next(art for art in artworks("archived") if art.transparent)


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    """A board with pictures, a drawing and its re-encoded copy, comments by a user and by nobody,
    mirrored through its Everything filter (as `mirror demo` mirrors it)."""
    tmp = tmp_path_factory.mktemp("look")
    editor = BoardEditor.generate(seed=8, images=30, with_pictures=True)
    editor.processing_delay = 0.0
    original = upload(editor, png(PORTRAIT.picture()), PORTRAIT.name)
    copy = upload(editor, copies(PORTRAIT)["JPEG q70"], f"copy of {PORTRAIT.name}")
    shown = next(i for i, im in sorted(editor.images.items()) if not im["hidden_from_users"] and im["format"] == "png")
    commenter = next(iter(editor.users))
    editor.add_comments(shown, 1, body="a comment by a user", user_id=commenter)
    editor.add_comments(shown, 1, body="a comment by nobody")
    time.sleep(0.2)  # the uploads are processed after processing_delay
    with SiteServer(editor) as site:
        config = mirror_config(site, tmp, editor.everything_filter_id)
        _, db = sync(config, RESOURCES)
    return {"config": config, "db": db, "shown": shown, "original": original, "copy": copy, "tmp": tmp,
            "commenter": commenter}


def get(config, path: str, cookies: dict | None = None) -> tuple[int, str]:
    async def run():
        client = await browse_client(config)
        response = await client.get(path, cookies=cookies or {})
        return response.status_code, response.text

    return asyncio.run(run())


def test_board_pages_are_in_the_boards_frame_and_datasettes_pages_in_datasettes(board):
    config, db, shown = board["config"], board["db"], board["shown"]
    tag_id, = db.execute("SELECT tag_id FROM image_tags LIMIT 1").fetchone()
    host = config.base_url.split("//", 1)[1].rstrip("/")
    for path in ("/", "/-/booru?q=safe", f"/-/image/{shown}", f"/-/image/{shown}/history", f"/-/tag/{tag_id}",
                 "/-/tags", "/-/forums", "/-/duplicates", "/-/changes"):
        status, html = get(config, path)
        assert status == 200, path
        assert '<body class="booru-board">' in html, path
        assert re.search(rf'<a class="booru-site-name" href="/"[^>]*>{re.escape(host)}</a>', html), path
        menu = re.search(r'<header><nav>.*?</header>', html, re.DOTALL).group(0)
        for href in ("/-/booru", "/-/tags", "/-/forums", "/-/galleries", "/-/duplicates", "/-/changes", "/mirror"):
            assert f'href="{href}"' in menu, (path, href)
        assert 'class="crumbs"' not in html and "Powered by" not in html, path  # Datasette's blue bar, its footer
        assert '<p class="booru-footer">' in html, path
    for path in ("/mirror", "/mirror/images", "/-/tables"):  # Datasette's own pages keep Datasette's frame
        html = get(config, path)[1]
        assert "Powered by" in html and "booru-site-name" not in html, path


def test_grids_show_counts_under_each_box_and_the_attribution_only_on_the_image_page(board):
    config, db, shown = board["config"], board["db"], board["shown"]
    html = get(config, "/")[1]
    cards = CARD.findall(html)
    assert cards
    for image_id, inner in cards:
        assert "booru-source" not in inner and "booru-artists" not in inner and " on 127.0.0.1" not in inner
        assert inner.index('class="booru-box"') < inner.index('class="booru-counts"')  # the counts under it
    source = db.execute("SELECT source_url FROM images WHERE id = ?", [shown]).fetchone()[0]
    page = get(config, f"/-/image/{shown}")[1]
    assert 'class="booru-attribution"' in page and (not source or source in page)


def test_spoilers_follow_the_filter_the_mirror_was_synced_through(board):
    config, db = board["config"], board["db"]
    everything, = db.execute("SELECT id FROM filters WHERE name = 'Everything' AND system").fetchone()
    default, = db.execute("SELECT id FROM filters WHERE name = 'Default' AND system").fetchone()
    html = get(config, "/")[1]
    assert 'class="booru-spoilered"' not in html and "<b>Everything</b>" in html
    assert f'<option value="{everything}" selected>' in html
    chosen = get(config, "/", {"booru_filter": str(default)})[1]  # the reader picks another
    assert "<b>Default</b>" in chosen
    cursor = db.execute("SELECT cursor FROM sync_state WHERE name = 'images'").fetchone()[0]
    try:  # a mirror synced with no filter_id saw the board through the site's Default
        db.execute("UPDATE sync_state SET cursor = ? WHERE name = 'images'",
                   [json.dumps({**json.loads(cursor), "filter_id": None})])
        assert filter_in_use(db.conn, None).name == "Default"
        db.execute("UPDATE sync_state SET cursor = ? WHERE name = 'images'",
                   [json.dumps({**json.loads(cursor), "filter_id": 987654})])
        unknown = filter_in_use(db.conn, None)
        assert unknown.id == 987654 and not unknown.spoiler_tags  # not kept: nothing to spoiler by
    finally:
        db.execute("UPDATE sync_state SET cursor = ? WHERE name = 'images'", [cursor])
        db.conn.commit()


def test_authors_link_to_their_pages_and_the_anonymous_are_named_as_the_site_names_them(board):
    config, db, shown, commenter = board["config"], board["db"], board["shown"], board["commenter"]
    html = get(config, f"/-/image/{shown}")[1]
    name, = db.execute("SELECT author FROM comments WHERE image_id = ? AND user_id = ?", [shown, commenter]).fetchone()
    assert f'<a class="booru-author" href="/-/user/{commenter}">{name}</a>' in html
    pony, = db.execute("SELECT author FROM comments WHERE image_id = ? AND user_id IS NULL", [shown]).fetchone()
    assert pony.startswith("Background Pony #") and f'<b class="booru-author">{pony}</b>' in html
    anonymous, = db.execute("SELECT id FROM images WHERE uploader_id IS NULL AND NOT hidden_from_users").fetchone()
    page = get(config, f"/-/image/{anonymous}")[1]
    assert "<dt>uploader</dt>" not in page  # no empty row
    assert re.search(r'uploaded by <b class="booru-author">Background Pony</b>', page)
    uploaded, uploader, user = db.execute("SELECT id, uploader_id, uploader FROM images WHERE uploader_id IS NOT NULL "
                                          "AND NOT hidden_from_users").fetchone()
    assert f'uploaded by <a class="booru-author" href="/-/user/{uploader}">{user}</a>' in get(
        config, f"/-/image/{uploaded}")[1]
    forum, topic, poster = db.execute("SELECT forum_short_name, topic_slug, user_id FROM posts p WHERE user_id IN "
                                      "(SELECT id FROM users) LIMIT 1").fetchone()
    assert f'<a class="booru-author" href="/-/user/{poster}">' in get(config, f"/-/topic/{forum}/{topic}")[1]


def test_a_tags_implications_and_aliases_are_named_and_link_to_their_tags(board):
    config, db = board["config"], board["db"]
    tag_id, implied = db.execute("SELECT id, implied_tags FROM tags WHERE implied_tags LIKE '%+%' LIMIT 1").fetchone()
    slug = next(s for s in json.loads(implied) if "+" in s)  # a tag of two words: "earth+pony"
    target, name = db.execute("SELECT id, name FROM tags WHERE slug = ?", [slug]).fetchone()
    html = get(config, f"/-/tag/{tag_id}")[1]
    implies = re.search(r"<b>implies</b>(.*?)</p>", html, re.DOTALL).group(1)
    assert f'href="/-/tag/{target}">{name}</a>' in implies and slug not in implies
    by = get(config, f"/-/tag/{target}")[1]
    assert f'href="/-/tag/{tag_id}">' in re.search(r"<b>implied by</b>(.*?)</p>", by, re.DOTALL).group(1)


def test_in_a_real_browser_the_grid_the_image_page_and_the_duplicates_page(board, browser):
    config, db, tmp = board["config"], board["db"], board["tmp"]
    with browsing(write_config(config, tmp / "mirror.toml")) as url:
        tab = browser.new_page(viewport={"width": 1280, "height": 900})
        tab.goto(url)
        assert_boxed_in_the_browser(shown_images(tab), db)
        tab.goto(f"{url}-/duplicates")
        group = tab.locator(".booru-group-block").first
        ids = {int(i) for i in group.evaluate("b => [...b.querySelectorAll('figure')].map(f => f.dataset.imageId)")}
        assert {board["original"], board["copy"]} <= ids
        cards = shown_images(tab)
        assert all(card["width"] and card["width"] > 0 for card in cards)
        assert_boxed_in_the_browser(cards, db)
        tab.close()


def test_datasettes_own_pages_draw_in_a_datasette_with_no_database():
    """The frame is asked for on every page any Datasette draws once the plugin is installed."""
    from datasette.app import Datasette

    async def run() -> int:
        datasette = Datasette([])
        datasette.remove_database("_memory")
        await datasette.invoke_startup()
        return (await datasette.client.get("/-/tables")).status_code

    assert asyncio.run(run()) == 200


def test_in_a_real_browser_the_demos_duplicates_page_groups_its_planted_copies(browser, tmp_path):
    """What a newcomer sees after `mirror demo`: its crop, border and half-size JPEG of one
    painting grouped with it, each with its distance, and its recolour in no group with them."""
    import os
    import sqlite3
    import subprocess
    import sys

    data = tmp_path / "data"  # run as a user runs it: the browser's event loop holds this thread
    result = subprocess.run([sys.executable, "-m", "mirror.cli", "demo", "--images", "12", "--data", str(data),
                             "--port", str(a_closed_port())], capture_output=True, text=True, timeout=300,
                            env={**os.environ, "MIRROR_PICTURE_CACHE": str(tmp_path / "pictures")})
    assert result.returncode == 0, result.stdout + result.stderr
    planted = sqlite3.connect(data / "mirror.db").execute(
        "SELECT id, description FROM images WHERE description LIKE 'A copy of image #%' ORDER BY id").fetchall()
    original = int(re.search(r"#(\d+)", planted[0][1]).group(1))
    recolour = next(image_id for image_id, text in planted if "recoloured" in text)
    with browsing(data / "mirror.toml") as url:
        tab = browser.new_page(viewport={"width": 1280, "height": 720})
        tab.goto(f"{url}-/duplicates")
        blocks = tab.locator(".booru-group-block")
        shown = [{int(i) for i in blocks.nth(n).evaluate(
            "b => [...b.querySelectorAll('figure')].map(f => f.dataset.imageId)")} for n in range(blocks.count())]
        assert {original} | {image_id for image_id, _ in planted if image_id != recolour} in shown, shown
        assert not any(recolour in group and original in group for group in shown)
        assert "distance" in tab.locator(".booru-group-block").first.inner_text()
        screenshot(tab, "browse-duplicates.png")
        tab.close()
