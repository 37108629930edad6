"""Altered copies of a board's picture, planted as new uploads, so that the demo's archive shows
what `mirror duplicates` and the duplicates page are for.

Boorus fill up with copies the site's own rule (an identical file) misses: a crop, a border, a
smaller re-encoded JPEG. Each is planted here from one painting of the board, beside a recolour,
which is a different picture to a curator and must stay apart from the others. They are uploaded
at fixed moments, a day after the board's newest image: a demo run again plants the same records,
and its mirror keeps no "changes" a real site never makes.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from PIL import Image, ImageOps

from ...dates import parse_utc
from ..files.pictures import artwork_for
from .editor import BoardEditor

__all__ = ["COPIES", "Planted", "plant_copies"]


def _cropped(picture: Image.Image) -> Image.Image:
    dx, dy = picture.width // 20, picture.height // 20
    return picture.crop((dx, dy, picture.width - dx, picture.height - dy))


def _bordered(picture: Image.Image) -> Image.Image:
    return ImageOps.expand(picture, border=max(1, min(picture.size) // 20), fill=(255, 255, 255, 255))


def _half_size(picture: Image.Image) -> Image.Image:
    return picture.resize((max(1, picture.width // 2), max(1, picture.height // 2)), Image.Resampling.LANCZOS)


def _recoloured(picture: Image.Image) -> Image.Image:
    red, green, blue, alpha = picture.split()
    return Image.merge("RGBA", (ImageOps.invert(blue), red, ImageOps.invert(green), alpha))


# What each copy is, how it is made, and the format it is uploaded in.
COPIES: tuple[tuple[str, Callable[[Image.Image], Image.Image], str], ...] = (
    ("cropped 5% off each edge", _cropped, "png"),
    ("with a 5% white border", _bordered, "png"),
    ("re-encoded as a JPEG at half size", _half_size, "jpg"),
    ("recoloured (a different picture: stays apart)", _recoloured, "png"),
)


@dataclass(frozen=True)
class Planted:
    image_id: int
    source_id: int
    how: str


def plant_copies(editor: BoardEditor) -> list[Planted]:
    """Upload the :data:`COPIES` of the board's first large painting, processed at once; none on a
    board without pictures or paintings."""
    source = _a_large_painting(editor)
    if source is None:
        return []
    record = editor.images[source]
    original = Image.open(io.BytesIO(editor.file_source(source).data(record, "full", record["format"])))
    original = original.convert("RGBA")
    newest = max(parse_utc(image["created_at"]) for image in editor.images.values())
    clock, planted = editor.clock, []
    for n, (how, alter, fmt) in enumerate(COPIES):
        editor.clock = lambda at=newest + timedelta(days=1, minutes=n): at
        picture = alter(original)
        image = editor.add_upload(
            _encoded(picture, fmt), name=f"copy_of_{source}.{fmt}", fmt=fmt,
            mime_type="image/jpeg" if fmt == "jpg" else "image/png", width=picture.width, height=picture.height,
            duration=0.04, animated=False, tags=list(record["tags"]),
            description=f"A copy of image #{source}, {how}: planted by `mirror demo` for `mirror duplicates`.",
            source_urls=list(record["source_urls"]), user_id=None, anonymous=True)
        editor.edit_image(image["id"], thumbnails_generated=True)
        planted.append(Planted(image["id"], source, how))
    editor.clock = clock
    return planted


def _a_large_painting(editor: BoardEditor) -> int | None:
    if not editor.pictures:
        return None
    for image_id, record in sorted(editor.images.items()):
        if (record["format"] in ("png", "jpg") and not record["hidden_from_users"] and record["thumbnails_generated"]
                and min(record["width"], record["height"]) >= 400
                and artwork_for(f"{editor.seed}-{image_id}") is not None):
            return image_id
    return None


def _encoded(picture: Image.Image, fmt: str) -> bytes:
    out = io.BytesIO()
    if fmt == "jpg":
        flat = Image.alpha_composite(Image.new("RGBA", picture.size, (255, 255, 255, 255)), picture)
        flat.convert("RGB").save(out, "JPEG", quality=80)
    else:
        picture.save(out, "PNG", compress_level=1)
    return out.getvalue()
