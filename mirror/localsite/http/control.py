"""`/_control`: a small HTTP API to change a site that runs in another process.

    POST /_control/images/add            {"n": 5}                 -> {"ids": [...]}
    POST /_control/images/{id}/edit      {"tags": [...], ...}     -> {"image": <record>}
    POST /_control/images/{id}/hide      {"reason": "Rule #0"}    -> {"image": <stub>}
    POST /_control/images/{id}/merge     {"into": 12}             -> {"image": <stub>}
    POST /_control/images/{id}/comments  {"n": 1, "body": "..."}  -> {"ids": [...]}
    POST /_control/comments/{id}/edit    {"body": "..."}          -> {"comment": <record>}
    POST /_control/topics/{id}/posts     {"n": 1, "body": "..."}  -> {"ids": [...]}
    POST /_control/firehose/close                                 -> {"closed": 1}
    POST /_control/faults                {"spec": "ratelimit"}    -> {"faults": "ratelimit:30/5"}
    GET  /_control/requests                                       -> {"requests": [...]}
    POST /_control/requests/clear                                 -> {"cleared": true}

It is never rate limited or faulted, and requests to it are not logged.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from ...serve.http import JsonAnswer, origin_of

__all__ = ["control_routes"]


async def _body(request: Request) -> dict[str, Any]:
    raw = await request.body()
    if not raw:
        return {}
    data = await request.json()
    if not isinstance(data, dict):
        raise ValueError("body must be a JSON object")
    return data


def _image_response(request: Request, image: dict[str, Any]) -> Response:
    return JsonAnswer({"image": request.app.state.board.image_as_served(image["id"], origin_of(request))})


def _guarded(handler: Callable[[Request], Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
    """Turn bad input (ValueError) into 400 and unknown records (KeyError) into 404, with a JSON
    error. Inputs are checked where they are read, so anything else is a bug and a 500."""

    async def endpoint(request: Request) -> Response:
        try:
            return await handler(request)
        except KeyError as error:
            return JsonAnswer({"error": str(error)}, status_code=404)
        except ValueError as error:
            return JsonAnswer({"error": str(error)}, status_code=400)

    return endpoint


def _integer(body: dict[str, Any], name: str, default: int | None = None) -> int:
    value = body.get(name, default)
    if type(value) is not int:
        raise ValueError(f"{name} must be an integer")
    return value


def _text(body: dict[str, Any], name: str, default: str) -> str:
    value = body.get(name, default)
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a string")
    return value


# The types of the fields an edit may set that the editor works on (others are set as given).
_EDITED = {"tags": list, "score": int, "description": str, "thumbnails_generated": bool}


def _edit(body: dict[str, Any]) -> dict[str, Any]:
    for name, kind in _EDITED.items():
        if name in body and body[name] is not None and type(body[name]) is not kind:
            raise ValueError(f"{name} must be {kind.__name__}")
    if not all(isinstance(tag, str) for tag in body.get("tags") or []):
        raise ValueError("tags must be a list of names")
    return body


async def add_images(request: Request) -> Response:
    body = await _body(request)
    return JsonAnswer({"ids": request.app.state.editor.add_images(_integer(body, "n", 1))})


async def edit_image(request: Request) -> Response:
    body = _edit(await _body(request))
    image = request.app.state.editor.edit_image(int(request.path_params["id"]), **body)
    return _image_response(request, image)


async def hide_image(request: Request) -> Response:
    body = await _body(request)
    image = request.app.state.editor.hide_image(int(request.path_params["id"]), _text(body, "reason", "Rule #0"))
    return _image_response(request, image)


async def merge_image(request: Request) -> Response:
    body = await _body(request)
    image = request.app.state.editor.merge_image(int(request.path_params["id"]), _integer(body, "into"))
    return _image_response(request, image)


def _optional_text(body: dict[str, Any], name: str) -> str | None:
    return None if body.get(name) is None else _text(body, name, "")


async def _add_messages(request: Request, add: Callable[..., list[int]]) -> Response:
    """Post ``n`` comments or replies (``body``: their text) under the record the path names."""
    body = await _body(request)
    ids = add(int(request.path_params["id"]), _integer(body, "n", 1), body=_optional_text(body, "body"))
    return JsonAnswer({"ids": ids})


async def add_comments(request: Request) -> Response:
    return await _add_messages(request, request.app.state.editor.add_comments)


async def add_posts(request: Request) -> Response:
    return await _add_messages(request, request.app.state.editor.add_posts)


async def edit_comment(request: Request) -> Response:
    body = await _body(request)
    comment = request.app.state.editor.edit_comment(int(request.path_params["id"]), body=_text(body, "body", ""))
    return JsonAnswer({"comment": comment})


async def close_firehose(request: Request) -> Response:
    return JsonAnswer({"closed": request.app.state.firehose.close_all()})


async def set_faults(request: Request) -> Response:
    body = await _body(request)
    request.app.state.faults.set(str(body.get("spec", "")))
    return JsonAnswer({"faults": str(request.app.state.faults.profile)})


async def list_requests(request: Request) -> Response:
    return JsonAnswer({"requests": [r.to_dict() for r in request.app.state.request_log.snapshot()]})


async def clear_requests(request: Request) -> Response:
    request.app.state.request_log.clear()
    return JsonAnswer({"cleared": True})


def control_routes() -> list[BaseRoute]:
    post = ["POST"]
    return [
        Route("/_control/images/add", _guarded(add_images), methods=post),
        Route("/_control/images/{id:int}/edit", _guarded(edit_image), methods=post),
        Route("/_control/images/{id:int}/hide", _guarded(hide_image), methods=post),
        Route("/_control/images/{id:int}/merge", _guarded(merge_image), methods=post),
        Route("/_control/images/{id:int}/comments", _guarded(add_comments), methods=post),
        Route("/_control/comments/{id:int}/edit", _guarded(edit_comment), methods=post),
        Route("/_control/topics/{id:int}/posts", _guarded(add_posts), methods=post),
        Route("/_control/firehose/close", close_firehose, methods=post),
        Route("/_control/faults", _guarded(set_faults), methods=post),
        Route("/_control/requests", list_requests, methods=["GET"]),
        Route("/_control/requests/clear", clear_requests, methods=post),
    ]
