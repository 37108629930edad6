"""Progress display: a live bar on a terminal, one plain summary line per resource under cron.

A single large file (a dump of some 5 GB) is shown in bytes instead (:meth:`Reporter.transfer`):
on a terminal a bar with its size, rate and time left; under cron a dated line a minute.

Every line a run prints goes through :meth:`Reporter.line`, the one place that decides whether it
is shown (``quiet`` keeps only warnings) and how: a line written to a file or a pipe starts with
its UTC time, so the nights appended to one log can be told apart; on a terminal it does not.
The Reporter also keeps what the run reported (:attr:`Reporter.reports`) and the pacing budgets it
spent (:meth:`Reporter.watch`), for the run's summary (``--json``, the metrics file).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import IO, Protocol, TypeVar

from rich.console import Console
from rich.progress import (BarColumn, DownloadColumn, MofNCompleteColumn, Progress, ProgressColumn, SpinnerColumn,
                           Task, TextColumn, TimeElapsedColumn, TimeRemainingColumn, TransferSpeedColumn)
from rich.text import Text

from .dates import utc_text
from .words import human_bytes, human_duration

# Seconds between two lines about a transfer under cron.
TRANSFER_LINE_EVERY = 60.0


class Reportable(Protocol):
    resource: str
    fetched: int
    expected: int | None

    def summary(self) -> str: ...


class Budget(Protocol):
    """A pacing budget's counts (:class:`mirror.api.polite.Politeness`)."""

    attempts: int
    failures: int
    rate_limited: int
    on_retry: Callable[[str], None] | None


B = TypeVar("B", bound=Budget)


class Reporter:
    """Feeds a rich progress bar when ``stream`` is a terminal; otherwise stays quiet until done.

    Lines go to ``out``, warnings to ``warnings`` (stderr by default). ``quiet`` drops every line
    but warnings: a clean night prints nothing.
    """

    def __init__(self, stream: IO[str] | None = None, out: IO[str] | None = None, *,
                 interactive: bool | None = None, quiet: bool = False, warnings: IO[str] | None = None) -> None:
        self.stream = stream or sys.stderr
        self.out = out or sys.stdout
        self.warnings = warnings or sys.stderr
        self.quiet = quiet
        self.interactive = self.stream.isatty() if interactive is None else interactive
        self.reports: list[Reportable] = []
        self.budgets: list[Budget] = []
        self._progress: Progress | None = None
        self._tasks: dict[str, int] = {}
        self._transfers: dict[str, _Pace] = {}

    def __enter__(self) -> Reporter:
        if self.interactive and not self.quiet:
            self._progress = Progress(
                SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), _Done(),
                TimeElapsedColumn(), TextColumn("{task.fields[detail]}"),
                console=Console(file=self.stream), transient=True)
            self._progress.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._progress:
            self._progress.stop()

    def update(self, report: Reportable) -> None:
        """Called after every page."""
        if not self._progress:
            return
        task = self._tasks.get(report.resource)
        if task is None:
            task = self._tasks[report.resource] = self._progress.add_task(report.resource, total=None, detail="")
        self._progress.update(task, completed=report.fetched, total=report.expected, detail=report.summary())

    def transfer(self, label: str, done: int, total: int | None) -> None:
        """Called as a large file comes in (``done`` bytes of ``total``): a bar with its rate and
        time left on a terminal; otherwise a dated line every :data:`TRANSFER_LINE_EVERY` seconds."""
        pace = self._transfers.get(label)
        if pace is None or done < pace.start:
            pace = self._transfers[label] = _Pace(done)
        if self._progress:
            task = self._tasks.get(label)
            if task is None:
                task = self._tasks[label] = self._progress.add_task(label, total=total, completed=done, detail="",
                                                                    unit="bytes")
            self._progress.update(task, completed=done, total=total)
        elif pace.due():
            self.line(f"{label}: {pace.describe(done, total)}")

    def done(self, report: Reportable) -> None:
        """One line per finished resource, on a terminal and under cron alike."""
        self.reports.append(report)
        self.line(report.summary())

    def watch(self, budget: B) -> B:
        """Count ``budget``'s requests, retries and 429s in this run's figures, and say each of its
        waits before a retry as a warning (a site that is down is not silence); returns it."""
        self.budgets.append(budget)
        budget.on_retry = self.warn
        return budget

    def warn(self, text: str) -> None:
        """A line the user must see even under ``quiet``: a file missing, a request given up on."""
        self.line(text, warning=True)

    def line(self, text: str, *, warning: bool = False) -> None:
        if self.quiet and not warning:
            return
        target = self.warnings if warning else self.out
        if self._progress and target.isatty():
            self._progress.console.print(text, markup=False, highlight=False)
        else:
            print(stamped(text, target), file=target, flush=True)


def stamped(text: str, target: IO[str]) -> str:
    """``text`` with the UTC time in front when ``target`` is a file or a pipe, as it is on a terminal otherwise."""
    return text if target.isatty() else f"{utc_text()} {text}"


class _Pace:
    """How a transfer goes, for the plain lines: from ``start`` bytes at the time it was first seen."""

    def __init__(self, start: int) -> None:
        self.start, self.since = start, time.monotonic()
        self.said = self.since

    def due(self) -> bool:
        now = time.monotonic()
        if now - self.said < TRANSFER_LINE_EVERY:
            return False
        self.said = now
        return True

    def describe(self, done: int, total: int | None) -> str:
        rate = (done - self.start) / max(time.monotonic() - self.since, 1e-6)
        text = human_bytes(done) + (f" of {human_bytes(total)} ({done / total:.0%})" if total else "")
        text += f", {human_bytes(rate)}/s"
        if total and rate > 0:
            text += f", about {human_duration((total - done) / rate)} left"
        return text


class _Done(ProgressColumn):
    """How far a task is: records as ``N/M``; bytes (a task with ``unit="bytes"``) as their size,
    rate and time left."""

    def __init__(self) -> None:
        super().__init__()
        self.count, self.size = MofNCompleteColumn(), DownloadColumn()
        self.speed, self.left = TransferSpeedColumn(), TimeRemainingColumn()

    def render(self, task: Task) -> Text:
        if task.fields.get("unit") != "bytes":
            return self.count.render(task)
        return Text(" ").join([self.size.render(task), self.speed.render(task), self.left.render(task)])
