"""Walking list endpoints safely.

Philomena's list endpoints end in two different ways (reference section 4). The search
endpoints answer a page past the end with an empty list. The Scrivener-backed ones (forums,
a forum's topics, system and user filters) answer it with the *last page again*, so a crawler
that waits for an empty page loops forever. Both walkers here stop on ``total`` first.

Every walk, these and the keyset walks of the crawlers, also stops when a page does not move it
on (:class:`ProgressGuard`): a site stuck on one page, or sending records whose ids cannot move
a cursor, would otherwise be asked the same thing forever.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Hashable
from typing import Any, NoReturn

from ..api import Page, UnexpectedResponse
from ..store.records import to_json

PER_PAGE = 50


class WalkStalled(UnexpectedResponse):
    """The site sent a page that does not move the walk on; asking on would loop forever.

    Like every answer the site gets wrong, it ends the run with exit code 4; what was stored before
    stays, and the next run starts from there.
    """


class ProgressGuard:
    """Stops one walk as soon as a page no longer moves it on. Give it every page the walk receives.

    Any sign is enough: a page with the same records as the page before it (within the same
    ``scope``: the keyset bound the request was made under, when the walk has one), a page after
    which the walk's cursor did not move, so that the next request would be this one again, or
    (``answered`` False) a page whose records lie outside the bounds the request asked for: a walk
    that moves its cursor by what it asked, not by what came, would otherwise step on forever
    through an answer meant for another request. Pages with no record (only nulls for destroyed
    comments, an empty window of a topic) prove nothing and are not compared.
    """

    def __init__(self, what: str) -> None:
        """``what`` names the walk in the message: the resource, and the forum or topic if any."""
        self.what = what
        self.pages = 0
        self._last: tuple[Hashable, list[Any]] | None = None

    def check(self, page: Page, *, moved: bool = True, scope: Hashable = None, answered: bool = True) -> None:
        """Raise :class:`WalkStalled` if ``page`` repeats the one before, or ``moved`` or ``answered`` is False."""
        self.pages += 1
        records = [r for r in page.records if r is not None]
        seen = (scope, records) if records else None
        if seen is not None and self._last is not None and _same_page(seen, self._last):
            self._stop(f"the site sent page {self.pages - 1} again as page {self.pages}")
        if not moved:
            self._stop(f"page {self.pages} has records that do not advance the cursor "
                       "(their ids are missing or out of range; they are kept in rejects)")
        if not answered:
            self._stop(f"page {self.pages} holds records outside the ids it asked for "
                       "(the site sent an earlier page again?)")
        self._last = seen

    def _stop(self, what_happened: str) -> NoReturn:
        raise WalkStalled(f"{self.what}: {what_happened}; stopped after page {self.pages} so as not to loop; "
                          "everything before is kept")


def _same_page(page: tuple[Hashable, list[Any]], other: tuple[Hashable, list[Any]]) -> bool:
    """Whether two (scope, records) are the same page: the same scope and records whose JSON is
    the same. Record by record, so two different pages (nearly always) differ at the first one
    without the whole page being encoded."""
    (scope, records), (other_scope, other_records) = page, other
    return (scope == other_scope and len(records) == len(other_records)
            and all(to_json(a) == to_json(b) for a, b in zip(records, other_records)))


def last_search_page(page: Page, per_page: int = PER_PAGE) -> bool:
    """Whether a keyset or bounded search page is the last: empty, or short with ``total`` agreeing.

    The site drops rows missing from its database from a page while ``total`` still counts them,
    so a short page alone does not prove the end.
    """
    records = page.records
    return not records or (len(records) < per_page and (page.total is None or page.total <= len(records)))


async def scrivener_pages(fetch: Callable[[int], Awaitable[Page]], *, what: str, start: int = 1,
                          per_page: int = PER_PAGE) -> AsyncIterator[tuple[int, Page]]:
    """Pages ``start``, ``start + 1``, ... of an endpoint that repeats its last page past the end.

    Stops after the page that reaches ``total``, or on an empty page; a page identical to the one
    before it, while ``total`` says there is more, stops the walk with :class:`WalkStalled`.
    """
    guard, number = ProgressGuard(what), start
    while True:
        page = await fetch(number)
        guard.check(page)
        yield number, page
        if not page.records or page.total is None or number * per_page >= page.total:
            return
        number += 1


async def search_pages(fetch: Callable[[int], Awaitable[Page]], *, what: str, start: int = 1,
                       per_page: int = PER_PAGE) -> AsyncIterator[tuple[int, Page]]:
    """Pages of a search endpoint (empty past the end), stopping without the extra empty request.

    A short page ends the walk only when ``total`` agrees: the site drops rows missing from its
    database from a page while still counting them.
    """
    guard, number = ProgressGuard(what), start
    while True:
        page = await fetch(number)
        guard.check(page)
        yield number, page
        if not page.records or number * per_page >= (page.total if page.total is not None else 0):
            return
        number += 1


def keyset_unseen(previous: list[int | None] | None, total: int | None) -> int:
    """Records the previous page of a keyset walk was counted for and did not hold.

    ``previous`` is that page's ``[total, records received]``. Its ``total`` counted every record from
    its start on, this page's ``total`` those past its end: the difference, less what it held, were
    left out (deleted or hidden while the walk ran, or missing behind the site's search index).
    Records added meanwhile can only lower the figure, so it never reports a loss that did not happen.
    """
    if previous is None or previous[0] is None or total is None:
        return 0
    return max(0, previous[0] - total - previous[1])


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
