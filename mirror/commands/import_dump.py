"""``mirror import-dump FILE_OR_URL``: start (or refresh) a mirror from the site's nightly dump.

The dump is fetched when given as a URL (resumed, paced, checked against ``--sha256``, its
progress shown), imported (:mod:`mirror.dump.importer`), and the mirror handed over to ``mirror
sync`` (:func:`mirror.sync.handover.hand_over`): its cursors are set as a complete first sync
started when the dump was made would have left them, so the next sync asks only for what changed
since. A downloaded dump is some 5 GB of disk the mirror no longer needs once imported: it is
removed then, unless ``keep``; until then it stays beside the database, so that a run stopped
(or an import failed) does not fetch it again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

from sqlite_utils import Database

from ..config import Config
from ..dates import utc_text
from ..dump.archive import DumpError
from ..dump.importer import ImportReport, import_dump
from ..dump.source import check_source
from ..progress import Reporter
from ..store import checkpoints, derived
from ..sync.handover import hand_over
from ..wiring import crawler_options

__all__ = ["run_import", "file_root"]

# Where the boards that publish dumps keep their files, when the mirror holds no record yet that
# says so: Derpibooru's CDN, or the site's own ``/img`` (Philomena's default ``IMAGE_URL_ROOT``).
_FILE_ROOTS = {"derpibooru.org": "https://derpicdn.net/img", "trixiebooru.org": "https://derpicdn.net/img"}


async def run_import(config: Config, db: Database, source: str, reporter: Reporter | None = None, *,
                     sha256: str | None = None, root: str | None = None, keep: bool = False,
                     check_space: bool = True) -> ImportReport:
    """Import the dump at ``source`` (a path or an https URL) into ``db`` and hand the mirror over;
    a dump it downloaded is removed once imported, unless ``keep``."""
    reporter = reporter or Reporter(interactive=False)
    target = check_source(source)
    if isinstance(target, str):
        path = await _downloaded(config, target, sha256, reporter)
    else:
        path = _checked(target, sha256, reporter)
    root = root or file_root(config, db)
    try:
        report = import_dump(db, path, file_root=root,
                             staging_path=Path(f"{config.database}.dump-staging"), progress=reporter.update,
                             line=reporter.line, stopping=_cancelled(asyncio.current_task()), space_check=check_space)
    except DumpError as e:
        if path == target:
            raise
        raise DumpError(f"{e}; to download it anew, remove {path} and run again") from None
    for step in report.steps:
        reporter.done(step)
    checkpoints.build(db, reporter.line)  # the board as of a moment, at the history's depth
    crawls = {name: crawler_options(config, name) for name in config.enabled_resources()}
    handed = hand_over(db, report.as_of, crawls, filter_id=config.site.filter_id,
                       walked_at=min(report.dumped_at, utc_text()))
    reporter.line(f"image records name their files below {root} (--file-root names another host)")
    reporter.line(f"dump of {report.dumped_at} imported; the next sync asks for what changed since {report.as_of}"
                  + (f" ({', '.join(handed)})" if handed else ""))
    if path != target:
        _drop_download(path, keep, reporter)
    return report


def _cancelled(task: asyncio.Task | None) -> Callable[[], bool]:
    """Whether this run's task was cancelled, as ``asyncio.run`` cancels it on Ctrl-C (and the CLI on
    SIGTERM). The import runs without awaiting, so the cancellation cannot reach it at an ``await``:
    it asks this between batches and stops there (:class:`~mirror.dump.staging.Stopped`)."""
    return lambda: task is not None and task.cancelling() > 0


def _checked(path: Path, sha256: str | None, reporter: Reporter) -> Path:
    if sha256:
        from ..dump.fetch import check_sha256

        check_sha256(path, sha256)
        reporter.line(f"{path}: SHA-256 matches")
    return path


async def _downloaded(config: Config, url: str, sha256: str | None, reporter: Reporter) -> Path:
    """The dump at ``url``, fetched beside the database (or found there from an earlier run)."""
    from ..api.client import http_client
    from ..dump.fetch import Stall, dump_path, fetch_dump
    from ..wiring import file_politeness

    folder = Path(config.database).parent
    label = dump_path(url, folder).name
    stall = Stall(config.download.dump_stall_seconds, config.download.dump_min_rate)
    contact = config.site.user_agent or ""
    async with http_client(timeout=config.polite.timeout, contact=contact, max_connections=1) as http:
        return await fetch_dump(url, folder, http, reporter.watch(file_politeness(config)), sha256=sha256,
                                progress=lambda done, total: reporter.transfer(label, done, total),
                                line=reporter.line, stall=stall)


def _drop_download(path: Path, keep: bool, reporter: Reporter) -> None:
    """Remove the imported download (the mirror holds it all now), or say where it stays."""
    if keep:
        reporter.line(f"the dump stays at {path} (--keep)")
        return
    try:
        path.unlink()
    except OSError as e:
        reporter.warn(f"the dump was imported but cannot be removed ({e.strerror or e}): remove {path} yourself")
        return
    reporter.line(f"removed the downloaded dump {path}, no longer needed (--keep keeps it)")


def file_root(config: Config, db: Database) -> str:
    """Where image records say the files are: as the mirror's records already say, else the
    board's known file host, else the site's own ``/img``."""
    row = db.execute("SELECT json_extract(representations, '$.full') FROM images "
                     "WHERE representations IS NOT NULL LIMIT 1").fetchone()
    if row and (root := derived.file_root(row[0])):
        return root
    host = (urlsplit(config.site.base_url).hostname or "").removeprefix("www.")
    return _FILE_ROOTS.get(host, config.site.base_url.rstrip("/") + "/img")
