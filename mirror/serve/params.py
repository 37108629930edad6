"""The parameters and file of a write request (``POST /images``, ``POST /search/reverse``),
read as the real server reads them (reference sections 7 and 9).

Parameters may come from the query string or the body (urlencoded, multipart or JSON), merged,
with ``image[tag_input]``-style names nested as Phoenix nests them. A file is ``image[image]``;
otherwise ``url`` is fetched, and here only from this machine (loopback), at most one redirect
and only a 200.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import re
from typing import Any
from urllib.parse import unquote, urlsplit

import httpx
from starlette.datastructures import UploadFile
from starlette.requests import Request

from ..philomena import MAX_FILE_SIZE

__all__ = ["Params", "read_params", "file_turns", "file_of", "fetch_loopback"]

Params = dict[str, Any]
_KEY_PART = re.compile(r"\[([^\]]*)\]")
FILES_AT_ONCE = 2


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


def file_turns(request: Request) -> asyncio.Semaphore:
    """Turns for the requests whose file is read into memory (up to 130 MiB each) and decoded:
    the rest wait, their bodies still spooled to disk, so that a burst of large uploads or
    searches cannot hold them all in memory at once. One per app, in its own event loop."""
    state = request.app.state
    if not hasattr(state, "file_turns"):
        state.file_turns = asyncio.Semaphore(FILES_AT_ONCE)
    return state.file_turns


async def file_of(params: Params, upload: UploadFile | None) -> tuple[bytes, str] | None:
    """The uploaded file, else the one ``url`` names (fetched from loopback only), with its name."""
    if upload is not None:
        return await upload.read(), upload.filename or ""
    url = params.get("url")
    if isinstance(url, str) and url:
        return await asyncio.to_thread(fetch_loopback, url)
    return None


def fetch_loopback(url: str, redirects: int = 1) -> tuple[bytes, str] | None:
    """GET ``url`` as the site's scraper does (one redirect, 200 only, size-capped), but only
    from this machine: the local site must never reach out to the internet."""
    if not _is_loopback(url):
        return None
    try:
        with httpx.Client(timeout=10.0) as client, client.stream("GET", url) as response:
            if response.is_redirect and redirects > 0:
                return fetch_loopback(str(response.next_request.url) if response.next_request else "", redirects - 1)
            if response.status_code != 200:
                return None
            data = b""
            for chunk in response.iter_bytes():
                data += chunk
                if len(data) > MAX_FILE_SIZE:
                    return None
            return data, _scraped_name(url, response.headers.get("content-disposition", ""))
    except httpx.HTTPError:
        return None


def _is_loopback(url: str) -> bool:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return False
    if parts.hostname == "localhost":
        return True
    try:
        return ipaddress.ip_address(parts.hostname).is_loopback
    except ValueError:
        return False


def _scraped_name(url: str, disposition: str) -> str:
    """The Content-Disposition file name, else the URL's last segment, cut to 127 characters."""
    found = re.search(r'filename="?([^";]+)"?', disposition)
    name = found.group(1) if found else unquote(urlsplit(url).path.rpartition("/")[2])
    return name[:127]


