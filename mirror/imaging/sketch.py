"""A picture's sketch: its trimmed view in 16x16 colour pixels, compared part by part to tell an
edit from a copy (:mod:`.similar` says what the rest of a fingerprint is).

A fingerprint's words (pHashes, colour layout, hues) read a picture whole, at a scale where an
edit (a figure's armour painted another colour, a face redrawn) moves as few bits as a copy's
re-encoding does; the sketch sees each part. Two sketches are read through windows of 95% and
100% of each side at five places (as a 5% crop or a border trimmed a pixel off shifts a copy), and
of the middle 90% (a crop off every edge, found by the crops' words, :data:`.similar.CROPS`), and
compared, each window of one against the whole of the other; they differ by the level (0-255, on
the channel furthest apart) that 90% of the cells of the best-aligned pair stay within. Measured
on the painted corpus (``bench/similar.py``), every copy within 12 stayed within 13; Wesnoth's
general, its marshal painted over in other armour, is 23 from it. 768 bytes a view, followed
(from the finder's version 5) by the view's fine picture (:mod:`.fine`), compared in the
alignment the sketches found best.
"""

from __future__ import annotations

from functools import cache, lru_cache

import numpy as np
from PIL import Image

__all__ = ["EDIT_SLACK", "MIDDLE", "SKETCH_BYTES", "SKETCH_SIDE", "aligned", "penalty_of", "sketch_difference", "sketch_of",
           "window_matrices"]

SKETCH_SIDE, SKETCH_READ = 16, 10
SKETCH_SHARES, SKETCH_PLACES = (1.0, 0.95), 5
SKETCH_QUANTILE = 0.9
# The middle 90% of each side (left, top, right, bottom), as a copy cropped 5% off every edge
# holds: a window tried besides, and the first of the finder's crops (:data:`.similar.CROPS`),
# so a pair found by that crop's words is compared through it.
MIDDLE = (0.05, 0.05, 0.95, 0.95)
SKETCH_BYTES = SKETCH_SIDE * SKETCH_SIDE * 3  # what a stored sketch starts with; the fine picture follows
EDIT_SLACK = 14  # every copy of the corpus within 12 stayed within 13 (bench/similar.py); an overpainted edit 23


def sketch_of(picture: Image.Image) -> bytes:
    """The picture's sketch (:data:`SKETCH_SIDE`): its RGB pixels, row by row."""
    return picture.convert("RGB").resize((SKETCH_SIDE, SKETCH_SIDE), Image.Resampling.BOX).tobytes()


def penalty_of(level: float) -> int:
    """What sketches ``level`` apart (:func:`sketch_difference`) add to a distance: the levels
    past :data:`EDIT_SLACK`.

    The words see a picture whole, at a scale where an edit (a figure's armour painted another
    colour, a face redrawn) moves as few bits as a copy's re-encoding does; the sketch sees each
    part of it, aligned as a crop or border would shift it."""
    return max(0, round(level) - EDIT_SLACK)


def sketch_difference(a: bytes, b: bytes) -> float:
    """The level 90% of the cells of two sketches stay within, in the best of the alignments
    tried: each window of one against the whole of the other."""
    return aligned(a, b)[0]


def aligned(a: bytes, b: bytes) -> tuple[float, list[tuple[bool, int]]]:
    """:func:`sketch_difference`, and the alignments that gave it, all of them when they tie:
    (whether it is a window of ``a`` against the whole of ``b``, else of ``b`` against ``a``;
    the window, 0 for the whole)."""
    levels = _alignment_levels(a, b)
    count, least = len(levels) // 2, levels.min()
    return float(least), [(bool(i < count), int(i % count)) for i in np.flatnonzero(levels == least)]


def _alignment_levels(a: bytes, b: bytes) -> np.ndarray:
    """For each alignment, each window of ``a`` against the whole of ``b`` then each of ``b``
    against ``a``, the level 90% of their cells stay within."""
    windows_a, windows_b = _sketch_windows(a[:SKETCH_BYTES]), _sketch_windows(b[:SKETCH_BYTES])
    apart = np.concatenate([np.abs(windows_a - windows_b[0]), np.abs(windows_b - windows_a[0])])
    cells = np.maximum(np.maximum(apart[:, 0], apart[:, 1]), apart[:, 2])  # the channel furthest apart
    # np.quantile's linear interpolation, by a partition (a tenth of the time on such small rows)
    position = SKETCH_QUANTILE * (cells.shape[1] - 1)
    below = int(position)
    ranked = np.partition(cells, (below, below + 1), axis=1)
    return ranked[:, below] + (position - below) * (ranked[:, below + 1] - ranked[:, below])


@lru_cache(maxsize=1024)  # 21 KB each: a search compares a few sketches with many
def _sketch_windows(sketch: bytes) -> np.ndarray:
    """The sketch read through each window (:data:`SKETCH_SHARES` of each side, at
    :data:`SKETCH_PLACES` places), the whole first: int16, (windows, channel, cell). Each window
    is Pillow's bilinear resize of that box, as a product by two fixed matrices (:func:`window_matrices`):
    36 resizes through Pillow took 19 ms a sketch, which a million images' groups cannot pay."""
    rows, columns = window_matrices(SKETCH_SIDE, SKETCH_READ)
    pixels = np.frombuffer(sketch, dtype=np.uint8).reshape(SKETCH_SIDE, SKETCH_SIDE, 3).transpose(2, 0, 1)
    read = rows[:, None] @ pixels.astype(np.float64)[None] @ columns.transpose(0, 2, 1)[:, None]
    return np.clip(np.round(read), 0, 255).astype(np.int16).reshape(len(rows), 3, SKETCH_READ * SKETCH_READ)


@cache
def window_matrices(side: int, read: int) -> tuple[np.ndarray, np.ndarray]:
    """For each window (:data:`SKETCH_SHARES` of each side at :data:`SKETCH_PLACES` places, the
    whole first) of a picture ``side`` pixels a side, the matrices that read it at ``read``
    pixels a side along the rows (windows, read, side) and along the columns: Pillow's bilinear
    resize of the window's box, found by resizing the identity. The same windows at any side: the
    fine picture (:mod:`.fine`) is read through the window its sketch aligned best."""
    identity = Image.fromarray(np.eye(side, dtype=np.float32), mode="F")
    rows, columns = [], []
    for width in SKETCH_SHARES:
        for height in SKETCH_SHARES:
            for left in np.linspace(0, 1 - width, SKETCH_PLACES if width < 1 else 1):
                for top in np.linspace(0, 1 - height, SKETCH_PLACES if height < 1 else 1):
                    columns.append(_along(identity, side * left, side * (left + width), read))
                    rows.append(_along(identity, side * top, side * (top + height), read))
    left, top, right, bottom = MIDDLE
    columns.append(_along(identity, side * left, side * right, read))
    rows.append(_along(identity, side * top, side * bottom, read))
    return np.array(rows), np.array(columns)


def _along(identity: Image.Image, start: float, end: float, read: int) -> np.ndarray:
    """The (read, side) matrix of Pillow's bilinear resize of [start, end) to ``read`` pixels."""
    side = identity.height
    out = identity.resize((read, side), Image.Resampling.BILINEAR, box=(start, 0, end, side))
    return np.asarray(out, dtype=np.float64).T
