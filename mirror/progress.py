"""Progress display: a live bar on a terminal, one plain summary line per resource under cron."""

from __future__ import annotations

import sys
from typing import IO, Protocol

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn


class Reportable(Protocol):
    resource: str
    fetched: int
    expected: int | None

    def summary(self) -> str: ...


class Reporter:
    """Feeds a rich progress bar when ``stream`` is a terminal; otherwise stays quiet until done."""

    def __init__(self, stream: IO[str] | None = None, out: IO[str] | None = None, *,
                 interactive: bool | None = None) -> None:
        self.stream = stream or sys.stderr
        self.out = out or sys.stdout
        self.interactive = self.stream.isatty() if interactive is None else interactive
        self._progress: Progress | None = None
        self._tasks: dict[str, int] = {}

    def __enter__(self) -> Reporter:
        if self.interactive:
            self._progress = Progress(
                SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
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

    def done(self, report: Reportable) -> None:
        """One line per finished resource, on a terminal and under cron alike."""
        self.line(report.summary())

    def line(self, text: str) -> None:
        if self._progress and self.out.isatty():
            self._progress.console.print(text, markup=False, highlight=False)
        else:
            print(text, file=self.out, flush=True)
