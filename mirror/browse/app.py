"""``mirror browse``: Datasette on the mirror, with this package's plugin and metadata."""

from __future__ import annotations

import asyncio
import webbrowser
from collections.abc import Callable
from pathlib import Path
from typing import Any

import uvicorn
from datasette.app import Datasette

from ..store import StoreError
from .metadata import metadata

__all__ = ["make_datasette", "browse_metadata", "run_browse"]

# Datasette's own limit on a query's time, in milliseconds (the booru search keeps its own).
SQL_TIME_LIMIT_MS = 5000

# What Datasette is told, and why. Suggested facets are off: Datasette tries a GROUP BY on every
# column of a table page to suggest some, which cost seconds a page on the large tables (and on
# views, whose computed columns it tries too); facets stay a click away in each column's menu,
# each given a second at most.
SETTINGS = {"sql_time_limit_ms": SQL_TIME_LIMIT_MS, "facet_time_limit_ms": 1000, "suggest_facets": False}


def browse_metadata(database: str | Path, *, base_url: str, files: str) -> dict[str, Any]:
    """The metadata for the mirror at ``database`` of the site at ``base_url``, its files kept in ``files``."""
    return metadata(Path(database).stem, base_url, files)


def make_datasette(database: str | Path, *, base_url: str, files: str) -> Datasette:
    """Datasette on the mirror, read-only beside a writing sync (WAL), with the plugin's metadata."""
    path = Path(database)
    if not path.is_file():
        raise StoreError(f"there is no mirror database at {path}; run `mirror sync` (or `mirror demo`) first")
    return Datasette([str(path)], metadata=browse_metadata(path, base_url=base_url, files=files),
                     settings=SETTINGS)


def run_browse(datasette: Datasette, *, host: str, port: int, open_browser: bool,
               echo: Callable[[str], None] = print) -> None:
    """Serve Datasette in the foreground until interrupted."""
    server = uvicorn.Server(uvicorn.Config(datasette.app(), host=host, port=port, log_level="warning"))

    async def announce() -> None:
        while not server.started:
            await asyncio.sleep(0.02)
        bound = server.servers[0].sockets[0].getsockname()[1]
        url = f"http://{host}:{bound}/"
        echo(f"Browsing the mirror at {url}  (search with the site's syntax at {url}-/booru)")
        if open_browser:
            webbrowser.open(url)

    async def main() -> None:
        await asyncio.gather(server.serve(), announce())

    asyncio.run(main())
