"""The page for a request `mirror browse` cannot answer (a record it does not have, a path no page
has): the error page Datasette shows, without the traceback Datasette prints for it.

Datasette's own handler prints every exception with its local variables, a 404 too (16 KB of log a
page not found), and for a path no route matches it fails doing so (``rich`` wants a traceback
there is none of), which turned a plain 404 into a 500. A 404, 403 or 400 is an answer, not a
failure: it logs nothing. Anything else is left to Datasette's handler, traceback and all.
"""

from __future__ import annotations

from typing import Any

from datasette.utils import add_cors_headers
from datasette.utils.asgi import Base400, Response

__all__ = ["error_page", "is_client_error"]


def is_client_error(exception: BaseException) -> bool:
    """A request that cannot be answered (4xx), as opposed to a failure of the server."""
    return isinstance(exception, Base400)


async def error_page(datasette: Any, request: Any, exception: Base400) -> Response:
    """Datasette's error page for a client's error (its JSON for a ``.json`` path), printing nothing."""
    info = {"ok": False, "error": exception.args[0] if exception.args else "", "status": exception.status,
            "title": None}
    headers: dict[str, str] = {}
    if datasette.cors:
        add_cors_headers(headers)
    if request.path.split("?")[0].endswith(".json"):
        return Response.json(info, status=exception.status, headers=headers)
    template = datasette.jinja_env.select_template([f"{exception.status}.html", "error.html"])
    html = await template.render_async({**info, "urls": datasette.urls, "app_css_hash": datasette.app_css_hash(),
                                        "menu_links": lambda: []})
    return Response.html(html, status=exception.status, headers=headers)
