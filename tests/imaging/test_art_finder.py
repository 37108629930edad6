"""The near-duplicate finder on real drawings, end to end: painted portraits on transparent
backgrounds and opaque scenes uploaded to the local site, mirrored with thumbnails only, then
searched with their own files and grouped with the copies a booru sees (issue 28)."""

from __future__ import annotations

import io
import json
import time

import pytest
from click.testing import CliRunner
from PIL import Image

from mirror.cli import cli
from mirror.imaging.similar import CROP_RANGE, CROPS, VERSION, distance, fingerprint_of, word_distance
from mirror.imaging.sketch import SKETCH_BYTES
from mirror.localsite.board.editor import BoardEditor
from mirror.localsite.http.server import SiteServer
from mirror.search.similar import GROUP_DISTANCE
from mirror.store.similar import load_sketches

from ..support.art import BLACK, WHITE, artworks, copies, flatten, png, upload
from ..support.browsing import browse_client
from ..support.configs import site_config, sync, write_config

PORTRAITS = [art for art in artworks("archived") if art.transparent][:8]
SCENES = [art for art in artworks("archived") if not art.transparent][:2]
COPIED = {PORTRAITS[0].name: "JPEG q70", PORTRAITS[1].name: "flattened on black", SCENES[0].name: "3% white border"}
# Wesnoth's general is its marshal painted over: the same figure and pose, other armour and plume.
MARSHAL = next(art for art in artworks("archived") if art.name.endswith("-marshal-2.webp"))
GENERAL = next(art for art in artworks("unseen") if art.name.endswith("-general.webp"))


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    """Drawings and three copies of them on a board, mirrored with thumbnails only."""
    tmp = tmp_path_factory.mktemp("art")
    editor = BoardEditor.generate(seed=28, images=3)
    editor.processing_delay = 0.0
    ids, files = {}, {}
    for art in PORTRAITS + SCENES + [MARSHAL]:
        files[art.name] = png(art.picture())
        ids[art.name] = upload(editor, files[art.name], art.name)
    copied = {}
    for art in PORTRAITS + SCENES:
        if art.name in COPIED:
            copied[ids[art.name]] = upload(editor, copies(art)[COPIED[art.name]], f"copy of {art.name}")
    time.sleep(0.2)  # processed after processing_delay
    with SiteServer(editor) as site:
        config = site_config(site, tmp, download={"enabled": True, "representations": ["thumb"],
                                                  "requests_per_second": 500, "partial_dir": str(tmp / "p")})
        sync(config)
        merged = copied[ids[PORTRAITS[1].name]]
        editor.merge_image(merged, into=ids[PORTRAITS[1].name])  # the site agrees, after the files were kept
        _, db = sync(config)
    return write_config(config, tmp / "mirror.toml"), db, ids, files, copied, tmp


def run(path, *args):
    return CliRunner().invoke(cli, ["-c", str(path), *args])


def _nearest(path, tmp, data: bytes) -> tuple[int, int]:
    query = tmp / "query.png"
    query.write_bytes(data)
    result = run(path, "reverse", str(query), "--similar")
    assert result.exit_code == 0, result.output
    first = next(line for line in result.output.splitlines() if not line.startswith("  --"))  # not the copies' line
    return int(first.split(":")[0]), int(first.rsplit("(distance ", 1)[1].rstrip(")"))


def test_a_stored_transparent_png_is_found_by_its_own_file_at_distance_0(archive):
    path, _, ids, files, _, tmp = archive
    for art in PORTRAITS[:4]:
        assert _nearest(path, tmp, files[art.name]) == (ids[art.name], 0), art.name


def test_transparent_pictures_are_stored_seen_on_both_backgrounds(archive):
    _, db, ids, *_ = archive
    views = dict(db.execute("SELECT image_id, count(DISTINCT view) FROM image_hashes WHERE version = ? "
                            "GROUP BY image_id", [VERSION]).fetchall())
    assert all(views[ids[art.name]] == 3 for art in PORTRAITS)  # on black, on white, and as stored
    assert all(views[ids[art.name]] == 1 for art in SCENES)


def test_duplicates_groups_each_copy_with_its_original_and_nothing_else(archive):
    path, _, _, _, copied, _ = archive
    result = run(path, "duplicates", "--json")
    assert result.exit_code == 0, result.output
    found = json.loads(result.output)["groups"]
    assert sorted(group["ids"] for group in found) == sorted([original, copy] for original, copy in copied.items())


def test_a_picture_never_stored_matches_nothing_within_the_grouping_distance(archive):
    path, _, _, _, _, tmp = archive
    for art in artworks("unseen")[:3]:
        assert _nearest(path, tmp, png(art.picture()))[1] > GROUP_DISTANCE, art.name


def test_an_edit_of_a_stored_picture_is_told_from_its_copies():
    """The general's words are within the grouping distance of the marshal's (a pHash reads the
    picture whole, at 32x32); its sketch is not, where no copy's is."""
    marshal, general = (fingerprint_of(png(art.picture())) for art in (MARSHAL, GENERAL))
    assert min(word_distance(a, b) for a in general.views for b in marshal.views) <= GROUP_DISTANCE
    assert distance(general, marshal) > GROUP_DISTANCE
    for kind, data in copies(MARSHAL).items():
        assert distance(fingerprint_of(data), marshal) <= GROUP_DISTANCE, kind


def test_an_edit_searched_with_its_file_is_not_found_as_a_copy(archive):
    path, _, ids, files, _, tmp = archive
    assert _nearest(path, tmp, files[MARSHAL.name]) == (ids[MARSHAL.name], 0)
    image_id, found = _nearest(path, tmp, png(GENERAL.picture()))
    assert image_id == ids[MARSHAL.name] and found > GROUP_DISTANCE  # nearest, but not a copy


def _silhouette(art) -> Image.Image:
    """The figure of a portrait as line art or a silhouette is drawn: black, on transparency."""
    shape = Image.new("RGBA", art.picture().size, (0, 0, 0, 0))
    shape.putalpha(art.picture().getchannel("A"))
    return shape


def test_black_silhouettes_are_told_apart_by_their_shapes():
    """Seen on black (or with their alpha ignored) every black drawing on transparency is one
    black square: those views show nothing and are not compared."""
    first, second = (_silhouette(art) for art in PORTRAITS[:2])
    stored = [fingerprint_of(png(first)), fingerprint_of(png(second))]
    assert all(len(fingerprint.views) == 1 for fingerprint in stored)  # on white only
    assert distance(*stored) > GROUP_DISTANCE
    assert distance(fingerprint_of(png(flatten(first, WHITE))), stored[0]) == 0
    blank = fingerprint_of(png(flatten(first, BLACK)))  # a black square: its one view, matching no drawing
    assert len(blank.views) == 1 and distance(blank, stored[0]) > GROUP_DISTANCE


@pytest.mark.parametrize("older", [1, VERSION - 1])
def test_fingerprints_of_an_older_finder_are_computed_again_by_verify(archive, older):
    path, db, ids, *_ = archive
    portrait = ids[PORTRAITS[2].name]
    db.execute("DELETE FROM image_hashes WHERE image_id = ? AND view > 0", [portrait])
    db.execute("DELETE FROM image_sketches WHERE image_id = ?", [portrait])  # a finder before sketches
    db.execute("DELETE FROM image_crops WHERE image_id = ?", [portrait])  # and before crops
    db.execute("UPDATE image_hashes SET version = ?, value = 0 WHERE image_id = ?", [older, portrait])
    db.conn.commit()
    result = run(path, "verify")
    assert result.exit_code == 0, result.output
    rows = db.execute("SELECT count(DISTINCT view), min(version) FROM image_hashes WHERE image_id = ?",
                      [portrait]).fetchone()
    assert rows == (3, VERSION)
    assert len(load_sketches(db, portrait)) == 3 and all(load_sketches(db, portrait))  # one for each view
    crops = db.execute("SELECT count(*) FROM image_crops WHERE image_id = ?", [portrait]).fetchone()[0]
    assert crops == 3 * len(CROPS)


def test_fingerprints_of_version_4_are_computed_again_with_their_fine_pictures(archive):
    """A version 4 archive kept each view's 16x16 sketch alone; verify reads the kept thumbnail
    again, and each sketch is followed by the view's fine picture (what tells siblings apart)."""
    path, db, ids, *_ = archive
    portrait = ids[PORTRAITS[4].name]
    db.execute("UPDATE image_sketches SET sketch = substr(sketch, 1, ?) WHERE image_id = ?", [SKETCH_BYTES, portrait])
    db.execute("UPDATE image_hashes SET version = 4 WHERE image_id = ?", [portrait])
    db.conn.commit()
    result = run(path, "verify")
    assert result.exit_code == 0, result.output
    assert db.execute("SELECT min(version) FROM image_hashes WHERE image_id = ?", [portrait]).fetchone()[0] == VERSION
    assert all(len(sketch) > SKETCH_BYTES for sketch in load_sketches(db, portrait))


@pytest.mark.parametrize("mode", ["RGBA", "LA", "P", "animated GIF"])
def test_transparency_is_seen_the_same_whatever_the_files_mode(mode):
    art = PORTRAITS[3]
    picture = art.picture()
    out = io.BytesIO()
    if mode == "LA":
        picture = picture.convert("LA")
        picture.save(out, "PNG")
    elif mode == "P":
        picture = picture.quantize(255, dither=Image.Dither.NONE)  # alpha becomes a transparent entry
        picture.save(out, "PNG")
    elif mode == "animated GIF":
        flipped = picture.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
        frames = [flipped, picture, flipped]  # the site reads the frame at half the duration
        frames[0].save(out, "GIF", save_all=True, append_images=frames[1:], duration=100, disposal=2)
    else:
        picture.save(out, "PNG")
    stored = fingerprint_of(out.getvalue())
    seen = picture.convert("RGBA")
    assert len(stored.views) == 3
    near = 6 if mode == "animated GIF" else 2  # a GIF keeps 256 colours and all-or-nothing transparency
    for background in (WHITE, BLACK):  # seen on black only, a picture on white was some 80 away
        assert distance(stored, fingerprint_of(png(flatten(seen, background)))) <= near, background


def test_the_duplicates_page_shows_each_group_side_by_side_with_distances_merges_and_a_search(archive):
    import asyncio

    from mirror.config import load_config

    path, _, ids, _, copied, _ = archive
    config = load_config(str(path))

    async def pages() -> tuple[str, str]:
        client = await browse_client(config)
        html = (await client.get("/-/duplicates")).text
        search = html.split('class="booru-group-search" href="')[1].split('"')[0].replace("&amp;", "&")
        return html, (await client.get(search)).text

    html, searched = asyncio.run(pages())
    blocks = html.split('<section class="booru-group-block">')[1:]
    first_group = [int(i) for i in blocks[0].split('data-image-id="')[1:] for i in [i.split('"')[0]]]
    assert all(f'data-image-id="{image_id}"' in searched for image_id in first_group)
    assert len(blocks) == len(copied)
    merged_original = ids[PORTRAITS[1].name]
    for original, copy in copied.items():
        block = next(b for b in blocks if f'data-image-id="{original}"' in b)
        assert f'data-image-id="{copy}"' in block
        assert "distance " in block and f"from #{min(original, copy)}" in block
        assert f"q=id%3A{min(original, copy)}+%7C%7C+id%3A{max(original, copy)}" in block  # the group's search
        assert f'href="/-/image/{original}"' in block  # each image's page
        assert ("merged into" in block) == (original == merged_original)


def test_a_picture_too_small_to_tell_apart_gets_no_fingerprint():
    """On the demo's archive, 1x1 pictures of other paintings (one colour each) were grouped."""
    from mirror.imaging import MediaError

    tiny = png(PORTRAITS[0].picture().resize((8, 8)))
    with pytest.raises(MediaError, match="too small"):
        fingerprint_of(tiny)
    assert fingerprint_of(png(PORTRAITS[0].picture().resize((16, 16)))).views


def test_a_small_picture_and_its_small_copies_meet_by_their_low_resolution_views():
    """An emote's half-size JPEG (32-64 px, ringing) was 14-24 from its original by its pHashes
    alone: scaled up to be hashed, a small copy cannot regain the detail it lost. A picture with no
    side past SMALL_SIDE also carries each view box-averaged to 16 px, where the original looks like
    its copy. Of six emotes' smaller and re-encoded copies, 15 of 30 were grouped with their
    original; 22 now, and no two emotes share a group. A low-resolution view meets only another."""
    from mirror.search.similar import HashIndex, groups

    from ..support.art import emotes, thumbnail

    names = ("020-chestnut", "030-deciduous-tree", "061-hyacinth", "067-left-arrow", "059-horizontal-traffic-light",
             "008-battery")
    kinds = ("half size", "quarter size", "half size JPEG q80", "JPEG q85", "JPEG q70")
    drawn = {art.name: art for art in emotes("archived")}
    stored = {}
    for n, name in enumerate(names):
        art = drawn[f"{name}.png"]
        stored[100 * n] = fingerprint_of(thumbnail(art.picture()))
        stored.update({100 * n + k: fingerprint_of(copies(art)[kind], scaled_into=(250, 250))
                       for k, kind in enumerate(kinds, 1)})
    group_of = {image_id: number for number, group in enumerate(groups(HashIndex.of(stored))) for image_id in group}
    assert all(len({image_id // 100 for image_id in group}) == 1 for group in groups(HashIndex.of(stored)))
    grouped = [image_id for image_id in stored if image_id % 100 and group_of.get(image_id, -1) ==
               group_of.get(image_id // 100 * 100, -2)]
    assert len(grouped) >= 22, grouped
    chestnut, its_copy = stored[0], stored[3]  # 19 apart by the pHashes of the views it had
    assert distance(chestnut, its_copy) == distance(its_copy, chestnut) <= GROUP_DISTANCE
    assert (len(chestnut.views), len(its_copy.views)) == (6, 2)  # a JPEG is opaque: seen one way
    ordinary, low = chestnut.views[:3] + its_copy.views[:1], chestnut.views[3:] + its_copy.views[1:]
    assert min(word_distance(a, b) for a in ordinary for b in low) > CROP_RANGE


def test_small_copies_of_siblings_drawn_on_one_template_stay_apart():
    """The quarter-size copies (62 px) of three clip-art people in three skin tones carry
    low-resolution views, where the faces are a pixel or two: by those views' words and sketches two
    of them were 5 and 9 apart. Each low-resolution view keeps its view's fine picture, which sees
    the face a region of another colour."""
    from ..support.art import clipart

    people = [art for art in clipart("archived") if "juliane-krug-06" in art.name]
    small = [fingerprint_of(copies(art)["quarter size"], scaled_into=(250, 250)) for art in people]
    assert [len(fingerprint.views) for fingerprint in small] == [6, 6, 6]
    apart = [distance(a, b) for n, a in enumerate(small) for b in small[n + 1:]]
    assert min(apart) > GROUP_DISTANCE, apart
