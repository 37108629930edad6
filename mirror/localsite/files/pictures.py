"""Real pictures for a generated board, at the record's size: drawn artwork, then shapes.

The stand-ins in :mod:`.media` are a few bytes each, enough for hashing and downloading; a board
meant to be looked at (`mirror site`, the demo, the browsing tests) gets pictures someone can see
instead. The first images of a board (as many as the corpus in :mod:`mirror.localsite.art` has
archived pictures, 243) show its paintings, each a different one, on a transparent canvas in a
PNG or GIF as a booru's character art is; later ones show shapes in colours and a layout drawn
from their key, with the image's id, so that no two are near-duplicates of each other. Pillow
writes PNG, JPEG and animated GIF files, PyAV encodes WebM (VP8) from the same pictures, and SVG
is written as text (shapes only). Everything comes from the key, so the same image always gets
the same bytes.
"""

from __future__ import annotations

import functools
import hashlib
import io

import av
from PIL import Image, ImageDraw, ImageFont

from ..art import Artwork, artworks
from .drawn import drawn

__all__ = ["FORMATS", "artwork_for", "fit", "picture"]

FORMATS = ("png", "jpg", "gif", "svg", "webm")  # what can be drawn; other files (mp4) stay stand-ins
_WEBM_FRAMES, _WEBM_RATE = 4, 4  # a second of video
# zlib's quickest level: a large PNG is written in two thirds of the time of level 6, some 40% larger,
# which a download over loopback does not notice.
_PNG_LEVEL = 1

# Above this many pixels a picture is drawn smaller and scaled up: flat shapes lose nothing.
_DRAW_PIXELS = 640 * 640


def _colours(key: str) -> list[tuple[int, int, int]]:
    digest = hashlib.sha256(key.encode()).digest()
    return [tuple(digest[i:i + 3]) for i in range(0, 18, 3)]  # type: ignore[misc]


def fit(width: int, height: int, box: tuple[int, int]) -> tuple[int, int]:
    """The size of a ``width`` x ``height`` picture scaled down to fit ``box`` (never up)."""
    scale = min(box[0] / width, box[1] / height, 1.0)
    return max(1, round(width * scale)), max(1, round(height * scale))


def artwork_for(key: str) -> Artwork | None:
    """The painting a generated image's key shows: a different one for each of a board's first
    images (``{seed}-{id}``), none past them or for another key."""
    seed, _, image_id = key.partition("-")
    if not (seed.isdigit() and image_id.isdigit()):
        return None
    archived = artworks("archived")
    number = int(image_id) - 1
    return archived[(number + int(seed) * 97) % len(archived)] if 0 <= number < len(archived) else None


def _painting(art: Artwork, width: int, height: int, frame: int, *, transparent: bool,
              palette: bool = False) -> Image.Image:
    """``art`` scaled to fill ``width`` x ``height`` one way and centred, on a transparent canvas (RGBA) or on
    white (RGB); a later frame of an animation sways a little. Composed at most
    :data:`_DRAW_PIXELS` large, then scaled up without smoothing (blocks compress: a demo's large
    PNGs stay quick to write and to download). With ``palette``, in 256 colours (alpha among them)
    before scaling, as many PNGs on a booru are: a quarter of the bytes to write, read and download,
    which halves what drawing a demo's paintings costs (a 3000x2000 PNG: 7.5 MB of RGBA
    and 0.21 s of CPU to write and read back, against 2.3 MB and 0.09 s)."""
    scale = min(1.0, (_DRAW_PIXELS / (width * height)) ** 0.5)
    w, h = max(1, round(width * scale)), max(1, round(height * scale))
    picture = _artwork_picture(art)
    if frame:
        picture = picture.rotate(4 * frame, resample=Image.Resampling.BICUBIC)
    factor = min(w / picture.width, h / picture.height)
    fitted = picture.resize((max(1, round(picture.width * factor)), max(1, round(picture.height * factor))),
                            Image.Resampling.LANCZOS)
    canvas = Image.new("RGBA", (w, h), (255, 255, 255, 0 if transparent else 255))
    canvas.alpha_composite(fitted.convert("RGBA"), ((w - fitted.width) // 2, (h - fitted.height) // 2))
    canvas = canvas if transparent else canvas.convert("RGB")
    if palette:
        canvas = canvas.quantize(colors=256, method=Image.Quantize.FASTOCTREE)
    return canvas if scale == 1.0 else canvas.resize((width, height), Image.Resampling.NEAREST)


@functools.lru_cache(maxsize=16)
def _artwork_picture(art: Artwork) -> Image.Image:
    return art.picture()


def _draw(key: str, label: str, width: int, height: int, frame: int = 0, *, palette: bool = False) -> Image.Image:
    """The picture at ``width`` x ``height``: drawn at most :data:`_DRAW_PIXELS` large (with a
    palette when asked, before scaling, which is what keeps big GIFs and PNGs cheap), then
    scaled up without smoothing. Where the shapes sit and how large they are comes from the key
    too: one layout in other colours would be a near-duplicate of another to a perceptual finder."""
    colours = _colours(f"{key}:{frame}")
    place = hashlib.sha256(f"{key}:layout".encode()).digest()
    x, y = (0.05 + place[i] / 255 * 0.25 for i in (0, 1))  # shapes keep off the edges: a frame stays a frame
    scale = min(1.0, (_DRAW_PIXELS / (width * height)) ** 0.5)
    w, h = max(1, round(width * scale)), max(1, round(height * scale))
    image = Image.new("RGB", (w, h), colours[0])
    draw = ImageDraw.Draw(image)
    draw.rectangle((w * x, h * y, w * (x + 0.25 + place[2] / 255 * 0.4), h * (y + 0.25 + place[3] / 255 * 0.4)),
                   fill=colours[1])
    ex, ey = 0.3 + place[4] / 255 * 0.35, 0.3 + place[5] / 255 * 0.35
    draw.ellipse((w * (ex - 0.25), h * (ey - 0.25), w * (ex + 0.3), h * (ey + 0.3)), fill=colours[2],
                 outline=colours[3], width=max(1, w // 80))
    px, py = 0.05 + place[6] / 255 * 0.45, 0.6 + place[7] / 255 * 0.2
    draw.polygon([(w * px, h * (py + 0.1)), (w * (px + 0.2), h * (py - 0.25)), (w * (px + 0.4), h * (py + 0.1))],
                 fill=colours[4])
    if min(w, h) >= 24:
        font = ImageFont.load_default(size=max(10, min(w, h) // 6))
        draw.text((w / 2, h / 2), label, fill=(255, 255, 255), anchor="mm", font=font,
                  stroke_width=max(1, min(w, h) // 60), stroke_fill=(0, 0, 0))
    if palette:
        image = image.convert("P", palette=Image.Palette.ADAPTIVE, colors=64)
    return image if scale == 1.0 else image.resize((width, height), Image.Resampling.NEAREST)


@functools.lru_cache(maxsize=64)  # an image's full file and its upload are the same picture
def picture(key: str, fmt: str, width: int, height: int, label: str, *, animated: bool = False) -> bytes:
    """A ``fmt`` file (png, jpg, gif or svg) of ``width`` x ``height`` showing ``label``, drawn once
    and then read from the cache folder (:mod:`.drawn`)."""
    if fmt == "svg":
        return _svg(key, width, height, label)
    return drawn(functools.partial(_picture, key, fmt, width, height, label, animated), key, fmt, width, height,
                 label, animated)


def _picture(key: str, fmt: str, width: int, height: int, label: str, animated: bool) -> bytes:
    art = artwork_for(key)
    if art is not None:
        return _painted(art, fmt, width, height, animated=animated)
    out = io.BytesIO()
    if fmt == "gif":
        frames = [_draw(key, label, width, height, frame, palette=True) for frame in range(3 if animated else 1)]
        frames[0].save(out, "GIF", save_all=animated, append_images=frames[1:], duration=300, loop=0)
    elif fmt == "jpg":
        _draw(key, label, width, height).save(out, "JPEG", quality=85)
    elif fmt == "png":
        _draw(key, label, width, height, palette=True).save(out, "PNG", compress_level=_PNG_LEVEL)
    elif fmt == "webm":
        _webm(out, [_draw(key, label, width, height, frame) for frame in range(_WEBM_FRAMES)])
    else:
        raise ValueError(f"no picture for format {fmt!r}")
    return out.getvalue()


def _painted(art: Artwork, fmt: str, width: int, height: int, *, animated: bool) -> bytes:
    """A ``fmt`` file of the painting: transparent where the format can be (PNG, GIF)."""
    out = io.BytesIO()
    if fmt == "gif":
        frames = [_one_bit_alpha(_painting(art, width, height, frame, transparent=True))
                  for frame in range(3 if animated else 1)]
        frames[0].save(out, "GIF", save_all=animated, append_images=frames[1:], duration=300, loop=0, disposal=2)
    elif fmt == "jpg":
        _painting(art, width, height, 0, transparent=False).save(out, "JPEG", quality=85)
    elif fmt == "png":
        _painting(art, width, height, 0, transparent=True, palette=True).save(out, "PNG", compress_level=_PNG_LEVEL)
    elif fmt == "webm":
        _webm(out, [_painting(art, width, height, frame, transparent=False) for frame in range(_WEBM_FRAMES)])
    else:
        raise ValueError(f"no picture for format {fmt!r}")
    return out.getvalue()


def _one_bit_alpha(picture: Image.Image) -> Image.Image:
    """``picture`` as a GIF can hold it: a pixel is transparent or not, and an edge's half-transparent
    pixels are blended with white rather than shown in the colours under them."""
    alpha = picture.getchannel("A")
    flat = Image.alpha_composite(Image.new("RGBA", picture.size, (255, 255, 255, 255)), picture)
    flat.putalpha(alpha.point(lambda level: 255 if level >= 128 else 0))
    return flat


def _webm(out: io.BytesIO, frames: list[Image.Image]) -> None:
    """A VP8 WebM of ``frames`` (deterministic: no timestamps from the clock)."""
    container = av.open(out, mode="w", format="webm", options={"fflags": "+bitexact"})
    # VP8's realtime mode on one thread: five times quicker than its default on a large picture
    # (the demo's 3000x2000 videos took seconds each), and the same bytes on every run.
    stream = container.add_stream("libvpx", rate=_WEBM_RATE,
                                  options={"deadline": "realtime", "cpu-used": "16", "threads": "1"})
    stream.width, stream.height, stream.pix_fmt = frames[0].width, frames[0].height, "yuv420p"
    for image in frames:
        container.mux(stream.encode(av.VideoFrame.from_image(image).reformat(format="yuv420p")))
    container.mux(stream.encode())
    container.close()


def _svg(key: str, width: int, height: int, label: str) -> bytes:
    c = ["#%02x%02x%02x" % colour for colour in _colours(key)]
    size = max(10, min(width, height) // 6)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}"><title>{label}</title>'
        f'<rect width="{width}" height="{height}" fill="{c[0]}"/>'
        f'<rect x="{width * 0.08:.0f}" y="{height * 0.1:.0f}" width="{width * 0.47:.0f}" '
        f'height="{height * 0.5:.0f}" fill="{c[1]}"/>'
        f'<circle cx="{width * 0.66:.0f}" cy="{height * 0.6:.0f}" r="{min(width, height) * 0.28:.0f}" fill="{c[2]}"/>'
        f'<text x="50%" y="50%" font-size="{size}" text-anchor="middle" dominant-baseline="middle" '
        f'fill="#fff" stroke="#000">{label}</text></svg>\n'
    ).encode()
