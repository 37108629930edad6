"""``mirror import-dump FILE_OR_URL``: start (or refresh) a mirror from the site's nightly dump.

The dump is fetched when given as a URL (resumed, paced, checked against ``--sha256``), imported
(:mod:`mirror.dump.importer`), and the mirror handed over to ``mirror sync``
(:func:`mirror.sync.handover.hand_over`): its cursors are set as a complete first sync started
when the dump was made would have left them, so the next sync asks only for what changed since.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

from sqlite_utils import Database

from ..config import Config
from ..dates import utc_text
from ..dump.importer import ImportReport, import_dump
from ..progress import Reporter
from ..sync.handover import hand_over
from ..wiring import crawler_options

__all__ = ["run_import", "file_root"]

# Where the boards that publish dumps keep their files, when the mirror holds no record yet that
# says so: Derpibooru's CDN, or the site's own ``/img`` (Philomena's default ``IMAGE_URL_ROOT``).
_FILE_ROOTS = {"derpibooru.org": "https://derpicdn.net/img", "trixiebooru.org": "https://derpicdn.net/img"}


async def run_import(config: Config, db: Database, source: str, reporter: Reporter | None = None, *,
                     sha256: str | None = None, root: str | None = None) -> ImportReport:
    """Import the dump at ``source`` (a path or an https URL) into ``db`` and hand the mirror over."""
    reporter = reporter or Reporter(interactive=False)
    path = await _local_copy(config, source, sha256, reporter)
    report = import_dump(db, path, file_root=root or file_root(config, db),
                         staging_path=Path(f"{config.database}.dump-staging"), progress=reporter.update,
                         line=reporter.line, stopping=_cancelled(asyncio.current_task()))
    for step in report.steps:
        reporter.done(step)
    crawls = {name: crawler_options(config, name) for name in config.enabled_resources()}
    handed = hand_over(db, report.as_of, crawls, filter_id=config.site.filter_id,
                       walked_at=min(report.dumped_at, utc_text()))
    reporter.line(f"dump of {report.dumped_at} imported; the next sync asks for what changed since {report.as_of}"
                  + (f" ({', '.join(handed)})" if handed else ""))
    return report


def _cancelled(task: asyncio.Task | None) -> Callable[[], bool]:
    """Whether this run's task was cancelled, as ``asyncio.run`` cancels it on Ctrl-C (and the CLI on
    SIGTERM). The import runs without awaiting, so the cancellation cannot reach it at an ``await``:
    it asks this between batches and stops there (:class:`~mirror.dump.staging.Stopped`)."""
    return lambda: task is not None and task.cancelling() > 0


async def _local_copy(config: Config, source: str, sha256: str | None, reporter: Reporter) -> Path:
    """The dump as a local file: ``source`` itself, or fetched beside the database."""
    if urlsplit(source).scheme not in ("http", "https"):
        path = Path(source)
        if sha256:
            from ..dump.fetch import check_sha256

            check_sha256(path, sha256)
        return path
    from ..api.client import http_client
    from ..dump.fetch import fetch_dump
    from ..wiring import file_politeness

    folder = Path(config.database).parent
    async with http_client(timeout=config.polite.timeout, contact=config.site.user_agent or "", max_connections=1) as http:
        return await fetch_dump(source, folder, http, file_politeness(config), sha256=sha256)


def file_root(config: Config, db: Database) -> str:
    """Where image records say the files are: as the mirror's records already say, else the
    board's known file host, else the site's own ``/img``."""
    row = db.execute("SELECT json_extract(representations, '$.full') FROM images "
                     "WHERE representations IS NOT NULL LIMIT 1").fetchone()
    if row and isinstance(row[0], str) and "/view/" in row[0]:
        return row[0].split("/view/")[0]
    host = (urlsplit(config.site.base_url).hostname or "").removeprefix("www.")
    return _FILE_ROOTS.get(host, config.site.base_url.rstrip("/") + "/img")
