"""Browsing a mirror in Datasette: pictures, attribution, and the site's own search syntax.

This package is a Datasette plugin (registered under the ``datasette`` entry point, so a plain
``datasette data/mirror.db`` loads it too) plus the metadata ``mirror browse`` hands Datasette.
Image cells show the thumbnail the mirror keeps (served by datasette-media, never fetched from
the site) with the image's artists, its source and a link to its page on the site; ``/-/booru``
searches with the site's syntax.
"""

from __future__ import annotations

import inspect
import json
from typing import Any

from datasette import hookimpl
from datasette.utils.asgi import Response
from markupsafe import Markup

from .board_pages import ROUTES as BOARD_ROUTES
from .duplicates_page import PATH as DUPLICATES_PATH
from .duplicates_page import booru_duplicates
from .error_pages import error_page, is_client_error
from .figure import ImageCard, artists_of_tags, artists_of_text
from .frame import board_frame
from .front_page import ROUTES as FRONT_ROUTES
from .front_page import TABLES_PATH
from .history_page import ROUTES as HISTORY_ROUTES
from .image_page import booru_image
from .metadata import kept_extension
from .moment import AS_OF_PATH, banner, moment_of, moment_paths
from .places import image_url
from .search_page import PATH, booru_search, booru_trend, search_url
from .settings import css, database_name, site_address
from .steering import ROUTES as MOMENTS_ROUTES
from .steering import not_yet, record_of_page, steering
from .times import relative_time

_TEXT_COLUMNS = {"body", "description", "short_description"}


def _card_of(row: Any, column: str, table: str | None) -> tuple[int, list[str], str | None] | None:
    """(image id, artists, source) when this cell is where an image is shown, else None."""
    keys = row.keys()
    if table == "images" and column == "representations":
        return row["id"], artists_of_tags(row["tags"]), row["source_url"] or None
    if column == "thumb_url" and "id" in keys:
        source = row["source_url"] if "source_url" in keys else None
        return row["id"], artists_of_text(row["artists"] if "artists" in keys else None), source or None
    return None


@hookimpl
def render_cell(row: Any, value: Any, column: str, table: str | None, database: str, datasette: Any) -> Any:
    card = _card_of(row, column, table)
    if card is not None and isinstance(card[0], int):
        async def figure() -> Markup:
            image_id, artists, source = card
            kept = await datasette.get_database(database).execute_fn(lambda conn: kept_extension(conn, image_id))
            return ImageCard(image_id, artists, source, kept).html(
                site_address(datasette), PATH, image_url(image_id))
        return figure()
    if table == "images" and column == "tags" and isinstance(value, str) and value.startswith("["):
        names = [name for name in json.loads(value) if isinstance(name, str)]
        return Markup(", ").join(Markup('<a href="{}">{}</a>').format(search_url(name), name)
                                 for name in names)
    if column in _TEXT_COLUMNS and isinstance(value, str) and value:
        return Markup('<div class="booru-text">{}</div>').format(value)
    return None


async def _stylesheet(request: Any) -> Response:
    return Response(css(), content_type="text/css; charset=utf-8")


@hookimpl
def register_routes() -> list[tuple[str, Any]]:
    return [(r"^/-/booru$", booru_search), (r"^/-/trend$", booru_trend), (r"^/-/image/(?P<id>[0-9]{1,10})$", booru_image),
            (r"^/-/duplicates$", booru_duplicates), (r"^/-/booru\.css$", _stylesheet), *BOARD_ROUTES, *FRONT_ROUTES,
            *HISTORY_ROUTES, *MOMENTS_ROUTES]


@hookimpl(hookwrapper=True)
def handle_exception(datasette: Any, request: Any, exception: Exception) -> Any:
    """A client's error gets :func:`error_page` instead of what Datasette's handler would print and show."""
    outcome = yield
    if is_client_error(exception):
        for dropped in outcome.get_result():
            if inspect.iscoroutine(dropped):
                dropped.close()  # never run: it is the one that prints
        outcome.force_result([_client_error_page(datasette, request, exception)])


async def _client_error_page(datasette: Any, request: Any, exception: Exception) -> Response:
    """A record's page asked as of a moment before it existed says so in the board's frame
    (:func:`.steering.not_yet`); any other client's error is :func:`error_page`."""
    moment, page = moment_of(request), request.scope.get("booru_today_path", "")
    if moment is not None and getattr(exception, "status", None) == 404 and (found := record_of_page(page)):
        answer = await not_yet(datasette, request, *found, page.split("?", 1)[0], moment)
        if answer is not None:
            return answer
    return await error_page(datasette, request, exception)


@hookimpl
def asgi_wrapper(datasette: Any) -> Any:
    """Every board page under ``/as-of/WHEN/`` too (:mod:`.moment`)."""
    return moment_paths


@hookimpl
def extra_css_urls() -> list[str]:
    return ["/-/booru.css"]


@hookimpl
def menu_links(datasette: Any) -> list[dict[str, str]]:
    return [{"href": "/", "label": "The board (newest images)"}, {"href": PATH, "label": "Search images (site syntax)"},
            {"href": "/-/tags", "label": "Tags"}, {"href": "/-/forums", "label": "Forums"},
            {"href": "/-/galleries", "label": "Galleries"}, {"href": DUPLICATES_PATH, "label": "Near-duplicate images"},
            {"href": "/-/changes", "label": "What changed"}, {"href": TABLES_PATH, "label": "Tables (Datasette's index)"}]


@hookimpl
def extra_template_vars(datasette: Any, request: Any) -> Any:
    """The board's frame (:mod:`.frame`), which every board page's template draws, and the banner
    of a page asked as of a moment (:mod:`.moment`) with its way through time (:mod:`.steering`)."""
    async def template_vars() -> dict[str, Any]:
        said = banner(request) if request is not None else None
        if said is not None:
            moment, page = moment_of(request), said["today"]
            try:
                said["steering"] = await datasette.get_database(database_name(datasette)).execute_fn(
                    lambda conn: steering(conn, page, moment))
            except StopIteration:  # a Datasette with no database of its own
                said["steering"] = None
            said["picker"] = {"path": AS_OF_PATH, "page": page, "day": moment.text[:10], "time": moment.text[11:19]}
        return {"board": board_frame(datasette), "as_of": said}
    return template_vars


@hookimpl
def prepare_jinja2_environment(env: Any) -> None:
    env.filters["ago"] = relative_time


__all__ = ["asgi_wrapper", "database_name", "extra_css_urls", "extra_template_vars", "handle_exception", "menu_links",
           "prepare_jinja2_environment",
           "register_routes", "render_cell"]
