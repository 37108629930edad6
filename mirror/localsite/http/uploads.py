"""``POST /images``: an upload adds an image to the local site's board, as the real server takes
it (reference section 7): the key's user, the upload rules, a duplicate refused by its hash.
"""

from __future__ import annotations

import asyncio
import hashlib
from typing import Any

from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from ...imaging import analyze
from ...serve.board import Board
from ...serve.http import API_PREFIX, JsonAnswer, origin_of
from ...serve.params import Params, file_of, file_turns, read_params
from .upload_rules import check_upload, tag_names

__all__ = ["upload_routes"]


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
    got = await file_of(request, params, upload)
    editor = request.app.state.editor
    data, name = got if got is not None else (b"", "")
    analysis = await asyncio.to_thread(analyze, data) if got is not None else None
    errors = check_upload(fields, analysis, len(data), name, lambda names: [editor.vocab.resolved_name(n) for n in names],
                          editor.tag_blacklist)
    if not errors and analysis is not None:
        duplicate = editor.image_by_orig_hash(hashlib.sha512(data).hexdigest())
        if duplicate is not None:
            errors = {"image": [f"has already been uploaded: it's image {duplicate['id']}"]}
    if errors:
        return JsonAnswer({"errors": errors}, status_code=400)
    image = editor.add_upload(data, name=name, fmt=analysis.format, mime_type=analysis.mime_type, width=analysis.width,
                          height=analysis.height, duration=analysis.duration, animated=analysis.animated,
                          tags=_tag_list(fields), description=str(fields.get("description") or ""),
                          source_urls=_sources(fields), user_id=user_id, anonymous=_truthy(fields.get("anonymous")))
    record = request.app.state.board.image_as_served(image["id"], origin_of(request))
    record["intensities"] = None  # the site does not load them for this answer
    return JsonAnswer({"image": record, "interactions": []})


def _tag_list(fields: Params) -> list[str]:
    return tag_names(str(fields.get("tag_input") or ""))


def _sources(fields: Params) -> list[str]:
    sources = fields.get("sources")
    if not isinstance(sources, dict):
        return []
    return [str(v.get("source")) for _, v in sorted(sources.items(), key=lambda kv: int(kv[0]) if str(kv[0]).isdigit() else 0)
            if isinstance(v, dict) and v.get("source")]


def _truthy(value: Any) -> bool:
    return value in (True, "true", "1", "on")


def upload_routes() -> list[BaseRoute]:
    return [Route(API_PREFIX + "/images", create_image, methods=["POST"])]
