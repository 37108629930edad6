"""Image files under `/img`: the URLs `representations`, `view_url` and download links point at.

URL forms served (reference section 3):

    /img/view/Y/M/D/{id}.{ext}               full (what sha512_hash describes); also {id}__{slugs}.{ext}
    /img/download/Y/M/D/{id}.{ext}           the upload as is (orig_sha512_hash); also {id}__{slugs}.{ext}
    /img/Y/M/D/{id}/{size}.{ext}             thumbnails, full.{ext}, and full.webm / full.mp4 of GIFs

An SVG image is kept as `full.svg` beside its PNG renderings (`full.png` and every size), as the
real file host keeps it: `.png` URLs, which the record names, give renderings; the same view or
download URL ending in `.svg` gives the SVG itself (what `sha512_hash` describes).

Files of hidden images, and thumbnails of images still processing, are 404. `Range` requests
get 206 (one range) or 416. Like nginx on the file host, every file carries a strong `ETag` (a
hash of its bytes) and a `Last-Modified` (the image's `updated_at`, standing in for the file's
mtime), and `If-Range` is honoured: a Range whose If-Range no longer matches gets the whole file.
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from email.utils import format_datetime, parsedate_to_datetime
from typing import Any, Protocol

from PIL import Image
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from ...dates import parse_utc
from ...imaging.frames import scaled_as_the_site_does
from ...philomena import MIME_TYPES, parse_img_path, thumb_ext
from ...philomena import SIZE_BOXES as THUMB_SIZES
from ..board.render import date_path
from . import media, pictures
from .drawn import drawn

__all__ = ["FileSource", "file_key", "file_routes", "finish_image_file", "image_id_of", "resolve_file"]

Record = dict[str, Any]


class ImageFiles(Protocol):
    """What files are served from: the board's images, and what each one's files are made of
    (a :class:`~mirror.localsite.board.editor.BoardEditor` is one)."""

    @property
    def images(self) -> Mapping[int, Record]: ...

    def file_source(self, image_id: int) -> FileSource | None: ...


def file_key(seed: int, image_id: int) -> str:
    """What a generated image's files are drawn from, unless replaced since (``site_files``)."""
    return f"{seed}-{image_id}"


@dataclass(frozen=True)
class FileSource:
    """What an image's files are made from: a key the stand-ins and pictures are drawn from,
    whether to draw real pictures, an uploaded file, and zero bytes padding a large file."""

    key: str
    pictures: bool = False
    upload: bytes | None = None
    padding: int = 0

    def data(self, image: Record, variant: str, ext: str) -> bytes:
        """Bytes of one representation. `variant` is `full`, `orig`, `rendered` or a thumbnail name.

        `full` is the kept original, what the record's `sha512_hash` describes (an SVG image's is
        the SVG); `orig` is the upload, hashed by `orig_sha512_hash`; `rendered` is an SVG's PNG
        rendering, which every non-download URL of an SVG points at (`full.png`, sized `*.png`).
        Thumbnails are small distinct files of the same type.
        """
        if self.upload is not None:
            if variant in ("full", "orig"):
                return self.upload
            return _scaled(self.upload, variant, ext) or media.make_file(f"{self.key}/{variant}", ext)
        if variant == "full" and self.padding:
            return FileSource(self.key, self.pictures).data(image, variant, ext) + bytes(self.padding)
        if self.pictures and ext in pictures.FORMATS:
            return self._picture(image, variant, ext)
        name = self.key if variant in ("full", "orig") else f"{self.key}/{variant}"
        return media.make_file(name, image["format"] if variant in ("full", "orig") else ext,
                               animated=image["animated"])

    def _picture(self, image: Record, variant: str, ext: str) -> bytes:
        """A real picture at the size the record (or its thumbnail box) says."""
        width, height = image["width"] or 1, image["height"] or 1
        kind = variant.partition(".")[0]
        if kind in THUMB_SIZES:
            width, height = pictures.fit(width, height, THUMB_SIZES[kind])
        fmt = image["format"] if variant in ("full", "orig") else ext
        return pictures.picture(self.key, fmt, width, height, f"#{image['id']}",
                                animated=image["animated"] and fmt == "gif")


def finish_image_file(image: Record, source: FileSource) -> Record:
    """Set size, hashes and intensities from the image's files (as the site's processing does: an
    SVG's intensities are read from the PNG rendering it serves, not from the SVG itself, so a
    reverse search with the picture a client is shown finds the image)."""
    full = source.data(image, "full", image["format"])
    orig = source.data(image, "orig", image["format"])
    image["size"], image["orig_size"] = len(full), len(orig)
    image["sha512_hash"] = hashlib.sha512(full).hexdigest()
    image["orig_sha512_hash"] = hashlib.sha512(orig).hexdigest()
    shown = source.data(image, "rendered", "png") if image["format"] == "svg" else full
    if source.pictures:  # decoding a large drawn picture is most of what generating a board costs
        hashed = image["sha512_hash"] if shown is full else hashlib.sha512(shown).hexdigest()
        image["intensities"] = json.loads(drawn(lambda: json.dumps(_intensities(shown)).encode(),
                                                "intensities", hashed, _intensities_reader()))
    else:
        image["intensities"] = _intensities(shown)
    return image


@functools.cache
def _intensities_reader() -> str:
    """A hash of the code that reads intensities, so that intensities kept in the cache folder
    are read again once it changes."""
    from ... import imaging

    folder = Path(imaging.__file__).parent
    return hashlib.sha256(b"".join((folder / name).read_bytes() for name in READER_MODULES)).hexdigest()


READER_MODULES = ("intensities.py", "libpng.py", "frames.py", "analyze.py", "bounds.py")


def _intensities(data: bytes) -> dict[str, float] | None:
    """The file's corner intensities as the record shows them; None when it cannot be read."""
    from ...imaging import MediaError, intensities_of

    try:
        values, _ = intensities_of(data)
    except MediaError:
        return None
    return {name: round(value, 6) for name, value in zip(("nw", "ne", "sw", "se"), values.as_tuple())}


def resolve_file(board: ImageFiles, path: str) -> tuple[bytes, str, datetime] | None:
    """(bytes, extension, last modified) for a path below /img/, or None when there is no such file."""
    found = _file_of(board, path)
    if found is None:
        return None
    image, data, ext = found
    return data, ext, parse_utc(image["updated_at"]).replace(microsecond=0)  # HTTP dates are whole seconds


def image_id_of(path: str) -> int | None:
    """The image id a path below /img/ names (whether or not the site has that image)."""
    found = parse_img_path(path)
    return found.image_id if found else None


def _file_of(board: ImageFiles, path: str) -> tuple[Record, bytes, str] | None:
    """The image a path below /img/ belongs to, with the file's bytes and extension."""
    found = parse_img_path(path)
    if found is None:
        return None
    kind, ext = found.kind, found.ext
    image = board.images.get(found.image_id)
    source = board.file_source(found.image_id) if image is not None else None
    if source is None or image["hidden_from_users"]:
        return None
    if found.day != date_path(image):  # month and day are not zero-padded
        return None
    fmt = image["format"]
    if kind == "download":
        return (image, source.data(image, "orig", ext), ext) if ext == fmt else None
    if kind in ("view", "full") and ext == fmt:
        if kind == "full" and not image["thumbnails_generated"]:
            return None
        return image, source.data(image, "full", ext), ext
    if ext != thumb_ext(fmt) and not (fmt == "gif" and kind == "full" and ext in ("webm", "mp4")):
        return None
    if kind == "view":
        return image, source.data(image, "rendered", ext), ext
    if not image["thumbnails_generated"] or (kind != "full" and kind not in THUMB_SIZES):
        return None
    variant = "rendered" if kind == "full" and fmt == "svg" else f"{kind}.{ext}"
    return image, source.data(image, variant, ext), ext


def _byte_range(header: str, length: int) -> tuple[int, int] | None | str:
    """(start, end inclusive) for a single `bytes=` range; None to ignore; "bad" if unsatisfiable."""
    match = re.fullmatch(r"\s*bytes=(\d*)-(\d*)\s*", header)
    if match is None or match.group(1) == match.group(2) == "":
        return None
    first, last = match.groups()
    if first == "":
        start, end = max(0, length - int(last)), length - 1
        if int(last) == 0:
            return "bad"
    else:
        start = int(first)
        end = min(int(last), length - 1) if last else length - 1
        if last and int(last) < start:
            return None
    if start >= length:
        return "bad"
    return start, end


def _range_applies(if_range: str | None, etag: str, modified: datetime) -> bool:
    """Whether to honour Range (RFC 9110 section 13.1.5): always without If-Range; with it, only
    when it names the file served now (strong ETag comparison, or the exact Last-Modified date),
    so that a client resuming an older file gets the whole new one instead of a mixed tail."""
    if if_range is None:
        return True
    if_range = if_range.strip()
    if if_range.startswith(('"', "W/")):
        return if_range == etag  # a weak tag never matches (strong comparison)
    try:
        return parsedate_to_datetime(if_range) == modified
    except (TypeError, ValueError):
        return False


async def serve_file(request: Request) -> Response:
    found = resolve_file(request.app.state.editor, request.path_params["path"])
    if found is None:
        return Response(b"Not Found", status_code=404, media_type="text/plain")
    data, ext, modified = found
    etag = f'"{hashlib.sha256(data).hexdigest()[:32]}"'
    headers = {"accept-ranges": "bytes", "cache-control": "public, max-age=2147483647",
               "etag": etag, "last-modified": format_datetime(modified, usegmt=True)}
    media_type = MIME_TYPES[ext]
    wanted = None
    if _range_applies(request.headers.get("if-range"), etag, modified):
        wanted = _byte_range(request.headers.get("range", ""), len(data))
    if wanted == "bad":
        headers["content-range"] = f"bytes */{len(data)}"
        return Response(b"", status_code=416, headers=headers, media_type=media_type)
    if wanted is not None:
        start, end = wanted
        headers["content-range"] = f"bytes {start}-{end}/{len(data)}"
        return Response(data[start:end + 1], status_code=206, headers=headers, media_type=media_type)
    return Response(data, headers=headers, media_type=media_type)


def file_routes() -> list[BaseRoute]:
    return [Route("/img/{path:path}", serve_file, methods=["GET"])]


def _scaled(upload: bytes, variant: str, ext: str) -> bytes | None:
    """An uploaded picture scaled into a thumbnail's box, as the site renders its thumbnails; None
    for what Pillow cannot draw here (a video, an SVG), which gets a stand-in."""
    kind = variant.partition(".")[0]
    if kind not in THUMB_SIZES or ext not in ("png", "jpg", "gif"):
        return None
    try:
        picture = Image.open(io.BytesIO(upload))
        picture.load()
    except (OSError, ValueError, Image.DecompressionBombError):
        return None
    picture = scaled_as_the_site_does(picture.convert("RGB" if ext == "jpg" else "RGBA"), THUMB_SIZES[kind])
    out = io.BytesIO()
    picture.save(out, {"png": "PNG", "jpg": "JPEG", "gif": "GIF"}[ext])
    return out.getvalue()
