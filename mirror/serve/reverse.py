"""``POST /search/reverse`` answered from a board, as the real server answers it (reference
section 9): the query file's intensities against the board's ``image_intensities``, hidden
images included as stubs, and never a 400 (anything the site would refuse answers an empty 200).
"""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from ..imaging import MediaError, intensities_of
from ..search.filters import ImageFilter
from ..search.reverse import PAGE_SIZE, ReverseQuery, find_matches, parse_distance, parse_limit
from .board import Board
from .http import API_PREFIX, JsonAnswer, origin_of
from .lanes import RETRY_AFTER, Overloaded, lanes_of
from .params import file_of, file_turns, is_large, read_params

__all__ = ["reverse_routes", "answer_reverse"]

EMPTY_REVERSE = {"images": [], "interactions": [], "total": 0}


async def reverse_search(request: Request) -> Response:
    """Never a 400: anything the site would refuse answers an empty 200. A large picture (by the
    dimensions its header claims) is read in the expensive lane, a small one in the cheap lane:
    four 108-megapixel searches in a row kept a normal one waiting 40 s."""
    params, upload = await read_params(request)
    distance = parse_distance(params.get("distance") if isinstance(params.get("distance"), str) else None)
    limit = params.get("limit")
    if distance is None or not parse_limit(limit if isinstance(limit, str) or limit is None else "x"):
        return JsonAnswer(EMPTY_REVERSE)
    large = await asyncio.to_thread(is_large, upload)
    lane = lanes_of(request).expensive if large else lanes_of(request).cheap
    try:
        async with lane.admitted(), file_turns(request, large):
            got = await file_of(request, params, upload)
            if got is None:
                return JsonAnswer(EMPTY_REVERSE)
            try:
                values, aspect = await lane.call(lambda: intensities_of(got[0]))
            except MediaError:
                return JsonAnswer(EMPTY_REVERSE)
    except Overloaded as busy:
        return JsonAnswer({"error": str(busy)}, status_code=503, headers={"Retry-After": str(RETRY_AFTER)})
    board: Board = request.app.state.board
    return JsonAnswer(answer_reverse(board, ReverseQuery(values.as_tuple(), aspect, distance),
                                       origin_of(request)))


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


def reverse_routes() -> list[BaseRoute]:
    return [Route(API_PREFIX + "/search/reverse", reverse_search, methods=["POST"])]
