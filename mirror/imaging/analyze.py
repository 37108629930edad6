"""What an uploaded file is, as Philomena's analysers and ``mediastat`` report it: dimensions,
format, MIME type, duration and animation (reference section 7, "Upload validation rules").

Raster formats are read by Pillow, WebM by PyAV (ffmpeg's demuxer), SVG by sniffing its root
element and rendering it (:mod:`.frames`). A file of any other type is still described, by its
sniffed MIME type alone, so the caller can say ``(image/webp) is invalid`` as the site does.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass

from PIL import Image, UnidentifiedImageError

from .errors import MediaError
from .svg import render_svg

__all__ = ["Analysis", "MediaError", "analyze", "gif_delays", "ACCEPTED_MIME_TYPES", "MAX_SIDE", "MAX_DURATION",
           "too_large_to_process"]

ACCEPTED_MIME_TYPES = ("image/gif", "image/jpeg", "image/png", "image/svg+xml", "video/webm")
FORMATS = {"GIF": ("gif", "image/gif"), "JPEG": ("jpg", "image/jpeg"), "PNG": ("png", "image/png")}
# mediastat refuses sides outside 1..32767 and durations over an hour; the site then sees 0x0.
MAX_SIDE = 32767
MAX_DURATION = 3600.0
# A still picture's duration as mediastat reports it: one frame at 1/25 s.
STILL_DURATION = 0.04
# ffmpeg's GIF demuxer, in centiseconds: a delay below the minimum plays as the default.
GIF_MIN_DELAY, GIF_DEFAULT_DELAY = 2, 10
_SVG_ROOT = re.compile(rb"<svg[\s>]", re.IGNORECASE)


@dataclass(frozen=True)
class Analysis:
    """What the file is. ``width``/``height`` are 0 when the type is unsupported or unreadable."""

    mime_type: str
    format: str | None = None
    width: int = 0
    height: int = 0
    duration: float = 0.0
    animated: bool = False

    @property
    def supported(self) -> bool:
        return self.mime_type in ACCEPTED_MIME_TYPES and self.format is not None

    @property
    def aspect_ratio(self) -> float:
        """Width over height, 0.0 when the height is 0 (as the site's uploader computes it)."""
        return self.width / self.height if self.height else 0.0


def too_large_to_process(width: int, height: int) -> bool:
    """The site's own bound on a picture's size (image.ex, reference section 7): beyond it an
    upload is refused with "dimensions are too large to process". It allows about 268 million
    pixels (a gigabyte decoded with alpha); Pillow's own guard is set to it below."""
    return (((width + 63) & -64) * 8 + 1024) * (height + 128) >= 2_147_483_647


# Pillow warns past 89 million pixels and refuses past twice that: pictures the site takes. The
# site's bound replaces its generic one; intensities_of refuses what the site would.
Image.MAX_IMAGE_PIXELS = 2_147_483_647 // 8


def analyze(data: bytes) -> Analysis:
    """Describe ``data``; never raises for bad input (an unreadable file has 0x0 dimensions)."""
    if data[:4] == b"\x1a\x45\xdf\xa3":
        return _checked(_video(data))
    if _looks_like_svg(data):
        return _checked(_svg(data))
    try:
        with Image.open(io.BytesIO(data)) as picture:
            return _checked(_raster(picture))
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError):
        return Analysis(_sniffed_mime(data))


def _checked(analysis: Analysis) -> Analysis:
    """mediastat's limits: outside them the site sees a 0x0 file of that type."""
    sides_ok = 1 <= analysis.width <= MAX_SIDE and 1 <= analysis.height <= MAX_SIDE
    if sides_ok and 0 <= analysis.duration <= MAX_DURATION:
        return analysis
    return Analysis(analysis.mime_type, analysis.format)


def _raster(picture: Image.Image) -> Analysis:
    fmt = picture.format or ""
    if fmt not in FORMATS:
        return Analysis(Image.MIME.get(fmt, "application/octet-stream"))
    name, mime = FORMATS[fmt]
    if name == "gif":  # mediastat's duration: the frames' delays, a still one's included
        frames = getattr(picture, "n_frames", 1)
        duration = sum(gif_delays(picture)) / 100
        return Analysis(mime, name, picture.width, picture.height, round(duration, 6), frames > 1)
    return Analysis(mime, name, picture.width, picture.height, STILL_DURATION, False)


def gif_delays(picture: Image.Image) -> list[int]:
    """Each frame's delay in centiseconds as ffmpeg's GIF demuxer (so ``mediastat`` and
    ``mediathumb``) times it: a delay under 2 is taken as 10, and a frame without a graphic
    control extension keeps the delay before it (10 at the start)."""
    delays, delay = [], GIF_DEFAULT_DELAY
    for index in range(picture.n_frames):
        picture.seek(index)
        if "duration" in picture.info:
            delay = round(float(picture.info["duration"]) / 10)
            delay = GIF_DEFAULT_DELAY if delay < GIF_MIN_DELAY else delay
        delays.append(delay)
    picture.seek(0)
    return delays


def _video(data: bytes) -> Analysis:
    try:
        import av
    except ImportError:  # pragma: no cover - PyAV is a dependency
        return Analysis("video/webm")
    try:
        with av.open(io.BytesIO(data)) as container:
            stream = container.streams.video[0]
            is_webm = "webm" in (container.format.name or "")
            duration = float(container.duration / av.time_base) if container.duration else 0.0
            return Analysis("video/webm" if is_webm else "video/x-matroska", "webm" if is_webm else None,
                            stream.codec_context.width, stream.codec_context.height, round(duration, 6), True)
    except (av.error.FFmpegError, IndexError, ValueError, OSError):
        return Analysis("video/webm")


def _looks_like_svg(data: bytes) -> bool:
    head = data[:4096].lstrip()
    return head.startswith((b"<?xml", b"<svg", b"<!DOCTYPE svg", b"<!--")) and bool(_SVG_ROOT.search(head))


def _svg(data: bytes) -> Analysis:
    try:
        picture = render_svg(data)
    except MediaError:
        return Analysis("image/svg+xml")
    return Analysis("image/svg+xml", "svg", picture.width, picture.height, 0.0, False)


def _sniffed_mime(data: bytes) -> str:
    """A MIME type for a file none of the readers took, as ``file --mime-type`` would name it."""
    if not data:
        return "application/x-empty"
    try:
        data[:4096].decode("utf-8")
    except UnicodeDecodeError:
        return "application/octet-stream"
    return "text/plain"
