"""Running the crawlers: one client, one pacing budget, the resources in order.

Each resource has a crawler module in this package with one entry point,
``async def sync(client, db, options, progress) -> SyncReport``, where ``options`` is the
crawler's own frozen dataclass (:data:`OPTIONS`). :data:`CRAWLERS` lists them in the order a full
sync runs them: images first, since the others follow what the images name, and profiles last,
since they follow everyone's users.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from sqlite_utils import Database

from ..api import PhilomenaClient
from ..progress import Reportable, Reporter
from ..store.statistics import refresh_statistics_if_grown
from . import comments, filters, forums, galleries, images, posts, profiles, session, tags
from .featured import record_featured
from .report import Progress, SyncReport

__all__ = ["CRAWLERS", "OPTIONS", "ORDER", "run_sync"]

Crawler = Callable[[PhilomenaClient, Database, Any, Progress | None], Awaitable[SyncReport]]

CRAWLERS: dict[str, Crawler] = {
    "images": images.sync,
    "tags": tags.sync,
    "comments": comments.sync,
    "galleries": galleries.sync,
    "forums": forums.sync,
    "posts": posts.sync,
    "filters": filters.sync,
    "profiles": profiles.sync,
}
ORDER = tuple(CRAWLERS)

# The options each crawler takes: the keys of the resource's config section, less ``enabled``.
OPTIONS: dict[str, type] = {
    "images": images.ImagesOptions,
    "tags": tags.TagsOptions,
    "comments": comments.CommentsOptions,
    "galleries": galleries.GalleriesOptions,
    "forums": forums.ForumsOptions,
    "posts": posts.PostsOptions,
    "filters": filters.FiltersOptions,
    "profiles": profiles.ProfilesOptions,
}


async def run_sync(client: PhilomenaClient, db: Database, crawls: Mapping[str, Any], reporter: Reporter | None = None,
                   *, download: Callable[[], Awaitable[Reportable]] | None = None) -> list[Reportable]:
    """Run the crawler of each resource in ``crawls`` (resource -> its options) in :data:`ORDER`.

    A run that syncs images also records the site's featured image, at most once per UTC day.
    A rerun of a killed run skips the resources that run finished (:mod:`.session`). ``download``,
    when given, fetches the files after the crawls and before the session ends; it shares
    ``client`` (and its pacing budget) for the rare record it needs to fetch again.

    Raises on the first failure.
    """
    reporter = reporter or Reporter(interactive=False)
    reports: list[Reportable] = []
    resources = [name for name in ORDER if name in crawls]
    finished = session.begin(db, resources)
    for name in resources:
        if name in finished:
            reporter.line(f"{name}: finished by the interrupted run, not asked again")
            continue
        report = await CRAWLERS[name](client, db, crawls[name], reporter.update)
        reporter.done(report)
        reports.append(report)
    if "images" in resources and await record_featured(client, db):
        reporter.line("featured image of the day recorded")
    if download is not None:
        reports.append(await download())
    session.end(db)
    refresh_statistics_if_grown(db)  # the planner's view of the tables, for `mirror serve`'s searches
    return reports
