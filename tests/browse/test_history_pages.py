"""History a person can read in `mirror browse`: an image's history page (the picture, a chart of its
score and faves, a timeline of tags, diffs, deletion and merge, the site's own changes marked), the
tag page's images that gained and lost it, and `/-/changes` for the whole archive with its filters,
on a mirror of the local site synced three times around edits; and the timeline in Chromium."""

from __future__ import annotations

import asyncio
import html as html_text
import os
import re

import pytest

from mirror.localsite.board.editor import BoardEditor
from mirror.localsite.http.server import SiteServer
from mirror.browse.text_diff import text_diff
from mirror.store.history import SiteChange, save_site_changes

from ..support.browsing import browse_client, browsing
from ..support.configs import RESOURCES, changed, mirror_config, sync, write_config

DESCRIBED = "A <b>bold</b> claim\nand a second line"
LATER = 55  # images uploaded before the third sync: more than a page of them first seen


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    """Three syncs: the first; then a retag, an edit of the description and source, a score rise,
    a deletion and a merge; then another score rise and new images. The site's own tag change, from its dump, too."""
    tmp = tmp_path_factory.mktemp("history-pages")
    with SiteServer(BoardEditor.generate(seed=8, images=30, with_pictures=True)) as site:
        editor = site.editor
        config = changed(mirror_config(site, tmp, editor.everything_filter_id), history={"counters": "all"},
                         tags={"refresh_per_run": 5000})
        sync(config, RESOURCES)
        shown = [i for i, im in sorted(editor.images.items()) if not im["hidden_from_users"] and im["format"] == "png"]
        image, deleted, merged = shown[2], shown[4], shown[5]
        old_tags = editor.images[image]["tags"]
        dropped = next(t for t in old_tags if ":" not in t and t not in ("safe", "suggestive", "explicit"))
        score = editor.images[image]["score"]
        editor.edit_image(image, tags=[t for t in old_tags if t != dropped] + ["brand new tag"], description=DESCRIBED,
                          source_url="https://example.com/new-source", source_urls=["https://example.com/new-source"],
                          score=score + 5)
        editor.hide_image(deleted, "Rule #2")
        editor.merge_image(merged, image)
        sync(config, RESOURCES)
        editor.edit_image(image, score=score + 9)
        editor.add_images(LATER)
        _, db = sync(config, RESOURCES)
    pony = db.execute("SELECT id FROM tags WHERE name = ?", [dropped]).fetchone()[0]
    save_site_changes(db, None, [SiteChange(image, "2015-03-04T05:06:07Z", 4242, "site_tags",
                                            tags=(("+", pony, dropped),))])
    db.conn.commit()
    return {"config": config, "db": db, "image": image, "deleted": deleted, "merged": merged, "dropped": dropped,
            "score": score, "tmp": tmp}


def get(config, path: str, **params) -> tuple[int, str]:
    async def fetch():
        client = await browse_client(config)
        response = await client.get(path, params=params or None)
        return response.status_code, response.text

    return asyncio.run(fetch())


def events_shown(html: str) -> list[str]:
    return re.findall(r'class="booru-event[^"]*" data-event="([a-z_]+)"', html)


def test_an_images_history_is_a_board_page_with_its_picture_chart_and_timeline(archive):
    config, image = archive["config"], archive["image"]
    status, html = get(config, f"/-/image/{image}/history")
    assert status == 200
    assert f'src="/-/media/thumbnail/{image}"' in html and f'href="/-/image/{image}"' in html  # picture, way back
    assert events_shown(html) == ["counters", "changed", "first_seen", "site_tags"]  # newest first, by time
    timeline = html[html.index('class="booru-timeline"'):]
    assert f">&minus;{html_text.escape(archive['dropped'])}</a>" in timeline and ">+brand new tag</a>" in timeline
    assert re.search(r'class="booru-tag booru-tag-removed" data-tag-category="[a-z-]+"', timeline)  # coloured
    assert "view_url" not in timeline
    assert "&lt;b&gt;bold&lt;/b&gt;" in timeline and "<b>bold</b>" not in timeline  # the diff is escaped
    assert re.search(r'<ins class="booru-added">[^<]*&lt;b&gt;bold', timeline)
    assert '<ins class="booru-added">https://example.com/new-source</ins>' in timeline
    site = timeline[timeline.index('data-event="site_tags"'):]
    assert "on the site" in site and "user 4242" in site and 'datetime="2015-03-04T05:06:07Z"' in site
    chart = html[html.index("<svg class=\"booru-chart\""):]
    chart = chart[:chart.index("</svg>")]
    score = archive["score"]
    assert 'data-series="score"' in chart and f"score {score + 5:,}" in chart and f"score {score + 9:,}" in chart


def test_deletion_and_merge_are_on_their_images_timelines_with_the_reason(archive):
    config = archive["config"]
    status, html = get(config, f"/-/image/{archive['deleted']}/history")
    assert status == 200 and events_shown(html)[0] == "deleted" and "Rule #2" in html
    status, html = get(config, f"/-/image/{archive['merged']}/history")
    merged = html[html.index('data-event="merged"'):]
    assert events_shown(html)[0] == "merged" and f'into <a href="/-/image/{archive["image"]}">' in merged
    assert get(config, "/-/image/999999/history")[0] == 404


def test_the_image_page_links_its_history_page(archive):
    status, html = get(archive["config"], f"/-/image/{archive['image']}")
    assert status == 200 and f'href="/-/image/{archive["image"]}/history"' in html and "image_history" not in html


def test_the_tag_page_shows_the_images_that_gained_and_lost_it_lately(archive):
    db = archive["db"]
    dropped = db.execute("SELECT id FROM tags WHERE name = ?", [archive["dropped"]]).fetchone()[0]
    status, html = get(archive["config"], f"/-/tag/{dropped}")
    lost = html[html.index("lost it lately"):]
    assert f'href="/-/image/{archive["image"]}/history"' in lost[:lost.index("</p>")]
    gained = html[html.index("gained it lately"):]
    assert f"#{archive['image']} (2015-03-04, on the site)" in gained[:gained.index("</p>")]


def rows(html: str) -> list[tuple[str, str]]:
    return re.findall(r'class="booru-change-row" data-event="([a-z_]+)" data-resource="([a-z]+)"', html)


def test_what_changed_lists_the_real_events_and_sums_up_first_sightings(archive):
    config, db = archive["config"], archive["db"]
    status, html = get(config, "/-/changes")
    assert status == 200
    listed = rows(html)
    assert ("deleted", "images") in listed and ("merged", "images") in listed and ("changed", "images") in listed
    assert all(event not in ("first_seen", "counters") for event, _ in listed)
    images = db.execute("SELECT sum(count) FROM history_first_seen WHERE resource = 'images'").fetchone()[0]
    assert images and f'resource=images">{images:,} images</a> first seen' in html
    assert f'href="/-/image/{archive["deleted"]}/history">image {archive["deleted"]}</a>' in html
    assert "deleted: Rule #2" in html


def test_what_changed_filters_by_event_and_resource_and_pages(archive):
    config, db = archive["config"], archive["db"]
    both = {("deleted", "images"), ("merged", "images")}
    assert set(rows(get(config, "/-/changes", event="deleted,merged")[1])) == both
    assert set(rows(get(config, "/-/changes?event=deleted&event=merged")[1])) == {("deleted", "images"),
                                                                                   ("merged", "images")}
    tags = rows(get(config, "/-/changes", resource="tags", event="counters")[1])
    assert tags and {resource for _, resource in tags} == {"tags"}
    # the first sync's sightings are counts (it filled empty tables): said as such, not listed
    status, html = get(config, "/-/changes", event="first_seen")
    images = db.execute("SELECT count FROM history_first_seen WHERE resource = 'images' AND counted = 1").fetchone()[0]
    listed = rows(html)  # the records later syncs first saw, a row each: a page of the newest
    assert listed.count(("first_seen", "images")) == 50
    assert f"{images:,} images first seen by a run that filled an empty table" in html
    # the images uploaded before the third sync were first seen one by one, a row each, and paged
    status, html = get(config, "/-/changes", event="first_seen", resource="images")
    first = rows(html)
    assert len(first) == 50 and {event for event, _ in first} == {"first_seen"} and "first seen</h2>" not in html
    older = html_text.unescape(re.search(r'class="booru-next" href="/-/changes([^"]+)"', html).group(1))
    second = get(config, "/-/changes" + older)[1]
    keys = re.findall(r'data-resource="[a-z]+">\s*<a href="([^"]+)"', html)
    assert rows(second) and not set(re.findall(r'data-resource="[a-z]+">\s*<a href="([^"]+)"', second)) & set(keys)
    total = db.execute("SELECT count(*) FROM history WHERE event = 'first_seen' AND resource = 'images'").fetchone()[0]
    assert total == LATER
    status, html = get(config, "/-/changes", event="exploded")
    assert status == 400 and "exploded" in html and "first_seen" in html


def test_in_a_real_browser_the_timeline_reads_newest_first_with_its_chart(archive, browser):
    config, image = archive["config"], archive["image"]
    with browsing(write_config(config, archive["tmp"] / "mirror.toml")) as url:
        tab = browser.new_page(viewport={"width": 1280, "height": 900})
        tab.goto(f"{url}-/image/{image}/history")
        tab.wait_for_load_state("networkidle")
        assert tab.evaluate("() => document.querySelector('img.booru-thumb').naturalWidth") > 0
        box = tab.locator("svg.booru-chart").bounding_box()
        assert box and box["width"] > 200 and box["height"] > 80
        heads = tab.locator(".booru-event-head").all_inner_texts()
        assert "counts moved" in heads[0] and "first seen" in heads[-2] and "on the site" in heads[-1]
        assert tab.locator("ins.booru-added").first.is_visible()
        assert tab.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth")  # nothing overflows
        if os.environ.get("MIRROR_SCREENSHOTS"):
            tab.screenshot(path=os.path.join(os.environ["MIRROR_SCREENSHOTS"], "browse-history.png"), full_page=True)
        tab.click("a.booru-back")
        tab.wait_for_url(re.compile(rf"/-/image/{image}$"))
        tab.close()


def test_a_mirror_made_before_history_was_kept_says_nothing_changed(archive, tmp_path):
    """Browsing migrates nothing: a database without the history tables shows an empty page, not an error."""
    import dataclasses
    import sqlite3

    old = tmp_path / "old.db"
    sqlite3.connect(old).execute("CREATE TABLE images (id INTEGER PRIMARY KEY, tags TEXT)").connection.close()
    config = dataclasses.replace(archive["config"], store=dataclasses.replace(archive["config"].store, database=old))
    status, html = get(config, "/-/changes")
    assert status == 200 and "Nothing changed" in html and not rows(html)


def test_the_timeline_spaces_its_word_diff_and_rounds_its_counters_as_shown(archive):
    """A word replaced reads apart from its replacement (issue 39 saw `RainbowEdited requestby`), and a
    score's fraction reads as a number a person compares (not `wilson_score 0.5466385077253909`)."""
    diff = str(text_diff("Rainbow request", "Edited request by"))
    assert html_text.unescape(re.sub(r"<[^>]+>", "", diff)).split() == ["Rainbow", "Edited", "request", "by"]
    replaced = re.sub(r"<[^>]+>", "", str(text_diff("Rainbow request", "Edited by")))
    assert replaced.split() == ["Rainbow", "request", "Edited", "by"]
    assert text_diff("same words", "same words") == "same words"
    html = get(archive["config"], f"/-/image/{archive['image']}/history")[1]
    shown = re.findall(r"<b>wilson_score</b> ([^<]+)</span>", html)
    assert shown and all(re.fullmatch(r"(\d+(\.\d\d)?|none) \u2192 \d+(\.\d\d)?", said) for said in shown), shown
    assert re.search(r"<b>score</b> -?[\d,]+ \u2192 -?[\d,]+", html)
