"""Image files under `/img`: the URLs `representations`, `view_url` and download links point at.

URL forms served (reference section 3):

    /img/view/Y/M/D/{id}.{ext}               full (what sha512_hash describes); also {id}__{slugs}.{ext}
    /img/download/Y/M/D/{id}.{ext}           the upload as is (orig_sha512_hash); also {id}__{slugs}.{ext}
    /img/Y/M/D/{id}/{size}.{ext}             thumbnails, full.{ext}, and full.webm / full.mp4 of GIFs

Files of hidden images, and thumbnails of images still processing, are 404. `Range` requests
get 206 (one range) or 416.
"""

from __future__ import annotations

import re

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from .dataset import Dataset
from .media import MIME_TYPES
from .render import THUMB_SIZES, date_path, thumb_ext

__all__ = ["file_routes", "resolve_file"]

_VIEW = re.compile(r"(view|download)/(\d+)/(\d+)/(\d+)/(\d+)(?:__[^/]*)?\.([a-z0-9]+)")
_THUMB = re.compile(r"(\d+)/(\d+)/(\d+)/(\d+)/([a-z_]+)\.([a-z0-9]+)")


def resolve_file(ds: Dataset, path: str) -> tuple[bytes, str] | None:
    """(bytes, extension) for a path below /img/, or None when there is no such file."""
    if match := _VIEW.fullmatch(path):
        kind, y, m, d, image_id, ext = match.groups()
    elif match := _THUMB.fullmatch(path):
        y, m, d, image_id, kind, ext = match.groups()
    else:
        return None
    image = ds.images.get(int(image_id))
    if image is None or image.get("file_key") is None or image["hidden_from_users"]:
        return None
    if f"{y}/{m}/{d}" != date_path(image):  # month and day are not zero-padded
        return None
    if kind == "download":
        return (ds.image_file(image, "orig", ext), ext) if ext == image["format"] else None
    if ext != thumb_ext(image["format"]) and not (image["format"] == "gif" and kind == "full"
                                                  and ext in ("webm", "mp4")):
        return None
    if kind == "view":
        return ds.image_file(image, "full", ext), ext
    if not image["thumbnails_generated"] or (kind != "full" and kind not in THUMB_SIZES):
        return None
    variant = "full" if kind == "full" and ext == thumb_ext(image["format"]) else f"{kind}.{ext}"
    return ds.image_file(image, variant, ext), ext


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


async def serve_file(request: Request) -> Response:
    ds: Dataset = request.app.state.dataset
    with ds.lock:
        found = resolve_file(ds, request.path_params["path"])
    if found is None:
        return Response(b"Not Found", status_code=404, media_type="text/plain")
    data, ext = found
    headers = {"accept-ranges": "bytes", "cache-control": "public, max-age=2147483647"}
    media_type = MIME_TYPES[ext]
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
