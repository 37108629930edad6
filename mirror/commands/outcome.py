"""What one run of ``sync``, ``download`` or ``verify`` did, as one JSON object.

The same figures feed ``--json`` (printed on stdout), the metrics file (:mod:`.metrics`) and the
health-check ping's body (:mod:`.healthcheck`). The keys are documented in docs/nightly.md ("Running
it every night") and only ever grow: a script written against them keeps working.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from ..dates import utc_text
from ..download import DownloadReport, VerifyReport
from ..export import ExportReport
from ..progress import Reportable, Reporter
from ..sync.report import SyncReport


@dataclass
class RunOutcome:
    """One run: when, what it was asked to do, how it ended, and what its reports said."""

    command: str
    version: str
    config: str | None
    database: str
    plan: str
    started_at: str = field(default_factory=utc_text)
    started: float = field(default_factory=time.time)  # seconds since the epoch, for the metrics
    finished: float | None = None
    finished_at: str | None = None
    exit_code: int | None = None
    error: str | None = None
    reports: list[Reportable] = field(default_factory=list)
    requests: int = 0
    retries: int = 0
    rate_limited: int = 0
    files: dict[str, int] | None = None
    checks: dict[str, Any] | None = None  # when the kept files were last re-hashed (store.downloads.check_ages)

    @property
    def duration(self) -> float | None:
        return None if self.finished is None else round(self.finished - self.started, 3)

    def finish(self, reporter: Reporter, exit_code: int, error: str | None, files: dict[str, int] | None,
               checks: dict[str, Any] | None = None) -> None:
        """Close the run: its exit code, its error line, the reporter's reports and budgets, and the
        files as the run left them."""
        self.finished, self.finished_at = time.time(), utc_text()
        self.exit_code, self.error, self.files, self.checks = exit_code, error, files, checks
        self.reports = list(reporter.reports)
        self.requests = sum(budget.attempts for budget in reporter.budgets)
        self.retries = sum(budget.failures for budget in reporter.budgets)
        self.rate_limited = sum(budget.rate_limited for budget in reporter.budgets)

    def resources(self) -> dict[str, dict[str, Any]]:
        """Each resource synced: its records fetched, new, changed (``updated``), hidden, rejected."""
        return {report.resource: {"fetched": report.fetched, "new": report.new, "updated": report.updated,
                                  "hidden": report.hidden, "rejected": report.rejected,
                                  "requests": report.requests, "notes": list(report.notes)}
                for report in self.reports if isinstance(report, SyncReport)}

    def downloads(self) -> dict[str, Any] | None:
        """The files fetched (the last download report: a verify --repair's own, or the sync's)."""
        found = [report for report in self.reports if isinstance(report, DownloadReport)]
        if not found:
            return None
        report = found[-1]
        return {"downloaded": report.downloaded, "bytes": report.bytes, "originals": report.originals,
                "already_kept": report.adopted, "failed": report.failed, "requests": report.requests,
                "left": max((report.expected or 0) - report.fetched - report.failed, 0)}

    def verify(self) -> dict[str, Any] | None:
        found = [report for report in self.reports if isinstance(report, VerifyReport)]
        if not found:
            return None
        report = found[-1]
        return {"checked": report.fetched, "sample": str(report.sample) if report.sample else None,
                "missing": list(report.missing), "corrupt": list(report.corrupt),
                "repaired": None if report.repaired is None else report.repaired.downloaded + report.repaired.adopted,
                "not_repaired": report.unrepaired}

    def export(self) -> dict[str, Any] | None:
        """The versions exported to Delta Lake (``mirror export``, or the nightly sync's export step)."""
        found = [report for report in self.reports if isinstance(report, ExportReport)]
        return found[-1].to_json() if found else None

    def to_json(self) -> dict[str, Any]:
        return {
            "command": self.command, "version": self.version, "config": self.config, "database": self.database,
            "plan": self.plan, "started_at": self.started_at, "finished_at": self.finished_at,
            "duration_seconds": self.duration, "exit_code": self.exit_code, "error": self.error,
            "resources": self.resources(), "downloads": self.downloads(), "verify": self.verify(),
            "requests": self.requests, "retries": self.retries, "rate_limited": self.rate_limited,
            "files": self.files, "checks": self.checks, "export": self.export(),
        }
