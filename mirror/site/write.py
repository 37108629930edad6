"""The write endpoints: ``POST /images`` (uploads, on the local site) and ``POST /search/reverse``
(on the local site and on ``mirror serve``), as the real server answers them (reference
sections 7 and 9).

Parameters may come from the query string or the body (urlencoded, multipart or JSON), merged,
with ``image[tag_input]``-style names nested as Phoenix nests them. A file is ``image[image]``;
otherwise ``url`` is fetched, and here only from this machine (loopback), at most one redirect
and only a 200. An upload adds an image to the board (:class:`~mirror.site.editor.BoardEditor`);
reverse search reads the board's ``image_intensities``.
"""

from __future__ import annotations

import asyncio
import hashlib
import ipaddress
import json
import re
from typing import Any
from urllib.parse import unquote, urlsplit

import httpx
from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from ..imaging import MediaError, analyze, intensities_of
from ..search.reverse import PAGE_SIZE, ReverseQuery, find_matches, parse_distance, parse_limit
from .board import Board, ImageFilter
from .http import API_PREFIX
from .control import served_image
from .upload_rules import MAX_SIZE, check_upload

__all__ = ["upload_routes", "reverse_routes"]

Params = dict[str, Any]
_KEY_PART = re.compile(r"\[([^\]]*)\]")
EMPTY_REVERSE = {"images": [], "interactions": [], "total": 0}
FILES_AT_ONCE = 2


async def read_params(request: Request) -> tuple[Params, UploadFile | None]:
    """The merged, nested parameters of a request, and the uploaded ``image[image]`` file if any."""
    items: list[tuple[str, Any]] = list(request.query_params.multi_items())
    kind = request.headers.get("content-type", "")
    upload = None
    if kind.startswith(("multipart/form-data", "application/x-www-form-urlencoded")):
        form = await request.form(max_part_size=MAX_SIZE + 1)
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
                if len(data) > MAX_SIZE:
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


# ------------------------------------------------------------------ POST /images


async def create_image(request: Request) -> Response:
    params, upload = await read_params(request)
    board: Board = request.app.state.board
    user_id = board.user_for_key(str(params.get("key") or "")) if isinstance(params.get("key", ""), str) else None
    if user_id is None:
        return Response(b"", status_code=401, media_type="text/plain")
    async with file_turns(request):
        return await _created(request, params, upload, user_id)


async def _created(request: Request, params: Params, upload: UploadFile | None, user_id: int) -> Response:
    fields = params.get("image") if isinstance(params.get("image"), dict) else {}
    got = await file_of(params, upload)
    ds = request.app.state.editor
    data, name = got if got is not None else (b"", "")
    analysis = await asyncio.to_thread(analyze, data) if got is not None else None
    errors = check_upload(fields, analysis, len(data), name, lambda names: [ds.vocab.resolved_name(n) for n in names],
                          ds.tag_blacklist)
    if not errors and analysis is not None:
        duplicate = ds.image_by_orig_hash(hashlib.sha512(data).hexdigest())
        if duplicate is not None:
            errors = {"image": [f"has already been uploaded: it's image {duplicate['id']}"]}
    if errors:
        return JSONResponse({"errors": errors}, status_code=400)
    image = ds.add_upload(data, name=name, fmt=analysis.format, mime_type=analysis.mime_type, width=analysis.width,
                          height=analysis.height, duration=analysis.duration, animated=analysis.animated,
                          tags=_tag_list(fields), description=str(fields.get("description") or ""),
                          source_urls=_sources(fields), user_id=user_id, anonymous=_truthy(fields.get("anonymous")))
    record = served_image(request, image["id"])
    record["intensities"] = None  # the site does not load them for this answer
    return JSONResponse({"image": record, "interactions": []})


def _tag_list(fields: Params) -> list[str]:
    from .upload_rules import tag_names

    return tag_names(str(fields.get("tag_input") or ""))


def _sources(fields: Params) -> list[str]:
    sources = fields.get("sources")
    if not isinstance(sources, dict):
        return []
    return [str(v.get("source")) for _, v in sorted(sources.items(), key=lambda kv: int(kv[0]) if str(kv[0]).isdigit() else 0)
            if isinstance(v, dict) and v.get("source")]


def _truthy(value: Any) -> bool:
    return value in (True, "true", "1", "on")


# ------------------------------------------------------------------ POST /search/reverse


async def reverse_search(request: Request) -> Response:
    """Never a 400: anything the site would refuse answers an empty 200."""
    params, upload = await read_params(request)
    distance = parse_distance(params.get("distance") if isinstance(params.get("distance"), str) else None)
    limit = params.get("limit")
    if distance is None or not parse_limit(limit if isinstance(limit, str) or limit is None else "x"):
        return JSONResponse(EMPTY_REVERSE)
    async with file_turns(request):
        got = await file_of(params, upload)
        if got is None:
            return JSONResponse(EMPTY_REVERSE)
        try:
            values, aspect = await asyncio.to_thread(intensities_of, got[0])
        except MediaError:
            return JSONResponse(EMPTY_REVERSE)
    board: Board = request.app.state.board
    return JSONResponse(answer_reverse(board, ReverseQuery(values.as_tuple(), aspect, distance),
                                       f"{request.url.scheme}://{request.url.netloc}"))


def answer_reverse(board: Board, query: ReverseQuery, origin: str) -> dict[str, Any]:
    """The site's reverse-search answer from a board: hidden images included, as stubs."""
    conn = board.connection()
    matches, total = find_matches(conn, query, PAGE_SIZE)
    by_id = {row["id"]: row for row in board.all(
        f"SELECT id, raw, stub, hidden_from_users FROM images WHERE id IN ({','.join('?' * len(matches))})",
        [m.image_id for m in matches])} if matches else {}
    rows = [by_id[m.image_id] for m in matches if m.image_id in by_id]
    images = board.images(rows, ImageFilter.of(board.default_filter()), origin)
    return {"images": images, "interactions": [], "total": total}


def upload_routes() -> list[BaseRoute]:
    return [Route(API_PREFIX + "/images", create_image, methods=["POST"])]


def reverse_routes() -> list[BaseRoute]:
    return [Route(API_PREFIX + "/search/reverse", reverse_search, methods=["POST"])]
