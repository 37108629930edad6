"""Running a sync from a config: one client, one pacing budget, the resources in order."""

from __future__ import annotations

from sqlite_utils import Database

from ..api import PhilomenaClient
from ..api.polite import Politeness
from ..config import Config
from ..progress import Reporter
from .images import SyncReport, sync_images

# The order a full sync runs in: images first, since the other crawlers follow what they name.
AVAILABLE = ("images",)


class NotAvailable(Exception):
    """A resource was asked for that this version cannot mirror yet."""


def make_client(config: Config) -> PhilomenaClient:
    """The client for the configured site, with its pacing budget."""
    polite = config["polite"]
    politeness = Politeness(polite["requests_per_second"], max_retries=polite["max_retries"],
                            give_up_after=polite["give_up_after"], backoff=polite.get("backoff", 1.0))
    return PhilomenaClient(
        config.base_url,
        api_key=config.api_key.reveal() if config.api_key else None,
        filter_id=config["site"]["filter_id"],
        contact=config["site"]["user_agent"] or "",
        politeness=politeness,
        timeout=polite["timeout"],
    )


def resources_to_sync(config: Config, names: tuple[str, ...] | list[str]) -> list[str]:
    """The named resources, or every enabled one, in sync order."""
    wanted = list(names) if names else config.enabled_resources()
    missing = [name for name in wanted if name not in AVAILABLE]
    if missing:
        raise NotAvailable(f"this version cannot mirror {', '.join(missing)} yet; available: {', '.join(AVAILABLE)}")
    return [name for name in AVAILABLE if name in wanted]


async def run_sync(config: Config, db: Database, names: tuple[str, ...] | list[str] = (),
                   reporter: Reporter | None = None) -> list[SyncReport]:
    """Sync ``names`` (or every enabled resource) into ``db``; raise on the first failure."""
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
    return reports
