"""``mirror sync filters``: system filters, the key owner's filters, configured ids, the one in use.

Filters carry no ``updated_at`` and there are few of them (Derpibooru has a handful of system
filters; a user has a few), so every run fetches them all again: a couple of requests, whatever
the size of the site. /filters/system and /filters/user are Scrivener lists that answer a page
past the end with the last page again, so they are walked with :func:`scrivener_pages`, which
stops on ``total``. /filters/user needs a key: without one it is not asked at all (the site
would answer 403), and a key the site does not accept (403 too) is skipped with a note rather
than failing the run. Each id in ``filters.ids`` and the filter in use (``site.filter_id``) are
fetched through /filters/:id unless a list already brought them; one the site will not show
(404: private and not the key owner's) is noted. ``sync_runs.filter_id`` records which filter
every run of every crawler used.

A run is a few requests and stores every page as it arrives, so a killed run simply starts over;
the cursor says what the last run kept, for ``mirror status``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from sqlite_utils import Database

from ..api import KeyRequired, NotFound, Page, PhilomenaClient
from ..store.records import record_ids
from ..store.specs import FILTERS
from ..store.writer import RecordWriter
from .paging import scrivener_pages
from .report import Progress, SyncReport, recorded_run
from .saving import PageSaver

STATE_NAME = "filters"
NO_KEY = "the key owner's filters were skipped: they need an API key (set MIRROR_API_KEY)"


@dataclass(frozen=True)
class FiltersOptions:
    """``ids``: filters to keep besides the system filters, the key owner's and the one in use."""

    ids: tuple[int, ...] = ()


class FilterSync:
    """One run: stores each page or record as it comes and remembers which ids it kept."""

    def __init__(self, client: PhilomenaClient, db: Database, report: SyncReport, progress: Progress | None) -> None:
        self.client = client
        self.report = report
        self.saver = PageSaver(db, RecordWriter(db, FILTERS, client.base_url), report, progress, STATE_NAME)
        self.kept: set[int] = set()

    async def run(self, extra_ids: list[int]) -> None:
        await self.walk(lambda n: self.client.system_filters(page=n))
        if not self.client.has_key:
            self.report.note(NO_KEY)
        else:
            try:
                await self.walk(lambda n: self.client.user_filters(page=n))
            except KeyRequired:
                self.report.note("the key owner's filters were skipped: the site did not accept the API key (403)")
        wanted = [*extra_ids, *([self.client.filter_id] if self.client.filter_id is not None else [])]
        for filter_id in dict.fromkeys(wanted):
            if filter_id not in self.kept:
                await self.fetch_one(filter_id)

    async def walk(self, fetch: Callable[[int], Awaitable[Page]]) -> None:
        async for _, page in scrivener_pages(fetch, what="filters"):
            self.store(page.records)

    async def fetch_one(self, filter_id: int) -> None:
        try:
            record = await self.client.filter(filter_id)
        except NotFound:
            self.report.pages += 1
            self.report.note(f"filter {filter_id} was not found or is private to another user (404)")
            return
        self.store([record])

    def store(self, records: list[Any]) -> None:
        ids = set(record_ids(records))
        cursor = {"kept": sorted(self.kept | ids), "filter_in_use": self.client.filter_id}
        self.kept.update(self.saver.save(records, cursor).keys)


async def sync(client: PhilomenaClient, db: Database, options: FiltersOptions,
               progress: Progress | None = None) -> SyncReport:
    """Mirror the filters described in the module docstring into ``db``."""
    with recorded_run(db, client, STATE_NAME) as report:
        await FilterSync(client, db, report, progress).run(list(options.ids))
    return report
