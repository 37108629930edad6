"""Pixels as libpng hands them to the site's ``image-intensities`` program.

The program reads a PNG with ``png_set_alpha_mode(PNG_ALPHA_PNG, PNG_DEFAULT_sRGB)``,
``png_set_background`` on black and ``png_set_scale_16``, so libpng decides three things the
reference sums up as "transparency composited onto black":

- A partly transparent pixel is composited in linear light: its value goes through an 8-bit
  table to linear (the power 1/file gamma), is multiplied by its alpha with libpng's rounding,
  and comes back through another table (the power 1/2.2). 200 at alpha 128 reads 146, not 100.
- An opaque pixel is corrected only when the file's ``gAMA`` is more than 5% from the screen's
  2.2 (an ``sRGB`` chunk, or no chunk, counts as 1/2.2): a file marked gamma 1.0 reads 100 as 167.
- 16-bit grey is rounded to 8 bits as ``(v * 255 + 32895) >> 16`` (Pillow's own conversion of
  such a picture clips every value above 255 to white).

The tables follow libpng's ``png_build_8bit_table`` in its fixed point (1/100000); the values in
the tests were read with the program built from its source. The site turns a GIF's, a video's
and an SVG's frame into a PNG before the program reads it, so every picture goes through here;
only a JPEG has neither alpha nor gamma to change.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from PIL import Image, ImageChops

__all__ = ["on_black", "file_gamma"]

_SCREEN = 220000  # PNG_GAMMA_sRGB: the screen gamma PNG_DEFAULT_sRGB sets
_SRGB = 45455  # the file gamma assumed with an sRGB chunk or without gAMA
_THRESHOLD = 5000  # PNG_GAMMA_THRESHOLD_FIXED: a correction within 5% of 1 is none
_ALPHA_MODES = ("RGBA", "LA", "PA", "RGBa", "La")
_WIDE_GREY = ("I", "I;16", "I;16B", "I;16L", "I;16N")  # how Pillow opens a 16-bit grey PNG


def on_black(picture: Image.Image, gamma: int | None = None) -> Image.Image:
    """The picture in RGB as the program sees it.

    ``gamma`` is the file's (:func:`file_gamma`), for a part of a picture cropped from it: each
    pixel comes out the same whole or in parts, so a large picture can be read a strip at a time.
    """
    gamma = file_gamma(picture) if gamma is None else gamma
    if picture.mode in _WIDE_GREY:
        picture = _grey_at_8_bits(picture)
    if picture.mode not in _ALPHA_MODES and "transparency" not in picture.info:
        return _opaque(picture if picture.mode == "RGB" else picture.convert("RGB"), gamma)
    rgba = picture.convert("RGBA")
    *colours, alpha = rgba.split()
    if alpha.getextrema()[0] == 255:  # opaque throughout, as many RGBA files are
        return _opaque(rgba.convert("RGB"), gamma)
    table = _composite_table(gamma)
    alphas = np.asarray(alpha).astype(np.uint16)
    return Image.merge("RGB", [Image.fromarray(table[(np.asarray(band).astype(np.uint16) << 8) | alphas])
                               for band in colours])


def _opaque(rgb: Image.Image, gamma: int) -> Image.Image:
    correction = _reciprocal2(gamma, _SCREEN)
    return rgb.point(_table(correction) * 3) if _significant(correction) else rgb


def file_gamma(picture: Image.Image) -> int:
    """The gamma libpng reads the file with, in its fixed point (1/100000)."""
    if picture.format != "PNG" or "srgb" in picture.info:
        return _SRGB
    gamma = round(float(picture.info.get("gamma") or 0) * 100000)
    return gamma if gamma > 0 else _SRGB


@functools.lru_cache(maxsize=8)
def _composite_table(gamma: int) -> np.ndarray:
    """What ``png_do_compose`` makes of each (value, alpha) on black: opaque values through the
    gamma table, the others composited in linear light (alpha 0 gives 0 that way), indexed by
    ``value << 8 | alpha``. Looked up with numpy: Pillow's ``point`` rounds a 65536-entry table
    in Python on every call, which took half the time of reading a transparent picture."""
    opaque = _table(_reciprocal2(gamma, _SCREEN))
    to_linear, from_linear = _table(_reciprocal(gamma)), _table(_reciprocal(_SCREEN))
    table = []
    for value in range(256):
        for alpha in range(256):
            if alpha == 255:
                table.append(opaque[value])
            else:
                product = to_linear[value] * alpha + 128  # png_composite, on a black background
                table.append(from_linear[(product + (product >> 8)) >> 8])
    return np.array(table, dtype=np.uint8)


@functools.lru_cache(maxsize=16)
def _table(gamma: int) -> list[int]:
    """``png_build_8bit_table``: each value raised to ``gamma``, identity within the threshold."""
    if not _significant(gamma):
        return list(range(256))
    return [v if v in (0, 255) else math.floor(255 * (v / 255) ** (gamma * 0.00001) + 0.5) for v in range(256)]


def _significant(gamma: int) -> bool:
    return abs(gamma - 100000) > _THRESHOLD


def _reciprocal(a: int) -> int:
    return math.floor(1e10 / a + 0.5)


def _reciprocal2(a: int, b: int) -> int:
    return math.floor(1e15 / a / b + 0.5)


def _grey_at_8_bits(picture: Image.Image) -> Image.Image:
    """A 16-bit grey picture at 8 bits; its tRNS grey (one 16-bit value) becomes transparent, as
    libpng expands it."""
    wide = picture.convert("I")
    grey = wide.point(lambda v: v * (255 / 65535) + 0.5).convert("L")
    transparent = picture.info.get("transparency")
    if not isinstance(transparent, int):
        return grey
    # Non-zero wherever the value differs from the transparent one (I to L clips below 0).
    differs = ImageChops.add(wide.point(lambda v: v - transparent).convert("L"),
                             wide.point(lambda v: transparent - v).convert("L"))
    return Image.merge("LA", (grey, differs.point(lambda v: 255 if v else 0)))
