"""The commands that write the mirror, from a config: ``sync`` (downloads, then the export, included
when enabled), ``download``, ``verify``, ``export`` and ``checkpoints``.

Each makes the client, the pacing budgets and the storage through :mod:`mirror.wiring` and hands
them to its layer; the CLI (and the tests and benchmarks, in process) call these.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

from sqlite_utils import Database

from ..api import PhilomenaClient
from ..config import Config
from ..download import DownloadReport, Sample, VerifyReport, run_downloads, verify_files
from ..export import ExportReport, export_archive
from ..progress import Reportable, Reporter
from ..store import checkpoints as tag_checkpoints
from ..store import vacuum as reclaim
from ..store.history import keep_counters
from ..sync.runner import run_sync
from ..wiring import crawler_options, download_options, file_politeness, make_client, open_storage


async def sync(config: Config, db: Database, names: Sequence[str] = (), reporter: Reporter | None = None
               ) -> list[Reportable]:
    """Sync ``names`` (or every enabled resource) into ``db``, then download when enabled, then export
    when ``[export]`` is enabled and names a DEST.

    The downloads share the API client, and its pacing budget, with the crawlers.
    """
    reporter = reporter or Reporter(interactive=False)
    crawls = {name: crawler_options(config, name) for name in (names or config.enabled_resources())}
    keep_counters(db, config.history.counters)
    async with make_client(config) as client:
        reporter.watch(client.politeness)
        downloads = partial(_download, config, db, client, reporter) if config.download.enabled else None
        reports = await run_sync(client, db, crawls, reporter, download=downloads)
    tag_checkpoints.build(db, reporter.line)  # for the tags the night changed enough
    if config.export.enabled and config.export.dest:
        reports.append(await export(config, db, reporter))
    return reports


async def export(config: Config, db: Database, reporter: Reporter | None = None, *, dest: str | None = None,
                 compact: bool = False) -> ExportReport:
    """Export to ``dest`` (default ``export.dest``) what changed since the last export; with
    ``compact``, then rewrite the small files into large ones (keeping ``export.retention_hours``)."""
    reporter = reporter or Reporter(interactive=False)
    report = export_archive(db, dest or config.export.dest, endpoint_url=config.store.endpoint_url, compact=compact,
                            retention_hours=config.export.retention_hours, timeout=config.export.timeout,
                            reporter=reporter)
    reporter.done(report)
    return report


async def checkpoints(config: Config, db: Database, reporter: Reporter | None = None) -> tag_checkpoints.Built:
    """Write the checkpoints of the tags' image lists that the history written since the last
    build calls for (:mod:`mirror.store.checkpoints`); sync and import-dump run it at their end."""
    reporter = reporter or Reporter(interactive=False)
    return tag_checkpoints.build(db, reporter.line)


async def vacuum(config: Config, db: Database, reporter: Reporter | None = None) -> reclaim.Vacuumed:
    """Give the archive's free pages back to the disk (:mod:`mirror.store.vacuum`)."""
    reporter = reporter or Reporter(interactive=False)
    return reclaim.vacuum(db, config.database, reporter.line)


async def download(config: Config, db: Database, reporter: Reporter | None = None, *,
                   retry_failed: bool = False) -> DownloadReport:
    """Fetch the pending files (``retry_failed``: those that failed before too)."""
    reporter = reporter or Reporter(interactive=False)
    async with make_client(config) as client:
        reporter.watch(client.politeness)
        return await _download(config, db, client, reporter, retry_failed=retry_failed)


async def verify(config: Config, db: Database, reporter: Reporter | None = None, *,
                 repair: bool = False, sample: Sample | None = None) -> VerifyReport:
    """Re-hash the kept files (``sample``: one slice of them); with ``repair``, fetch the missing and
    corrupt ones again."""
    reporter = reporter or Reporter(interactive=False)
    async with make_client(config) as client:
        reporter.watch(client.politeness)
        politeness = reporter.watch(file_politeness(config))
        return await verify_files(db, client, politeness, open_storage(config), download_options(config),
                                  reporter, repair=repair, sample=sample)


async def _download(config: Config, db: Database, client: PhilomenaClient, reporter: Reporter, *,
                    retry_failed: bool = False) -> DownloadReport:
    return await run_downloads(db, client, reporter.watch(file_politeness(config)), open_storage(config), download_options(config),
                               reporter, retry_failed=retry_failed)
