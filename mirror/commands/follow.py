"""``mirror follow``: the follower run as a service, from a config.

It holds the mirror's follow lock (``<database>.follow.lock``), not the runs' lock: one follower
per mirror, writing beside the nightly ``mirror sync`` rather than after it. Both store through
the same writers, one short transaction at a time (SQLite's WAL and busy timeout take turns), and
each keeps its own cursor (``follow``, ``images``, ...), so neither moves the other's place. A
record both write is the site's record either way; the later write wins, as two syncs in a row.

It reports as the nightly job does: ``--json`` prints its report when it stops, and every
:data:`REPORT_EVERY` seconds it rewrites its metrics file and pings the health check.

SIGTERM (``systemctl stop``) and Ctrl-C stop it at the next ``await``: the event being stored is
stored whole or not at all, the run is recorded, and it exits 0 with its summary.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable

import click
from sqlite_utils import Database

from ..config import Config
from ..follow import FollowOptions, FollowReport, FollowScope, follow
from ..progress import stamped
from ..store import database_errors, open_database, run_lock
from ..store.history import keep_counters
from ..wiring import make_client
from .healthcheck import Pinger
from .metrics import follow_metrics_path, write_follow_metrics

__all__ = ["REPORT_EVERY", "follow_options", "run_follower"]

REPORT_EVERY = 60.0  # seconds between the metrics file's rewrites and the health-check pings


def follow_options(config: Config) -> FollowOptions:
    """What this config follows: its images query and overlap, comments and forums if enabled."""
    scope = FollowScope(all_images=config.images.query.strip() == "*", comments=config.comments.enabled,
                        forums=config.forums.enabled)
    return FollowOptions(query=config.images.query, scope=scope, overlap=config.images.refresh_overlap,
                         user_agent=config.site.user_agent or None)


def run_follower(config: Config, *, as_json: bool = False, quiet: bool = False) -> FollowReport:
    """Follow until stopped; print the summary (stderr) and, with ``as_json``, the report (stdout)."""
    report = FollowReport()

    def say(line: str) -> None:
        if not quiet:
            click.echo(stamped(line, sys.stderr), err=True)

    with run_lock(config.database, "follow"), database_errors(config.database, config.store.busy_timeout):
        db = open_database(config.database, busy_timeout=config.store.busy_timeout)
        keep_counters(db, config.history.counters)
        try:
            asyncio.run(_follow(config, db, report, say))
        except KeyboardInterrupt:
            say("stopped; everything received is stored, and the next start catches up from "
                f"{report.sure_until or 'the last sync'}")
        finally:
            db.close()
            write_report_metrics(config, report, say)
            say(report.summary())
            if as_json:
                click.echo(json.dumps(report.to_json(), ensure_ascii=False))
    return report


async def _follow(config: Config, db: Database, report: FollowReport, say: Callable[[str], None]) -> None:
    reporting = asyncio.create_task(_reporting(config, report, say))
    try:
        async with make_client(config) as client:
            await follow(client, db, follow_options(config), report=report, say=say)
    finally:
        reporting.cancel()


async def _reporting(config: Config, report: FollowReport, say: Callable[[str], None]) -> None:
    """Every :data:`REPORT_EVERY` seconds: the metrics file (``report.metrics_file``, ``-follow``
    added to its name), and the health-check ping while the follower is connected and caught up,
    so a check with a period of a few minutes fails when it is not."""
    section = config.report
    pinger = (Pinger(section.healthcheck_url, timeout=section.healthcheck_timeout,
                     user_agent=config.site.user_agent or "booru-mirror", warn=say)
              if section.healthcheck_url else None)
    while True:
        await asyncio.sleep(REPORT_EVERY)
        write_report_metrics(config, report, say)
        if pinger is not None and report.connected and not report.catching_up:
            await asyncio.to_thread(pinger.alive, report.summary())


def write_report_metrics(config: Config, report: FollowReport, say: Callable[[str], None]) -> None:
    if not config.report.metrics_file:
        return
    path = follow_metrics_path(config.report.metrics_file)
    try:
        write_follow_metrics(path, report.to_json())
    except OSError as e:
        say(f"metrics: cannot write {path} ({e.strerror or e}); the follower goes on")
