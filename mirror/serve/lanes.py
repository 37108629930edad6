"""Lanes: cheap requests are never queued behind expensive ones.

A crowd sending costly searches (wildcards, fuzzy terms, deep pages) filled every worker thread
the server had, and ``q=id:20`` waited 14-16 s behind them. Each request is given a lane by an
estimate of its cost made before it runs (:func:`search_cost`); the cheap lane has threads of
its own, and the expensive lane runs a few at a time with a bounded queue, past which it answers
503 with ``Retry-After``, as the real site's proxy does when it is overloaded.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from typing import TypeVar

from starlette.datastructures import QueryParams
from starlette.requests import Request

__all__ = ["Lane", "Lanes", "Overloaded", "search_cost", "lanes_of", "RETRY_AFTER"]

T = TypeVar("T")
RETRY_AFTER = 2  # seconds a client refused for a full queue is told to wait
# What makes a search expensive: a wildcard or fuzzy term scans the tag dictionary or the text.
_SCANNING = re.compile(r"[*?~]")
_DEEP_PAGE = 50


class Overloaded(Exception):
    """The expensive lane's queue is full: the request is refused, to be retried later."""


class Lane:
    """A pool of ``workers`` threads; at most ``queue`` requests wait for one (None: no bound)."""

    def __init__(self, name: str, workers: int, queue: int | None) -> None:
        self.name = name
        self.queue = queue
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=f"serve-{name}")
        self._workers = workers
        self._admitted = 0

    @asynccontextmanager
    async def admitted(self) -> AsyncIterator[None]:
        """A place in this lane; raises :class:`Overloaded` when its queue is full."""
        if self.queue is not None and self._admitted >= self._workers + self.queue:
            raise Overloaded(f"the server is busy with expensive requests; try again in {RETRY_AFTER} s")
        self._admitted += 1
        try:
            yield
        finally:
            self._admitted -= 1

    async def call(self, work: Callable[[], T]) -> T:
        """``work()`` in this lane's threads (for a request already admitted)."""
        return await asyncio.get_running_loop().run_in_executor(self._pool, work)

    async def run(self, work: Callable[[], T]) -> T:
        """``work()`` in this lane's threads, once admitted."""
        async with self.admitted():
            return await self.call(work)


class Lanes:
    """The cheap lane and the expensive one of a server."""

    def __init__(self, cheap_workers: int = 16, expensive_workers: int = 2, expensive_queue: int = 8) -> None:
        self.cheap = Lane("cheap", cheap_workers, None)
        self.expensive = Lane("expensive", expensive_workers, expensive_queue)

    def for_search(self, path: str, params: QueryParams) -> Lane:
        return self.expensive if search_cost(path, params) else self.cheap


def lanes_of(request: Request) -> Lanes:
    """The app's lanes, made on first use (in its event loop)."""
    state = request.app.state
    if not hasattr(state, "lanes"):
        state.lanes = Lanes()
    return state.lanes


def search_cost(path: str, params: QueryParams) -> bool:
    """Whether a request is likely expensive: a search with a wildcard or fuzzy term, a relevance
    order, or a deep page. Showing one record, an exact search, or a random order (every id scored
    at once: a million in some 0.15 s, :func:`mirror.search.bitmap_search.page_ids`) is cheap."""
    if "/search" not in path:
        return False
    q = params.get("q", "")
    page = params.get("page", "1")
    deep = page.isdigit() and len(page) < 10 and int(page) > _DEEP_PAGE
    return bool(_SCANNING.search(q)) or deep or params.get("sf", "").startswith("_score")
