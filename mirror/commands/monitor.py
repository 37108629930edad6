"""What a writing run (``sync``, ``download``, ``verify``) tells the outside besides its summary
lines: one header line saying what it will do, a health-check ping at its start and end, the
metrics file, and the run as one JSON object.

The CLI opens a :class:`Monitor` before the run and calls :meth:`Monitor.end` however the run
ends, with the exit code it ends with; nothing here can change that code.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from sqlite_utils import Database

from ..config import Config
from ..download import Sample
from ..progress import Reporter
from ..store import downloads
from ..urls import redact
from ..wiring import wanted_representations
from .healthcheck import Pinger
from .metrics import write_metrics
from .outcome import RunOutcome


def mirror_version() -> str:
    try:
        return version("booru-mirror")
    except PackageNotFoundError:  # pragma: no cover - run from a source tree that was never installed
        return "unknown"


class Monitor:
    """One run as the outside sees it: header, pings, metrics, the JSON object."""

    def __init__(self, config: Config, command: str, plan: str, reporter: Reporter, *, count_files: bool = True) -> None:
        self.config = config
        # Counting the files pending reads every image (seconds at a million): not for a run that touches none.
        self.count_files = count_files
        self.reporter = reporter
        self.outcome = RunOutcome(command=command, version=mirror_version(),
                                  config=str(config.path.resolve()) if config.path else None,
                                  database=str(config.database.resolve()), plan=plan)  # a log has no cwd
        url = config.report.healthcheck_url
        self.pinger = url and Pinger(url, timeout=config.report.healthcheck_timeout,
                                     user_agent=f"booru-mirror/{self.outcome.version}", warn=reporter.warn)

    def start(self) -> None:
        """The header line (left out under --quiet), then the start ping."""
        outcome = self.outcome
        self.reporter.line(f"mirror {outcome.version} {outcome.command}: config {outcome.config or 'none (defaults)'}"
                           f", database {outcome.database}; {outcome.plan}")
        if self.pinger:
            self.pinger.start()

    def end(self, exit_code: int, error: str | None, db: Database | None) -> RunOutcome:
        """Close the run: the metrics file, then the end ping with ``exit_code``."""
        outcome = self.outcome
        counted = db if self.count_files else None
        outcome.finish(self.reporter, exit_code, error, file_counts(counted, wanted_representations(self.config)),
                       file_checks(counted))
        if self.config.report.metrics_file:
            try:
                write_metrics(self.config.report.metrics_file, outcome)
            except OSError as e:
                self.reporter.warn(f"metrics: cannot write {self.config.report.metrics_file} ({e.strerror or e}); "
                                   "the run goes on")
        if self.pinger:
            self.pinger.end(exit_code, json.dumps(outcome.to_json(), ensure_ascii=False))
        return outcome


def file_counts(db: Database | None, representations: Sequence[str]) -> dict[str, int] | None:
    """Files pending (what the next download would fetch), kept and failed; None if the database
    cannot be read (the run's own error says why)."""
    if db is None:
        return None
    try:
        by_status = downloads.counts(db)
        return {"pending": downloads.outstanding(db, representations), "kept": by_status[downloads.DONE],
                "failed": by_status[downloads.FAILED]}
    except sqlite3.Error:
        return None


def file_checks(db: Database | None) -> dict[str, Any] | None:
    """When the kept files were last re-hashed; None if the database cannot be read."""
    try:
        return downloads.check_ages(db) if db is not None else None
    except sqlite3.Error:
        return None


def sync_plan(config: Config, names: Sequence[str]) -> str:
    """What ``mirror sync`` will do, in words, for the header line."""
    plan = f"sync {', '.join(names or config.enabled_resources())} from {redact(config.base_url)}"
    if config.download.enabled:
        plan += f", then download ({', '.join(wanted_representations(config))})"
    if config.export.enabled and config.export.dest:
        plan += f", then export to {redact(config.export.dest)}"
    return plan


def export_plan(dest: str, compact: bool) -> str:
    return f"export what changed to {redact(dest)}" + (", then compact its tables" if compact else "")


def download_plan(config: Config, retry_failed: bool) -> str:
    plan = f"download the pending files ({', '.join(wanted_representations(config))})"
    return plan + (", the failed ones again too" if retry_failed else "")


def verify_plan(sample: Sample | None, repair: bool) -> str:
    plan = f"re-hash slice {sample} of the kept files" if sample else "re-hash every kept file"
    return plan + (", fetching missing and corrupt ones again" if repair else "")
