"""Running a sync from a config: one client, one pacing budget, the resources in order."""

from __future__ import annotations

from sqlite_utils import Database

from ..api.configured import make_client
from ..config import Config
from ..download import run_downloads
from ..progress import Reportable, Reporter
from .images import sync_images

__all__ = ["AVAILABLE", "NotAvailable", "make_client", "resources_to_sync", "run_sync"]

# The order a full sync runs in: images first, since the other crawlers follow what they name.
AVAILABLE = ("images",)


class NotAvailable(Exception):
    """A resource was asked for that this version cannot mirror yet."""


def resources_to_sync(config: Config, names: tuple[str, ...] | list[str]) -> list[str]:
    """The named resources, or every enabled one, in sync order."""
    wanted = list(names) if names else config.enabled_resources()
    missing = [name for name in wanted if name not in AVAILABLE]
    if missing:
        raise NotAvailable(f"this version cannot mirror {', '.join(missing)} yet; available: {', '.join(AVAILABLE)}")
    return [name for name in AVAILABLE if name in wanted]


async def run_sync(config: Config, db: Database, names: tuple[str, ...] | list[str] = (),
                   reporter: Reporter | None = None) -> list[Reportable]:
    """Sync ``names`` (or every enabled resource) into ``db``, then download when enabled.

    Raises on the first failure. The downloads come last and share the API client (and its
    pacing budget) for the rare record they need to fetch again.
    """
    reporter = reporter or Reporter(interactive=False)
    reports = []
    async with make_client(config) as client:
        for name in resources_to_sync(config, names):
            if name == "images":
                images = config["images"]
                report = await sync_images(client, db, query=images["query"], include_hidden=images["include_hidden"],
                                           overlap=images["refresh_overlap"], progress=reporter.update)
            reporter.done(report)
            reports.append(report)
        if config["download"]["enabled"]:
            reports.append(await run_downloads(config, db, reporter, client=client))
    return reports
