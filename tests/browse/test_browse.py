"""`mirror browse`: the plugin, its metadata, the booru search page and the canned queries,
through Datasette's own test client, on a mirror of the local site with pictures."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sqlite3
from pathlib import Path
from urllib.parse import quote

import pytest
from click.testing import CliRunner

from mirror.browse.app import make_datasette
from mirror.cli import cli
from mirror.errors import EXIT_STORE
from mirror.localsite.board.editor import BoardEditor
from mirror.localsite.http.server import SiteServer
from mirror.search import images

from ..support.browsing import assert_attributed_in_the_browser, assert_boxed_in_the_browser, browse_client, browsing, shown_images
from ..support.configs import RESOURCES, mirror_config, sync, write_config

IMG = re.compile(r'<img class="booru-thumb" src="/-/media/thumbnail/(\d+)"')
FIGURE = re.compile(r'<figure class="booru-image" data-image-id="(\d+)">(.*?)</figure>', re.DOTALL)


@pytest.fixture(scope="module")
def gallery(tmp_path_factory):
    """A mirror (records and files) of a small board with real pictures, and the site it came from."""
    tmp = tmp_path_factory.mktemp("browse")
    with SiteServer(BoardEditor.generate(seed=8, images=40, with_pictures=True)) as site:
        config = mirror_config(site, tmp, site.editor.everything_filter_id)
        _, db = sync(config, RESOURCES)
        base = site.url
    return config, db, base


@pytest.fixture
async def client(gallery):
    config = gallery[0]
    return await browse_client(config)


def boxed(html: str, db, base: str) -> list[int]:
    """The images a grid shows; each a box linked to its page, with its counts and without the
    attribution (its page has it; its title names its artists)."""
    shown = []
    for image_id, inner in FIGURE.findall(html):
        image = db["images"].get(int(image_id))
        artists = [t[len("artist:"):] for t in json.loads(image["tags"] or "[]") if t.startswith("artist:")]
        title = re.search(r'<a class="booru-box" href="/-/image/' + image_id + r'[?"][^>]*title="([^"]*)"', inner)
        assert title and all(artist in title.group(1) for artist in artists), (image_id, inner)
        assert f'href="{base}/images/{image_id}"' not in inner and "booru-source" not in inner
        assert 'class="booru-counts"' in inner
        shown.append(int(image_id))
    return shown


def attributed(html: str, db, base: str) -> list[int]:
    """The images a page shows; each must show its artists, its source and its page on the site."""
    shown = []
    for image_id, inner in FIGURE.findall(html):
        image = db["images"].get(int(image_id))
        artists = [t[len("artist:"):] for t in json.loads(image["tags"] or "[]") if t.startswith("artist:")]
        for artist in artists:
            assert f">{artist}</a>" in inner, (image_id, artist)
        if not artists:
            assert "artist unknown" in inner
        if image["source_url"]:
            assert f'href="{image["source_url"]}"' in inner.replace("&amp;", "&")
        else:
            assert "no source given" in inner
        assert f'href="{base}/images/{image_id}"' in inner
        shown.append(int(image_id))
    return shown


async def test_the_search_page_shows_a_grid_of_kept_thumbnails_in_boxes(client, gallery):
    config, db, base = gallery
    tag = db.execute("SELECT t.name FROM image_tags it JOIN tags t ON t.id = it.tag_id JOIN images i ON i.id = it.image_id "
                     "WHERE coalesce(i.hidden_from_users, 0) = 0 GROUP BY t.id ORDER BY count(*) DESC LIMIT 1").fetchone()[0]
    response = await client.get("/-/booru", params={"q": tag, "sf": "id", "sd": "asc"})
    assert response.status_code == 200
    expected = [r[0] for r in db.execute("SELECT it.image_id FROM image_tags it JOIN tags t ON t.id = it.tag_id "
                                         "JOIN images i ON i.id = it.image_id WHERE t.name = ? "
                                         "AND coalesce(i.hidden_from_users, 0) = 0 ORDER BY it.image_id", [tag])]
    assert boxed(response.text, db, base) == expected
    kept = {int(i) for i in IMG.findall(response.text)}
    assert kept and kept <= set(expected)
    for image_id in kept:  # the thumbnail is the kept file, served locally
        thumb = await client.get(f"/-/media/thumbnail/{image_id}")
        assert thumb.status_code == 200 and thumb.headers["content-type"].startswith("image/")
        row = db.execute("SELECT path FROM downloads WHERE image_id = ? AND representation = 'thumb'",
                         [image_id]).fetchone()
        assert not row[0].endswith((".webm", ".mp4"))  # videos are shown as <video>, not <img>
        assert thumb.content == (Path(config.store.files) / row[0]).read_bytes()
    assert f"{len(expected):,} image" in response.text


async def test_a_bad_query_shows_the_parsers_message(client):
    response = await client.get("/-/booru", params={"q": "(safe"})
    assert response.status_code == 200 and "Imbalanced parentheses." in response.text
    response = await client.get("/-/booru", params={"q": "my:faves"})
    assert "needs an account" in response.text


async def test_images_not_downloaded_show_a_placeholder_in_their_box(client, gallery):
    config, db, base = gallery
    waiting = db.execute("SELECT id FROM images WHERE thumbnails_generated = 0 AND coalesce(hidden_from_users, 0) = 0"
                         ).fetchone()[0]
    response = await client.get("/-/booru", params={"q": f"id:{waiting}"})
    assert boxed(response.text, db, base) == [waiting]
    assert "not downloaded" in response.text and not IMG.findall(response.text)


async def test_image_rows_and_tables_show_attributed_thumbnails(client, gallery):
    config, db, base = gallery
    image_id = db.execute("SELECT image_id FROM downloads WHERE representation = 'thumb' AND status = 'done' "
                          "ORDER BY image_id LIMIT 1").fetchone()[0]
    row = await client.get(f"/mirror/images/{image_id}")
    assert attributed(row.text, db, base) == [image_id] and IMG.search(row.text)
    table = await client.get("/mirror/images", params={"_sort": "id"})
    assert len(attributed(table.text, db, base)) == min(25, db["images"].count)
    details = await client.get("/mirror/image_details")
    assert attributed(details.text, db, base)
    tags = re.search(r'<td class="col-tags[^>]*>(.*?)</td>', row.text, re.DOTALL).group(1)
    assert 'href="/-/booru?q=' in tags  # tags link to their images


async def test_canned_queries(client, gallery):
    config, db, base = gallery
    top = (await client.get("/mirror/top_artists.json", params={"_shape": "array"})).json()
    counts = dict(db.execute("SELECT t.name, count(*) FROM image_tags it JOIN tags t ON t.id = it.tag_id "
                             "WHERE t.name LIKE 'artist:%' GROUP BY t.id").fetchall())
    assert top and top[0]["images"] == max(counts.values()) and counts[top[0]["tag"]] == top[0]["images"]
    tag = top[0]["tag"]
    together = (await client.get("/mirror/tags_with_tag.json", params={"tag": tag, "_shape": "array"})).json()
    assert together and all(row["tag"] != tag for row in together)
    gone = (await client.get("/mirror/gone_from_the_site.json", params={"_shape": "array"})).json()
    assert {row["id"] for row in gone} == {r[0] for r in db.execute("SELECT id FROM images WHERE hidden_from_users = 1")}
    assert all(row["deletion_reason"] or row["merged_into"] for row in gone)
    gallery_id, = db.execute("SELECT gallery_id FROM gallery_images GROUP BY gallery_id ORDER BY count(*) DESC").fetchone()
    ordered = (await client.get("/mirror/gallery_in_order.json", params={"gallery": gallery_id, "_shape": "array"})).json()
    assert [row["id"] for row in ordered] == [r[0] for r in db.execute(
        "SELECT image_id FROM gallery_images WHERE gallery_id = ? ORDER BY position", [gallery_id])]
    html = await client.get("/mirror/gallery_in_order", params={"gallery": gallery_id})
    assert attributed(html.text, db, base)
    forum, topic = db.execute("SELECT forum_short_name, topic_slug FROM posts GROUP BY 1, 2 ORDER BY count(*) DESC").fetchone()
    thread = (await client.get("/mirror/forum_thread.json", params={"forum": forum, "topic": topic,
                                                                   "_shape": "array"})).json()
    assert [row["created_at"] for row in thread] == sorted(row["created_at"] for row in thread) and thread
    last = (await client.get("/mirror/last_sync.json", params={"_shape": "array"})).json()
    assert last and {row["id"] for row in last} <= {r[0] for r in db.execute("SELECT id FROM images")}


async def test_facets_full_text_search_and_readable_text(client, gallery):
    config, db, base = gallery
    faceted = (await client.get("/mirror/images.json", params={"_facet": "format"})).json()
    assert {"format"} <= set(faceted["facet_results"])
    for large in ("images", "image_details", "comments", "posts", "tag_usage", "posts_by_user"):
        plain = (await client.get(f"/mirror/{large}.json")).json()  # a GROUP BY per column, at a million rows
        assert plain["facet_results"] == {} and plain["suggested_facets"] == [], large
    assert (await client.get("/mirror/tags.json")).json()["facet_results"]  # small tables keep theirs
    word = db.execute("SELECT body FROM comments WHERE body LIKE '% %' LIMIT 1").fetchone()[0].split()[0].strip(".,")
    found = (await client.get("/mirror/comments.json", params={"_search": word, "_shape": "array"})).json()
    assert found and all(word.lower() in row["body"].lower() for row in found)
    everywhere = await client.get("/-/search", params={"q": word})
    assert everywhere.status_code == 200 and "comments" in everywhere.text
    comment = await client.get(f"/mirror/comments/{found[0]['id']}")
    assert '<div class="booru-text">' in comment.text


def test_browse_without_a_mirror_says_so(tmp_path):
    path = tmp_path / "mirror.toml"
    path.write_text(f'[store]\ndatabase = "{tmp_path / "none.db"}"\n')
    result = CliRunner().invoke(cli, ["-c", str(path), "browse", "--port", "0"])
    assert result.exit_code == EXIT_STORE and "no mirror database" in result.output


def test_metadata_for_a_plain_datasette(gallery, tmp_path):
    config = gallery[0]
    path = write_config(config, tmp_path / "mirror.toml")
    result = CliRunner().invoke(cli, ["-c", str(path), "browse", "--metadata"])
    meta = json.loads(result.output)
    assert set(meta["databases"]["mirror"]["queries"]) >= {"top_artists", "gallery_in_order", "gone_from_the_site"}
    assert str(Path(config.store.files).absolute()) in meta["plugins"]["datasette-media"]["thumbnail"]["sql"]


# --- in a real browser ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def browse_url(gallery, tmp_path_factory):
    """`mirror browse` running on a free loopback port, as a user would start it."""
    with browsing(write_config(gallery[0], tmp_path_factory.mktemp("browse-cli") / "mirror.toml")) as url:
        yield url


def test_thumbnails_load_from_local_files_in_a_real_browser(gallery, browse_url, browser, tmp_path):
    config, db, base = gallery
    page = browser.new_page(viewport={"width": 1400, "height": 4000})
    tag = db.execute("SELECT t.name FROM image_tags it JOIN tags t ON t.id = it.tag_id JOIN downloads d "
                     "ON d.image_id = it.image_id AND d.representation = 'thumb' AND d.path NOT LIKE '%.webm' "
                     "GROUP BY t.id ORDER BY count(*) DESC LIMIT 1").fetchone()[0]
    page.goto(f"{browse_url}-/booru?q={quote(tag)}&sf=id&sd=asc")
    cards = shown_images(page)
    pictures = [card for card in cards if card["width"] is not None]
    assert len(pictures) >= 5 and all(card["width"] > 0 for card in pictures)
    assert_boxed_in_the_browser(cards, db)
    page.screenshot(path=str(tmp_path / "search.png"))
    if os.environ.get("MIRROR_SCREENSHOTS"):  # how the screenshot of docs/browse.md is made
        page.set_viewport_size({"width": 1200, "height": 900})
        page.screenshot(path=os.path.join(os.environ["MIRROR_SCREENSHOTS"], "browse-search.png"))
    image_id = pictures[0]["id"]
    page.goto(f"{browse_url}mirror/images/{image_id}")
    page.screenshot(path=str(tmp_path / "image.png"))
    row = shown_images(page)
    assert [card["id"] for card in row] == [image_id] and row[0]["width"] > 0
    assert_attributed_in_the_browser(row, db, base)
    page.close()


async def test_browsing_goes_on_while_a_sync_holds_a_write_transaction(client, gallery):
    config, db, base = gallery
    writer = sqlite3.connect(config.database, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")  # as a sync does while it writes a page
    try:
        writer.execute("UPDATE sync_state SET updated_at = updated_at")
        response = await client.get("/-/booru", params={"q": "*"})
        assert response.status_code == 200 and FIGURE.search(response.text)
        assert (await client.get("/mirror/image_details")).status_code == 200
    finally:
        writer.execute("ROLLBACK")
        writer.close()


async def test_searches_keep_their_posting_lists_while_datasette_opens_connections(client, gallery):
    """Datasette opens a read connection per thread as requests arrive; were searches run on them, each
    new one would drop every kept list (it cannot tell what changed before it came)."""
    config, db, base = gallery
    tags = [r[0] for r in db.execute("SELECT t.name FROM image_tags it JOIN tags t ON t.id = it.tag_id "
                                     "GROUP BY t.id ORDER BY count(*) DESC LIMIT 6")]
    assert (await client.get("/-/booru", params={"q": tags[0]})).status_code == 200
    postings = images.postings_of(config.database)
    before = postings.generation
    at_once = [client.get("/-/booru", params={"q": tag}) for tag in tags]
    at_once += [client.get(path) for path in ("/mirror/images", "/mirror/comments", "/mirror/tags", "/mirror")] * 2
    answers = await asyncio.gather(*at_once)
    assert all(answer.status_code == 200 for answer in answers)
    assert postings.generation == before


async def test_the_database_page_counts_tables_in_steps_and_again_once_the_mirror_changed(gallery, tmp_path):
    config, db, base = gallery
    path = tmp_path / "mirror.db"
    with sqlite3.connect(config.database) as source, sqlite3.connect(path) as copy:
        source.backup(copy)
    datasette = make_datasette(path, base_url=config.site.base_url, files=config.store.files)
    database = datasette.get_database("mirror")
    counts = await database.table_counts(50)
    assert counts["comments"] == db.execute("SELECT count(*) FROM comments").fetchone()[0] > 0
    with sqlite3.connect(path) as writer:
        writer.execute("CREATE TABLE big AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n "
                       "WHERE i < 300000) SELECT i FROM n")
    assert (await database.table_counts(1))["big"] is None  # row by row, stopped at its time limit
    assert (await database.table_counts(50))["big"] is None  # the same file: the same counts
    with sqlite3.connect(path) as writer:
        writer.execute("DELETE FROM comments WHERE id = (SELECT min(id) FROM comments)")
    again = await database.table_counts(30_000)  # a limit a loaded machine cannot reach
    assert again["comments"] == counts["comments"] - 1 and again["big"] == 300000  # changed: counted again
    page = (await datasette.client.get("/mirror.json")).json()
    assert {t["name"]: t["count"] for t in page["tables"]}["comments"] == again["comments"]
