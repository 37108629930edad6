"""The parameters and file of a write request (``POST /images``, ``POST /search/reverse``),
read as the real server reads them (reference sections 7 and 9).

Parameters may come from the query string or the body (urlencoded, multipart or JSON), merged,
with ``image[tag_input]``-style names nested as Phoenix nests them. A file is ``image[image]``;
otherwise ``url`` names one, fetched only where the app says how (:func:`file_of`).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from typing import Any

from PIL import Image
from starlette.datastructures import UploadFile
from starlette.requests import Request

from ..philomena import MAX_FILE_SIZE

__all__ = ["Params", "FetchUrl", "read_params", "file_turns", "is_large", "file_of"]

Params = dict[str, Any]
# Fetches a URL a client gave: (bytes, file name), or None if it cannot be had.
FetchUrl = Callable[[str], tuple[bytes, str] | None]
_KEY_PART = re.compile(r"\[([^\]]*)\]")
FILES_AT_ONCE = 2
SMALL_AT_ONCE = 4
LARGE_BYTES = 16 * 2**20
LARGE_PIXELS = 4_000_000  # as many as mirror.imaging decodes without taking its one-at-a-time turn


async def read_params(request: Request) -> tuple[Params, UploadFile | None]:
    """The merged, nested parameters of a request, and the uploaded ``image[image]`` file if any."""
    items: list[tuple[str, Any]] = list(request.query_params.multi_items())
    kind = request.headers.get("content-type", "")
    upload = None
    if kind.startswith(("multipart/form-data", "application/x-www-form-urlencoded")):
        form = await request.form(max_part_size=MAX_FILE_SIZE + 1)
        for key, value in form.multi_items():
            if isinstance(value, UploadFile):
                upload = value if key == "image[image]" else upload
            else:
                items.append((key, value))
    elif kind.startswith("application/json"):
        body = json.loads(await request.body() or b"{}")
        items += list(body.items()) if isinstance(body, dict) else []
    return _nest(items), upload


def _nest(items: list[tuple[str, Any]]) -> Params:
    """``image[sources][0][source]=x`` becomes ``{"image": {"sources": {"0": {"source": "x"}}}}``."""
    out: Params = {}
    for key, value in items:
        head, _, rest = key.partition("[")
        path = [head] + (_KEY_PART.findall("[" + rest) if rest else [])
        node = out
        for part in path[:-1]:
            node = node.setdefault(part, {}) if isinstance(node.get(part, {}), dict) else node
        node[path[-1]] = value
    return out


def file_turns(request: Request, large: bool = True) -> asyncio.Semaphore:
    """Turns for the requests whose file is read into memory (up to 130 MiB each) and decoded:
    the rest wait, their bodies still spooled to disk, so that a burst of large uploads or
    searches cannot hold them all in memory at once. Small pictures (:func:`is_large`) have
    turns of their own, so they never wait behind large ones. One set per app, in its own event loop."""
    state = request.app.state
    if not hasattr(state, "file_turns"):
        state.file_turns = {True: asyncio.Semaphore(FILES_AT_ONCE), False: asyncio.Semaphore(SMALL_AT_ONCE)}
    return state.file_turns[large]


def is_large(upload: UploadFile | None) -> bool:
    """Whether an uploaded file is a large one to read, by its size and by the dimensions its
    header claims (a 400 KB PNG can claim 108 megapixels); a URL's file is taken to be large."""
    if upload is None:
        return True
    if (upload.size or 0) > LARGE_BYTES:
        return True
    try:
        with Image.open(upload.file) as picture:
            width, height = picture.size
    except (OSError, ValueError, Image.DecompressionBombError, SyntaxError):
        return False  # not a picture Pillow reads (an SVG, a video): its bytes are small
    finally:
        upload.file.seek(0)
    return width * height >= LARGE_PIXELS


async def file_of(request: Request, params: Params, upload: UploadFile | None) -> tuple[bytes, str] | None:
    """The uploaded file, else the one ``url`` names, with its name.

    A URL is fetched only by an app that says how (``app.state.fetch_url``: the local site fetches
    from this machine, as a stand-in for the site's scraper). ``mirror serve`` fetches nothing: on
    an archive served to a network, a URL from a client would make it a way into the services of
    the machine it runs on. A URL it is given is treated as one the site could not fetch.
    """
    if upload is not None:
        return await upload.read(), upload.filename or ""
    url = params.get("url")
    fetch: FetchUrl | None = getattr(request.app.state, "fetch_url", None)
    if isinstance(url, str) and url and fetch is not None:
        return await asyncio.to_thread(fetch, url)
    return None
