"""The drawn-art corpus and the copies of it a booru sees, for measuring the near-duplicate finder.

The corpus (``mirror/localsite/art/``, see its ``README.md``) is real artwork: painted portraits,
nearly all on transparent backgrounds, and opaque painted scenes. :func:`copies` makes of one
picture what uploaders make of a picture they found: smaller, re-encoded, cropped, framed,
flattened. ``bench/similar.py`` measures the finder on every picture; the tests on a few.
"""

from __future__ import annotations

import io
import random
from collections.abc import Callable
from pathlib import Path

from PIL import Image, ImageOps

from mirror.localsite.art import Artwork, artworks
from mirror.localsite.files.img import scaled_as_the_site_does

__all__ = ["COPY_KINDS", "Artwork", "artworks", "clipart", "copies", "emotes", "decoded", "flatten", "png", "stamps",
           "thumbnail", "upload"]

WHITE, BLACK = (255, 255, 255), (0, 0, 0)
CLIPART = Path(__file__).resolve().parent.parent / "fixtures" / "clipart"
EMOTES = Path(__file__).resolve().parent.parent / "fixtures" / "emotes"
STAMPS = Path(__file__).resolve().parent.parent / "fixtures" / "stamps"


def clipart(role: str | None = None) -> tuple[Artwork, ...]:
    """The flat clip-art corpus (``tests/fixtures/clipart``: vector drawings, line art and
    silhouettes from the Open Clip Art Library), as :func:`artworks` gives the painted one."""
    return artworks(role, CLIPART)


def emotes(role: str | None = None) -> tuple[Artwork, ...]:
    """The emote corpus (``tests/fixtures/emotes``: Twemoji, 64-128 px), as :func:`artworks` gives the painted one."""
    return artworks(role, EMOTES)


def stamps(role: str | None = None) -> tuple[Artwork, ...]:
    """The stamp corpus (``tests/fixtures/stamps``: Wesnoth's items, 72 px, drawn on transparency),
    as :func:`artworks` gives the painted one."""
    return artworks(role, STAMPS)


def upload(editor, data: bytes, name: str) -> int:
    """Post a picture (PNG or JPEG) to the local site's board anonymously, as drawn by wesnoth; its id."""
    picture = Image.open(io.BytesIO(data))
    fmt = {"PNG": "png", "JPEG": "jpg"}[picture.format]
    return editor.add_upload(data, name=name, fmt=fmt, mime_type=f"image/{'jpeg' if fmt == 'jpg' else 'png'}",
                             width=picture.width, height=picture.height, duration=0.0, animated=False,
                             tags=["safe", "artist:wesnoth"], description="", source_urls=[], user_id=None,
                             anonymous=True)["id"]


def decoded(data: bytes) -> Image.Image:
    picture = Image.open(io.BytesIO(data))
    picture.load()
    return picture


def png(picture: Image.Image) -> bytes:
    out = io.BytesIO()
    picture.save(out, "PNG")
    return out.getvalue()


def jpeg(picture: Image.Image, quality: int) -> bytes:
    out = io.BytesIO()
    picture.convert("RGB").save(out, "JPEG", quality=quality)
    return out.getvalue()


def flatten(picture: Image.Image, colour: tuple[int, int, int]) -> Image.Image:
    """The picture as a viewer shows it on ``colour``."""
    if picture.mode != "RGBA":
        return picture.convert("RGB")
    ground = Image.new("RGBA", picture.size, colour + (255,))
    return Image.alpha_composite(ground, picture).convert("RGB")


def thumbnail(picture: Image.Image, box: tuple[int, int] = (250, 250)) -> bytes:
    """The site's ``thumb``: scaled to fit the box, transparency kept, as its thumbnailer does."""
    return png(scaled_as_the_site_does(picture, box))


def _scaled(factor: float) -> Callable[[Image.Image, random.Random], bytes]:
    def make(picture: Image.Image, rng: random.Random) -> bytes:
        size = max(1, round(picture.width * factor)), max(1, round(picture.height * factor))
        return png(picture.resize(size, Image.Resampling.LANCZOS))
    return make


def _crop(picture: Image.Image, rng: random.Random) -> bytes:
    """A box of 95% of each side, at a random place."""
    width, height = round(picture.width * 0.95), round(picture.height * 0.95)
    left, top = rng.randint(0, picture.width - width), rng.randint(0, picture.height - height)
    return png(picture.crop((left, top, left + width, top + height)))


def _edges_cropped(edges: int) -> Callable[[Image.Image, random.Random], bytes]:
    """5% off ``edges`` of the four, at random (all four: the middle 90% of each side kept)."""
    def make(picture: Image.Image, rng: random.Random) -> bytes:
        off = set(rng.sample(range(4), edges))
        dx, dy = round(picture.width * 0.05), round(picture.height * 0.05)
        return png(picture.crop((dx * (0 in off), dy * (1 in off), picture.width - dx * (2 in off),
                                 picture.height - dy * (3 in off))))
    return make


def _border(share: float, colour: tuple[int, int, int]) -> Callable[[Image.Image, random.Random], bytes]:
    def make(picture: Image.Image, rng: random.Random) -> bytes:
        width = max(1, round(max(picture.size) * share))
        return png(ImageOps.expand(flatten(picture, WHITE), border=width, fill=colour))
    return make


def _half_jpeg(picture: Image.Image, rng: random.Random) -> bytes:
    """Half size, flattened on white and saved as JPEG at quality 80: the commonest re-upload."""
    half = flatten(picture, WHITE).resize((max(1, picture.width // 2), max(1, picture.height // 2)),
                                          Image.Resampling.LANCZOS)
    return jpeg(half, 80)


COPY_KINDS: dict[str, Callable[[Image.Image, random.Random], bytes]] = {
    "half size": _scaled(0.5),
    "quarter size": _scaled(0.25),
    "half size JPEG q80": _half_jpeg,
    "JPEG q85": lambda picture, rng: jpeg(flatten(picture, WHITE), 85),
    "JPEG q70": lambda picture, rng: jpeg(flatten(picture, WHITE), 70),
    "5% crop": _crop,
    "5% off one edge": _edges_cropped(1),
    "5% off two edges": _edges_cropped(2),
    "5% off every edge": _edges_cropped(4),
    "3% white border": _border(0.03, WHITE),
    "5% white border": _border(0.05, WHITE),
    "10% white border": _border(0.10, WHITE),
    "5% black border": _border(0.05, BLACK),
    "10% black border": _border(0.10, BLACK),
    "flattened on white": lambda picture, rng: png(flatten(picture, WHITE)),
    "flattened on black": lambda picture, rng: png(flatten(picture, BLACK)),
    # what a converter that knows nothing of alpha writes: the colours under transparent pixels show
    "PNG re-saved as JPEG": lambda picture, rng: jpeg(picture.convert("RGB"), 90),
}
TRANSPARENT_ONLY = ("flattened on white", "flattened on black")


def copies(artwork: Artwork, seed: int = 28) -> dict[str, bytes]:
    """Each kind of copy of ``artwork``, by name (flattening only where there is transparency)."""
    rng = random.Random(f"{seed}:{artwork.name}")
    picture = artwork.picture()
    return {kind: make(picture, rng) for kind, make in COPY_KINDS.items()
            if artwork.transparent or kind not in TRANSPARENT_ONLY}
