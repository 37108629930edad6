"""Running a sync from a config: one client, one pacing budget, the resources in order.

Each resource has a crawler module in this package with the same entry point,
``async def sync(client, db, options, progress) -> SyncReport``, where ``options`` is the
resource's section of the config. A full sync runs them in :data:`ORDER`: images first, since
the others follow what the images name, and profiles last, since they follow everyone's users.
"""

from __future__ import annotations

import importlib
import importlib.util

from sqlite_utils import Database

from ..api.configured import make_client
from ..config import Config
from ..download import run_downloads
from ..errors import EXIT_USAGE, MirrorError
from ..progress import Reportable, Reporter
from ..store.schema import refresh_statistics_if_grown
from . import session
from .featured import record_featured

__all__ = ["ORDER", "NotAvailable", "available", "resources_to_sync", "run_sync"]

ORDER = ("images", "tags", "comments", "galleries", "forums", "posts", "filters", "profiles")


class NotAvailable(MirrorError):
    """A resource was asked for that this version cannot mirror yet."""

    exit_code = EXIT_USAGE


def available() -> list[str]:
    """The resources that have a crawler, in sync order."""
    return [name for name in ORDER if importlib.util.find_spec(f"{__package__}.{name}") is not None]


def resources_to_sync(config: Config, names: tuple[str, ...] | list[str]) -> list[str]:
    """The named resources, or every enabled one, in sync order."""
    wanted = list(names) if names else config.enabled_resources()
    ready = available()
    missing = [name for name in wanted if name not in ready]
    if missing:
        raise NotAvailable(f"this version cannot mirror {', '.join(missing)} yet; available: {', '.join(ready)}")
    return [name for name in ORDER if name in wanted]


async def run_sync(config: Config, db: Database, names: tuple[str, ...] | list[str] = (),
                   reporter: Reporter | None = None) -> list[Reportable]:
    """Sync ``names`` (or every enabled resource) into ``db``, then download when enabled.

    A run that syncs images also records the site's featured image, at most once per UTC day.
    A rerun of a killed run skips the resources that run finished (:mod:`.session`).

    Raises on the first failure. The downloads come last and share the API client (and its
    pacing budget) for the rare record they need to fetch again.
    """
    reporter = reporter or Reporter(interactive=False)
    reports: list[Reportable] = []
    resources = resources_to_sync(config, names)
    finished = session.begin(db, resources)
    async with make_client(config) as client:
        for name in resources:
            if name in finished:
                reporter.line(f"{name}: finished by the interrupted run, not asked again")
                continue
            crawler = importlib.import_module(f"{__package__}.{name}")
            report = await crawler.sync(client, db, config[name], reporter.update)
            reporter.done(report)
            reports.append(report)
        if "images" in resources and await record_featured(client, db):
            reporter.line("featured image of the day recorded")
        if config["download"]["enabled"]:
            reports.append(await run_downloads(config, db, reporter, client=client))
    session.end(db)
    refresh_statistics_if_grown(db)  # the planner's view of the tables, for `mirror serve`'s searches
    return reports
