"""Board pages within a budget (issue 41, point 5): bodies whose markup would take markdown-it-py
seconds each (a topic of 25 posts of ``"![" * 100000`` took 112 s, an image with 5 comments of
``"*_" * 100000`` 11.6 s) are shown as written, and so is what is left once a page has spent its
time; ordinary Markdown still renders. Served by `mirror browse`'s own app, on a mirror of the
local site."""

from __future__ import annotations

import asyncio
import time
from urllib.parse import quote

import pytest

from mirror.browse.markup import MAX_BODY_COST, cost
from mirror.localsite.board.editor import BoardEditor
from mirror.localsite.http.server import SiteServer

from ..support.browsing import browse_client
from ..support.configs import RESOURCES, mirror_config, sync

BRACKETS = "![" * 100000
STARS = "*_" * 100000
JUST_UNDER = "![" * (MAX_BODY_COST // 12 - 1)  # each under the per-body budget, each some 0.3 s to render
SECONDS = 5  # what a page may take here, loaded machine and all; each took 0.2 to 0.5 s


@pytest.fixture(scope="module")
def mirrored(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("budget")
    editor = BoardEditor.generate(seed=8, images=6)
    image = next(i for i, im in sorted(editor.images.items()) if not im["hidden_from_users"])
    editor.add_comments(image, 1, body="**plainly bold** and ~~gone~~")
    editor.add_comments(image, 5, body=STARS)
    forum = sorted(editor.forums)[0]
    hostile = editor.add_topic(forum, "brackets", posts=1)
    editor.add_posts(hostile["id"], 25, body=BRACKETS)
    heavy = editor.add_topic(forum, "heavy", posts=1)
    editor.add_posts(heavy["id"], 24, body=JUST_UNDER)
    with SiteServer(editor) as site:
        config = mirror_config(site, tmp, editor.everything_filter_id)
        sync(config, RESOURCES)
    return config, image, [f"/-/topic/{quote(forum)}/{quote(topic['slug'])}" for topic in (hostile, heavy)]


def timed_page(config, path: str) -> tuple[str, float]:
    async def get():
        client = await browse_client(config)
        started = time.monotonic()
        response = await client.get(path)
        assert response.status_code == 200, response.text[:500]
        return response.text, time.monotonic() - started

    return asyncio.run(get())


def test_the_bodies_are_past_the_budget_and_the_heavy_ones_under_it():
    assert cost(BRACKETS) > MAX_BODY_COST and cost(STARS) > MAX_BODY_COST and cost(JUST_UNDER) <= MAX_BODY_COST


def test_a_topic_of_25_posts_of_brackets_renders_in_seconds_as_written(mirrored):
    config, _, (topic, _) = mirrored
    html, took = timed_page(config, topic)
    assert took < SECONDS, f"{took:.1f} s"
    assert html.count("too long or too full of markup") == 24  # page 1: the opening post and 24 of them
    assert html.count("![![![![") >= 24 and "booru-picture-link" not in html  # the text, as written


def test_an_image_with_5_comments_of_stars_renders_in_seconds_and_markdown_still_renders(mirrored):
    config, image, _ = mirrored
    html, took = timed_page(config, f"/-/image/{image}")
    assert took < SECONDS, f"{took:.1f} s"
    assert html.count("too long or too full of markup") == 5 and html.count("*_*_*_*_") >= 5
    assert "<strong>plainly bold</strong>" in html and "<s>gone</s>" in html


def test_a_page_of_bodies_each_under_the_budget_stops_rendering_when_its_time_is_spent(mirrored):
    config, _, (_, heavy) = mirrored
    html, took = timed_page(config, heavy)
    assert took < SECONDS, f"{took:.1f} s"
    assert "took this page&#39;s time for rendering" in html or "took this page's time for rendering" in html
    assert html.count("![![![![") >= 20  # every body is on the page, rendered or as written
