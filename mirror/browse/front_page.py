"""``/``: the board at the front door, as the site's own front page: the newest images with their
counts under the filter in use, the search box with the site's syntax, and the board's menu.

Datasette is not hidden by it: the menu's "Tables" opens the database page (``/<database>``),
which lists every table and view, and Datasette's own index answers at ``/-/tables``.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from datasette.utils.asgi import BadRequest, Response
from datasette.views.index import IndexView

from ..asof import parse_moment
from ..search import engine
from ..search.query import QueryError
from .cards import FILTER_COOKIE, chosen_filter, filter_in_use
from .moment import AS_OF_PATH, is_board_page, moment_of
from .places import SearchPlace, image_url
from .search_page import PATH as SEARCH_PATH
from .search_page import PER_PAGE, mirror_query, page_number, search_page_of
from .searching import run_search
from .settings import css, database_name

__all__ = ["MENU", "ROUTES"]

# The newest images: what the site's front page lists, as a search the image pages can follow.
NEWEST = "*"
SORT = ("first_seen_at", "desc")
TABLES_PATH = "/-/tables"
FILTER_PATH = "/-/filter"
# The board's menu: (label, address). "What changed" is the history pages' overview.
MENU = [("Search", SEARCH_PATH), ("Tags", "/-/tags"), ("Forums", "/-/forums"), ("Galleries", "/-/galleries"),
        ("Duplicates", "/-/duplicates"), ("What changed", "/-/changes")]


def _filters(conn: sqlite3.Connection) -> list[tuple[int, str]]:
    """The filters a person may pick: the site's system filters and the public ones kept."""
    return conn.execute("SELECT id, coalesce(name, 'filter ' || id) FROM filters WHERE system OR public "
                        "ORDER BY system DESC, id LIMIT 100").fetchall()


async def booru_front(datasette: Any, request: Any) -> Response:
    page = page_number(request.args)
    chosen = chosen_filter(request)
    database = database_name(datasette)
    used, filters = await datasette.get_database(database).execute_fn(
        lambda conn: (filter_in_use(conn, chosen), _filters(conn)))
    sf, sd = SORT
    error, cards, total, pages, more = None, [], 0, 0, False
    moment = moment_of(request)
    try:
        node = mirror_query(NEWEST)
        found, total = await run_search(datasette, lambda conn, postings: search_page_of(
            conn, postings, node, sf, sd, page, False, chosen, moment))
    except (QueryError, engine.SearchTooSlow) as e:
        error = str(e)
    else:
        cards = [card.box(image_url(card.image_id, SearchPlace(NEWEST, sf, sd, False, (page - 1) * PER_PAGE + n)))
                 for n, card in enumerate(found)]
        pages = -(-total // PER_PAGE)
    context = {"css": css(), "menu": MENU, "cards": cards, "total": total, "more": more, "page": page, "error": error,
               "pages": pages, "page_url": lambda number: f"/?page={number}",
               "filter": used, "filters": filters, "filter_path": FILTER_PATH, "database": database,
               "database_url": datasette.urls.database(database), "searchbox_q": "", "tables_path": TABLES_PATH,
               "title": datasette.metadata("title") or "booru mirror", "as_of_path": AS_OF_PATH,
               "as_of_day": moment.text[:10] if moment else "", "as_of_time": moment.text[11:19] if moment else ""}
    return Response.html(await datasette.render_template("booru_front.html", context, request=request))


async def choose_moment(datasette: Any, request: Any) -> Response:
    """The moment picker (the front page's, and a past page's banner): the board as of the day
    picked, at the time picked (UTC; the end of the day for none), on the page it was picked on
    (``page``, a board page's address; the front page otherwise). No day: today's page."""
    when, at = request.args.get("when", "").strip(), request.args.get("at", "").strip()
    page = request.args.get("page", "/")
    page = page if is_board_page(page) else "/"  # a board page's address, never //host
    if not when:
        return Response.redirect(page)
    if at:
        when = f"{when}T{at}{':00' if at.count(':') == 1 else ''}Z"
    try:
        moment = parse_moment(when)
    except ValueError as error:
        raise BadRequest(str(error)) from None
    return Response.redirect(f"/as-of/{moment.digits}{page}")


async def choose_filter(datasette: Any, request: Any) -> Response:
    """Remember the filter picked (a cookie, as the site does for visitors) and go back to the board."""
    value = request.args.get("id", "")
    response = Response.redirect("/")
    if value.isdigit() and len(value) < 10:
        response.set_cookie(FILTER_COOKIE, value, max_age=10 * 365 * 86400, samesite="lax")
    return response


async def datasette_index(datasette: Any, request: Any) -> Response:
    """Datasette's own index page, every database and table, at ``/-/tables``."""
    request.scope["url_route"] = {"kwargs": {"format": None}}
    return await IndexView(datasette).get(request)


ROUTES = [(r"^/$", booru_front), (rf"^{FILTER_PATH}$", choose_filter), (rf"^{TABLES_PATH}$", datasette_index),
          (rf"^{AS_OF_PATH}$", choose_moment)]
