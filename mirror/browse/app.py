"""``mirror browse``: Datasette on the mirror, with this package's plugin and metadata."""

from __future__ import annotations

import asyncio
import sqlite3
import webbrowser
from collections.abc import Callable
from pathlib import Path
from typing import Any

import uvicorn
from datasette.app import Datasette
from datasette.database import Database, QueryInterrupted
from datasette.utils import escape_sqlite

from ..asof import Moment
from ..listening import listen
from ..store import StoreError, reader_uri
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


class MirrorDatabase(Database):
    """The mirror in Datasette: its tables counted in steps Datasette's time limit can stop, and
    counted again only once the database changed.

    The database and index pages count every table within a few milliseconds each; SQLite counts a
    whole table in one step, which no time limit interrupts: at a million images, the description
    index's data took 175 ms and ``image_tags`` 54 ms of each such page. Counted row by row, a table
    too large to count in time shows no count, as Datasette intends; and while neither the database
    file nor its write-ahead log changed, the counts are the ones found last time."""

    _counted: tuple[tuple[tuple[int, int] | None, ...], dict[str, int | None]] | None = None

    def connect(self, write: bool = False) -> sqlite3.Connection:
        """A read connection as a server's (:func:`~mirror.store.database.reader_uri`): a database on a
        read-only mount, or another user's, is browsed too."""
        if write:
            return super().connect(write=True)
        conn = sqlite3.connect(reader_uri(self.path), uri=True, check_same_thread=False)
        self._all_file_connections.append(conn)
        return conn

    def _file_state(self) -> tuple[tuple[int, int] | None, ...]:
        """(modification time, size) of the database file and of its write-ahead log."""
        states = []
        for path in (Path(self.path), Path(f"{self.path}-wal")):
            try:
                stat = path.stat()
                states.append((stat.st_mtime_ns, stat.st_size))
            except FileNotFoundError:
                states.append(None)
        return tuple(states)

    async def table_counts(self, limit: int = 10) -> dict[str, int | None]:
        state = self._file_state()
        if self._counted is not None and self._counted[0] == state:
            return dict(self._counted[1])
        counts: dict[str, int | None] = {}
        for table in await self.table_names():
            try:
                # The LIMIT keeps SQLite from turning this back into its one-step count.
                result = await self.execute(f"select count(*) from (select 1 from {escape_sqlite(table)} "
                                            f"limit {2**62})", custom_time_limit=limit)
                counts[table] = result.first()[0]
            except (QueryInterrupted, sqlite3.OperationalError, sqlite3.DatabaseError):
                counts[table] = None
        self._counted = state, counts
        return dict(counts)


def make_datasette(database: str | Path, *, base_url: str, files: str) -> Datasette:
    """Datasette on the mirror, read-only beside a writing sync (WAL), with the plugin's metadata."""
    path = Path(database)
    if not path.is_file():
        raise StoreError(f"there is no mirror database at {path}; run `mirror sync` (or `mirror demo`) first")
    datasette = Datasette([str(path)], metadata=browse_metadata(path, base_url=base_url, files=files),
                          settings=SETTINGS)
    datasette.remove_database(path.stem)
    datasette.add_database(MirrorDatabase(datasette, path=str(path), is_mutable=True), name=path.stem)
    return datasette


def run_browse(datasette: Datasette, *, host: str, port: int, open_browser: bool,
               echo: Callable[[str], None] = print, moment: Moment | None = None) -> None:
    """Serve Datasette in the foreground until interrupted; with ``moment``, the address announced
    (and opened) is the board as of then (:mod:`.moment`), every page also answering today."""
    sock = listen(host, port)
    server = uvicorn.Server(uvicorn.Config(datasette.app(), host=host, port=port, log_level="warning"))

    async def announce() -> None:
        while not server.started:
            await asyncio.sleep(0.02)
        bound = server.servers[0].sockets[0].getsockname()[1]
        url = f"http://{host}:{bound}/"
        if moment is not None:
            url += f"as-of/{moment.digits}/"
            echo(f"Browsing the mirror as of {moment.text} at {url}  (today's board at http://{host}:{bound}/)")
        else:
            echo(f"Browsing the mirror at {url}  (search with the site's syntax at {url}-/booru)")
        if open_browser:
            webbrowser.open(url)

    async def main() -> None:
        await asyncio.gather(server.serve(sockets=[sock]), announce())

    asyncio.run(main())
