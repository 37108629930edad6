"""The past as data, in one request each (:mod:`mirror.asof.trend`):

- ``/as-of/trend?q=...&from=...&to=...&every=month``: the search's total at every step from
  ``from`` to ``to`` (``day``, ``week``, ``month`` or ``year``; ``to`` defaults to now);
- ``/as-of/diff?q=...&from=...&to=...``: the images the search found at ``to`` and not at
  ``from`` (entered) and the reverse (left), each with the changes the history kept of it between.

Both read ``q`` as the image search does, with its filter, ``del`` and the caller's hides; moments
are written as ``/as-of/WHEN/`` takes them.
"""

from __future__ import annotations

from typing import Any

from starlette.routing import BaseRoute, Route

from ..asof import Moment, parse_moment
from ..asof.trend import diff, diff_json, steps, trend
from ..dates import utc_text
from .api import Context, answered, image_search_of
from .http import ErrorAnswer

__all__ = ["past_routes"]


def _moment(ctx: Context, name: str, default: Moment | None = None) -> Moment:
    text = ctx.params.get(name)
    if text is None:
        if default is None:
            raise ErrorAnswer(400, f"give {name}=WHEN (2025-01-05, 2025-01-05T12:00:00Z or 20250105120000)")
        return default
    try:
        return parse_moment(text)
    except ValueError as error:
        raise ErrorAnswer(400, f"{name}: {error}") from None


def search_trend(ctx: Context) -> dict[str, Any]:
    start, end = _moment(ctx, "from"), _moment(ctx, "to", Moment(utc_text()))
    every = ctx.params.get("every", "month")
    try:
        moments = steps(start, end, every)
    except ValueError as error:
        raise ErrorAnswer(400, str(error)) from None
    node, scope = image_search_of(ctx)
    searches = ctx.board.image_searches()
    with searches.connection() as conn:
        totals = trend(conn, searches.postings, node, scope, moments, seconds=ctx.board.search_seconds)
    return {"q": ctx.params.get("q", ""), "every": every,
            "steps": [{"at": m.text, "total": total} for m, total in zip(moments, totals)]}


def search_diff(ctx: Context) -> dict[str, Any]:
    start, end = _moment(ctx, "from"), _moment(ctx, "to", Moment(utc_text()))
    node, scope = image_search_of(ctx)
    searches = ctx.board.image_searches()
    with searches.connection() as conn:
        found = diff(conn, searches.postings, node, scope, start, end, seconds=ctx.board.search_seconds)
    return {"q": ctx.params.get("q", ""), "from": start.text, "to": end.text, **diff_json(found)}


def past_routes() -> list[BaseRoute]:
    """``/as-of/trend`` and ``/as-of/diff``."""
    return [Route("/as-of/trend", answered(search_trend), methods=["GET"]),
            Route("/as-of/diff", answered(search_diff), methods=["GET"])]
