"""Corner intensities, Philomena's reverse-search fingerprint (reference section 9).

The picture is cut into four quadrants (overlapping by one pixel when a side is odd); each
pixel's BT.709 luma (0-255, transparency composited on black) is averaged per quadrant. Luma is
linear in R, G and B, so each quadrant's mean luma is the same weighting of its mean channels,
which Pillow's ``ImageStat`` gives exactly, without a per-pixel loop. The pixels are the ones
libpng hands the site's program (:mod:`.libpng`: compositing in linear light, ``gAMA``, 16 bits).
"""

from __future__ import annotations

import threading
from dataclasses import astuple, dataclass

from PIL import Image, ImageStat

from .analyze import analyze
from .frames import MediaError, still_frame
from .libpng import on_black

__all__ = ["Intensities", "intensities_of", "intensities_of_picture"]

BT709 = (0.2126, 0.7152, 0.0722)
_ONE_AT_A_TIME = threading.Lock()


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
    """The intensities of a decoded picture (any mode)."""
    rgb = on_black(picture)
    width, height = rgb.size
    left, top = (width + 1) // 2, (height + 1) // 2  # the first half includes the middle pixel
    right, bottom = width // 2, height // 2  # and so does the second
    boxes = {"nw": (0, 0, left, top), "ne": (right, 0, width, top),
             "sw": (0, bottom, left, height), "se": (right, bottom, width, height)}
    return Intensities(**{name: _luma(rgb.crop(box)) for name, box in boxes.items()})


def intensities_of(data: bytes) -> tuple[Intensities, float]:
    """The intensities of a file's still frame, and the file's aspect ratio.

    Raises :class:`MediaError` when the file is not a picture or video the site accepts.
    Files are read one at a time in a process: a picture the site accepts can take over a
    gigabyte decoded (a 500 KiB PNG of 16000x11000 pixels does), so the download workers, or
    the reverse searches ``mirror serve`` is sent, must not decode several at once.
    """
    analysis = analyze(data)
    if not analysis.supported or not analysis.width:
        raise MediaError(f"not a file the site accepts ({analysis.mime_type})")
    with _ONE_AT_A_TIME:
        return intensities_of_picture(still_frame(data, analysis)), analysis.aspect_ratio


def _luma(quadrant: Image.Image) -> float:
    means = ImageStat.Stat(quadrant).mean
    return sum(weight * mean for weight, mean in zip(BT709, means))
