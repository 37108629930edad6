"""Steering through time in `mirror browse` (issue 49, point 2): a moment picker that takes a time,
the moments the mirror knows of a page with the previous and next change in the banner, "this page
as it was then" on every history entry and changes line, a page of a record that did not exist yet
said in the board's frame, a moment before the first sync said to be one, and relative times
counted from the moment shown.

The board is :mod:`.test_as_of_pages`'s: synced, edited (a retag among others), synced again.
"""

from __future__ import annotations

import html as html_text
import os
import re
from datetime import UTC, datetime, timedelta

import httpx

from mirror.asof import Moment
from mirror.browse.times import counted_from, relative_time

from .test_as_of_pages import TAGGED_LATER, board, page, pages  # noqa: F401 (the fixtures)


def _moments(pages_url: str, path: str) -> list[tuple[str, str, str]]:
    """(time, what happened, address) of each moment the captures list gives for ``path``."""
    _, listed = page(pages_url, f"/-/moments?page={path}")
    return re.findall(r'<li class="booru-moment[^"]*"><a href="([^"]+)">([^<]+)</a> ([^<]*)', listed)


def test_the_moment_picker_takes_a_time_and_keeps_the_page_it_was_picked_on(board, pages):  # noqa: F811
    day, time = board["moment"].text[:10], board["moment"].text[11:19]
    picked = httpx.get(pages + "-/as-of", params={"when": day, "at": time, "page": f"/-/image/{board['retagged']}"})
    assert picked.status_code == 302
    assert picked.headers["location"] == f"/as-of/{board['moment'].digits}/-/image/{board['retagged']}"
    minutes = httpx.get(pages + "-/as-of", params={"when": day, "at": time[:5]})
    assert minutes.headers["location"] == f"/as-of/{board['moment'].digits[:12]}00/"
    away = httpx.get(pages + "-/as-of", params={"when": day, "page": "//evil.example/"})
    assert away.headers["location"].startswith("/as-of/") and away.headers["location"].endswith("/")
    assert 'type="time" name="at"' in page(pages, "/")[1]
    _, then = page(pages, f"/as-of/{board['moment'].digits}/-/tags")
    assert 'class="booru-form booru-moment-picker"' in then and f'value="{time}"' in then


def test_a_past_page_names_the_previous_and_next_change_and_every_moment_of_the_page(board, pages):  # noqa: F811
    path = f"/-/image/{board['retagged']}"
    moments = _moments(pages, path)
    kinds = " ".join(kind for _, _, kind in moments)
    assert len(moments) >= 3 and "uploaded" in kinds and "first seen by a sync" in kinds
    assert "a sync saw it change" in kinds
    times = [Moment(at.replace(" UTC", "Z").replace(" ", "T")) for _, at, _ in moments]
    assert [href for href, _, _ in moments] == [f"/as-of/{m.digits}{path}" for m in times]
    shown = board["moment"]
    in_force = max(m for m in times if m <= shown)
    later = min(m for m in times if m > shown)
    earlier = max(m for m in times if m < in_force)
    _, then = page(pages, f"/as-of/{shown.digits}{path}")
    assert f'rel="next" href="/as-of/{later.digits}{path}"' in then
    assert f'rel="prev" href="/as-of/{earlier.digits}{path}"' in then
    assert f"this version since {in_force.text.replace('T', ' ').replace('Z', ' UTC')}" in then
    assert f'href="/-/moments?page=%2F-%2Fimage%2F{board["retagged"]}&at={shown.digits}"' in then
    _, following = page(pages, f"/as-of/{later.digits}{path}")
    assert TAGGED_LATER in following and TAGGED_LATER not in then
    _, listed = page(pages, f"/-/moments?page={path}&at={in_force.digits}")
    assert "(shown)" in listed
    _, board_moments = page(pages, "/-/moments?page=/")
    assert "a sync of" in board_moments  # a page of many records: the syncs
    assert page(pages, "/-/moments?page=//evil.example/")[0] == 400


def test_an_image_uploaded_later_says_so_in_the_boards_frame_with_its_first_version_and_today(board, pages):  # noqa: F811
    path = f"/-/image/{board['uploaded']}"
    status, then = page(pages, f"/as-of/{board['moment'].digits}{path}")
    assert status == 404
    assert "did not exist yet at this moment" in then and 'class="booru-footer"' in then  # the board's frame
    first = re.search(r'class="booru-first-version" href="(/as-of/(\d{14})[^"]+)"', then)
    assert first and first[1].endswith(path) and first[2] > board["moment"].digits
    assert f'class="booru-today-version" rel="original" href="{path}"' in then
    assert page(pages, first[1])[0] == 200
    assert page(pages, f"/as-of/{board['moment'].digits}/-/image/999999")[0] == 404  # none at all: Datasette's


def test_a_moment_before_the_first_sync_says_what_is_rebuilt_and_what_is_as_first_seen(board, pages):  # noqa: F811
    _, early = page(pages, "/as-of/2001-01-01/")
    assert "before the mirror's first sync" in early and "rebuilt from the site's own history" in early
    _, late = page(pages, f"/as-of/{board['moment'].digits}/")
    assert "before the mirror's first sync" not in late


def test_relative_times_on_a_past_page_are_counted_from_its_moment(board, pages):  # noqa: F811
    drawn = str(relative_time("2025-01-01T00:00:00Z"))
    assert ">3 days ago<" in counted_from(drawn, datetime(2025, 1, 4, tzinfo=UTC))
    image = board["retagged"]
    uploaded = httpx.get(f"{pages}mirror/images/{image}.json?_shape=array").json()[0]["created_at"]
    three_days_on = Moment.of(datetime.fromisoformat(uploaded.replace("Z", "+00:00")) + timedelta(days=3))
    _, then = page(pages, f"/as-of/{three_days_on.digits}/-/image/{image}")
    assert re.search(r"<dt>uploaded</dt>\s*<dd><time [^>]+>3 days ago</time>", then), then[:200]


def test_every_history_entry_and_changes_line_opens_its_page_as_it_was_then(board, pages):  # noqa: F811
    image = board["retagged"]
    _, history = page(pages, f"/-/image/{image}/history")
    entries = re.findall(r'<li class="booru-event[^"]*"', history)
    thens = re.findall(rf'class="booru-then" href="/as-of/(\d{{14}})/-/image/{image}"', history)
    assert entries and len(thens) == len(entries)
    _, changes = page(pages, "/-/changes")
    rows = re.findall(r'<li class="booru-change-row"', changes)
    linked = re.findall(r'class="booru-then" href="(/as-of/\d{14}/-/[^"]+)"', changes)
    assert rows and len(linked) >= len(rows) - changes.count('data-resource="comments"') - changes.count(
        'data-resource="posts"') - changes.count('data-resource="filters"')
    assert page(pages, html_text.unescape(linked[0]))[0] == 200


def test_in_a_real_browser_the_picker_the_moments_and_the_banner_with_previous_and_next(board, pages, browser,  # noqa: F811
                                                                                        tmp_path):
    base, path = pages.rstrip("/"), f"/-/image/{board['retagged']}"
    tab = browser.new_page(viewport={"width": 1280, "height": 900})
    tab.goto(f"{base}/as-of/{board['moment'].digits}{path}")
    tab.wait_for_load_state("networkidle")
    steering = tab.locator("nav.booru-steering")
    _shoot(tab, steering, "browse-as-of-steering.png", tmp_path)
    tab.locator("a.booru-next-moment").click()
    tab.wait_for_load_state("networkidle")
    assert "/as-of/" in tab.url and TAGGED_LATER in tab.content()
    tab.locator("a.booru-moments-link").click()
    tab.wait_for_load_state("networkidle")
    assert tab.locator("li.booru-moment").count() >= 3
    _shoot(tab, tab.locator("main, .content, body").first, "browse-as-of-moments.png", tmp_path)
    tab.goto(f"{base}/")
    picker = tab.locator("form.booru-as-of-field")
    picker.locator('input[name="when"]').fill(board["moment"].text[:10])
    picker.locator('input[name="at"]').fill(board["moment"].text[11:19])
    _shoot(tab, picker, "browse-as-of-picker.png", tmp_path)
    picker.locator('input[type="submit"]').click()
    tab.wait_for_load_state("networkidle")
    assert tab.url.endswith(f"/as-of/{board['moment'].digits}/")


def _shoot(tab, element, name: str, tmp_path) -> None:
    """The docs' screenshots (docs/as-of.md), when MIRROR_SCREENSHOTS names where they go."""
    element.screenshot(path=str(tmp_path / name))
    if os.environ.get("MIRROR_SCREENSHOTS"):
        tab.screenshot(path=os.path.join(os.environ["MIRROR_SCREENSHOTS"], name))


def test_the_tag_and_search_pages_chart_the_search_month_by_month(board, pages):  # noqa: F811
    """The chart is a page of its own that the tag and search pages frame, so they never wait for
    its walk back over the history (seconds for a common tag on the whole board)."""
    q = board["dropped"]
    for path in (f"/-/booru?q={q}", f"/as-of/{board['moment'].digits}/-/booru?q={q}"):
        _, found = page(pages, path)
        total = int(re.search(r'<p class="booru-total">([\d,]+) image', found)[1].replace(",", ""))
        assert "<title>images found, month by month</title>" not in found, path  # drawn apart, not inline
        src = re.search(r"<iframe class=\"booru-trend-frame\" src=\"([^\"]+)\"", found)[1]
        assert src.startswith("/as-of/" if path.startswith("/as-of/") else "/-/trend?"), src
        _, chart = page(pages, src)
        points = re.findall(r"<title>images ([\d,]+) at ([^<]+)</title>", chart)
        assert "<title>images found, month by month</title>" in chart and len(points) >= 2, src
        assert int(points[-1][0].replace(",", "")) == total, src  # the last month's point is the search's total
    _, tag = page(pages, f"/-/tag/{board['tag_id']}")
    assert 'class="booru-chart-figure booru-trend"' in tag and 'src="/-/trend?q=' in tag
    _, words = page(pages, "/-/booru?q=description%3Aorchard")
    assert '<iframe class="booru-trend-frame"' not in words  # a search of words would be a search a month: no chart
