"""The run shared by the crawlers that walk a newest-first search: comments, galleries, posts.

A run has named walks (what changed since the last run, a one-off walk of everything, batches
of mirrored images not yet covered), each a :mod:`newest_first` keyset walk whose state is saved
in the crawler's cursor in the same transaction as every page it stores. The cursor also keeps
the run's start, which becomes the next run's "changed since" bound only once the run completes,
so a killed run, rerun, covers the same ground and ends as an uninterrupted one would.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from sqlite_utils import Database

from ..api import Page, PhilomenaClient
from ..dates import utc_text
from ..store.follow_ups import cover_pending, forget_covered, mark_covered, pending_images
from ..store.state import load_cursor, save_cursor
from ..store.writer import Saved
from .clock import earliest, since
from .newest_first import EVERYTHING, PER_PAGE, Search, newest_first
from .report import Progress, SyncReport

# Image ids per batch query (``image_id:1 || image_id:2 || ...``): about 1 kB of query.
BATCH = 50
DONE: dict[str, Any] = {"done": True}
EVERYTHING_KEY = "everything"  # where the cursor keeps the walk of everything

Store = Callable[[list[Any]], Saved]


def current_cursor(db: Database, name: str, scope: str, filter_id: int | None) -> dict[str, Any]:
    """The saved cursor, or a fresh one (and the per-image progress forgotten) when the scope or
    filter changed: what the site shows depends on both."""
    cursor = load_cursor(db, name)
    if cursor.get("scope") != scope or cursor.get("filter_id") != filter_id:
        forget_covered(db, name)
        return _fresh_cursor(scope, filter_id)
    return cursor


def hand_over(db: Database, name: str, scope: str, filter_id: int | None, as_of: str) -> None:
    """Leave ``name``'s crawler as a complete run started at ``as_of`` would, for a mirror whose
    records came from a dump made then: its next run walks only what changed since ``as_of``
    (less the overlap). With ``scope = "all"`` the walk of everything is done; with "mirrored"
    every mirrored image is covered. The audit, if any, starts its round at the first batch."""
    cursor = {**_fresh_cursor(scope, filter_id), "last_start": as_of}
    if scope == "all":
        cursor[EVERYTHING_KEY] = DONE
    else:
        cover_pending(db, name)
    save_cursor(db, name, cursor)


def _fresh_cursor(scope: str, filter_id: int | None) -> dict[str, Any]:
    return {"scope": scope, "filter_id": filter_id, "last_start": None, "run": None}


class FollowRun:
    """One run of a crawler over a newest-first search, checkpointed with every page."""

    def __init__(self, client: PhilomenaClient, db: Database, name: str, *, scope: str, overlap: int,
                 search: Callable[..., Awaitable[Page]], report: SyncReport, progress: Progress | None) -> None:
        """``search`` is the client's search method for the resource (``client.search_comments``)."""
        self.client, self.db, self.name, self.report, self.progress = client, db, name, report, progress
        self.search: Search = lambda q, page: search(q, page=page, per_page=PER_PAGE)
        self.cursor = cursor = current_cursor(db, name, scope, client.filter_id)
        if not cursor.get("run"):
            cursor["run"] = {"started": utc_text(), "since": since(cursor.get("last_start"), overlap)}
        self.state: dict[str, Any] = cursor["run"]

    @property
    def since(self) -> str | None:
        """Changes since this date are refreshed; None on a first run."""
        return self.state["since"]

    def save(self) -> None:
        save_cursor(self.db, self.name, self.cursor)

    async def walk(self, holder: dict[str, Any], key: str, query: str, store: Store,
                   on_last: Callable[[], None] | None = None) -> None:
        """Walk ``query``, its state kept at ``holder[key]``; skip it when already done."""
        if holder.get(key) == DONE:
            return
        async for page, after in newest_first(self.search, query, holder.get(key), what=self.name):
            self.state["started"] = earliest(self.state["started"], page.server_date)
            if self.report.expected is None:
                self.report.expected = page.total
            records = [r for r in page.records if r is not None]  # destroyed records come as null
            with self.db.atomic():
                saved = store(records)
                holder[key] = DONE if after is None else after
                if after is None and on_last:
                    on_last()
                self.save()
            self.report.pages += 1
            self.report.count(len(records), saved)
            if self.progress:
                self.progress(self.report)

    async def walk_everything(self, store: Store) -> None:
        """Walk every record of the site, once: the first run's walk (``scope = "all"``)."""
        await self.walk(self.cursor, EVERYTHING_KEY, EVERYTHING, store)

    async def image_batches(self, field: str, store: Store) -> None:
        """Cover the mirrored images not yet covered: ``field:1 || field:2 || ...``, 50 at a time.

        The images of a batch are marked covered with its last page; the next batch is chosen
        afresh, so images mirrored meanwhile (new uploads, a changed query) are picked up.
        """
        while True:
            batch = self.state.get("batch")
            if batch is None:
                ids = pending_images(self.db, self.name, BATCH)
                if not ids:
                    return
                batch = self.state["batch"] = {"ids": ids, "walk": None}

            def covered(ids: list[int] = batch["ids"]) -> None:
                mark_covered(self.db, self.name, ids)
                self.state["batch"] = None

            await self.walk(batch, "walk", " || ".join(f"{field}:{i}" for i in batch["ids"]), store, covered)

    def finish(self) -> None:
        """The run is complete: its start bounds the next run's refresh."""
        self.cursor["last_start"] = self.state["started"]
        self.cursor["run"] = None
        self.save()
