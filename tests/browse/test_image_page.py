"""`/-/image/N` in `mirror browse`: the image as the board shows it, offline, on a mirror of the
local site with real pictures: the picture, its attribution, tags by category with their counts,
description and comments as text, galleries with their neighbours, its state, and arrow keys."""

from __future__ import annotations

import asyncio
import html as html_text
import json
import os
import re
from urllib.parse import quote

import pytest

from mirror.browse.markup import IMAGE_REFERENCE
from mirror.localsite.board.editor import BoardEditor
from mirror.localsite.http.server import SiteServer

from ..support.browsing import assert_boxed_in_the_browser, browse_client, browsing, shown_images
from ..support.configs import RESOURCES, mirror_config, sync, write_config


@pytest.fixture(scope="module")
def mirrored(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("image-page")
    editor = BoardEditor.generate(seed=8, images=30, with_pictures=True)
    shown = next(i for i, im in sorted(editor.images.items()) if not im["hidden_from_users"] and im["format"] == "png")
    editor.add_comments(shown, 2, body='<script>window.pwned=1</script> a comment')
    editor.edit_image(shown, description="line one\n<b>not bold</b>")
    gone = next(i for i, im in sorted(editor.images.items()) if i > shown and not im["hidden_from_users"])
    editor.merge_image(gone, shown)
    with SiteServer(editor) as site:
        config = mirror_config(site, tmp, editor.everything_filter_id)
        _, db = sync(config, RESOURCES)
    return config, db, shown, gone, tmp


def page(config, path: str) -> tuple[int, str, bytes]:
    async def get():
        client = await browse_client(config)
        response = await client.get(path)
        return response.status_code, response.text, response.content

    return asyncio.run(get())


def test_the_image_page_shows_the_picture_its_attribution_tags_text_and_comments(mirrored):
    config, db, shown, gone, tmp = mirrored
    status, html, _ = page(config, f"/-/image/{shown}")
    assert status == 200
    record = json.loads(db.execute("SELECT raw FROM images WHERE id = ?", [shown]).fetchone()[0])
    assert f'src="/-/media/picture/{shown}"' in html
    status, _, picture = page(config, f"/-/media/picture/{shown}")
    kept = db.execute("SELECT path FROM downloads WHERE image_id = ? AND representation = 'full'", [shown]).fetchone()[0]
    assert status == 200 and picture == (config.database.parent / "files" / kept).read_bytes()
    for name in record["tags"]:
        assert f">{name}</a>" in html.replace("&#39;", "'").replace("&amp;", "&"), name
    ratings = html.index('class="booru-tags booru-tags-rating"')
    assert ratings < html.index("booru-tags-", ratings + 10) or "booru-tags-" not in html[ratings + 10:]
    assert "&lt;b&gt;not bold&lt;/b&gt;" in html and "<b>not bold</b>" not in html  # text, never markup
    assert html.count('class="booru-comment"') == db.execute("SELECT count(*) FROM comments WHERE image_id = ?",
                                                             [shown]).fetchone()[0]
    assert "&lt;script&gt;window.pwned=1&lt;/script&gt;" in html and "<script>window.pwned" not in html
    assert f'href="{config.base_url}/images/{shown}"' in html  # its page on the site
    assert f"/mirror/images/{shown}.json" in html and f'href="/-/image/{shown}/history"' in html


def test_an_image_gone_from_the_site_says_why_and_links_where_it_went(mirrored):
    config, db, shown, gone, tmp = mirrored
    status, html, _ = page(config, f"/-/image/{gone}")
    assert status == 200 and "merged into" in html and f'href="/-/image/{shown}"' in html


def test_an_image_without_files_shows_a_placeholder_with_the_sites_link(mirrored):
    config, db, shown, gone, tmp = mirrored
    db.execute("UPDATE downloads SET status = 'failed' WHERE image_id = ?", [shown])
    db.conn.commit()
    try:
        status, html, _ = page(config, f"/-/image/{shown}")
        assert "not downloaded" in html and f'href="{config.base_url}/images/{shown}"' in html
    finally:
        db.execute("UPDATE downloads SET status = 'done' WHERE image_id = ?", [shown])
        db.conn.commit()
    assert page(config, "/-/image/999999")[0] == 404


def test_in_a_real_browser_the_picture_loads_and_the_arrow_keys_move(mirrored, browser):
    config, db, shown, gone, tmp = mirrored
    with browsing(write_config(config, tmp / "mirror.toml")) as url:
        tab = browser.new_page(viewport={"width": 1200, "height": 900})
        tab.goto(f"{url}-/image/{shown}")
        tab.wait_for_load_state("networkidle")
        assert tab.evaluate("() => document.querySelector('img.booru-full').naturalWidth") > 0
        caption = tab.inner_text(".booru-attribution")
        assert "on the site" in caption and ("by " in caption or "artist unknown" in caption)
        screenshot(tab, "browse-image.png")
        following = db.execute("SELECT min(id) FROM images WHERE id > ?", [shown]).fetchone()[0]
        tab.keyboard.press("ArrowRight")
        tab.wait_for_url(re.compile(rf"/-/image/{following}$"))
        tab.keyboard.press("ArrowLeft")
        tab.wait_for_url(re.compile(rf"/-/image/{shown}$"))
        assert tab.evaluate("() => window.pwned || null") is None
        tab.close()


def test_in_a_real_browser_every_grid_shows_its_pictures_with_their_attribution(mirrored, browser):
    """The tag, user and gallery pages: each card's thumbnail loads from the kept files into a box of
    the grid's one size, its counts under it, linked to the image's page where its attribution is;
    a thread's posts read in order."""
    config, db, shown, gone, tmp = mirrored
    tag_id, = db.execute("SELECT it.tag_id FROM image_tags it JOIN downloads d ON d.image_id = it.image_id "
                         "AND d.representation = 'thumb' AND d.status = 'done' AND d.path NOT LIKE '%.webm' "
                         "JOIN tags t ON t.id = it.tag_id AND t.category IS NULL "
                         "GROUP BY it.tag_id ORDER BY count(*) DESC LIMIT 1").fetchone()
    user_id, = db.execute("SELECT uploader_id FROM images WHERE uploader_id IS NOT NULL "
                          "GROUP BY 1 ORDER BY count(*) DESC LIMIT 1").fetchone()
    gallery_id, = db.execute("SELECT gallery_id FROM gallery_images GROUP BY 1 ORDER BY count(*) DESC").fetchone()
    forum, topic = db.execute("SELECT forum_short_name, topic_slug FROM posts GROUP BY 1, 2 "
                              "ORDER BY count(*) DESC").fetchone()
    with browsing(write_config(config, tmp / "mirror.toml")) as url:
        tab = browser.new_page(viewport={"width": 1200, "height": 900})
        for path in (f"-/tag/{tag_id}", f"-/user/{user_id}", f"-/gallery/{gallery_id}"):
            tab.goto(url + path)
            cards = shown_images(tab)
            pictures = [card for card in cards if card["width"] is not None]
            assert pictures and all(card["width"] > 0 for card in pictures), path
            assert_boxed_in_the_browser(cards, db)
            if path.startswith("-/tag/"):
                screenshot(tab, "browse-tag.png")
        tab.goto(f"{url}-/topic/{forum}/{topic}")
        posts = tab.evaluate("() => [...document.querySelectorAll('.booru-text')].map(p => p.innerText)")
        kept = [r[0] for r in db.execute("SELECT body FROM posts WHERE forum_short_name = ? AND topic_slug = ? "
                                         "AND body IS NOT NULL ORDER BY created_at, id LIMIT 25", [forum, topic])]
        posts = [post for post in posts if post != "(hidden on the site)"]
        assert len(posts) == len(kept)
        for post, body in zip(posts, kept):  # in order, with their words as written
            assert all(word in post for word in IMAGE_REFERENCE.sub("", body).split()), (post, body)
        referenced = {int(m.group(1)) for body in kept for m in IMAGE_REFERENCE.finditer(body)}
        drawn = set(tab.evaluate("() => [...document.querySelectorAll('.booru-ref-embed, a.booru-ref')].map("
                                 "e => Number(e.dataset.imageId || e.getAttribute('href').split('/').pop()))"))
        assert referenced and referenced <= drawn
        screenshot(tab, "browse-thread.png")
        tab.close()


def test_in_a_real_browser_an_image_without_files_shows_the_placeholder(mirrored, browser):
    config, db, shown, gone, tmp = mirrored
    db.execute("UPDATE downloads SET status = 'failed' WHERE image_id = ?", [shown])
    db.conn.commit()
    try:
        with browsing(write_config(config, tmp / "mirror.toml")) as url:
            tab = browser.new_page()
            tab.goto(f"{url}-/image/{shown}")
            tab.wait_for_load_state("networkidle")
            assert tab.evaluate("() => document.querySelector('img.booru-full')") is None
            placeholder = tab.locator(".booru-full-missing")
            assert "not downloaded" in placeholder.inner_text()
            links = tab.evaluate("() => [...document.querySelectorAll('.booru-full-missing a')].map(a => a.href)")
            assert f"{config.base_url}/images/{shown}" in links
            tab.close()
    finally:
        db.execute("UPDATE downloads SET status = 'done' WHERE image_id = ?", [shown])
        db.conn.commit()


def screenshot(tab, name: str) -> None:
    """The screenshots of docs/browse.md are made here: MIRROR_SCREENSHOTS=docs pytest tests/browse."""
    if os.environ.get("MIRROR_SCREENSHOTS"):
        tab.screenshot(path=os.path.join(os.environ["MIRROR_SCREENSHOTS"], name))


def cards_on(html: str) -> list[int]:
    """The images a page's grid shows, in order (not those its texts refer to)."""
    return [int(i) for i in re.findall(r'<figure class="booru-image" data-image-id="(\d+)"', html)]


def test_the_tag_user_gallery_and_forum_pages(mirrored):
    config, db, shown, gone, tmp = mirrored
    tag_id, name, category = db.execute("SELECT t.id, t.name, t.category FROM image_tags it JOIN tags t ON t.id = it.tag_id "
                                        "GROUP BY t.id ORDER BY count(*) DESC LIMIT 1").fetchone()
    status, html, _ = page(config, f"/-/tag/{tag_id}")
    images = cards_on(html)
    tagged = [r[0] for r in db.execute("SELECT image_id FROM image_tags WHERE tag_id = ? ORDER BY image_id DESC LIMIT 50",
                                       [tag_id])]
    assert status == 200 and images == tagged
    assert f'<h1><span class="booru-tag" data-tag-category="{category or ""}">{name}</span></h1>' in html
    user_id, user = db.execute("SELECT id, name FROM users WHERE raw IS NOT NULL AND id IN "
                               "(SELECT uploader_id FROM images) LIMIT 1").fetchone()
    status, html, _ = page(config, f"/-/user/{user_id}")
    uploads = [r[0] for r in db.execute("SELECT id FROM images WHERE uploader_id = ? ORDER BY id DESC LIMIT 50", [user_id])]
    assert status == 200 and user in html and cards_on(html) == uploads
    gallery_id, = db.execute("SELECT gallery_id FROM gallery_images GROUP BY 1 ORDER BY count(*) DESC").fetchone()
    status, html, _ = page(config, f"/-/gallery/{gallery_id}")
    order = [r[0] for r in db.execute("SELECT image_id FROM gallery_images WHERE gallery_id = ? ORDER BY position LIMIT 50",
                                      [gallery_id])]
    assert status == 200 and cards_on(html) == order
    forum, topic = db.execute("SELECT forum_short_name, topic_slug FROM posts GROUP BY 1, 2 ORDER BY count(*) DESC").fetchone()
    assert f'href="/-/forum/{forum}"' in page(config, "/-/forums")[1]
    assert f'href="/-/topic/{forum}/{topic}"' in page(config, f"/-/forum/{forum}")[1] or "page 1 of" in page(
        config, f"/-/forum/{forum}")[1]
    status, html, _ = page(config, f"/-/topic/{forum}/{topic}")
    bodies = [r[0] or "(hidden on the site)" for r in db.execute(
        "SELECT body FROM posts WHERE forum_short_name = ? AND topic_slug = ? ORDER BY created_at, id LIMIT 25",
        [forum, topic])]
    shown_bodies = [html_text.unescape(re.sub(r"<[^>]+>", " ", b))
                    for b in re.findall(r'<div class="booru-text booru-markup">(.*?)</div>', html, re.DOTALL)]
    assert status == 200 and len(shown_bodies) == len(bodies)
    for shown_body, body in zip(shown_bodies, bodies):  # in order, their words as written
        assert all(word in shown_body for word in IMAGE_REFERENCE.sub("", body).split()), (shown_body, body)
    assert page(config, "/-/tag/99999999")[0] == 404 and page(config, "/-/topic/nope/nope")[0] == 404


def test_an_image_opened_from_a_search_moves_through_that_search(mirrored):
    """Previous and next follow the search the image was opened from, in its order, not the ids."""
    config, db, shown, gone, tmp = mirrored
    tag = db.execute("SELECT t.name FROM image_tags it JOIN tags t ON t.id = it.tag_id "
                     "GROUP BY t.id ORDER BY count(*) DESC LIMIT 1").fetchone()[0]
    query = f"/-/booru?q={quote(tag)}&sf=score&sd=desc"
    cards = [html_text.unescape(h) for h in re.findall(r'<a class="booru-box" href="(/-/image/\d+\?[^"]+)"', page(config, query)[1])]
    assert len(cards) >= 3 and all("pos=" in card for card in cards)
    second = page(config, cards[1])[1]
    forward = html_text.unescape(re.search(r'class="booru-next" href="([^"]+)"', second).group(1))
    back = html_text.unescape(re.search(r'class="booru-previous" href="([^"]+)"', second).group(1))
    assert forward == cards[2] and back == cards[0]
    assert "next in the search" in second
    by_id = page(config, f"/-/image/{shown}")[1]
    following = db.execute("SELECT min(id) FROM images WHERE id > ?", [shown]).fetchone()[0]
    assert f'class="booru-next" href="/-/image/{following}"' in by_id  # opened on its own: by id


def test_every_board_page_has_a_search_box_with_the_sites_syntax(mirrored):
    config, db, shown, gone, tmp = mirrored
    tag_id, name = db.execute("SELECT id, name FROM tags WHERE id IN (SELECT tag_id FROM image_tags) LIMIT 1").fetchone()
    forum, = db.execute("SELECT short_name FROM forums LIMIT 1").fetchone()
    for path in (f"/-/image/{shown}", f"/-/tag/{tag_id}", "/-/forums", f"/-/forum/{forum}", "/-/duplicates"):
        html = page(config, path)[1]
        assert re.search(r'<form class="booru-form booru-searchbox" action="/-/booru"', html) and 'name="q"' in html, path
    box = re.search(r'<input type="search" name="q" value="([^"]*)"', page(config, f"/-/tag/{tag_id}")[1]).group(1)
    assert html_text.unescape(box) == f'"{name}"'  # the tag's own search, as the board fills it in
    searched = page(config, f"/-/image/{shown}?q=safe%2C+-pegasus&sf=id&sd=desc&pos=0")[1]
    assert 'value="safe, -pegasus"' in searched
    images = page(config, "/mirror/images")[1]
    assert '<a href="/-/booru">search with the site' in images
