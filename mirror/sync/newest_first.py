"""Walking the searches whose sort is fixed to ``created_at`` descending, by keyset.

/search/comments, /search/posts and /search/galleries ignore ``sf`` and ``sd`` (reference
section 5), so the images crawler's ``id.gt:N`` keyset is not available. Page offsets over a
result set that changes during the walk are unsafe: a comment hidden or destroyed on page 1
shifts page 2 up by one and a record is skipped. So each request asks for
``(query), created_at.lte:T``, page 1, where T is the oldest ``created_at`` seen so far. A date
value covers its whole second, so the records of second T come again (harmless upserts) and none
is skipped; records added during the walk are newer than T and never shift it. Only when a
page brings nothing older than T (a whole page within one second, or only null elements for
destroyed records) does the walk take the next page number under the same bound.

The state is a small dict saved in the crawler's cursor with each page, so a killed walk
resumes where its last committed page left off.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from ..api import Page
from ..dates import parse_utc, utc_text
from .paging import PER_PAGE, ProgressGuard, last_search_page

# Matches every record on the endpoints walked here (an int range, valid on every index).
EVERYTHING = "id.gte:0"

Search = Callable[[str, int], Awaitable[Page]]
State = dict[str, Any]


def bounded(query: str, state: State) -> str:
    """The search for the walk's next request."""
    bound = state.get("bound")
    return f"({query}), created_at.lte:{bound}" if bound else query


def next_state(state: State, page: Page) -> State:
    """Where the walk goes after ``page``: a lower bound when it got older, else the next page."""
    oldest = min((d for d in (_created(r) for r in page.records) if d), default=None)
    bound = state.get("bound")
    if oldest is not None and (bound is None or oldest < bound):
        return {"bound": oldest, "page": 1}
    return {"bound": bound, "page": state.get("page", 1) + 1}


async def newest_first(search: Search, query: str, state: State | None = None, per_page: int = PER_PAGE, *,
                       what: str) -> AsyncIterator[tuple[Page, State | None]]:
    """Pages of ``query`` from ``state`` on, each with the state to save once it is stored.

    The state after the last page is None. Store the page and its state in one transaction
    before asking for the next page. A page that repeats the one before under the same bound
    (legitimately, the next page number brings other records of the same second) stops the walk.
    """
    state = dict(state or {"bound": None, "page": 1})
    guard = ProgressGuard(what)
    while True:
        page = await search(bounded(query, state), state.get("page", 1))
        guard.check(page, scope=state.get("bound"))
        state = None if last_search_page(page, per_page) else next_state(state, page)
        yield page, state
        if state is None:
            return


def _created(record: Any) -> str | None:
    if not isinstance(record, dict) or not isinstance(record.get("created_at"), str):
        return None
    when = parse_utc(record["created_at"])
    return utc_text(when) if when else None
