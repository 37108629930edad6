"""One still frame of a media file, as the site takes it for thumbnails and intensities: the
frame at half the duration for GIF and WebM (``mediathumb``), the SVG rasterised, the picture
itself otherwise.

``mediathumb`` reads the frames in order and keeps the first one whose span reaches the time
(its start plus its duration at or past it): the frame showing at that time, and at a boundary
between two frames the earlier one. GIF frames are timed as ffmpeg times them
(:func:`.analyze.gif_delays`); a video frame is turned into RGB as mediathumb's swscale call
does, as BT.601 at limited range whatever the video says.

SVG is rendered by cairosvg with every external reference refused, so an uploaded SVG cannot
make this process fetch anything; cairosvg needs the cairo library, and without it SVG files are
reported as unreadable with a message saying why.
"""

from __future__ import annotations

import io
from fractions import Fraction
from typing import TYPE_CHECKING

import simplejpeg
from PIL import Image, UnidentifiedImageError

from .analyze import Analysis, gif_delays
from .errors import MediaError
from .svg import render_svg

if TYPE_CHECKING:
    import av

__all__ = ["scaled_as_the_site_does", "still_frame"]


def still_frame(data: bytes, analysis: Analysis) -> Image.Image:
    """The picture the site would take from ``data`` (raises :class:`MediaError` if there is none)."""
    if analysis.format == "svg":
        return render_svg(data)
    if analysis.format == "webm":
        return _video_frame(data, analysis.duration / 2)
    if analysis.format == "jpg" and (picture := _jpeg_as_the_site_reads_it(data)) is not None:
        return picture
    try:
        picture = Image.open(io.BytesIO(data))
        if analysis.format == "gif" and analysis.animated:
            picture.seek(_gif_frame_at_half(gif_delays(picture)))
        picture.load()
        return picture
    except (UnidentifiedImageError, OSError, ValueError, EOFError) as e:
        raise MediaError(f"cannot read the picture: {e}") from None


def _jpeg_as_the_site_reads_it(data: bytes) -> Image.Image | None:
    """A JPEG decoded as the site's program decodes it: libjpeg-turbo to RGB with its fast integer
    IDCT (``TJFLAG_FASTDCT``), which Pillow does not offer (its accurate IDCT reads pixels up to a
    level or two apart). simplejpeg carries libjpeg-turbo in its wheels, so no system library is
    needed. None for a file it cannot read (CMYK, say): Pillow reads those."""
    try:
        pixels = simplejpeg.decode_jpeg(data, colorspace="RGB", fastdct=True, fastupsample=False, strict=False)
    except (ValueError, RuntimeError):
        return None
    return Image.fromarray(pixels, "RGB")


def _gif_frame_at_half(delays: list[int]) -> int:
    """The index of the frame ``mediathumb`` keeps at half the total (in whole centiseconds, so a
    boundary is met exactly)."""
    end = 0
    for index, delay in enumerate(delays):
        end += delay
        if 2 * end >= sum(delays):
            return index
    return len(delays) - 1


def _video_frame(data: bytes, seconds: float) -> Image.Image:
    import av

    # The time as mediathumb parses it from the duration's shortest decimal form.
    time = Fraction(str(seconds))
    try:
        with av.open(io.BytesIO(data)) as container:
            stream = container.streams.video[0]
            base = Fraction(stream.time_base) if stream.time_base else None
            if base and time > 0:
                # From the last keyframe before the time (a tick before: a frame ending exactly
                # at the time, just before a keyframe starting there, is the one kept).
                container.seek(max(0, int(time / base) - 1), stream=stream, backward=True)
            durations: dict[int, int] = {}
            last = None
            for packet in container.demux(stream):
                if packet.pts is not None:
                    durations[packet.pts] = packet.duration or 0
                for frame in packet.decode():
                    last = frame
                    if base is None or frame.pts is None:
                        continue
                    if (frame.pts + durations.get(frame.pts, 0)) * base >= time:
                        return _as_mediathumb_sees(frame)
            if last is None:
                raise MediaError("the video has no frame")
            return _as_mediathumb_sees(last)
    except (av.error.FFmpegError, IndexError, ValueError, OSError) as e:
        raise MediaError(f"cannot read the video: {e}") from None


def _as_mediathumb_sees(frame: av.VideoFrame) -> Image.Image:
    """The frame in RGB as mediathumb converts it: swscale's defaults, BT.601 at limited range,
    whatever colour space or range the video is tagged with (PyAV would honour the tags).

    mediathumb asks for RGBA, but swscale's fast path to RGBA leaves the last few columns of
    each row unset for some widths (900 among them), so the same file read twice could give
    other intensities; its RGB is the same everywhere else, and whole (a video has no alpha)."""
    return frame.reformat(format="rgb24", src_colorspace="ITU601", src_color_range="MPEG").to_image()


def scaled_as_the_site_does(picture: Image.Image, box: tuple[int, int]) -> Image.Image:
    """``picture`` scaled to fit ``box`` (never up) as the site's thumbnailer does: ffmpeg's
    ``scale`` with ``format=rgb32`` keeps a PNG's or GIF's transparency, and scales the colours
    and the alpha each on its own, so the colours under transparent pixels stay what they were
    (Pillow would premultiply them to black)."""
    size = picture.copy()
    size.thumbnail(box)
    if size.size == picture.size:
        return picture
    if picture.mode != "RGBA":
        return picture.resize(size.size, Image.Resampling.LANCZOS)
    scaled = picture.convert("RGB").resize(size.size, Image.Resampling.LANCZOS)
    scaled.putalpha(picture.getchannel("A").resize(size.size, Image.Resampling.LANCZOS))
    return scaled
