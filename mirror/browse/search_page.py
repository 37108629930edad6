"""``/-/booru``: search the mirror with the site's own syntax, as a grid of the site's media boxes.

The query is parsed, compiled and answered by :mod:`mirror.search.images`, the same entry point
``mirror serve`` uses, on the browser's search connections (:mod:`.searching`).
"""

from __future__ import annotations

import sqlite3
from typing import Any
from urllib.parse import quote, urlencode

from datasette.utils.asgi import Response

from ..asof import Moment
from ..asof import search as as_of_search
from ..asof.trend import walkable
from ..search import engine, images
from ..search.bitmap_search import ImageScope
from ..search.postings import Postings
from ..search.query import MatchNone, Node, QueryError
from ..search.sort import IMAGE_SORT_FIELDS
from .cards import chosen_filter, filter_in_use, image_cards
from .figure import ImageCard
from .moment import moment_of
from .places import SearchPlace, image_url
from .searching import run_search
from .settings import css
from .then import cards_then
from .trend_chart import chart_document, trend_chart, trend_src

PER_PAGE = 50
# A search's time limit: Datasette's own (sql_time_limit_ms) stops its SQL statements, not this.
SECONDS = 5.0
PATH = "/-/booru"
# The deepest page read: past the end of any board, its offset (a page times up to 200) still a 64-bit integer.
MAX_PAGE = 2**40


def quoted_term(name: str) -> str:
    """A tag name as a quoted search term (commas, parentheses and operators in it stay literal)."""
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def search_url(name: str) -> str:
    """The search for the images tagged ``name``."""
    return f"{PATH}?q={quote(quoted_term(name))}"


def _refuse(field: str):  # noqa: ANN202 - a transform for the parser
    def transform(value: str) -> Node:
        raise QueryError(f"`{field}:' needs an account on the site; the mirror has none.")
    return transform


def mirror_query(q: str) -> Node:
    """The site's query ``q`` parsed for the mirror, which has no accounts (``my:`` and
    ``filter_id:`` are refused)."""
    return images.image_query(q, {"my": _refuse("my"), "filter_id": _refuse("filter_id")})


def page_number(args: Any) -> int:
    """The page a request's ``page`` argument asks for, from 1 to :data:`MAX_PAGE`."""
    try:
        return min(MAX_PAGE, max(1, int(args.get("page", "1"))))
    except ValueError:
        return 1


def search_page_of(conn: sqlite3.Connection, postings: Postings, node: Node, sf: str | None, sd: str | None, page: int,
                   include_gone: bool, chosen: int | None, moment: Moment | None = None) -> tuple[list[ImageCard], int]:
    """(the cards of one page under the filter in use, the total), of the board as of ``moment`` when given."""
    found = images.search(conn, postings, node, ImageScope(deleted=include_gone), sf=sf, sd=sd, limit=PER_PAGE,
                          offset=(page - 1) * PER_PAGE, columns="{t}.id", seconds=SECONDS, reader=as_of_search.reader(moment))
    ids, used = [row[0] for row in found.rows], filter_in_use(conn, chosen)
    return (image_cards(conn, ids, used) if moment is None else cards_then(conn, ids, used, moment)), found.total


async def booru_search(datasette: Any, request: Any) -> Response:
    args = request.args
    q, sf, sd = args.get("q", ""), args.get("sf") or "first_seen_at", args.get("sd") or "desc"
    include_gone = args.get("del") == "1"
    page = page_number(args)
    chosen = chosen_filter(request)
    context: dict[str, Any] = {"q": q, "sf": sf, "sd": sd, "page": page, "include_gone": include_gone,
                               "sort_fields": list(IMAGE_SORT_FIELDS) + ["random"], "path": PATH,
                               "css": css(), "error": None, "cards": [], "total": 0, "pages": 0}
    moment = moment_of(request)
    if q.strip():
        try:
            node = mirror_query(q)
            cards, total = await run_search(datasette, lambda conn, postings: search_page_of(
                conn, postings, node, sf, sd, page, include_gone, chosen, moment))
        except (QueryError, engine.SearchTooSlow) as e:
            context["error"] = str(e)
        else:
            if not isinstance(node, MatchNone) and page == 1 and walkable(node, ImageScope()):  # the chart once, on the first page
                context["chart_src"] = trend_src(q, moment)
                context.update(total=total, pages=-(-total // PER_PAGE), cards=[
                    card.box(image_url(card.image_id, SearchPlace(q, sf, sd, include_gone, (page - 1) * PER_PAGE + n)))
                    for n, card in enumerate(cards)])

    def page_url(number: int) -> str:
        return PATH + "?" + urlencode({"q": q, "sf": sf, "sd": sd, "page": number, **({"del": "1"} if include_gone else {})})

    context["page_url"] = page_url
    return Response.html(await datasette.render_template("booru_search.html", context, request=request))


async def booru_trend(datasette: Any, request: Any) -> Response:
    """``/-/trend?q=``: the chart of a search's total month by month, the page the tag and search
    pages frame (:mod:`.trend_chart`)."""
    q = request.args.get("q", "")
    try:
        node = mirror_query(q)
    except QueryError:
        drawn = None
    else:
        drawn = await run_search(datasette, lambda conn, postings: trend_chart(conn, postings, node, moment_of(request)))
    return Response.html(chart_document(drawn, q))
