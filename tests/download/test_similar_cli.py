"""Finding the copies the site's rule misses, end to end: fingerprints read from the files a sync
downloads, `mirror reverse --similar` for a cropped or bordered copy, `mirror duplicates` for an
image uploaded twice, and a clear message on an archive without fingerprints."""

from __future__ import annotations

import io
import json
import time

import pytest
from click.testing import CliRunner
from PIL import Image, ImageOps

from mirror.cli import cli
from mirror.localsite.board.editor import BoardEditor
from mirror.localsite.http.server import SiteServer

from ..support.browsing import browse_client
from ..support.configs import site_config, sync, write_config


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    """A mirror with thumbnails only, of a board with pictures where one was uploaded twice."""
    tmp = tmp_path_factory.mktemp("similar")
    editor = BoardEditor.generate(seed=9, images=30, with_pictures=True)
    editor.processing_delay = 0.0
    original = next(i for i, image in sorted(editor.images.items())
                    if image["format"] == "png" and not image["hidden_from_users"] and image["width"] >= 400)
    data = editor.image_file(editor.images[original], "full", "png")
    picture = Image.open(io.BytesIO(data)).convert("RGB")
    copy = io.BytesIO()
    picture.resize((picture.width // 2, picture.height // 2)).save(copy, "JPEG", quality=80)
    uploaded = editor.add_upload(copy.getvalue(), name="copy.jpg", fmt="jpg", mime_type="image/jpeg",
                                 width=picture.width // 2, height=picture.height // 2, duration=0.0, animated=False,
                                 tags=["safe", "pony", "solo"], description="", source_urls=[],
                                 user_id=None, anonymous=True)["id"]
    time.sleep(0.2)  # processed after processing_delay
    with SiteServer(editor) as site:
        config = site_config(site, tmp, download={"enabled": True, "representations": ["thumb"],
                                                  "requests_per_second": 500, "partial_dir": str(tmp / "p")})
        _, db = sync(config)
    return write_config(config, tmp / "mirror.toml"), db, original, uploaded, picture, tmp


def run(path, *args):
    return CliRunner().invoke(cli, ["-c", str(path), *args])


def test_fingerprints_are_read_from_the_kept_thumbnails(archive):
    path, db, *_ = archive
    kept = db.execute("SELECT count(DISTINCT image_id) FROM downloads d JOIN images i ON i.id = d.image_id "
                      "WHERE d.status = 'done' AND min(i.width, i.height) >= 16").fetchone()[0]  # smaller: too small
    hashed = db.execute("SELECT count(DISTINCT image_id) FROM image_hashes WHERE source_representation = 'thumb'")
    assert kept > 20 and hashed.fetchone()[0] == kept


@pytest.mark.parametrize("alter", ["crop", "border"])
def test_a_cropped_or_bordered_copy_finds_its_original_first(archive, alter):
    path, db, original, uploaded, picture, tmp = archive
    w, h = picture.size
    changed = (picture.crop((w // 20, h // 20, w - w // 20, h - h // 20)) if alter == "crop"
               else ImageOps.expand(picture, border=max(2, w // 30), fill=(250, 20, 120)))
    query = tmp / f"{alter}.png"
    changed.save(query)
    found = run(path, "reverse", str(query), "--similar")
    assert found.exit_code == 0, found.output
    lines = found.output.splitlines()
    ids = [line.split(":")[0].strip() for line in lines]
    # the original, or its uploaded copy as near, comes first
    assert str(original) in ids[:2] and set(ids[:2]) <= {str(original), str(uploaded)}, found.output
    assert lines[0].endswith(")") and "(distance " in lines[0]
    assert int(lines[ids.index(str(original))].rsplit("(distance ", 1)[1].rstrip(")")) <= 12


def test_duplicates_groups_the_image_uploaded_twice(archive):
    path, db, original, uploaded, *_ = archive
    found = run(path, "duplicates", "--json")
    assert found.exit_code == 0, found.output
    answer = json.loads(found.output)
    group = next(group for group in answer["groups"] if group["ids"] == sorted([original, uploaded]))
    [pair] = group["pairs"]
    assert answer["distance"] == 12 and (pair["a"], pair["b"]) == tuple(group["ids"]) and 0 <= pair["distance"] <= 12
    shown = run(path, "duplicates")
    assert f"  {min(original, uploaded)} (" in shown.output and "group" in shown.output
    assert f"    {max(original, uploaded)} (" in shown.output
    assert f"at distance {pair['distance']} from {min(original, uploaded)}" in shown.output


def test_a_pair_is_as_far_apart_for_both_tools_whichever_is_the_query(archive):
    """`reverse --similar` with either file of a pair grouped by `duplicates` gives the other at
    the distance `duplicates` gave, or within 2 of it: the query is fingerprinted as the archive
    fingerprints its files, at the thumbnail's size (the archive's thumbnail of a JPEG is itself a
    JPEG, re-encoded once more, which a query read from the file is not)."""
    path, db, original, uploaded, picture, tmp = archive
    group = next(group for group in json.loads(run(path, "duplicates", "--json").output)["groups"]
                 if group["ids"] == sorted([original, uploaded]))
    apart = group["pairs"][0]["distance"]
    copy = io.BytesIO()
    picture.resize((picture.width // 2, picture.height // 2)).save(copy, "JPEG", quality=80)
    (tmp / "copy.jpg").write_bytes(copy.getvalue())
    picture.save(tmp / "original.png")
    for query, other in (("copy.jpg", original), ("original.png", uploaded)):
        lines = run(path, "reverse", str(tmp / query), "--similar").output.splitlines()
        line = next(line for line in lines if line.startswith(f"  {other}:"))
        assert abs(int(line.rsplit("(distance ", 1)[1].rstrip(")")) - apart) <= 2, (query, line, apart)


def test_matches_past_the_grouping_distance_come_after_a_line_that_says_so(archive):
    path, db, original, uploaded, picture, tmp = archive
    picture.save(tmp / "original.png")
    lines = run(path, "reverse", str(tmp / "original.png"), "--similar").output.splitlines()
    marker = next(n for n, line in enumerate(lines) if line.startswith("  -- past this line"))
    distances = [int(line.rsplit("(distance ", 1)[1].rstrip(")")) for line in lines if "(distance " in line]
    assert marker == sum(d <= 12 for d in distances) >= 2  # the picture itself and its copy, then the rest
    assert all(d > 12 for d in distances[marker:]) and distances == sorted(distances)


def test_an_archive_without_fingerprints_says_what_to_do(tmp_path, site):
    config = site_config(site, tmp_path)
    sync(config)
    path = write_config(config, tmp_path / "mirror.toml")
    query = tmp_path / "q.png"
    Image.new("RGB", (40, 30), (10, 200, 30)).save(query)
    for args in (["reverse", str(query), "--similar"], ["duplicates"]):
        result = run(path, *args)
        assert result.exit_code == 2 and "no fingerprints to compare with" in result.output, args


def test_the_browse_page_shows_each_group_linked_to_the_images_pages(archive):
    import asyncio

    from mirror.config import load_config

    path, db, original, uploaded, *_ = archive
    config = load_config(str(path))

    async def page() -> str:
        client = await browse_client(config)
        return (await client.get("/-/duplicates")).text

    html = asyncio.run(page())
    group = html.split('class="booru-grid booru-group"')[1].split("</div>\n")[0]
    assert f'data-image-id="{min(original, uploaded)}"' in group and f'data-image-id="{max(original, uploaded)}"' in group
    for image_id in (original, uploaded):  # each picture opens its page, where its attribution is (issue 39)
        assert f'<a class="booru-box" href="/-/image/{image_id}" title="#{image_id}' in group


def test_the_browse_page_of_an_archive_without_copies_says_so_without_an_error(archive, tmp_path):
    """Fingerprints but no two pictures within the distance is an answer (the demo's archive before
    it planted copies showed an empty error box)."""
    import asyncio
    import dataclasses
    import sqlite3

    from sqlite_utils import Database

    from mirror.config import load_config

    path, db, original, uploaded, *_ = archive
    config = load_config(str(path))
    copy = tmp_path / "mirror.db"
    with sqlite3.connect(config.database) as source, sqlite3.connect(copy) as target:
        source.backup(target)  # the WAL's pages too
    alone = Database(copy)
    alone.execute("DELETE FROM image_hashes WHERE image_id = ?", [uploaded])
    alone.conn.commit()
    fingerprinted = alone.execute("SELECT count(DISTINCT image_id) FROM image_hashes").fetchone()[0]
    alone.conn.close()
    config = dataclasses.replace(config, store=dataclasses.replace(config.store, database=str(copy)))

    async def page() -> str:
        client = await browse_client(config)
        return (await client.get("/-/duplicates")).text

    html = asyncio.run(page())
    assert "message-error" not in html
    assert f"No two of the {fingerprinted:,} fingerprinted images are within distance 12" in html
