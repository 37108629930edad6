"""Perceptual fingerprints: a copy (resized, re-encoded, cropped, framed) is nearer its original
than any other picture, distances are symmetric, and a kept thumbnail stands for its full file.

The pictures are the local site's: one layout in other colours and labels, the hard case for a
perceptual hash (a pHash alone confuses them)."""

from __future__ import annotations

import io
import itertools
import random

import numpy as np
import pytest
from PIL import Image, ImageFilter, ImageOps

from mirror.imaging import MediaError
from mirror.imaging.similar import (KINDS, _median_3x3, Fingerprint, View, distance, hamming, fingerprint_of, fingerprint_of_picture,
                                   phash, trim_frame, views_of)
from mirror.localsite.files.pictures import picture


def encoded(image: Image.Image, fmt: str = "PNG", **options) -> bytes:
    out = io.BytesIO()
    image.save(out, fmt, **options)
    return out.getvalue()


def decoded(data: bytes) -> Image.Image:
    return Image.open(io.BytesIO(data)).convert("RGB")


SIZES = [(300, 200), (240, 320), (400, 400), (500, 280)]
ORIGINALS = {n: picture(f"similar-{n}", "png" if n % 2 else "jpg", *SIZES[n % 4], f"#{n}") for n in range(40)}


@pytest.fixture(scope="module")
def stored():
    return {n: fingerprint_of(data) for n, data in ORIGINALS.items()}


def half_size_jpeg(p: Image.Image) -> bytes:
    return encoded(p.resize((p.width // 2, p.height // 2), Image.Resampling.LANCZOS), "JPEG", quality=80)


def crop_5_percent(p: Image.Image) -> bytes:
    cut_x, cut_y = round(p.width * 0.05), round(p.height * 0.05)
    return encoded(p.crop((cut_x // 3, cut_y, p.width - cut_x + cut_x // 3, p.height)))


def jpeg_at_full_size(p: Image.Image) -> bytes:
    return encoded(p, "JPEG", quality=85)


def border(p: Image.Image) -> bytes:
    return encoded(ImageOps.expand(p, round(max(p.size) * 0.03), random.Random(p.width).choice(["white", "black", "red"])))


@pytest.mark.parametrize("make_copy", [half_size_jpeg, crop_5_percent, jpeg_at_full_size, border])
def test_a_copy_of_each_kind_is_nearer_its_original_than_any_other_picture(stored, make_copy):
    for n, data in ORIGINALS.items():
        query = fingerprint_of(make_copy(decoded(data)))
        ranked = sorted(stored, key=lambda m: distance(query, stored[m]))
        assert ranked[0] == n
        assert distance(query, stored[n]) < distance(query, stored[ranked[1]])


def test_distances_are_symmetric_and_zero_for_the_same_file(stored):
    for a, b in [(0, 1), (2, 7), (5, 30)]:
        assert distance(stored[a], stored[b]) == distance(stored[b], stored[a]) > 0
    assert all(distance(fingerprint_of(data), stored[n]) == 0 for n, data in list(ORIGINALS.items())[:5])


def test_a_250_px_thumbnail_stands_for_its_full_picture(stored):
    """The archive often keeps only a thumbnail: one drawn at 250 px (as the site makes them)
    must find the full-size file's hashes first."""
    full = {n: fingerprint_of(picture(f"large-{n}", "png", 1600, 1200, f"#{n}")) for n in range(15)}
    for n in full:
        thumb = fingerprint_of(picture(f"large-{n}", "png", 250, 188, f"#{n}"))
        assert min(full, key=lambda m: distance(thumb, full[m])) == n
    assert set(full[0].views[0].hashes()) == set(KINDS)


def test_the_site_s_still_frame_is_hashed_for_animations_videos_and_svg():
    for fmt in ("gif", "webm", "svg"):
        data = picture(f"frames-{fmt}", fmt, 120, 90, "#1", animated=fmt == "gif")
        assert fingerprint_of(data) == fingerprint_of(data)
    with pytest.raises(MediaError):
        fingerprint_of(b"not a picture")


def test_a_uniform_border_of_any_colour_is_trimmed():
    inner = decoded(ORIGINALS[3])
    for colour in ("white", "black", (12, 200, 99)):
        framed = ImageOps.expand(inner, 9, colour)
        # found on a copy at most 256 px a side, the frame's edge is a full-size pixel off at most
        assert hamming(phash(trim_frame(framed)), phash(trim_frame(inner))) <= 2
    flat = Image.new("RGB", (50, 40), "grey")
    assert trim_frame(flat).size == flat.size  # all frame: kept whole


def test_a_decoded_picture_and_its_file_hash_alike():
    data = ORIGINALS[1]
    assert fingerprint_of_picture(Image.open(io.BytesIO(data))) == fingerprint_of(data)


FLAT = {n: picture(f"7-{n}", "png", 100, 100, str(n)) for n in range(300, 340)}  # the demo's 100x100 pictures


def test_a_small_flat_picture_and_its_half_size_jpeg_find_each_other_first():
    """A 100x100 flat picture (a flat ground, a disc, a rectangle, a triangle, its number) and its
    50x50 JPEG at quality 80: each finds the other first, and most within the grouping distance
    (the copy's chroma is 25x25: it once ended the frame early and moved the hues)."""
    from mirror.search.similar import GROUP_DISTANCE, HashIndex

    originals = {n: fingerprint_of(data) for n, data in FLAT.items()}
    copies = {n: fingerprint_of(half_size_jpeg(decoded(data))) for n, data in FLAT.items()}
    for stored, queries in ((originals, copies), (copies, originals)):
        index = HashIndex.of(stored)
        assert all(index.nearest(query, limit=1)[0].image_id == n for n, query in queries.items())
    apart = sorted(distance(originals[n], copies[n]) for n in FLAT)
    assert apart[len(apart) // 2] <= GROUP_DISTANCE, apart


@pytest.mark.parametrize("colour", ["black", "white"])
def test_a_border_is_trimmed_from_the_thumbnail_as_from_the_file(colour):
    """A 5% border around a 1000 px picture, fingerprinted from its 250 px thumbnail (as the archive
    keeps it) and from its file: both within a few of the original's thumbnail."""
    from mirror.imaging.frames import scaled_as_the_site_does

    for n in (1, 2, 3):
        inner = decoded(picture(f"border-{n}", "png", 1000, 700, f"#{n}"))
        framed = ImageOps.expand(inner, 50, colour)
        original = fingerprint_of(encoded(scaled_as_the_site_does(inner, (250, 250))))
        for data in (encoded(framed), encoded(scaled_as_the_site_does(framed, (250, 250)))):
            assert distance(fingerprint_of(data), original) <= 6


@pytest.mark.parametrize("edges", [(0,), (0, 1), (0, 1, 2, 3)])
def test_a_crop_of_five_percent_off_edges_stays_a_copy(stored, edges):
    """5% off one edge, two, or every edge (the middle 90% of each side kept): within the grouping
    distance, for all but a picture whose shapes the crop cuts into (its trimmed frame moves)."""
    from mirror.search.similar import GROUP_DISTANCE

    apart = []
    for n in range(0, 40, 2):
        p = decoded(ORIGINALS[n])
        dx, dy = p.width // 20, p.height // 20
        cropped = p.crop((dx * (0 in edges), dy * (1 in edges),
                          p.width - dx * (2 in edges), p.height - dy * (3 in edges)))
        apart.append(distance(fingerprint_of(encoded(cropped)), stored[n]))
    assert sum(d <= GROUP_DISTANCE for d in apart) >= 19, apart


def test_a_fully_transparent_picture_is_no_copy_of_the_colours_under_it():
    """Its alpha-blind view showed those colours: it matched the opaque picture of them at 0 (issue 41)."""
    opaque = decoded(ORIGINALS[3])
    invisible = opaque.convert("RGBA")
    invisible.putalpha(0)
    stored = fingerprint_of(encoded(invisible))
    assert len(stored.views) == 1  # shows nothing on any background: its first view (on black) stands for it
    assert distance(stored, fingerprint_of(encoded(opaque))) > 30
    half = invisible.copy()
    half.paste(opaque.crop((0, 0, opaque.width // 2, opaque.height)))  # its left half shown: a picture after all, seen all three ways
    assert len(fingerprint_of(encoded(half)).views) == 3


def test_siblings_drawn_on_one_template_are_apart_and_their_copies_are_not():
    """Three clip-art people drawn on one template, in three skin tones (tests/fixtures/clipart):
    their words and sketches put them 4-9 apart, copies' distances; the fine picture sees the face
    a region of its own colour, where a copy's differences are thin edges. Each copy stays within
    the grouping distance of its own, and further than it from the siblings, whichever is the query."""
    from mirror.search.similar import GROUP_DISTANCE

    from ..support.art import clipart, copies, thumbnail

    people = [art for art in clipart("archived") if "juliane-krug-06" in art.name]
    assert len(people) == 3
    stored = [fingerprint_of(thumbnail(art.picture())) for art in people]
    for n, art in enumerate(people):
        for m in range(n + 1, len(people)):
            assert distance(stored[n], stored[m]) == distance(stored[m], stored[n]) > GROUP_DISTANCE
        for kind in ("JPEG q85", "5% off one edge", "5% black border"):
            copy = fingerprint_of(copies(art)[kind], scaled_into=(250, 250))
            apart = [distance(copy, original) for original in stored]
            assert apart == [distance(original, copy) for original in stored]
            assert apart[n] <= GROUP_DISTANCE < min(apart[:n] + apart[n + 1:]), (art.name, kind, apart)


def test_crops_of_drawings_that_fill_their_canvas_are_copies_by_their_crops_words():
    """Clip art fills its canvas: a crop cuts the figure, and its trimmed frame moves with it, so
    its words moved past the grouping distance (vector art: 79% of crops off every edge grouped).
    Each view carries the words of its middle 90% and of 95% at each corner: the crop is near one."""
    from mirror.search.similar import GROUP_DISTANCE

    from ..support.art import clipart, copies, thumbnail

    def uncropped(fingerprint: Fingerprint) -> Fingerprint:
        return Fingerprint(tuple(View(*view.values, sketch=view.sketch) for view in fingerprint.views))

    drawings = clipart("archived")[:16]
    stored = [fingerprint_of(thumbnail(art.picture())) for art in drawings]
    for kind in ("5% off every edge", "5% off two edges", "5% crop"):
        apart, before = [], []
        for art, original in zip(drawings, stored):
            copy = fingerprint_of(copies(art)[kind], scaled_into=(250, 250))
            apart.append(distance(copy, original))
            assert apart[-1] == distance(original, copy)
            before.append(distance(uncropped(copy), uncropped(original)))
        assert sum(d <= GROUP_DISTANCE for d in apart) >= 15, (kind, apart)
        assert all(now <= then for now, then in zip(apart, before)), (kind, apart, before)
        if kind == "5% off every edge":
            assert sum(d > GROUP_DISTANCE for d in before) >= 4, before  # what the crops' words bring


def test_trimming_reads_the_same_medians_as_pillows_median_filter():
    """Trimming a frame reads a median-filtered copy of the picture, computed with numpy for
    speed: its values are those of Pillow's ``MedianFilter(3)`` (edges repeated) on pictures of
    every shape, one pixel wide or high included, of noise, of few levels and flat."""
    rng = np.random.default_rng(23)
    shapes = [(1, 1), (1, 7), (6, 1), (2, 2), (3, 5), (40, 33), (250, 187)]
    for height, width in shapes:
        for levels in (1, 2, 5, 256):
            pixels = (rng.integers(0, levels, (height, width, 3)) * (255 // max(1, levels - 1))).astype(np.uint8)
            expected = np.asarray(Image.fromarray(pixels, "RGB").filter(ImageFilter.MedianFilter(3)))
            assert np.array_equal(_median_3x3(pixels), expected), (height, width, levels)


def test_a_small_object_in_a_wide_transparent_canvas_is_fingerprinted_by_itself():
    """Wesnoth's items are drawn some 18 px wide in the middle of a 72 px transparent canvas.
    Their frame is trimmed down to the object, not left whole as a picture that is mostly frame:
    seen whole on black, each is a small blob in the middle, and a ring and an axe had the same
    words and sketch (distance 0). Different objects are told apart, and each one's copies
    flattened on white or on black are still its copies."""
    from mirror.search.similar import GROUP_DISTANCE

    from ..support.art import copies, stamps, thumbnail

    names = ("ring-brown", "axe-throwing", "staff-magic-wand", "dagger-poison-bare", "key", "rock")
    drawn = [next(art for art in stamps() if art.name.endswith(f"-items-{name}.png")) for name in names]
    stored = [fingerprint_of(thumbnail(art.picture())) for art in drawn]
    apart = [distance(a, b) for a, b in itertools.combinations(stored, 2)]
    assert min(apart) > GROUP_DISTANCE, apart
    for art, original in zip(drawn, stored):
        for kind in ("flattened on white", "flattened on black"):
            assert distance(fingerprint_of(copies(art)[kind], scaled_into=(250, 250)), original) <= GROUP_DISTANCE


def _stamp(name: str):
    from ..support.art import stamps

    return next(art for art in stamps() if art.name.endswith(f"-{name}.png"))


def test_a_ring_is_trimmed_to_itself_not_peeled_to_its_hole():
    """A ring is a frame around its hole. Peeled layer after layer down to a hole of 5 px, under
    a tenth of the 72 px canvas, Wesnoth's brown ring on black was hashed whole (a small blob in
    the middle) and met the silver and the white ring at distance 0. Trimming now stops at the
    ring, and the rings are apart."""
    from mirror.search.similar import GROUP_DISTANCE

    from ..support.art import thumbnail

    rings = [_stamp(f"items-ring-{colour}") for colour in ("brown", "silver", "white")]
    on_black = Image.alpha_composite(Image.new("RGBA", (72, 72), (0, 0, 0, 255)), rings[0].picture().convert("RGBA"))
    assert max(trim_frame(on_black.convert("RGB")).size) <= 14
    stored = [fingerprint_of(thumbnail(ring.picture())) for ring in rings]
    apart = [distance(a, b) for a, b in itertools.combinations(stored, 2)]
    assert min(apart) > GROUP_DISTANCE, apart


@pytest.mark.parametrize("name", ["attacks-club-small", "attacks-crossbow-human", "attacks-fangs-ant"])
def test_an_icon_framed_in_black_is_trimmed_as_its_original_on_white(name):
    """Wesnoth's attack icons are 60 px squares with a textured rim and transparent corners. Flattened
    on white and framed in black, the white corners inside the border ended the trimming there (the
    median filter smears the border's corner into each row's ends, and past the seam lay the rim),
    where the original on white peels its corners, its rim and its dark ground: 24-28 apart. The
    frame right inside the border is now looked for too, and these three are found."""
    from mirror.search.similar import GROUP_DISTANCE

    from ..support.art import copies, thumbnail

    art = _stamp(name)
    original = fingerprint_of(thumbnail(art.picture()))
    for kind in ("5% black border", "10% black border"):
        assert distance(fingerprint_of(copies(art)[kind], scaled_into=(250, 250)), original) <= GROUP_DISTANCE, kind


def test_an_object_of_a_few_pixels_on_a_plain_ground_gets_no_fingerprint():
    """A quarter-size copy of a 72 px stamp is a 4 px object on an 18 px ground: a dagger's and a
    torch's met at 4. A view whose content is under 8 px across is left out, and a picture with no
    other view gets no fingerprint, whatever the size of its ground."""
    from ..support.art import copies

    with pytest.raises(MediaError, match="too small"):
        fingerprint_of(copies(_stamp("items-torch-bare"))["quarter size"])
    for side, fingerprinted in ((6, False), (12, True)):
        dot = Image.new("RGB", (200, 200), "white")
        dot.paste(Image.new("RGB", (side, side), (200, 30, 30)), (97, 97))
        if fingerprinted:
            assert fingerprint_of(encoded(dot)).views
        else:
            with pytest.raises(MediaError, match="too small"):
                fingerprint_of(encoded(dot))


def test_a_crop_through_a_flat_part_of_the_picture_is_not_trimmed_as_a_margin():
    """Cropped 5%, Twemoji's briefcase ends in a row of its brown body: the ring round the copy was
    mostly brown, so a third of the briefcase was peeled off as a brown margin, and the copy was
    25 from its original (sketches 400 levels apart). A deep layer on one side only, neither black
    nor white, is a drawn part: the copy is trimmed as the original is, and found."""
    from mirror.search.similar import GROUP_DISTANCE

    from ..support.art import copies, emotes, thumbnail

    briefcase = next(art for art in emotes() if art.name.endswith("-briefcase.png"))
    cropped = copies(briefcase)["5% crop"]
    assert trim_frame(decoded(cropped)).size == decoded(cropped).size
    assert distance(fingerprint_of(cropped, scaled_into=(250, 250)),
                    fingerprint_of(thumbnail(briefcase.picture()))) <= GROUP_DISTANCE


def test_a_white_figure_outlined_in_one_pixel_on_white_is_trimmed_to_its_outline():
    """Trimming reads a median-filtered copy, so that a JPEG's specks and a textured ground's dots
    do not end a frame. A 3x3 median also erased an outline one pixel wide: a white figure on
    white merged with its ground. Framed in white, Twemoji's lion was 14 from its original, its
    green book framed in black 23, and the half-size JPEG of its face in clouds 25, each peeled
    past an outline. Light and dark are now read through a cross-shaped median, which keeps such
    a line and still takes out a lone speck."""
    from mirror.search.similar import GROUP_DISTANCE

    from ..support.art import copies, emotes, thumbnail

    figure = Image.new("RGB", (48, 48), "white")
    figure.paste(ImageOps.expand(Image.new("RGB", (28, 28), "white"), border=1, fill=(90, 90, 90)), (9, 9))
    figure.putpixel((3, 40), (0, 0, 0))  # a speck on the ground: not the figure
    assert max(trim_frame(figure).size) <= 30  # the figure within its outline (itself a frame, as a border is)
    drawn = {art.name.split("-", 1)[1]: art for art in emotes()}
    for name, kinds in (("lion.png", ("3% white border", "10% white border")), ("green-book.png", ("5% black border",)),
                        ("face-in-clouds.png", ("half size JPEG q80",))):
        original = fingerprint_of(thumbnail(drawn[name].picture()))
        for kind in kinds:
            copy = fingerprint_of(copies(drawn[name])[kind], scaled_into=(250, 250))
            assert distance(copy, original) <= GROUP_DISTANCE, (name, kind)


def test_inside_a_margin_only_a_ground_of_the_other_extreme_is_a_second_frame():
    """After a black or white frame, trimming looked for another past the seam a border leaves, and
    right inside it: made for a black border around a picture on white. After a transparent margin
    seen on black, those looks landed inside a small dark object and peeled it: a half-size bomb
    was trimmed to 9x6 px where its original is 27x23 (18 apart), a necklace to 6x6 where its
    original is 36x27, an attack icon's claws to 20x16 where theirs are 49x44 (21 apart). A frame
    found there is now peeled only where it is the other extreme (white after black, black after
    white); any other is looked for as every frame is."""
    from mirror.search.similar import GROUP_DISTANCE

    from ..support import art as drawn
    from ..support.art import copies, thumbnail

    for name in ("items-bomb", "items-necklace-stone"):
        art = _stamp(name)
        original, copy = drawn.decoded(thumbnail(art.picture())), drawn.decoded(copies(art)["half size"])  # with alpha
        on_black = [trim_frame(views_of(picture)[0]).size for picture in (original, copy)]
        assert all(0.8 <= 2 * half / whole <= 1.2 for whole, half in zip(*on_black)), (name, on_black)
    for name in ("items-bomb", "attacks-claws-animal"):
        art = _stamp(name)
        assert distance(fingerprint_of(copies(art)["half size"], scaled_into=(250, 250)),
                        fingerprint_of(thumbnail(art.picture()))) <= GROUP_DISTANCE, name


def test_a_small_jpeg_that_lost_its_colours_is_its_originals_nearest():
    """A JPEG keeps a small picture's colours at a quarter of its pixels and quantises them hard:
    the JPEGs of a 72 px sword and rock had no coloured pixels left, an empty hue word, and were
    60 from their originals by the hue alone, all else at 0, nearer other stamps. An empty hue word
    now counts for nothing where all the rest is within 4: each copy is 0-1 from its original and
    25 or more from every other stamp."""
    from mirror.search.similar import GROUP_DISTANCE

    from ..support.art import copies, stamps, thumbnail

    stored = {art.name: fingerprint_of(thumbnail(art.picture())) for art in stamps()}
    for name, kinds in (("items-sword", ("JPEG q85", "half size JPEG q80")), ("items-rock", ("JPEG q85",))):
        art = _stamp(name)
        for kind in kinds:
            copy = fingerprint_of(copies(art)[kind], scaled_into=(250, 250))
            apart = {other: distance(copy, fingerprint) for other, fingerprint in stored.items()}
            assert apart[art.name] <= 1, (name, kind)
            assert min(d for other, d in apart.items() if other != art.name) > 2 * GROUP_DISTANCE, (name, kind)


def test_an_older_finders_fingerprint_of_a_picture_this_one_refuses_is_dropped(tmp_path):
    """Version 9 refuses a few pixels on a plain ground, which version 8 fingerprinted whole (a
    blob that met every other): when the file is read again, the old fingerprint goes too, or
    `duplicates` would still group it by the older values."""
    import asyncio

    from mirror.download.fingerprints import keep_fingerprint
    from mirror.download.storage import Storage
    from mirror.imaging.similar import VERSION
    from mirror.store import open_database
    from mirror.store.similar import fingerprint_source, save_hashes

    dot = Image.new("RGB", (200, 200), "white")
    dot.paste(Image.new("RGB", (6, 6), (200, 30, 30)), (97, 97))
    (tmp_path / "files" / "thumb").mkdir(parents=True)
    (tmp_path / "files" / "thumb" / "7.png").write_bytes(encoded(dot))
    db = open_database(tmp_path / "mirror.db")
    save_hashes(db, 7, {kind: 1 for kind in KINDS}, "thumb", VERSION - 1)
    save_hashes(db, 8, {kind: 1 for kind in KINDS}, "thumb", VERSION)  # another image's: untouched
    stored = asyncio.run(keep_fingerprint(db, Storage(str(tmp_path / "files")), 7, "thumb", "thumb/7.png"))
    assert not stored and fingerprint_source(db, 7) is None
    assert fingerprint_source(db, 8) == ("thumb", VERSION)
