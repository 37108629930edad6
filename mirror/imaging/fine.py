"""A view's fine picture: its trimmed picture in 48x48 colour pixels, read only for pairs the
words and the sketch already find near, to tell a copy from a sibling drawn on one template
(:mod:`.sketch` holds it after the sketch, :mod:`.similar` says what the rest of a fingerprint is).

Pictures drawn on one template (a person icon in three skin tones, a smiley with another
mouth) differ in a few percent of the picture: below what a copy's re-encoding, scaling and
crop move the words and the 16x16 sketch. At 48x48 the two differ in kind, not in amount. A
copy's differences, once aligned as the sketch aligns it, are thin (an edge a pixel off, a
resampled outline) or small everywhere (JPEG); a recolour's or a redrawn part's are a region of
its own, several pixels wide. So each pixel is compared with the other picture's pixels a shift
of one away (:data:`FINE_SHIFT`), the nearest counting, and only differences that fill a 3x3
patch are kept (an erosion): what remains are the regions one picture has and the other has not.

Measured on ``bench/similar.py``'s corpora (each copy against its original, and every pair of
different pictures, within 12 without it): on vector art it puts 2 of 2,340 copies past 12 and
351 of the 504 pairs of siblings (the three skin tones, the smileys with a toothy grin); what is
left is a smiley whose other mouth is a thin line and whose horns are a few pixels (a line is
what a copy's edges are too); on emotes, 4 of 1,578 copies.

Kept in 32 levels a channel, zlib-compressed: some 1.3 KB a view for vector art, 2.3 KB for a
painting; 2.3 GB for a million opaque paintings (a picture with transparency has three views).
"""

from __future__ import annotations

import zlib
from functools import lru_cache

import numpy as np
from PIL import Image

from .sketch import window_matrices

__all__ = ["FINE_SIDE", "FINE_SLACK", "fine_difference", "fine_of", "fine_penalty"]

FINE_SIDE = 48
FINE_FROM = 40  # pixels a side a picture has at least to have a fine picture (see fine_of)
# Low bits of each channel dropped before it is kept: 32 levels, each within 4 of the pixel's,
# against differences counted from 32. Zlib then halves what a view keeps (a painting's 4.3 KB
# to 2.3 KB, vector art's 2.5 to 1.3), and the same pairs are told apart as kept whole.
FINE_DROPPED = 3
FINE_SHIFT = 1  # pixels a copy's edge may be off after the alignment
FINE_LEVEL = 32  # levels (0-255, the channel furthest apart) a pixel must differ by to count
FINE_PATCH = 3  # the side of the patch a difference must fill to be a region, not an edge
# Pixels past which a pair differs by a region, each further one a step of distance: 8 set apart
# 5 vector copies where 13 set apart 2, and the same siblings (see docs/duplicates.md).
FINE_SLACK = 13


def fine_of(picture: Image.Image) -> bytes:
    """The picture's fine picture (:data:`FINE_SIDE`): its RGB pixels, row by row, in 32 levels
    (:data:`FINE_DROPPED`), compressed; none (b"") for a picture under :data:`FINE_FROM` pixels
    a side. A small copy (a quarter-size emote, 16-32 px) blown up to 48 has wide soft edges
    where its original's are sharp: regions to this measure (15 of 1,578 emote copies within 12
    were set apart when every picture had one); its sketch says as much."""
    if min(picture.size) < FINE_FROM:
        return b""
    pixels = np.asarray(picture.convert("RGB").resize((FINE_SIDE, FINE_SIDE), Image.Resampling.BOX))
    return zlib.compress((pixels >> FINE_DROPPED).tobytes(), 9)


def fine_penalty(a: bytes, b: bytes, alignments: list[tuple[bool, int]]) -> int:
    """What two fine pictures add to a distance: the pixels of a region one has and the other
    has not (:func:`fine_difference`) past :data:`FINE_SLACK`; nothing when either is missing."""
    if not a or not b:
        return 0
    return max(0, fine_difference(a, b, alignments) - FINE_SLACK)


def fine_difference(a: bytes, b: bytes, alignments: list[tuple[bool, int]]) -> int:
    """The pixels of ``a`` and ``b`` that differ by a region, in the best of ``alignments``
    (the sketch's, :func:`.sketch.aligned`: a window of ``a`` against the whole of ``b`` when the
    flag is set, else of ``b`` against ``a``). Of alignments that tie, those of the first window
    are measured, both ways, the least kept: the measure is the same whichever picture comes
    first, and a flat picture, whose every alignment ties, is measured once or twice, not 72 times."""
    window = min(window for _, window in alignments)
    ways = sorted({of_a for of_a, at in alignments if at == window})
    found = []
    for of_a in ways[-1:] if window == 0 else ways:  # the whole against the whole is one way
        x, y = (_read(a, window), _read(b, 0)) if of_a else (_read(b, window), _read(a, 0))
        apart = np.maximum(_shifted_apart(x, y), _shifted_apart(y, x))
        found.append(int((_eroded(apart) > FINE_LEVEL).sum()))
    return min(found)


@lru_cache(maxsize=256)
def _read(fine: bytes, window: int) -> np.ndarray:
    """The fine picture read through the sketch's ``window`` (0: whole): int16 (channel, side, side)."""
    kept = np.frombuffer(zlib.decompress(fine), dtype=np.uint8).reshape(FINE_SIDE, FINE_SIDE, 3)
    planes = (kept.transpose(2, 0, 1).astype(np.int16) << FINE_DROPPED) + (1 << FINE_DROPPED >> 1)  # each step's middle
    if window == 0:
        return np.ascontiguousarray(planes)
    rows, columns = window_matrices(FINE_SIDE, FINE_SIDE)
    return np.clip(np.round(rows[window] @ planes @ columns[window].T), 0, 255).astype(np.int16)


def _shifted_apart(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Per pixel of ``x``: how far it is from the nearest of ``y``'s pixels up to
    :data:`FINE_SHIFT` away, on the channel furthest apart (channel by channel, plane by plane:
    a third of the time of the pixels' channels side by side)."""
    k, side = FINE_SHIFT, x.shape[1]
    padded = np.pad(y, ((0, 0), (k, k), (k, k)), mode="edge")
    nearest = None
    for dy in range(2 * k + 1):
        for dx in range(2 * k + 1):
            apart = np.abs(x - padded[:, dy:dy + side, dx:dx + side])
            furthest = np.maximum(np.maximum(apart[0], apart[1]), apart[2])
            nearest = furthest if nearest is None else np.minimum(nearest, furthest, out=nearest)
    return nearest


def _eroded(apart: np.ndarray) -> np.ndarray:
    """Each pixel's least difference over the :data:`FINE_PATCH` patch around it: an edge's thin line goes."""
    k, side = FINE_PATCH // 2, apart.shape[0]
    padded = np.pad(apart, k, mode="edge")
    least = padded[:side, :side].copy()
    for dy in range(2 * k + 1):
        for dx in range(2 * k + 1):
            np.minimum(least, padded[dy:dy + side, dx:dx + side], out=least)
    return least
