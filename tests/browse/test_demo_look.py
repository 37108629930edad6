"""The README's first picture: the front page of the mirror `mirror demo` makes, in a real browser,
pictures and all, with the moment field (`MIRROR_SCREENSHOTS=docs` writes docs/browse-front.png)."""

from __future__ import annotations

import sqlite3

import pytest

from mirror.commands.demo import run_demo

from ..support.browsing import browsing, shown_images
from .test_image_page import screenshot


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """What `mirror demo` leaves in data/ (made before the browser starts: Playwright's loop and the
    demo's own cannot share a thread)."""
    data = tmp_path_factory.mktemp("demo") / "data"
    run_demo(image_count=40, data_dir=str(data), echo=lambda line: None)
    return data


def test_the_demos_front_page_shows_its_pictures_and_the_moment_field(demo, browser):
    data = demo
    db = sqlite3.connect(data / "mirror.db")
    kept = {row[0] for row in db.execute("SELECT DISTINCT image_id FROM downloads WHERE status = 'done' "
                                         "AND representation = 'thumb'")}
    unprocessed = {row[0] for row in db.execute("SELECT id FROM images WHERE NOT thumbnails_generated")}
    planted = {row[0] for row in db.execute("SELECT id FROM images WHERE description LIKE 'A copy of image #%'")}
    with browsing(data / "mirror.toml") as url:
        tab = browser.new_page(viewport={"width": 1280, "height": 900})
        tab.goto(url)
        cards = shown_images(tab)
        tab.wait_for_function("() => [...document.querySelectorAll('video.booru-thumb')].every(v => v.videoWidth > 0)")
        first_screen = tab.evaluate("""() => [...document.querySelectorAll('figure.booru-image')]
            .filter(f => f.getBoundingClientRect().top < innerHeight).map(f => {
                const shown = f.querySelector('img.booru-thumb, video.booru-thumb');
                return [Number(f.dataset.imageId), shown ? (shown.naturalWidth || shown.videoWidth || 0) : null];
            })""")
        assert len(first_screen) >= 8
        # A picture in every box whose thumbnail was kept; a "not downloaded" box only for an image
        # the site has not processed yet (none of its files exist), as on the site.
        assert [(i, width) for i, width in first_screen if i in kept and not width] == []
        assert {i for i, width in first_screen if width is None} <= unprocessed
        assert planted <= {card["id"] for card in cards[:len(planted)]}  # the demo's copies, its newest uploads
        field = tab.locator("form.booru-as-of-field input[type=date]")
        assert field.is_visible() and field.bounding_box()["y"] < 900
        screenshot(tab, "browse-front.png")
