"""``mirror serve``: the archive answers the site's JSON API and serves its kept files.

Tools written for a Philomena site (downloaders such as gallery-dl, bots, scripts) work on the
archive unchanged, offline, including for images the site has since deleted. The database is
opened read-only, so serving is safe while a sync writes to it.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Callable
from pathlib import Path

import uvicorn
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response

from ..asof import Moment
from ..download.storage import Storage
from ..listening import listen
from ..urls import redact
from .api import api_routes
from .board import Board, BoardGone
from .files import kept_file_routes
from .http import API_PREFIX, JsonAnswer, ProxyMiddleware
from .past import past_routes
from .reverse import reverse_routes

__all__ = ["create_serve_app", "run_serve"]


# What SQLite says of a file that is no longer the database it opened (overwritten in place).
REPLACED = frozenset({"SQLITE_CORRUPT", "SQLITE_NOTADB"})


def unavailable(request: Request, error: Exception) -> Response:
    """The database deleted, or overwritten in place, under the server: every answer says so (503),
    and so does the log, rather than answering from what is gone or failing with a traceback. Any
    other error of SQLite's (a table an old mirror lacks, a query past a limit) is that request's
    own: a 500 saying it, not a replaced file."""
    log = logging.getLogger("mirror.serve")
    if isinstance(error, BoardGone):
        message = str(error)
    elif getattr(error, "sqlite_errorname", None) in REPLACED:
        message = (f"the mirror database cannot be read ({error}): was it overwritten while being served? "
                   "Put a sound copy in place, or restart mirror serve")
    else:
        message = (f"the mirror database could not answer this request ({error}); other requests are answered. "
                   "Run `mirror sync` once to bring an older mirror's tables up to date")
        log.error("%s %s: %s", request.method, redact(str(request.url.path)), message)
        return JsonAnswer({"error": message}, status_code=500)
    log.error(message)
    return JsonAnswer({"error": message}, status_code=503)


def create_serve_app(board: Board, storage: Storage, moment: Moment | None = None,
                     public_url: str | None = None, site_url: str | None = None) -> Starlette:
    """The JSON API over ``board`` and its kept files under ``/img`` from ``storage``; the plain
    API answered as of ``moment`` when one is given (``mirror serve --as-of``); links and file URLs
    naming ``public_url`` when given (a proxy in front), else the address each request came in on;
    Memento's originals naming the site mirrored, ``site_url`` (its ``base_url``), when given."""
    routes = kept_file_routes() + reverse_routes() + past_routes() + api_routes()
    app = Starlette(routes=routes, middleware=[Middleware(ProxyMiddleware)],
                    exception_handlers={BoardGone: unavailable, sqlite3.DatabaseError: unavailable})
    app.state.board = board
    app.state.storage = storage
    app.state.moment = moment
    app.state.public_url = public_url.rstrip("/") if public_url else None
    app.state.site_url = site_url.rstrip("/") if site_url else None
    return app


class RedactedKeys(logging.Filter):
    """The access log shows ``key=***``: a client may send its API key, which is ignored here, but a
    secret must not land in a log file word for word."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple) and len(record.args) >= 3 and "key=" in str(record.args[2]):
            record.args = (*record.args[:2], redact(str(record.args[2])), *record.args[3:])
        return True


def run_serve(board: Board, storage: Storage, *, host: str, port: int, echo: Callable[[str], None] = print,
              moment: Moment | None = None, public_url: str | None = None, site_url: str | None = None) -> None:
    """Serve in the foreground until interrupted, with an access log line per request."""
    sock = listen(host, port)
    app = create_serve_app(board, storage, moment, public_url, site_url)
    config = uvicorn.Config(app, host=host, port=port, log_level="info", access_log=True, lifespan="off")
    logging.getLogger("uvicorn.access").addFilter(RedactedKeys())
    server = uvicorn.Server(config)

    async def announce() -> None:
        while not server.started:
            await asyncio.sleep(0.02)
        bound = server.servers[0].sockets[0].getsockname()[1]
        pinned = f", as of {moment.text}" if moment is not None else ""
        public = f", its links naming {public_url}" if public_url else ""
        echo(f"Serving the mirror {Path(board.path)} (read-only{pinned}{public}) at http://{host}:{bound}{API_PREFIX}")
        echo(f"  any record as it was at a moment: http://{host}:{bound}/as-of/WHEN{API_PREFIX}/images/N "
             "(WHEN: 2025-01-05, 2025-01-05T12:00:00Z or 20250105120000)")
        if site_url:
            record = f"{site_url}{API_PREFIX}/images/N"
            echo(f"  a web archive of {site_url} for Memento clients: TimeGate "
                 f"http://{host}:{bound}/timegate/{record}, TimeMap http://{host}:{bound}/timemap/link/{record}")
        echo(f"  files kept in {storage.describe('')}; for gallery-dl, add a philomena instance with "
             f'"root": "http://{host}:{bound}"')

    async def main() -> None:
        await asyncio.gather(server.serve(sockets=[sock]), announce())

    asyncio.run(main())
