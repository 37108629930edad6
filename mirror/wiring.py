"""A Config turned into what the layers take: the client, the pacing budgets, the storage, the options.

The layers (``api``, ``sync``, ``download``, ``browse``) take plain typed arguments and never read a
Config, so that each can be used, and tested, without one. This module, the CLI and its commands
are where a config becomes those arguments.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from .api import PhilomenaClient
from .api.polite import Politeness
from .config import Config
from .config.sections import PoliteSection
from .download import DownloadOptions, Storage
from .download.layout import wanted
from .sync.runner import OPTIONS


def make_politeness(polite: PoliteSection, requests_per_second: float | None = None) -> Politeness:
    """A pacing budget with the ``[polite]`` retry rules; ``requests_per_second`` overrides its pace."""
    return Politeness(requests_per_second or polite.requests_per_second, max_retries=polite.max_retries,
                      give_up_after=polite.give_up_after, backoff=polite.backoff,
                      searches_per_10s=polite.searches_per_10s)


def file_politeness(config: Config) -> Politeness:
    """The file host's own budget (at ``download.requests_per_second``), so downloads neither
    starve the API crawl nor hide behind it."""
    return make_politeness(config.polite, config.download.requests_per_second)


def make_client(config: Config) -> PhilomenaClient:
    """The client for the configured site, with its pacing budget."""
    return PhilomenaClient(
        config.base_url,
        api_key=config.api_key.reveal() if config.api_key else None,
        filter_id=config.site.filter_id,
        contact=config.site.user_agent or "",
        politeness=make_politeness(config.polite),
        timeout=config.polite.timeout,
    )


def open_storage(config: Config) -> Storage:
    """The files root the config names (a folder or an fsspec URL)."""
    endpoint = config.store.endpoint_url
    options = {"endpoint_url": endpoint} if endpoint else {}
    return Storage(str(config.store.files), options=options, staging=config.download.partial_dir)


def wanted_representations(config: Config) -> list[str]:
    """The representation names this config keeps, extras included."""
    download = config.download
    return wanted(download.representations, svg_originals=download.svg_originals, gif_videos=download.gif_videos)


def download_options(config: Config) -> DownloadOptions:
    """How this config's download runs work (the file host's timeout and contact are the site's)."""
    return DownloadOptions(representations=tuple(wanted_representations(config)),
                           concurrency=config.download.concurrency, file_deadline=config.download.file_deadline,
                           timeout=config.polite.timeout, contact=config.site.user_agent or "")


def crawler_options(config: Config, resource: str) -> Any:
    """The options of ``resource``'s crawler: its config section's keys of the same names."""
    section = getattr(config, resource)
    kind = OPTIONS[resource]
    return kind(**{field.name: getattr(section, field.name) for field in fields(kind)})

