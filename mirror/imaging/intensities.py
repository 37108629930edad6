"""Corner intensities, Philomena's reverse-search fingerprint, as the site's program computes them.

The site stores what ``image-intensities`` (philomena-dev/cli_intensities, ``intensities.c``)
prints, so that program is the rule, where it departs from the reference's section 9 too: a pixel
is north when its row is at most ``height // 2`` and south when at least (so that row belongs to
both halves, for even sides as well as odd), west and east likewise by column, and each
quadrant's sum of BT.709 luma is divided by a quarter of the sides rounded up to even (so the
north and west quadrants of an even-sided picture read a little high). Luma is linear in R, G
and B, so a quadrant's is the same weighting of its channel sums, which Pillow's ``ImageStat``
gives without a per-pixel loop. The pixels are the ones the program is handed: libpng's (:mod:`.libpng`:
compositing in linear light, ``gAMA``, 16 bits), and for JPEG libjpeg-turbo's fast integer IDCT
(:mod:`.frames`).
"""

from __future__ import annotations

from dataclasses import astuple, dataclass

from PIL import Image, ImageStat

from .analyze import analyze
from .bounds import check_size, decoding
from .errors import MediaError
from .frames import still_frame
from .libpng import file_gamma, on_black

__all__ = ["Intensities", "intensities_of", "intensities_of_picture"]

BT709 = (0.2126, 0.7152, 0.0722)
# Rows turned into RGB on black at once: a strip of the widest picture takes some 200 MB to work on.
STRIP_ROWS = 512


@dataclass(frozen=True)
class Intensities:
    """Mean luma of the four quadrants, 0-255."""

    nw: float
    ne: float
    sw: float
    se: float

    def as_tuple(self) -> tuple[float, float, float, float]:
        return astuple(self)  # type: ignore[return-value]


def intensities_of_picture(picture: Image.Image) -> Intensities:
    """The intensities of a decoded picture (any mode), by the program's rule (see above).

    The picture is read a strip of rows at a time: turned into RGB on black whole, a large
    picture with transparency took seven times its decoded size (3 GB for 12000x9000 RGBA);
    a strip at a time it takes little beside the decoded picture itself. The sums over the
    strips are the sums the program makes in one pass.
    """
    width, height = picture.size
    gamma = file_gamma(picture)
    middle_x, middle_y = width // 2, height // 2  # in both halves
    boxes = {"nw": (0, 0, middle_x + 1, middle_y + 1), "ne": (middle_x, 0, width, middle_y + 1),
             "sw": (0, middle_y, middle_x + 1, height), "se": (middle_x, middle_y, width, height)}
    quarter = ((width + 1) & ~1) * ((height + 1) & ~1) // 4
    sums = {name: [0.0, 0.0, 0.0] for name in boxes}
    for first in range(0, height, STRIP_ROWS):
        last = min(height, first + STRIP_ROWS)
        strip = on_black(picture.crop((0, first, width, last)), gamma)
        for name, (x0, y0, x1, y1) in boxes.items():
            if max(y0, first) < min(y1, last):
                part = ImageStat.Stat(strip.crop((x0, max(y0, first) - first, x1, min(y1, last) - first))).sum
                sums[name] = [total + value for total, value in zip(sums[name], part)]
    return Intensities(**{name: _luma(sums[name], quarter) for name in boxes})


def intensities_of(data: bytes) -> tuple[Intensities, float]:
    """The intensities of a file's still frame, and the file's aspect ratio.

    Raises :class:`MediaError` when the file is not a picture or video the site accepts.
    Large files are read one at a time in a process (:mod:`.bounds`): a picture the site accepts
    can take over a gigabyte decoded (a 500 KiB PNG of 16000x11000 pixels does), so the download
    workers, or the reverse searches ``mirror serve`` is sent, must not decode several at once.
    """
    analysis = analyze(data)
    if not analysis.supported or not analysis.width:
        raise MediaError(f"not a file the site accepts ({analysis.mime_type})")
    check_size(analysis)
    with decoding(analysis):
        return intensities_of_picture(still_frame(data, analysis)), analysis.aspect_ratio


def _luma(sums: list[float], quarter: int) -> float:
    """``r / quarter * 0.2126 + g / quarter * 0.7152 + b / quarter * 0.0722``, in the program's order."""
    return sum(total / quarter * weight for weight, total in zip(BT709, sums))
