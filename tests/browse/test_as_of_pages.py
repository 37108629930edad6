"""`mirror browse --as-of WHEN`: every board page as it was at a moment, with a banner and a link to
the same page today, and links that stay within the moment.

A mirror of the local site is synced; the site is then edited (a retag, a description edited, an
image hidden, an image uploaded, a comment and a forum post edited) and synced again. `mirror
browse --as-of` a moment between the two syncs, run as a user runs it, must show the board as the
first sync left it.
"""

from __future__ import annotations

import html as html_text
import os
import re
from urllib.parse import urlencode
import time

import httpx
import pytest

from mirror.asof import Moment
from mirror.dates import utc_text
from mirror.localsite.board.editor import BoardEditor
from mirror.localsite.http.server import SiteServer

from ..support.browsing import browsing
from ..support.configs import RESOURCES, mirror_config, sync, write_config

DESCRIBED_LATER = "described only later"
TAGGED_LATER = "tagged only later"
# What has no past and is not carried into a moment: Datasette's own pages (its tables, the search
# of all tables, its files), the near-duplicate groups, and the date field's own address.
TODAYS = ("/-/booru.css", "/-/media", "/-/static", "/mirror", "/-/tables", "/-/search", "/-/duplicates", "/-/as-of",
          "/-/moments")


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("browse-as-of")
    with SiteServer(BoardEditor.generate(seed=21, images=30)) as site:
        editor = site.editor
        config = mirror_config(site, tmp, editor.everything_filter_id)
        sync(config, RESOURCES)
        shown = [i for i, im in sorted(editor.images.items()) if not im["hidden_from_users"]]
        retagged, described, hidden = shown[1], shown[2], shown[3]
        old_tags = editor.images[retagged]["tags"]
        dropped = next(t for t in old_tags if ":" not in t and t not in ("safe", "suggestive", "explicit"))
        old_description = editor.images[described]["description"]
        comment = next(c for c in sorted(editor.comments) if editor.comments[c]["image_id"] in shown)
        post = min(editor.posts)
        old_comment, old_post = editor.comments[comment]["body"], editor.posts[post]["body"]
        gallery = next(g for g in sorted(editor.galleries) if len(editor.galleries[g]["image_ids"]) >= 2)
        left = next(i for i in editor.galleries[gallery]["image_ids"] if i in shown[5:])
        joined = next(i for i in shown[5:] if i not in editor.galleries[gallery]["image_ids"])
        moment = Moment(utc_text())
        time.sleep(1.1)  # the history keeps times to the second: the edits come after the moment
        editor.edit_image(retagged, tags=[t for t in old_tags if t != dropped] + [TAGGED_LATER])
        editor.edit_image(described, description=DESCRIBED_LATER)
        editor.hide_image(hidden, "Rule #2")
        uploaded = editor.add_images(1)[0]
        editor.edit_comment(comment, body="a comment edited later")
        editor.edit_post(post, body="a post edited later")
        editor.edit_gallery(gallery, add=[joined], remove=[left])
        _, db = sync(config, RESOURCES)
    tag_id = db.execute("SELECT id FROM tags WHERE name = ?", [dropped]).fetchone()[0]
    topic = db.execute("SELECT forum_short_name, topic_slug FROM posts WHERE id = ?", [post]).fetchone()
    user = db.execute("SELECT uploader_id FROM images WHERE uploader_id IN (SELECT id FROM users)").fetchone()[0]
    return {"config": write_config(config, tmp / "mirror.toml"), "database": config.database, "moment": moment,
            "retagged": retagged, "dropped": dropped, "tag_id": tag_id, "described": described,
            "old_description": old_description,
            "hidden": hidden, "uploaded": uploaded, "comment_image": editor.comments[comment]["image_id"],
            "old_comment": old_comment, "old_post": old_post, "topic": topic, "user": user, "gallery": gallery,
            "left": left, "joined": joined}


@pytest.fixture(scope="module")
def pages(board):
    """`mirror browse --as-of` the moment, as run from the command line: its announced address."""
    with browsing(board["config"], args=("--as-of", board["moment"].text)) as url:
        yield url


def page(url: str, path: str) -> tuple[int, str]:
    response = httpx.get(url.rstrip("/") + path)
    return response.status_code, html_text.unescape(response.text)


def links(text: str) -> list[str]:
    return re.findall(r'(?:href|action)="([^"]*)"', text)


def test_the_image_page_as_of_the_moment_has_its_old_tags_and_description_and_a_banner(board, pages):
    prefix = f"/as-of/{board['moment'].digits}"
    status, then = page(pages, f"{prefix}/-/image/{board['retagged']}")
    assert status == 200
    assert board["dropped"] in then and TAGGED_LATER not in then
    assert 'class="booru-as-of"' in then and board["moment"].text.replace("T", " ").replace("Z", " UTC") in then
    assert f'rel="original" href="/-/image/{board["retagged"]}"' in then  # the same page today
    _, today = page(pages, f"/-/image/{board['retagged']}")
    assert TAGGED_LATER in today and 'class="booru-as-of"' not in today
    marked = httpx.get(f"{pages.rstrip('/')}{prefix}/-/image/{board['retagged']}").headers  # a memento, as serve's
    assert marked["memento-datetime"] == board["moment"].http_date
    assert marked["link"] == f'</-/image/{board["retagged"]}>; rel="original"'
    assert "memento-datetime" not in httpx.get(f"{pages.rstrip('/')}/-/image/{board['retagged']}").headers
    _, then = page(pages, f"{prefix}/-/image/{board['described']}")
    assert board["old_description"] in then and DESCRIBED_LATER not in then
    _, then = page(pages, f"{prefix}/-/image/{board['comment_image']}")
    assert board["old_comment"] in then and "a comment edited later" not in then


def test_an_image_hidden_later_was_shown_and_one_uploaded_later_is_not_found(board, pages):
    prefix = f"/as-of/{board['moment'].digits}"
    _, then = page(pages, f"{prefix}/-/image/{board['hidden']}")
    _, today = page(pages, f"/-/image/{board['hidden']}")
    assert "Rule #2" in today and "Rule #2" not in then
    assert page(pages, f"{prefix}/-/image/{board['uploaded']}")[0] == 404
    assert page(pages, f"/-/image/{board['uploaded']}")[0] == 200
    _, front = page(pages, f"{prefix}/")
    shown = {int(i) for i in re.findall(r'data-image-id="(\d+)"', front)}
    assert board["hidden"] in shown and board["uploaded"] not in shown and board["retagged"] in shown


def test_every_board_link_of_a_page_as_of_stays_within_the_moment(board, pages):
    prefix = f"/as-of/{board['moment'].digits}"
    forum, slug = board["topic"]
    for path in ("/", f"/-/image/{board['retagged']}", f"/-/tag/{board['tag_id']}", "/-/forums", "/-/galleries",
                 f"/-/user/{board['user']}", f"/-/gallery/{board['gallery']}", f"/-/forum/{forum}",
                 f"/-/topic/{forum}/{slug}", f"/-/image/{board['retagged']}/history", "/-/changes", "/-/tags"):
        status, text = page(pages, prefix + path)
        assert status == 200, path
        board_links = [href for href in links(text) if href.startswith("/") and not href.startswith(TODAYS)]
        # within a moment: this one, or another the banner steers to (the previous and next change)
        today = [href for href in board_links if not re.match(r"/as-of/\d{14}/", href)]
        assert len(today) == 1 and f'rel="original" href="{today[0]}"' in text, (path, today)
        steered = [href for href in board_links if href not in today and not href.startswith(prefix + "/")]
        assert all(re.search(f'(rel="(prev|next)"|class="booru-then") href="{re.escape(href)}"', text)
                   for href in steered), (path, steered)


def test_a_tag_page_as_of_the_moment_lists_the_image_that_carried_it_then(board, pages):
    prefix = f"/as-of/{board['moment'].digits}"
    _, then = page(pages, f"{prefix}/-/tag/{board['tag_id']}")
    _, today = page(pages, f"/-/tag/{board['tag_id']}")
    assert f'data-image-id="{board["retagged"]}"' in then
    assert f'data-image-id="{board["retagged"]}"' not in today


def test_a_topic_as_of_the_moment_shows_the_post_as_written_then(board, pages):
    forum, slug = board["topic"]
    prefix = f"/as-of/{board['moment'].digits}"
    _, then = page(pages, f"{prefix}/-/topic/{forum}/{slug}")
    _, today = page(pages, f"/-/topic/{forum}/{slug}")
    assert "a post edited later" in today and "a post edited later" not in then
    assert board["old_post"].split("\n")[0][:40] in then


def test_the_front_page_date_field_opens_the_board_as_of_that_day(board, pages):
    response = httpx.get(pages + "-/as-of", params={"when": board["moment"].text[:10]})
    assert response.status_code == 302
    assert response.headers["location"] == f"/as-of/{board['moment'].text[:10].replace('-', '')}235959/"
    assert 'name="when"' in page(pages, "/")[1]
    assert page(pages, "/as-of/2025-13-45/")[0] == 400


def test_the_history_pages_as_of_the_moment_end_at_it(board, pages):
    prefix = f"/as-of/{board['moment'].digits}"
    image = board["retagged"]
    _, then = page(pages, f"{prefix}/-/image/{image}/history")
    _, today = page(pages, f"/-/image/{image}/history")
    assert TAGGED_LATER in today and TAGGED_LATER not in then and "first seen" in then
    _, then = page(pages, f"{prefix}/-/changes?event=hidden,deleted")
    _, today = page(pages, "/-/changes?event=hidden,deleted")
    assert "Rule #2" in today and "Rule #2" not in then


def test_in_a_real_browser_a_link_followed_stays_within_the_moment_under_its_banner(board, pages, browser, tmp_path):
    prefix = f"/as-of/{board['moment'].digits}"
    tab = browser.new_page(viewport={"width": 1280, "height": 900})
    tab.goto(f"{pages.rstrip('/')}{prefix}/-/image/{board['retagged']}")
    tab.wait_for_load_state("networkidle")
    if os.environ.get("MIRROR_SCREENSHOTS"):  # the docs' screenshot (docs/as-of.md)
        tab.screenshot(path=os.path.join(os.environ["MIRROR_SCREENSHOTS"], "browse-as-of.png"))
    tab.screenshot(path=str(tmp_path / "as-of.png"))
    assert "The same page today" in tab.locator(".booru-as-of").inner_text()
    tab.locator(f'a[href="{prefix}/-/tag/{board["tag_id"]}"]').first.click()
    tab.wait_for_load_state("networkidle")
    assert tab.url.endswith(f"{prefix}/-/tag/{board['tag_id']}")
    assert tab.locator(f'figure.booru-image[data-image-id="{board["retagged"]}"]').count() == 1
    tab.locator(".booru-as-of a").click()
    tab.wait_for_load_state("networkidle")
    assert tab.url.endswith(f"/-/tag/{board['tag_id']}") and prefix not in tab.url
    assert tab.locator(".booru-as-of").count() == 0


def test_browse_as_of_a_moment_that_is_not_one_says_what_to_give_and_exits_2(tmp_path):
    from click.testing import CliRunner

    from mirror.cli import cli

    result = CliRunner().invoke(cli, ["browse", "--as-of", "2025-13-45"])
    assert result.exit_code == 2
    assert "give a day (2025-01-05" in result.output and "Traceback" not in result.output


def test_a_list_as_of_a_moment_read_only_in_part_offers_the_next_page(board, monkeypatch):
    import sqlite3

    from mirror.browse import then

    monkeypatch.setattr(then, "SCANNED", 4)
    conn = sqlite3.connect(board["database"])
    every = [row[0] for row in conn.execute("SELECT id FROM images ORDER BY id DESC")]
    cut = then.search_as_of(conn, iter(every), board["moment"], offset=2, limit=2)  # page 2 of 2 a page
    assert cut.more and cut.pages(2, 2) == 3 and cut.said == f"at least {cut.total}"
    whole = then.search_as_of(conn, iter(every[:3]), board["moment"], offset=0, limit=2)
    assert not whole.more and whole.pages(1, 2) == -(-whole.total // 2)


def test_a_page_with_no_past_asked_as_of_a_moment_redirects_to_today(board, pages):
    prefix = f"/as-of/{board['moment'].digits}"
    for path in ("/-/tables", "/mirror/images?_size=5", "/-/duplicates"):
        response = httpx.get(pages.rstrip("/") + prefix + path)
        assert response.status_code == 302 and response.headers["location"] == path, path
    elsewhere = httpx.get(pages.rstrip("/") + prefix + "//example.com/x")
    assert elsewhere.status_code == 302 and elsewhere.headers["location"] == "/example.com/x"  # never another site


def test_a_gallery_as_of_the_moment_holds_the_images_it_held_then(board, pages):
    prefix = f"/as-of/{board['moment'].digits}"
    _, then = page(pages, f"{prefix}/-/gallery/{board['gallery']}")
    _, today = page(pages, f"/-/gallery/{board['gallery']}")
    held = {int(i) for i in re.findall(r'data-image-id="(\d+)"', then)}
    now = {int(i) for i in re.findall(r'data-image-id="(\d+)"', today)}
    assert board["left"] in held and board["joined"] not in held
    assert board["joined"] in now and board["left"] not in now


def test_a_list_as_of_a_moment_reads_only_one_past_its_page(board):
    import sqlite3

    from mirror.browse import then

    conn = sqlite3.connect(board["database"])
    every = [row[0] for row in conn.execute("SELECT id FROM images ORDER BY id DESC")]
    read = []
    listed = then.search_as_of(conn, (read.append(i) or i for i in every), board["moment"], offset=0, limit=2)
    assert len(listed.ids) == 2 and listed.more and listed.total == 3
    assert len(read) <= 3 + 3  # three kept, and at most the uploaded-later and the hidden ones passed over


def test_the_search_page_as_of_the_moment_searches_the_board_then(board, pages):
    """A tag taken off since finds the image as of the moment, a tag put on since does not; an
    image hidden since is found then, one uploaded since is not (the front page lists the same)."""
    prefix = f"/as-of/{board['moment'].digits}"

    def found(path: str, q: str) -> set[int]:
        status, text = page(pages, f"{path}?{urlencode({'q': q, 'sf': 'id'})}")
        assert status == 200, text[-500:]
        return {int(n) for n in re.findall(r'href="(?:/as-of/\d+)?/-/image/(\d+)', text)}

    dropped = f'"{board["dropped"]}"'
    assert board["retagged"] in found(f"{prefix}/-/booru", dropped)
    assert board["retagged"] not in found("/-/booru", dropped)
    assert board["retagged"] not in found(f"{prefix}/-/booru", f'"{TAGGED_LATER}"')
    assert board["retagged"] in found("/-/booru", f'"{TAGGED_LATER}"')
    everything_then = found(f"{prefix}/-/booru", "*")
    assert board["hidden"] in everything_then and board["uploaded"] not in everything_then
    _, front = page(pages, f"{prefix}/")
    assert f"/-/image/{board['uploaded']}" not in front and f"/-/image/{board['hidden']}" in front


def test_a_moment_with_its_colons_percent_encoded_is_the_same_moment(board, pages):
    """Some clients encode the colons of ``2025-01-05T12:00:00Z`` (``%3A``): the same page, not a 404."""
    text = board["moment"].text
    encoded = text.replace(":", "%3A")
    assert encoded != text
    status, then = page(pages, f"/as-of/{encoded}/-/image/{board['retagged']}")
    assert status == 200, then[:300]
    assert board["dropped"] in then and TAGGED_LATER not in then
    assert f'rel="original" href="/-/image/{board["retagged"]}"' in then
