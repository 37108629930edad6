"""The client and pacing budgets a config describes, for the crawlers and the downloader alike."""

from __future__ import annotations

from ..config import Config
from .client import PhilomenaClient
from .polite import Politeness


def make_politeness(config: Config, requests_per_second: float | None = None) -> Politeness:
    """A pacing budget with the config's retry rules; ``requests_per_second`` overrides its pace.

    The file host gets its own budget (at ``download.requests_per_second``), so downloads neither
    starve the API crawl nor hide behind it.
    """
    polite = config["polite"]
    return Politeness(requests_per_second or polite["requests_per_second"], max_retries=polite["max_retries"],
                      give_up_after=polite["give_up_after"], backoff=polite["backoff"])


def make_client(config: Config) -> PhilomenaClient:
    """The client for the configured site, with its pacing budget."""
    return PhilomenaClient(
        config.base_url,
        api_key=config.api_key.reveal() if config.api_key else None,
        filter_id=config["site"]["filter_id"],
        contact=config["site"]["user_agent"] or "",
        politeness=make_politeness(config),
        timeout=config["polite"]["timeout"],
    )
