"""Hostile records stay inert in `mirror browse`: a record's text is shown as text, and a URL from
a record becomes a link only when it is http(s). Checked in a real browser, from the page itself."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from mirror.localsite.board.editor import BoardEditor
from mirror.localsite.http.server import SiteServer
from mirror.store.history import SiteChange, save_site_changes
from mirror.urls import is_web_url

from ..support.browsing import browsing
from ..support.configs import RESOURCES, mirror_config, sync, write_config

# Each sets window.pwned when it runs.
SCRIPT_URLS = ["javascript:window.pwned=1", " javascript:window.pwned=2", "JaVaScRiPt:window.pwned=3",
               "java\tscript:window.pwned=4", "data:text/html,<script>opener.pwned=5</script>",
               "vbscript:window.pwned=6"]
MARKUP = ['<script>window.pwned=7</script>', '"><img src=x onerror="window.pwned=8">']
DANGEROUS = ("javascript:", "data:", "vbscript:")


def hostile_markdown(image_ids: list[int]) -> str:
    """A body in the site's markup with image references, script links of every kind, and HTML."""
    return (f">>{image_ids[1]}t >>{image_ids[2]} >>{image_ids[3]}p >>99999999s "
            "[a](javascript:window.pwned=9) [b]( JaVaScRiPt:window.pwned=10) <javascript:window.pwned=11> "
            "![c](javascript:window.pwned=12) [d](data:text/html,<script>opener.pwned=13</script>) "
            "<script>window.pwned=14</script> <img src=x onerror=\"window.pwned=15\"> "
            "**[e](javascript:window.pwned=16)** ||[f](vbscript:x)|| [g]: javascript:window.pwned=17\n[g]")


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """A mirror whose images carry script URLs as sources and markup in descriptions and tag names."""
    tmp = tmp_path_factory.mktemp("hostile")
    with SiteServer(BoardEditor.generate(seed=11, images=12)) as site:
        editor = site.editor
        ids = sorted(editor.images)[: len(SCRIPT_URLS)]
        for image_id, url in zip(ids, SCRIPT_URLS):
            editor.edit_image(image_id, source_url=url, source_urls=[url, "https://example.com/fine"],
                              description=MARKUP[image_id % 2], tags=["safe", "pony", "artist:" + MARKUP[1]])
        editor.edit_tag("pony", description=MARKUP[0], short_description=MARKUP[1],
                        dnp_entries=[{"dnp_type": MARKUP[1], "conditions": SCRIPT_URLS[0], "reason": MARKUP[0]}])
        user = editor.add_user("hostile", description=MARKUP[0], awards=[{"id": 1, "title": MARKUP[1], "label": MARKUP[0],
                                                                          "image": "x.svg", "awarded_on": "2020-01-01T00:00:00Z"}])
        gallery = editor.add_gallery(ids, title=MARKUP[1], description=MARKUP[0], user_id=user["id"])
        editor.add_comments(ids[0], 1, body=hostile_markdown(ids))
        forum = sorted(editor.forums)[0]
        topic = editor.add_topic(forum, MARKUP[1], posts=1, user_id=user["id"])
        editor.add_posts(topic["id"], 1, body=MARKUP[0] + " " + SCRIPT_URLS[0])
        editor.add_posts(topic["id"], 1, body=hostile_markdown(ids), user_id=user["id"])
        config = mirror_config(site, tmp, editor.everything_filter_id)
        sync(config, RESOURCES)
        for n, image_id in enumerate(ids):  # their history: edits that add markup and script URLs
            editor.edit_image(image_id, source_url=SCRIPT_URLS[(n + 1) % len(SCRIPT_URLS)],
                              description=MARKUP[(image_id + 1) % 2] + " " + MARKUP[image_id % 2],
                              tags=["safe", "pony", MARKUP[0]])
        _, db = sync(config, RESOURCES)
        save_site_changes(db, None, [  # and the site's own, as its dump would bring them
            SiteChange(ids[0], "2015-01-01T00:00:00Z", 1, "site_source", source=SCRIPT_URLS[0]),
            SiteChange(ids[0], "2015-01-02T00:00:00Z", 1, "site_tags", tags=(("+", 1, MARKUP[1]),))])
        db.conn.commit()
    pages = [f"-/tag/{editor.tag_by_name('pony')['id']}", f"-/user/{user['id']}", f"-/gallery/{gallery}",
             "-/forums", f"-/forum/{quote(forum)}", f"-/topic/{quote(forum)}/{quote(topic['slug'])}",
             f"-/image/{ids[0]}/history", "-/changes", "-/changes?event=site_tags,site_source,first_seen"]
    with browsing(write_config(config, tmp / "mirror.toml")) as url:
        yield url, ids, pages


def test_only_http_urls_may_become_links():
    assert is_web_url("https://example.com/a") and is_web_url("HTTP://example.com")
    assert not any(is_web_url(url) for url in SCRIPT_URLS + ["//example.com", "https:/x", "", None, "ftp://x"])


def links_and_state(page, address: str) -> dict:
    page.goto(address)
    page.wait_for_load_state("networkidle")
    return page.evaluate("""() => ({
        hrefs: [...document.querySelectorAll('[href], [src], [action], [formaction]')].map(
            e => e.getAttribute('href') || e.getAttribute('src') || e.getAttribute('action') || e.getAttribute('formaction')),
        pwned: window.pwned || null,
        text: document.body.innerText,
    })""")


def test_no_page_turns_a_record_into_a_script_link_or_runs_one(hostile, browser):
    url, ids, board_pages = hostile
    pages = [url + path for path in board_pages] + [f"{url}-/booru?q=*", f"{url}-/booru?q={quote('artist:*')}", f"{url}mirror/images",
             f"{url}mirror/image_details", f"{url}mirror/last_sync", f"{url}mirror/tags"]
    pages += [f"{url}mirror/images/{image_id}" for image_id in ids] + [f"{url}-/image/{image_id}" for image_id in ids]
    pages += [f"{url}-/image/{image_id}/history" for image_id in ids]
    page = browser.new_page()
    for address in pages:
        found = links_and_state(page, address)
        bad = [href for href in found["hrefs"] if href.strip().lower().replace("\t", "").startswith(DANGEROUS)]
        assert bad == [] and found["pwned"] is None, address
        for source_link in page.query_selector_all(".booru-source a"):
            source_link.click(modifiers=["Control"])  # a click on every source link runs nothing either
        assert page.evaluate("() => window.pwned || null") is None, address
    shown = links_and_state(page, f"{url}mirror/images/{ids[0]}")["text"]
    assert SCRIPT_URLS[0] in shown  # shown as text, for the reader to judge
    history = links_and_state(page, f"{url}-/image/{ids[0]}/history")["text"]
    assert MARKUP[0] in history and MARKUP[1] in history and SCRIPT_URLS[0] in history  # diffs and the site's, as text
    for path in board_pages[:3] + board_pages[5:6]:  # the tag, user, gallery and thread show the markup as text
        assert MARKUP[0] in links_and_state(page, url + path)["text"], path
    page.close()


def test_bodies_in_the_sites_markup_stay_inert_and_their_image_references_link_the_mirror(hostile, browser):
    """Comments and posts (on the image, the thread and the user's pages) with image references,
    script links of every spelling and HTML: the references are drawn, no link but http(s) and the
    mirror's own, no element from the text."""
    url, ids, board_pages = hostile
    page = browser.new_page()
    for address in (f"{url}-/image/{ids[0]}", url + board_pages[5], url + board_pages[1]):  # the thread, the user
        found = links_and_state(page, address)
        assert found["pwned"] is None, address
        bodies = page.evaluate("""() => [...document.querySelectorAll('.booru-markup')].map(b => ({
            tags: [...b.querySelectorAll('*')].map(e => e.tagName.toLowerCase()),
            hrefs: [...b.querySelectorAll('[href], [src]')].map(e => e.getAttribute('href') || e.getAttribute('src'))}))""")
        hostile_ones = [b for b in bodies if any(f"/-/image/{ids[2]}" == h for h in b["hrefs"])]
        assert hostile_ones, address
        for body in hostile_ones:
            assert set(body["tags"]) <= {"p", "a", "img", "video", "span", "small", "strong", "em", "br", "s", "code"}
            assert all(h.startswith(("/-/image/", "/-/media/", "/-/booru", "http://", "https://")) for h in body["hrefs"])
            assert f"/-/image/{ids[1]}" in body["hrefs"]
        for link in page.query_selector_all(".booru-markup a"):
            link.click(modifiers=["Control"])
        assert page.evaluate("() => window.pwned || null") is None, address
        assert "<script>window.pwned=14</script>" in page.evaluate("() => document.body.innerText")
    page.close()
