"""The board at the front door of `mirror browse`, and its look: `/` shows the newest images with the
search box and the board's menu, Datasette's index a click away; cards carry the site's counts and
the spoiler cover of the filter in use; tags are coloured by category; times read "N days ago";
grids are paged at the top and the bottom; bodies are rendered as the site renders its markup."""

from __future__ import annotations

import asyncio
import json
import re

import pytest

from mirror.browse import front_page, search_page
from mirror.browse.cards import FILTER_COOKIE
from mirror.localsite.board.editor import BoardEditor
from mirror.localsite.http.server import SiteServer

from ..support.browsing import browse_client, browsing, shown_images
from ..support.configs import RESOURCES, mirror_config, site_config, sync, write_config

CARD = re.compile(r'<figure class="booru-image" data-image-id="(\d+)">(.*?)</figure>', re.DOTALL)
# A filter of our own in the mirror's filters table, spoilering one tag.
OUR_FILTER = 990001


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("front")
    editor = BoardEditor.generate(seed=8, images=30, with_pictures=True)
    shown = next(i for i, im in sorted(editor.images.items()) if not im["hidden_from_users"] and im["format"] == "png")
    editor.add_comments(shown, 1, body="look at >>OTHERt and >>OTHER and >>999999s **bold** ||hid||")
    with SiteServer(editor) as site:
        config = mirror_config(site, tmp, editor.everything_filter_id)
        _, db = sync(config, RESOURCES)
    other, = db.execute("SELECT i.id FROM images i JOIN downloads d ON d.image_id = i.id AND d.status = 'done' "
                        "AND d.representation = 'thumb' AND d.path LIKE '%.png' WHERE NOT i.hidden_from_users "
                        "AND i.id != ? ORDER BY i.id DESC LIMIT 1", [shown]).fetchone()
    db.execute("UPDATE comments SET body = replace(body, 'OTHER', ?) WHERE body LIKE 'look at%'", [str(other)])
    spoiled = db.execute("SELECT t.id, t.name FROM tags t JOIN image_tags it ON it.tag_id = t.id "
                         "WHERE t.name NOT LIKE 'artist:%' GROUP BY t.id ORDER BY count(*) DESC LIMIT 1").fetchone()
    db.execute("INSERT INTO filters (id, name, system, public, hidden_tag_ids, spoilered_tag_ids, raw, mirrored_at) "
               "VALUES (?, 'Our spoilers', 0, 1, '[]', ?, '{}', '2026-01-01T00:00:00Z')",
               [OUR_FILTER, json.dumps([spoiled[0]])])
    db.conn.commit()
    return config, db, shown, other, spoiled[1], tmp


def get(config, path: str, cookies: dict | None = None, **patches) -> tuple[int, str]:
    async def run():
        client = await browse_client(config)
        response = await client.get(path, cookies=cookies or {})
        return response.status_code, response.text

    return asyncio.run(run())


def everything(db) -> int:
    return db.execute("SELECT id FROM filters WHERE name = 'Everything'").fetchone()[0]


def test_the_front_page_is_the_board_with_the_newest_images_the_search_box_and_the_menu(board):
    config, db, *_ = board
    status, html = get(config, "/")
    newest = [r[0] for r in db.execute("SELECT id FROM images WHERE NOT hidden_from_users "
                                       "ORDER BY first_seen_at DESC, id DESC LIMIT 50")]
    assert status == 200 and [int(i) for i, _ in CARD.findall(html)] == newest
    assert '<form class="booru-form booru-searchbox" action="/-/booru"' in html
    menu = re.search(r'<nav class="booru-menu".*?</nav>', html, re.DOTALL).group(0)
    for href in ("/-/booru", "/-/tags", "/-/forums", "/-/galleries", "/-/duplicates", "/-/changes", "/-/tables",
                 "/mirror"):
        assert f'href="{href}"' in menu, href
    status, tables = get(config, "/mirror")  # "Tables": every table and view, one click away
    for table in ("images", "comments", "tags", "posts", "history", "image_details"):
        assert f'href="/mirror/{table}"' in tables, table
    status, index = get(config, "/-/tables")  # Datasette's own index
    assert status == 200 and 'href="/mirror"' in index
    assert get(config, "/.json")[0] == 200 and "mirror" in json.loads(get(config, "/.json")[1])


def test_cards_carry_the_sites_counts(board):
    config, db, *_ = board
    for image_id, inner in CARD.findall(get(config, "/")[1]):
        score, faves, comments = db.execute("SELECT score, faves, comment_count FROM images WHERE id = ?",
                                            [int(image_id)]).fetchone()
        assert f'title="score">\u2191{score:,}<' in inner and f'title="faves">\u2605{faves:,}<' in inner
        assert f'title="comments">\u275d{comments:,}<' in inner


def test_the_filter_in_use_spoilers_what_it_names_and_says_why(board):
    config, db, shown, other, spoiled, tmp = board
    carrying = {r[0] for r in db.execute("SELECT it.image_id FROM image_tags it JOIN tags t ON t.id = it.tag_id "
                                         "WHERE t.name = ?", [spoiled])}
    plain = get(config, "/", {FILTER_COOKIE: str(everything(db))})[1]
    assert 'class="booru-spoilered"' not in plain
    html = get(config, "/", {FILTER_COOKIE: str(OUR_FILTER)})[1]
    covered = {int(i) for i, inner in CARD.findall(html) if "booru-spoilered" in inner}
    shown_ids = {int(i) for i, _ in CARD.findall(html)}
    assert covered and covered == carrying & shown_ids
    assert f"spoilered: {spoiled}" in html and "<b>Our spoilers</b>" in html


def test_a_mirror_without_the_filter_it_was_synced_through_says_so_in_a_sentence(tmp_path):
    """The dump route once synced images alone: the front page read "spoilers what the filter
    filter 2 (not mirrored) spoilers or hides" beside an empty filter menu."""
    with SiteServer(BoardEditor.generate(seed=8, images=6)) as site:
        config = site_config(site, tmp_path)  # images alone, through the Everything filter
        sync(config)
    everything = site.editor.everything_filter_id
    html = get(config, "/")[1]
    assert "spoilers what the filter" not in html
    assert (f"the images were mirrored through <b>filter {everything}</b>, which the mirror does not keep, "
            "so nothing is spoilered") in html
    assert f'<option value="{everything}" selected>filter {everything} (not mirrored)</option>' in html


def test_grids_are_paged_at_the_top_and_the_bottom(board, monkeypatch):
    config, db, *_ = board
    monkeypatch.setattr(front_page, "PER_PAGE", 10)
    monkeypatch.setattr(search_page, "PER_PAGE", 10)
    first, second = get(config, "/")[1], get(config, "/?page=2")[1]
    assert first.count('<nav class="booru-pages"') == 2 and 'href="/?page=2"' in first
    assert set(CARD.findall(first)).isdisjoint(CARD.findall(second)) and 'href="/?page=1"' in second


def test_bodies_are_rendered_and_times_read_as_the_site_says_them(board):
    config, db, shown, other, spoiled, tmp = board
    html = get(config, f"/-/image/{shown}", {FILTER_COOKIE: str(everything(db))})[1]
    assert f'<span class="booru-ref-embed booru-ref-small" data-image-id="{other}">' in html
    assert f'<a class="booru-ref" href="/-/image/{other}">&gt;&gt;{other}</a>' in html
    assert f'href="{config.base_url}/images/999999">&gt;&gt;999999s</a>' in html  # not mirrored: the site's page
    assert "<strong>bold</strong>" in html and '<span class="booru-spoiler">hid</span>' in html
    assert re.search(r'<time datetime="[^"]+Z" title="\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC">[^<]+ ago</time>', html)


def test_in_a_real_browser_the_front_page_and_the_tags_colours(board, browser):
    config, db, shown, other, spoiled, tmp = board
    with browsing(write_config(config, tmp / "mirror.toml")) as url:
        tab = browser.new_page(viewport={"width": 1280, "height": 900})
        tab.goto(url)
        cards = shown_images(tab)
        assert len(cards) == min(50, db.execute("SELECT count(*) FROM images WHERE NOT hidden_from_users").fetchone()[0])
        assert all(card["width"] > 0 for card in cards if card["width"] is not None)
        assert all(re.search(r"\u2191-?[\d,]+\s*\u2605[\d,]+\s*\u275d[\d,]+", card["caption"] + tab.inner_text(
            f'figure[data-image-id="{card["id"]}"] .booru-counts')) for card in cards)
        tab.click("nav.booru-menu >> text=Tables")
        tab.wait_for_url(re.compile(r"/mirror$"))
        assert tab.locator('a[href="/mirror/images"]').count() >= 1
        tab.goto(f"{url}-/image/{shown}")
        colours = tab.evaluate("""() => Object.fromEntries([...document.querySelectorAll('a.booru-tag')].map(
            a => [a.dataset.tagCategory, getComputedStyle(a).color]))""")
        expected = {"rating": "rgb(38, 126, 173)", "origin": "rgb(57, 63, 133)", "": "rgb(111, 143, 14)",
                    "character": "rgb(45, 134, 119)", "species": "rgb(139, 85, 47)"}
        assert {c: colours[c] for c in colours if c in expected} == {c: expected[c] for c in colours if c in expected}
        assert "rating" in colours and len(set(colours.values())) >= 2
        embed = tab.evaluate(f"""() => document.querySelector('.booru-ref-embed[data-image-id="{other}"] img').naturalWidth""")
        assert embed > 0  # the referenced image's kept thumbnail, from the mirror
        tab.close()
