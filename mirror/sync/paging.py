"""Walking list endpoints safely.

Philomena's list endpoints end in two different ways (reference section 4). The search
endpoints answer a page past the end with an empty list. The Scrivener-backed ones (forums,
a forum's topics, system and user filters) answer it with the *last page again*, so a crawler
that waits for an empty page loops forever. Both walkers here stop on ``total`` first.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

from ..api import Page

PER_PAGE = 50


def last_search_page(page: Page, per_page: int = PER_PAGE) -> bool:
    """Whether a keyset or bounded search page is the last: empty, or short with ``total`` agreeing.

    The site drops rows missing from its database from a page while ``total`` still counts them,
    so a short page alone does not prove the end.
    """
    records = page.records
    return not records or (len(records) < per_page and (page.total is None or page.total <= len(records)))


async def scrivener_pages(fetch: Callable[[int], Awaitable[Page]], *, start: int = 1,
                          per_page: int = PER_PAGE) -> AsyncIterator[tuple[int, Page]]:
    """Pages ``start``, ``start + 1``, ... of an endpoint that repeats its last page past the end.

    Stops after the page that reaches ``total``, on an empty page, or on a page identical to the
    one before it (a repeat, should ``total`` be missing or wrong).
    """
    number, previous = start, None
    while True:
        page = await fetch(number)
        if previous is not None and page.records == previous:
            return
        yield number, page
        if not page.records or page.total is None or number * per_page >= page.total:
            return
        number, previous = number + 1, page.records


async def search_pages(fetch: Callable[[int], Awaitable[Page]], *, start: int = 1,
                       per_page: int = PER_PAGE) -> AsyncIterator[tuple[int, Page]]:
    """Pages of a search endpoint (empty past the end), stopping without the extra empty request.

    A short page ends the walk only when ``total`` agrees: the site drops rows missing from its
    database from a page while still counting them.
    """
    number = start
    while True:
        page = await fetch(number)
        yield number, page
        if not page.records or number * per_page >= (page.total if page.total is not None else 0):
            return
        number += 1


def window_walk_done(number: int, page: Page, per_page: int = PER_PAGE) -> bool:
    """Whether page ``number`` of a topic's posts is its last.

    Topic posts are selected by ``topic_position`` in ``[per_page*(number-1), per_page*number)``.
    Destroyed posts leave gaps, so a page can be short or even empty in the middle of a topic:
    only ``total`` (the topic's post count) ends the walk. Past the end the page is empty, never
    repeated; without a ``total`` an empty page is taken as the end.
    """
    if page.total is None:
        return not page.records
    return number * per_page >= page.total
