"""The connections `mirror browse` runs image searches on.

A pool of its own per database file (:func:`~mirror.search.images.searches_of`), opened with the
posting lists, rather than Datasette's read connections: a connection new to the lists drops them,
since it cannot tell what changed before it came, and Datasette opens its connections one thread
at a time as requests arrive, so each new one cost the next search every list (0.5-0.7 s at a
million images, at random moments of a session).
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from typing import Any, TypeVar

from ..search.images import searches_of
from ..search.postings import Postings
from .settings import database_name

__all__ = ["run_search"]

# One person browses: a few searches at once are plenty (the search page, an image page's neighbours).
SEARCHES_AT_ONCE = 4

T = TypeVar("T")


async def run_search(datasette: Any, work: Callable[[sqlite3.Connection, Postings], T]) -> T:
    """``work(connection, posting lists)`` on a search connection of the browsed mirror, in a thread."""
    searches = searches_of(datasette.get_database(database_name(datasette)).path, SEARCHES_AT_ONCE)

    def run() -> T:
        with searches.connection() as conn:
            return work(conn, searches.postings)

    return await asyncio.get_running_loop().run_in_executor(None, run)
