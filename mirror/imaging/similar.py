"""Perceptual hashes of a picture, for finding its copies: resized, re-encoded, lightly cropped
or framed by a border, which the site's corner intensities miss.

A picture's :class:`Fingerprint` is one :class:`View` of it, or three for a picture with
transparency (on black, on white, and as stored with its alpha ignored, :func:`views_of`: the
colour under a transparent pixel is undefined, so the picture as a person sees it is the picture
on some background, and copies flattened by an editor are on white or on black, those made by a
converter blind to alpha show what lies under). A view is six 64-bit words, compared bit by bit:

- two pHashes (the low frequencies of a 32x32 greyscale DCT, each bit set where a coefficient is
  above their median): one of the picture as it is (``whole``) and one of the picture with its
  uniform frame trimmed (``trimmed``, :func:`trim_frame`), peeled off layer by layer, so a border
  added around a copy, of any colour, goes, and so does the picture's own flat margin, on the
  original and on a cropped copy alike, from a thumbnail as from the file;
- its colour layout: the mean red, green and blue of each quarter of the trimmed picture, one
  word a channel (``red``, ``green``, ``blue``), each mean in 16 steps written as that many set
  bits, so the differing bits count the steps between two means. A pHash is blind to colour by
  design (a median threshold keeps only which parts are lighter), and pictures of one layout in
  other colours are common (a series, a template, a recoloured edit): the colours tell them apart;
- its hues (``hue``, :func:`hue_word`): a recolour of one drawing keeps its shapes and its light
  and dark, and on a transparent background even its quarters' means barely move; the share of
  each hue among its coloured pixels does.

The colour words, the hues and the sketch are read from the trimmed picture softened
(:func:`softened`), where a small copy's smeared chroma and its original's sharp edges agree.

A view also carries its sketch (:mod:`.sketch`): the trimmed picture in 16x16 colour pixels.
The words see a picture whole, where an edit (a figure's armour painted over, a face redrawn)
moves as few bits as a copy's re-encoding; the sketch sees each part, and two sketches are
compared aligned as a crop or a border shifts them.
After the sketch comes the view's fine picture (:mod:`.fine`, version 5): the trimmed picture
in 48x48 pixels, compared in the sketches' best alignment for the pairs near by all the rest,
where a sibling drawn on one template (another skin tone, another grin) differs by a region
and a copy only along its edges.

A view large enough for a fine picture also carries the words of five crops of its trimmed
picture (:data:`CROPS`, version 6):
its middle 90% and 95% of each side at each corner. A drawing or an emote fills its canvas, so
a crop cuts the figure and its trimmed frame moves with it: both pHashes and the colour layout
moved past a copy's distance (79-95% of vector art's crops grouped). A crop of one view is
compared with the other view's own words, never with a crop (two pictures alike in their middles
only are no copies), and the pair is then measured by the two views' sketches as any pair is:
their alignments include the middle 90%.

A small picture (no side past :data:`SMALL_SIDE`: an emote, an icon, a small copy) also carries,
for each view, a low-resolution view (version 8): its trimmed picture box-averaged to
:data:`LOW_SIDE` pixels, that picture's pHash and sketch with the view's other words and fine
picture. Scaled up, a quarter-size or half-size JPEG copy of an emote cannot regain its original's
detail (10-24 bits of pHash apart), but the original scaled down looks like the copy. A
low-resolution view meets only another (its hue word is kept inverted, :data:`LOW_HUES`): an
ordinary view of one picture and a blurred one of another are no evidence of a copy, and the search
and the groups compare views as they always did.

Two views are as far apart (:func:`view_distance`) as the nearer of their two pairs of pHashes,
plus the steps between their colour layouts and their hues, their own words or a crop's against
the other's, whichever are nearest (:func:`word_distance`), plus, for
views near by those, the levels their sketches differ by past what copies do
(:func:`edit_penalty`); two pictures as their nearest views. Measured on real drawn artwork
(``bench/similar.py``, the corpus in ``mirror/localsite/art``: painted portraits on
transparent backgrounds and opaque scenes, ten kinds of copies of each), seeing transparency on
black only grouped 56% of the copies; with the three views, 99%. The sketches set apart a
painting overpainted in other armour, which the words had put among copies, and no copy; a room
refurnished (a tenth of the picture changed) stays within.

The pHash is the one ``imagehash.phash`` computes, on numpy alone (the same bits on all 213 of
the local site's generated pictures larger than 1x1; a flat picture, whose coefficients all tie
at zero, is left to rounding by both). The library's few lines need scipy for their DCT, and the
library PyWavelets besides, some 120 MB installed, where a 32x32 DCT is two products by a fixed
matrix; numpy is needed anyway to search a million hashes.

The picture read from a file is the one the site reads (:func:`.frames.still_frame`: an
animation's or video's frame at half its duration, an SVG rasterised); 32x32 is small enough that
a 250 px thumbnail hashes as its full file, provided the thumbnail keeps the file's transparency,
as the site's do (``format=rgb32``). A stored fingerprint carries its :data:`VERSION`: older ones
are computed again from the kept files by ``mirror download`` and ``mirror verify``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np
from PIL import Image, ImageFilter

from .analyze import analyze
from .bounds import check_size, decoding
from .errors import MediaError
from .frames import scaled_as_the_site_does, still_frame
from .libpng import file_gamma, on_black
from .fine import fine_of, fine_penalty
from .sketch import MIDDLE, SKETCH_BYTES, aligned, penalty_of, sketch_of

__all__ = [
    "BACKGROUNDS",
    "CROPS",
    "CROP_RANGE",
    "KINDS",
    "VERSION",
    "Fingerprint",
    "View",
    "colour_layout",
    "distance",
    "edit_penalty",
    "fingerprint_of",
    "fingerprint_of_picture",
    "hamming",
    "hue_unknown",
    "phash",
    "shows_nothing",
    "trim_frame",
    "view_distance",
    "views_of",
    "with_sketches",
    "word_distance",
    "words_apart",
]

# 1: one view, transparency on black. 2: a picture with transparency seen on black and on white.
# 3: each view carries its sketch. 4: the frame found by its ring's median colour, robust to a
# JPEG's blotches, and the colours, hues and sketch read softened (a small flat picture's copies).
# 5: each view's sketch is followed by its fine picture (siblings drawn on one template told apart).
# 6: each view carries the words of its crops (:data:`CROPS`).
# 7: a frame is trimmed down to a tenth of a side (:data:`MIN_KEPT`): a small object in a wide
# transparent canvas is fingerprinted by itself.
# 8: a small picture carries a low-resolution view of each of its views (:data:`SMALL_SIDE`).
# 9: trimming peels no layer that keeps under MIN_KEPT (a ring is not peeled to its hole), looks
# for a frame right inside a border where none is found past the seam, and a view whose content
# is under MIN_CONTENT pixels across is left out (:func:`trim_frame`, :func:`fingerprint_of_picture`);
# a deep layer on one side only, neither black nor white, is not peeled (ONE_SIDED_DEPTH); the
# light and dark are read through a cross-shaped median, which keeps a one-pixel outline.
# 10: inside a black or white frame, only a ground of the other extreme is looked for over the seam
# and right inside (:func:`_ground_inside`): past a transparent margin those looks peeled dark objects.
VERSION = 10

KINDS = ("whole", "trimmed", "red", "green", "blue", "hue")  # a view's hashes, by name, as they are stored
HASH_SIDE = 8  # 8x8 coefficients: 64 bits
SAMPLE_SIDE = HASH_SIDE * 4  # the greyscale the DCT reads, as imagehash's highfreq_factor=4
# How far a pixel may stray from one colour, on every channel, in a picture that shows nothing.
BLANK_TOLERANCE = 24
# How far (in 0-255 levels of luma, then of the two chromas) a pixel may stray from a frame's
# colour and still belong to it: JPEG ringing and a resampled edge stay within it, a drawn shape
# does not. A JPEG keeps chroma at half the resolution and smears it wider: 24 levels of chroma
# ended the frame of a small flat picture's copy three pixels early.
FRAME_TOLERANCE = np.array([24, 40, 40])
FRAME_LAYERS = 3
# A frame found on one side only, of a colour neither black nor white, and deeper than this share
# of the picture's shorter side is the picture's own flat part touching that edge, not a margin: a
# crop through a briefcase's body peeled a third of it off (emotes' 5% crops: 96% -> 100% grouped).
ONE_SIDED_DEPTH = 0.1
# Pixels stepped over after a frame before the next is looked for: a black border scaled into a
# thumbnail leaves a seam of grey between it and a white ground, which ended the trimming there.
SEAM = 2
# The share of a row's pixels that may stray from the frame's colour in a row still of the frame:
# a JPEG's stray blotch, the tip of a shape.
FRAME_STRAY = 0.02
TRIM_SIDE = 256
SOFT_SIDE, SOFT_BLUR = 32, 1.0  # see softened
COLOUR_STEPS = 16  # levels of a quarter's mean channel: 15 bits, four quarters to a word
# What a trimmed picture keeps at least, of each side: a picture all frame is hashed whole. At a
# quarter (up to version 6), a stamp drawn 18 px wide in the middle of a 72 px transparent canvas
# was hashed whole: on black, a small blob in the middle, the same words and sketch for a ring
# and an axe (distance 0), and 71% of the pairs grouped in the stamp corpus were of different
# pictures; at a tenth, 4%.
MIN_KEPT = 0.1
# A picture with a side under this carries too little to tell it from another (a 1x1 picture is
# one colour): it gets no fingerprint.
MIN_SIDE = 16
# A view whose content (what the outermost frame encloses) is under this many pixels across shows
# too little to tell from another: a quarter-size copy of a 72 px stamp is a 4 px object on an
# 18 px ground, and a dagger's and a torch's met at 4. A picture with no other view gets no
# fingerprint, as one under MIN_SIDE gets none.
MIN_CONTENT = 8
# A picture with a side past this is hashed from a copy reduced to within it (see fingerprint_of).
READ_SIDE = 2048
# Rows turned into RGB on black at once, for such a picture.
STRIP_ROWS = 512
# The colours a picture with transparency is seen on: a copy flattened by an editor is on one of
# them; a converter blind to alpha shows the colours under the transparent pixels (a third view).
BACKGROUNDS = ((0, 0, 0), (255, 255, 255))
# The hue word: the share of the picture's coloured pixels in each of 8 hues, in 8 steps of 1/16
# (a share past half is 8), one byte a hue written as that many set bits. Grey, white and black
# pixels (a background, an outline) have no hue and are left out, so the word weighs the figure:
# a recolour of one drawing keeps its pHashes and its layout of light and dark, not its hues.
HUE_BINS, HUE_STEPS = 8, 8
HUE_WEIGHT = 4  # what a step of hue costs in a distance, against a bit of pHash
HUE_SLACK = 1  # steps of hue a copy may drift free (small flat areas re-encoded, an outline resized)
COLOURED_SATURATION, COLOURED_VALUE = 64, 40  # of 255: below either, a pixel has little hue to speak of
RAMP = 32  # how far around those lines a pixel goes from no hue to its full hue
COLOURED_SHARE = 0.02  # a picture with fewer coloured pixels than this has an empty hue word
# Views further apart than this by their words are different pictures, whatever their sketches: these
# are compared only within it, and an edit is put at most one past it, after every copy and before
# the pictures the words alone tell apart (a search never reads more sketches than that).
EDIT_RANGE = 24
# The crops of a view's trimmed picture whose words it carries besides its own (left, top, right,
# bottom, as shares of each side): the middle 90%, and 95% of each side at each corner. A copy
# cropped as people crop (5% off one edge or several, a 95% box anywhere) is near one of them,
# where a drawing that fills its canvas, cropped, moved both pHashes and the colour layout past
# a copy's distance (vector art: 79-95% of such crops grouped with one view, 99-100% with these).
# How far a crop's words may be from the other view's and still count (:func:`word_distance`):
# past it two pictures are as far as their own words say, and a search need not read the crops'
# words whole (:mod:`mirror.search.similar`). Twice the range of copies: a small emote's crops
# still found it first at 26-33, where its own words put another picture nearer.
CROP_RANGE = 2 * EDIT_RANGE
CROPS = (MIDDLE, (0.0, 0.0, 0.95, 0.95), (0.05, 0.0, 1.0, 0.95), (0.0, 0.05, 0.95, 1.0),
         (0.05, 0.05, 1.0, 1.0))
CROP_READ_SIDE = 128
# A picture with no side past SMALL_SIDE also carries, for each view, a low-resolution view
# (:func:`_low_view`): its trimmed picture box-averaged to within LOW_SIDE a side. A quarter-size
# copy of a 64 px emote is 16 px, and a half-size JPEG's edges ring: scaled up, a small copy cannot
# regain its original's detail, but the original scaled down looks like the copy (emotes grouped
# 97.4% -> 98.1% of 1,870 copies; 12, 16, 20 and 24 px measured: see docs/duplicates.md).
SMALL_SIDE, LOW_SIDE = 128, 16
# A view whose trimmed picture has no side of LOW_FROM pixels gets none: reduced to LOW_SIDE it is
# barely reduced, and with no fine picture (under 40 px) nothing tells two such apart. A quarter
# of a 72 px stamp (18 px, seen on black a blob) met another's at 12: stamps' different pictures
# grouped 3.92% -> 4.12% of pairs, none with LOW_FROM 20 or 24.
LOW_FROM = 20
# A low-resolution view's hue word is kept inverted: two low-resolution views differ by their
# hues' own steps, a low-resolution view and an ordinary one by at least 24 bits of hue (a hue word
# has at most 20 set), 92 of distance, past every range, so one only ever meets another.
LOW_HUES = (1 << 64) - 1
# An empty hue word (fewer coloured pixels than COLOURED_SHARE) counts for nothing against another
# where all the rest of two views' words is within UNKNOWN_HUE_REST. A JPEG keeps a small picture's
# colours at a quarter of its pixels and quantises them hard: a half-size JPEG of a 72 px axe has
# the 99th percentile of its saturation at 44 where its original on white has 159, so its hue
# word empties and it was 60 from its original by the hue alone, all else at 0-4. Counted for
# nothing at any distance, the grey copies joined every grey blade (stamps' different pictures
# grouped 1.6% -> 10% of pairs); within 4 of all the rest, no other picture's group (stamps grouped
# 93.8% -> 95.4%, found first 97.5% -> 98.9%; within 5, 99.0% found first, but a fourth sword
# joined the three). Between a crop's words and a view's the hues always count: a crop is a part,
# a weaker match, and the corner of a quarter-size painting whose colours were gone came within 4
# of its recolour (a scorpion and its elder; painted's different pictures grouped 0.90% -> 2.65%).
UNKNOWN_HUE_REST = 4
EMPTY_HUES = (0, LOW_HUES)  # an ordinary view's empty hue word, and a low-resolution view's
HUE_KINDS_APART = 32  # hue words of one kind are at most 20 bits apart, of two kinds at least 44


@dataclass(frozen=True)
class View:
    """The hashes of one way of seeing a picture, as unsigned 64-bit integers, in the order of :data:`KINDS`."""

    whole: int
    trimmed: int
    red: int
    green: int
    blue: int
    hue: int = 0
    sketch: bytes = b""  # see mirror.imaging.sketch, then .fine; empty where a fingerprint from before has none
    # The words of each of its crops (:data:`CROPS`), in the order of :data:`KINDS` (a crop's
    # pHash twice: it is its own trimmed picture); compared only with other views' own words.
    crops: tuple[tuple[int, ...], ...] = ()

    def hashes(self) -> dict[str, int]:
        return {kind: getattr(self, kind) for kind in KINDS}

    @property
    def values(self) -> tuple[int, ...]:
        return tuple(getattr(self, kind) for kind in KINDS)


@dataclass(frozen=True)
class Fingerprint:
    """A picture's views (:data:`BACKGROUNDS`): one for an opaque picture, one on each background
    for a picture with transparency."""

    views: tuple[View, ...]

    def __post_init__(self) -> None:
        if not self.views:
            raise ValueError("a fingerprint has at least one view")


def fingerprint_of(data: bytes, box: tuple[int, int] | None = None, *,
                   scaled_into: tuple[int, int] | None = None) -> Fingerprint:
    """The fingerprint of the picture the site reads from a file (raises :class:`MediaError`);
    with ``scaled_into``, of that picture scaled to fit the box as the site scales its thumbnails:
    a search fingerprints its query as the archive fingerprints the files it keeps (a thumbnail),
    so a pair is as far apart for ``reverse --similar`` as for ``duplicates``, whichever is the query.

    ``box`` is the one the file was scaled into (a thumbnail's): a larger file is refused before
    it is decoded, as is one past the site's own bound (:mod:`.bounds`). A picture with a side
    past :data:`READ_SIDE` is hashed from a copy box-averaged down to within it, made a strip at a
    time: turned into RGB on black in one piece, a 108-megapixel PNG with transparency took
    3.2 GB. The copy hashes as the picture does (the hashes read 32x32 and 256x256 samples)."""
    analysis = analyze(data)
    if not analysis.supported:
        raise MediaError(f"({analysis.mime_type}) cannot be hashed")
    check_size(analysis, box)
    if min(analysis.width, analysis.height) < MIN_SIDE:
        raise MediaError(f"is {analysis.width}x{analysis.height} pixels: too small to tell from another picture")
    with decoding(analysis):
        picture = _within_read_side(still_frame(data, analysis))
        if scaled_into is not None:
            picture = scaled_as_the_site_does(picture.convert("RGBA" if has_transparency(picture) else "RGB"),
                                              scaled_into)
        return fingerprint_of_picture(picture)


def _within_read_side(picture: Image.Image) -> Image.Image:
    """The picture, or for a large one its copy reduced by a whole factor to within
    :data:`READ_SIDE` a side, built strip by strip so no whole-size copy is ever made (with its
    alpha when it has transparency, else in RGB as the program sees it)."""
    factor = -(-max(picture.size) // READ_SIDE)
    if factor <= 1:
        return picture
    width, height = picture.size
    gamma = file_gamma(picture)
    mode = "RGBA" if _may_have_transparency(picture) else "RGB"  # the reduced copy tells for sure
    reduced = Image.new(mode, (-(-width // factor), -(-height // factor)))
    rows = STRIP_ROWS // factor * factor or factor
    for first in range(0, height, rows):
        strip = picture.crop((0, first, width, min(height, first + rows)))
        strip = strip.convert("RGBA") if mode == "RGBA" else on_black(strip, gamma)
        reduced.paste(strip.reduce(factor), (0, first // factor))
    return reduced


def fingerprint_of_picture(picture: Image.Image) -> Fingerprint:
    """The fingerprint of a decoded picture: its views that show something (:func:`shows_nothing`),
    or, for a picture blank in every view, its first, less those whose content is under
    :data:`MIN_CONTENT` pixels across (raises :class:`MediaError` where that is every one); for a
    picture with no side past
    :data:`SMALL_SIDE`, their low-resolution views after them (:func:`_low_view`).

    The alpha-blind view counts only where a background shows something: it stands for a copy made
    by a converter that shows the colours under the transparent pixels of a picture, and a fully
    transparent picture is no picture at all (as its own view, that of a picture whose colours lie
    under it matched at distance 0)."""
    seen = views_of(picture)
    showing = [not shows_nothing(view) for view in seen]
    if len(seen) > len(BACKGROUNDS) and not any(showing[:len(BACKGROUNDS)]):
        showing = [False] * len(seen)
    shown = [view for view, shows in zip(seen, showing) if shows] or [seen[0]]
    found = [(view, *_trimmed(view)) for view in shown]
    kept = [(view, trimmed) for view, trimmed, content in found if content >= MIN_CONTENT]
    if not kept:
        raise MediaError(f"shows {min(content for *_, content in found)} pixels across on a plain ground: "
                         "too small to tell from another picture")
    shown, trimmed = zip(*kept)
    views = tuple(_view(view, picture) for view, picture in zip(shown, trimmed))
    if max(picture.size) > SMALL_SIDE:
        return Fingerprint(views)
    return Fingerprint(views + tuple(_low_view(picture, view) for picture, view in zip(trimmed, views)
                                     if max(picture.size) >= LOW_FROM))


def shows_nothing(picture: Image.Image) -> bool:
    """Whether every pixel of the picture is within :data:`BLANK_TOLERANCE` of one colour: line
    art or a silhouette in black on a transparent background, seen on black (or as stored, its
    colours under the transparent pixels black too), is one black square, as is every other; a
    view that shows nothing would match them all at 0."""
    small = picture.convert("RGB")
    small.thumbnail((TRIM_SIDE, TRIM_SIDE), Image.Resampling.BOX)
    pixels = np.asarray(small, dtype=np.int16)
    return bool((np.abs(pixels - pixels[0, 0]) <= BLANK_TOLERANCE).all())


def views_of(picture: Image.Image) -> list[Image.Image]:
    """The picture in RGB as a person sees it: as the program reads it when it is opaque; on each
    of :data:`BACKGROUNDS` when it has transparency, whatever the mode (RGBA, LA, a palette or
    grey with a transparent colour), since the colour under a transparent pixel is undefined and
    each copy shows it on whatever its maker chose."""
    if not has_transparency(picture):
        return [on_black(picture)]
    rgba = picture.convert("RGBA")
    return [*(Image.alpha_composite(Image.new("RGBA", rgba.size, colour + (255,)), rgba).convert("RGB")
              for colour in BACKGROUNDS), rgba.convert("RGB")]


def has_transparency(picture: Image.Image) -> bool:
    """Whether some pixel of the picture is not fully opaque."""
    if not _may_have_transparency(picture):
        return False
    return picture.convert("RGBA").getchannel("A").getextrema()[0] < 255


def _may_have_transparency(picture: Image.Image) -> bool:
    return picture.mode in ("RGBA", "LA", "PA", "RGBa", "La") or "transparency" in picture.info


def _view(rgb: Image.Image, trimmed: Image.Image) -> View:
    """The view of ``rgb``, whose frame trimmed is ``trimmed``."""
    seen = softened(trimmed)
    fine = fine_of(trimmed)  # none for a small picture: nor any crops then
    return View(phash(rgb), phash(trimmed), *colour_layout(seen), hue_word(seen),
                sketch_of(seen) + fine, _crops_words(trimmed) if fine else ())


def _low_view(trimmed: Image.Image, view: View) -> View:
    """The low-resolution view of a small picture's ``view`` (whose frame trimmed is ``trimmed``):
    the pHash (twice: it is its own trimmed picture) and the sketch of the trimmed picture
    box-averaged to within :data:`LOW_SIDE`, with the view's own colour words, hue word (inverted,
    :data:`LOW_HUES`) and fine picture. The colours and hues are read softened already, where a
    small copy and its original agree; read at 16 px, a painted creature and its recolour on white
    both fell under the share of coloured pixels a hue word needs, and their quarter-size copies
    met at 9. The fine picture sets apart siblings drawn on one template: with a sketch alone, the
    quarter-size copies of three clip-art people in three skin tones met at 5 and 9, and vector
    art's different pictures grouped went 1.42% -> 5.44% of pairs."""
    low = trimmed.convert("RGB")  # a copy: trimming may hand back the picture itself
    low.thumbnail((LOW_SIDE, LOW_SIDE), Image.Resampling.BOX)
    pixels = phash(low)
    return View(pixels, pixels, view.red, view.green, view.blue, view.hue ^ LOW_HUES,
                sketch_of(softened(low)) + view.sketch[SKETCH_BYTES:])


def _crops_words(picture: Image.Image) -> tuple[tuple[int, ...], ...]:
    """The words of each of the picture's :data:`CROPS`, read from it reduced to within
    :data:`CROP_READ_SIDE` (the words read 32x32 and 64x64 samples: each crop is resampled from
    fewer pixels, some 1 ms a crop)."""
    reduced = picture.convert("RGB")
    reduced.thumbnail((CROP_READ_SIDE, CROP_READ_SIDE), Image.Resampling.BOX)
    return tuple(_crop_words(reduced, box) for box in CROPS)


def _crop_words(picture: Image.Image, box: tuple[float, float, float, float]) -> tuple[int, ...]:
    """The words of a crop of ``picture`` (``box`` in shares of each side), in :data:`KINDS` order."""
    width, height = picture.size
    left, top, right, bottom = box
    crop = picture.crop((round(width * left), round(height * top), round(width * right), round(height * bottom)))
    seen = softened(crop)
    pixels = phash(crop)
    return (pixels, pixels, *colour_layout(seen), hue_word(seen))


def softened(picture: Image.Image) -> Image.Image:
    """The picture at :data:`SOFT_SIDE` pixels a side, blurred by :data:`SOFT_BLUR`: what its
    colours are read from. A small copy re-encoded as JPEG keeps its colours at a quarter of its
    pixels, smeared over every edge; on flat art, edges are much of the picture, and read sharp on
    the original they moved its hues by four steps and its sketch by 30 levels. Both read softened
    agree."""
    return picture.convert("RGB").resize((SOFT_SIDE, SOFT_SIDE), Image.Resampling.BOX).filter(
        ImageFilter.GaussianBlur(SOFT_BLUR))


def hue_word(picture: Image.Image) -> int:
    """The hue word (:data:`HUE_BINS`): each hue's share of the coloured pixels, in
    :data:`HUE_STEPS` steps written as that many set bits, hue by hue from the lowest byte."""
    hsv = np.asarray(picture.convert("RGB").resize((64, 64), Image.Resampling.BOX).convert("HSV"),
                     dtype=np.int64).reshape(-1, 3)
    # How coloured each pixel is, rising from nothing to fully over a ramp of saturation and of
    # brightness: a colour near the line must not drop in or out of the word with a re-encoding.
    weight = (np.clip((hsv[:, 1] - COLOURED_SATURATION) / RAMP + 0.5, 0, 1)
              * np.clip((hsv[:, 2] - COLOURED_VALUE) / RAMP + 0.5, 0, 1))
    if weight.sum() < COLOURED_SHARE * len(hsv):
        return 0
    # Each pixel is shared between the two hues nearest its own, so a colour on the line between
    # two hues (a flat area, re-encoded a shade off) moves a little, not a whole share.
    position = hsv[:, 0] * HUE_BINS / 256 - 0.5
    lower = np.floor(position).astype(int)
    upper_weight = (position - lower) * weight
    shares = (np.bincount(lower % HUE_BINS, weight - upper_weight, minlength=HUE_BINS)
              + np.bincount((lower + 1) % HUE_BINS, upper_weight, minlength=HUE_BINS)) / weight.sum()
    steps = np.minimum(HUE_STEPS, np.round(shares * HUE_STEPS * 2)).astype(int)
    return sum(((1 << int(step)) - 1) << (HUE_STEPS * hue) for hue, step in enumerate(steps))


def phash(picture: Image.Image) -> int:
    """``imagehash.phash(picture)`` as an integer, its first coefficient in the top bit."""
    grey = picture.convert("L").resize((SAMPLE_SIDE, SAMPLE_SIDE), Image.Resampling.LANCZOS)
    dct = _dct_matrix()
    pixels = np.asarray(grey, dtype=np.float64)
    low = (dct @ pixels @ dct.T)[:HASH_SIDE, :HASH_SIDE]
    bits = (low > np.median(low)).ravel()
    return int.from_bytes(np.packbits(bits).tobytes(), "big")


@cache
def _dct_matrix() -> np.ndarray:
    """The DCT-II of scipy.fftpack (unnormalised) as a matrix: row k is 2cos(pi k (2n+1) / 2N)."""
    n = np.arange(SAMPLE_SIDE)
    return 2 * np.cos(np.pi * np.outer(n, 2 * n + 1) / (2 * SAMPLE_SIDE))


def colour_layout(picture: Image.Image) -> tuple[int, int, int]:
    """The red, green and blue words: each quarter's mean channel in :data:`COLOUR_STEPS` steps,
    written as that many set bits (a thermometer code), quarter by quarter from the lowest bits."""
    quarters = np.asarray(picture.convert("RGB").resize((2, 2), Image.Resampling.BOX), dtype=np.int64)
    levels = quarters.reshape(4, 3) * COLOUR_STEPS // 256
    bits = COLOUR_STEPS - 1
    return tuple(sum(((1 << int(level)) - 1) << (bits * quarter) for quarter, level in enumerate(levels[:, channel]))
                 for channel in range(3))  # type: ignore[return-value]


def trim_frame(picture: Image.Image) -> Image.Image:
    """``picture`` without its uniform frame: the rows and columns of the frame's colour (the
    median of the outermost ring of pixels) are taken off each side, then again with the colour
    of the ring now outermost, up to :data:`FRAME_LAYERS` times (a border added around a picture
    with a flat margin of its own is two layers). A row or column belongs to the frame when at
    most :data:`FRAME_STRAY` of its pixels stray past :data:`FRAME_TOLERANCE` from that colour.
    Read on a copy at most :data:`TRIM_SIDE` pixels a side, box-averaged and median-filtered:
    a JPEG's ringing and a re-encoded flat ground's blotches (a small picture's chroma drifts by
    30 levels at places) must not end the frame where the original's ends further in. The chroma
    goes through a 3x3 median, the light and dark through a cross-shaped one, which keeps an
    outline one pixel wide (the 3x3 erased it, and a white figure on white was peeled into its
    body: stamps' copies grouped 91.1% -> 92.7%, different pictures grouped 4.9% -> 1.6% of pairs).

    Inside a black or white frame (a border) a ground of the other extreme is looked for first
    (:func:`_ground_inside`): :data:`SEAM` pixels further in, since a thumbnail's seam of grey
    between a black border and a white ground is no frame and ended the trimming at the border (a
    5% black border around a portrait on white, 78% of them grouped), then right inside the border,
    the ends of each row and column left out: an icon whose transparent margin shows white inside
    a black border kept its textured rim and dark ground, which its original on white had peeled
    (stamps' black borders: 67% -> 89% grouped, 97% with the cross median). Only a ground of the
    other extreme counts there (version 10): a transparent margin seen on black is black too, and
    past it these looks peeled small dark objects (stamps grouped 92.7% -> 93.8%, emotes 98.8% ->
    99.1%). A layer that would keep less than :data:`MIN_KEPT` of a side is not peeled: a ring
    is a frame around its hole, and peeled to it, a ring on a 72 px canvas was hashed whole, a
    small blob in the middle, at distance 0 from every other ring; if the first would, the
    picture is returned whole. Nor is a deep layer found on one side only in a colour neither
    black nor white (:data:`ONE_SIDED_DEPTH`): that is the picture's own flat part cut by a crop."""
    return _trimmed(picture)[0]


def _trimmed(picture: Image.Image) -> tuple[Image.Image, int]:
    """The picture trimmed (:func:`trim_frame`), and the shorter side (in the picture's pixels) of
    what its first frame encloses: how large its content is, trimmed or not."""
    small = picture.convert("RGB")
    small.thumbnail((TRIM_SIDE, TRIM_SIDE), Image.Resampling.BOX)
    # one plane a channel (Y, Cb, Cr), each compared with the frame's colour on its own: on
    # pixels side by side, numpy's comparison with three tolerances took 40 times as long
    read = np.asarray(small.convert("YCbCr"))
    planes = np.empty((3, *read.shape[:2]), dtype=np.int16)
    planes[0] = _median_cross(read[..., 0])
    planes[1:] = _median_3x3(read[..., 1:]).transpose(2, 0, 1)
    height, width = planes.shape[1:]
    scale_x, scale_y = picture.width / width, picture.height / height
    box = top, bottom, left, right = 0, height, 0, width
    content = min(picture.size)
    border = None  # the colour of the last frame peeled where black or white: a border, with a seam inside
    for layer in range(FRAME_LAYERS):
        found = (_ground_inside(planes, box, border) if border is not None else None) or _frame(planes, box)
        if found is None:
            break
        inner, colour = found
        if _drawn_part(inner, box, colour, min(height, width)):
            break
        if layer == 0:
            content = min(round((inner[1] - inner[0]) * scale_y), round((inner[3] - inner[2]) * scale_x))
        if inner[3] - inner[2] < width * MIN_KEPT or inner[1] - inner[0] < height * MIN_KEPT:
            break
        box = top, bottom, left, right = inner
        border = colour if _black_or_white(colour) else None
    if box == (0, height, 0, width):
        return picture, content
    return picture.crop((round(left * scale_x), round(top * scale_y), round(right * scale_x),
                         round(bottom * scale_y))), content


def _black_or_white(colour: np.ndarray) -> bool:
    """Whether a frame's colour (Y, Cb, Cr) is black or white: a border, or a transparent margin
    seen on a background."""
    return bool(np.abs(colour[1:] - 128).max() <= 16 and not 40 <= colour[0] <= 215)


def _ground_inside(planes: np.ndarray, box: tuple[int, int, int, int],
                   border: np.ndarray) -> tuple[tuple[int, int, int, int], np.ndarray] | None:
    """The frame inside ``box`` (as :func:`_frame` gives it) where it is a ground of the other
    extreme from the black or white frame around it (of colour ``border``): white inside black,
    black inside white, a border added around a picture on white or on black. It is looked for
    :data:`SEAM` pixels further in, over the seam a thumbnail leaves, then right inside the border,
    each row's and column's ends left out (the median filter smears the border's corners into
    them). Any other frame is looked for as every frame is: a transparent margin seen on black is
    black too, and these looks then landed inside a small dark object and peeled it."""
    top, bottom, left, right = box
    if min(bottom - top, right - left) > 4 * SEAM:
        found = _frame(planes, (top + SEAM, bottom - SEAM, left + SEAM, right - SEAM))
        if found is not None and _opposite(found[1], border):
            return found
    found = _frame(planes, box, inside_border=True)
    return found if found is not None and _opposite(found[1], border) else None


def _opposite(colour: np.ndarray, border: np.ndarray) -> bool:
    """Whether a frame's colour is black inside a white border, or white inside a black one."""
    return bool(_black_or_white(colour) and abs(colour[0] - border[0]) > 128)


def _drawn_part(inner: tuple[int, ...], box: tuple[int, ...], colour: np.ndarray, side: int) -> bool:
    """Whether a frame that leaves ``inner`` of ``box`` is a drawn part of the picture, not a margin
    (:data:`ONE_SIDED_DEPTH`)."""
    moved = [abs(a - b) for a, b in zip(inner, box) if a != b]
    return len(moved) == 1 and moved[0] > ONE_SIDED_DEPTH * side and not _black_or_white(colour)


def _frame(planes: np.ndarray, box: tuple[int, int, int, int],
           inside_border: bool = False) -> tuple[tuple[int, int, int, int], np.ndarray] | None:
    """The box (top, bottom, left, right) that ``box`` keeps once its outermost uniform frame is
    peeled off ``planes``, with that frame's colour (Y, Cb, Cr); None where it has none. Inside a
    border, each row's and column's two ends are left out of the count of strays."""
    top, bottom, left, right = box
    if min(bottom - top, right - left) < 3:
        return None
    inner = planes[:, top:bottom, left:right]
    colour = np.median(np.concatenate([inner[:, 0], inner[:, -1], inner[:, :, 0], inner[:, :, -1]], axis=1), axis=1)
    off = _off_colour(inner, colour)
    ends = slice(1, -1) if inside_border else slice(None)
    rows = np.flatnonzero(off[:, ends].mean(axis=1) > FRAME_STRAY)
    columns = np.flatnonzero(off[ends].mean(axis=0) > FRAME_STRAY)
    if not (len(rows) and len(columns)):
        return None
    peeled = (top + int(rows[0]), top + int(rows[-1]) + 1, left + int(columns[0]), left + int(columns[-1]) + 1)
    return None if peeled == box else (peeled, colour)


def _off_colour(planes: np.ndarray, colour: np.ndarray) -> np.ndarray:
    """Which pixels (of ``planes``, one a channel) stray past :data:`FRAME_TOLERANCE` from
    ``colour``, on any channel. Twice the pixels and the colour (a median: whole or a half) are
    compared, so that the test stays in 16-bit integers."""
    twice, tolerance = (2 * colour).astype(np.int16), (2 * FRAME_TOLERANCE).tolist()
    off = np.abs(2 * planes[0] - twice[0]) > tolerance[0]
    for channel in range(1, len(planes)):
        off |= np.abs(2 * planes[channel] - twice[channel]) > tolerance[channel]
    return off


# Devillard's nine-input median network (pairs put in order; the median ends in the fifth)
_MEDIAN_OF_NINE = ((1, 2), (4, 5), (7, 8), (0, 1), (3, 4), (6, 7), (1, 2), (4, 5), (7, 8), (0, 3), (5, 8),
                   (4, 7), (3, 6), (1, 4), (2, 5), (4, 7), (4, 2), (6, 4), (4, 2))


# Devillard's five-input median network (the median ends in the third)
_MEDIAN_OF_FIVE = ((0, 1), (3, 4), (0, 3), (1, 4), (1, 2), (2, 3), (1, 2))


def _median_cross(plane: np.ndarray) -> np.ndarray:
    """Each pixel's median over itself and its four neighbours, the edges repeated beyond the
    picture. Unlike the 3x3 median it keeps a line one pixel wide, across or down, and still
    takes out a lone pixel (a JPEG's speck, a textured ground's dot)."""
    height, width = plane.shape
    padded = np.pad(plane, 1, mode="edge")
    around = [padded[1:height + 1, 1:width + 1], padded[:height, 1:width + 1], padded[2:, 1:width + 1],
              padded[1:height + 1, :width], padded[1:height + 1, 2:]]
    return _median_by(_MEDIAN_OF_FIVE, around)


def _median_3x3(pixels: np.ndarray) -> np.ndarray:
    """Each channel's median over every pixel's 3x3 neighbourhood, the edges repeated beyond the
    picture: Pillow's ``MedianFilter(3)``, the same values, in a twentieth of the time (it took
    half of what trimming a thumbnail's frame cost)."""
    height, width = pixels.shape[:2]
    padded = np.pad(pixels, ((1, 1), (1, 1), (0, 0)), mode="edge")
    return _median_by(_MEDIAN_OF_NINE, [padded[y:y + height, x:x + width] for y in range(3) for x in range(3)])


def _median_by(network: tuple[tuple[int, int], ...], around: list[np.ndarray]) -> np.ndarray:
    """The median of the arrays ``around``, element by element, through a sorting ``network`` (its
    pairs put in order, the median ending in the middle one)."""
    for low, high in network:
        around[low], around[high] = np.minimum(around[low], around[high]), np.maximum(around[low], around[high])
    return around[len(around) // 2]


def hamming(a: int, b: int) -> int:
    """How many of two hashes' bits differ."""
    return (a ^ b).bit_count()


def view_distance(a: View, b: View) -> int:
    """How far two views are apart: their words' distance (:func:`word_distance`), plus, within
    :data:`EDIT_RANGE`, the levels their sketches differ by past :data:`.sketch.EDIT_SLACK` and
    the pixels their fine pictures differ by in regions past :data:`.fine.FINE_SLACK`
    (:func:`edit_penalty`), up to one past the range."""
    return with_sketches(word_distance(a, b), a.sketch, b.sketch)


def with_sketches(words: int, a: bytes, b: bytes) -> int:
    """The distance of two views ``words`` apart by their words, with sketches ``a`` and ``b``."""
    if words > EDIT_RANGE:
        return words
    return min(EDIT_RANGE + 1, words + edit_penalty(a, b))


def edit_penalty(a: bytes, b: bytes) -> int:
    """What two views' sketches (each followed by its fine picture, :mod:`.fine`) add to a
    distance: the sketches' levels past what copies reach, and the pixels their fine pictures
    differ by in regions, in the alignment the sketches found best; nothing when either is missing."""
    if not a or not b:
        return 0
    level, alignments = aligned(a, b)
    return penalty_of(level) + fine_penalty(a[SKETCH_BYTES:], b[SKETCH_BYTES:], alignments)


def word_distance(a: View, b: View) -> int:
    """How far two views are by their words (:func:`words_apart`): their own, or those of a crop of
    one (:data:`CROPS`) and the other's own, whichever are nearest. Two crops are never compared:
    a copy is a crop of its original, and two pictures sharing only their middles are not copies.
    Crops count only between views that both have theirs: a view too small for a fine picture
    has none (a quarter-size emote, 16-32 px, came within 10 of a crop of its sibling clock face
    by its words and sketch), nor does one an older finder computed. And they count only within
    :data:`CROP_RANGE`."""
    own = words_apart(a.values, b.values)
    if not (a.crops and b.crops):
        return own
    cropped = min((*(words_apart(crop, b.values, hues_known=True) for crop in a.crops),
                   *(words_apart(a.values, crop, hues_known=True) for crop in b.crops)))
    return cropped if cropped < own and cropped <= CROP_RANGE else own


def words_apart(a: tuple[int, ...], b: tuple[int, ...], hues_known: bool = False) -> int:
    """Two sets of words (in :data:`KINDS` order): the nearer of their pairs of pHashes, plus the
    steps between their colour layouts, plus :data:`HUE_WEIGHT` for each step between their hues
    past :data:`HUE_SLACK`; none where one hue word is empty and the rest within :data:`UNKNOWN_HUE_REST`,
    unless ``hues_known`` (a crop's words against a view's: see UNKNOWN_HUE_REST)."""
    whole, trimmed, red, green, blue, hue = (x ^ y for x, y in zip(a, b))
    rest = min(whole.bit_count(), trimmed.bit_count()) + red.bit_count() + green.bit_count() + blue.bit_count()
    if not hues_known and rest <= UNKNOWN_HUE_REST and hue_unknown(a[-1], b[-1], hue.bit_count()):
        return rest
    return rest + HUE_WEIGHT * max(0, hue.bit_count() - HUE_SLACK)


def hue_unknown(a: int, b: int, apart: int) -> bool:
    """Whether of two hue words ``apart`` bits apart one says nothing of the other's hues: it is
    empty (:data:`EMPTY_HUES`), and both are of one kind (ordinary, or a low-resolution view's,
    :data:`LOW_HUES`: those of two kinds are 44 bits apart or more)."""
    return (a in EMPTY_HUES or b in EMPTY_HUES) and apart <= HUE_KINDS_APART


def distance(a: Fingerprint, b: Fingerprint) -> int:
    """How far two pictures are apart: their nearest views (0 for the same picture, a transparent
    one and its copy flattened on white or black included; unrelated pictures are mostly 20 or
    more apart, recolours of one drawing 6 to 15 and more, an edit of a part of a picture 15 to
    25). Sketches are compared only for the pairs of views whose words could still come nearest."""
    pairs = sorted(((word_distance(x, y), x, y) for x in a.views for y in b.views), key=lambda pair: pair[0])
    nearest = with_sketches(pairs[0][0], pairs[0][1].sketch, pairs[0][2].sketch)
    for words, x, y in pairs[1:]:
        if words >= nearest:
            break
        nearest = min(nearest, with_sketches(words, x.sketch, y.sketch))
    return nearest
