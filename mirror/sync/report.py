"""What a crawler reports: after every page to the progress display, and at the end of a run."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from sqlite_utils import Database

from ..api import PhilomenaClient
from ..store.state import start_run
from ..store.writer import Saved
from ..words import counted


@dataclass
class SyncReport:
    """What one run of one crawler did."""

    resource: str
    fetched: int = 0
    new: int = 0
    updated: int = 0
    hidden: int = 0
    rejected: int = 0
    unpaired_tags: int = 0
    pages: int = 0
    expected: int | None = None
    complete: bool = False
    # Things the user should know that are not failures (an endpoint skipped for want of a key).
    notes: list[str] = field(default_factory=list)
    _requests: Callable[[], int] = field(default=lambda: 0, repr=False, compare=False)

    @property
    def requests(self) -> int:
        """Requests (retries included) this run has sent so far."""
        return self._requests()

    def count(self, fetched: int, saved: Saved) -> None:
        """Add one page: ``fetched`` records received, ``saved`` what storing them did."""
        self.fetched += fetched
        self.new += saved.new
        self.updated += saved.updated
        self.hidden += saved.hidden
        self.rejected += saved.rejected
        self.unpaired_tags += saved.unpaired_tags

    def freeze(self) -> None:
        """Stop counting: requests made after the run (by the next crawler) are not this run's."""
        spent = self.requests
        self._requests = lambda: spent

    def note(self, text: str) -> None:
        """Say something in the summary and in ``sync_runs.message`` without failing the run."""
        self.notes.append(text)

    def remarks(self) -> list[str]:
        """The notes, and what the site sent that the mirror kept but could not wholly trust."""
        unpaired = (f"{self.unpaired_tags} {self.resource} whose tags and tag_ids disagree "
                    "(linked by tag id; no tag named from them)")
        return [unpaired, *self.notes] if self.unpaired_tags else self.notes

    def counts(self) -> dict[str, int]:
        """The figures ``sync_runs`` keeps."""
        return {"requests": self.requests, "fetched": self.fetched, "new": self.new, "updated": self.updated,
                "hidden": self.hidden}

    def summary(self) -> str:
        parts = [f"{self.fetched} fetched", f"{self.new} new", f"{self.updated} updated"]
        if self.hidden:
            parts.append(f"{self.hidden} hidden or merged")
        if self.rejected:
            parts.append(f"{self.rejected} kept in rejects")
        notes = "".join(f"; {note}" for note in self.remarks())
        return f"{self.resource}: {', '.join(parts)}; {counted(self.requests, 'request')}{notes}"


Progress = Callable[[SyncReport], None]


@contextmanager
def recorded_run(db: Database, client: PhilomenaClient, resource: str) -> Iterator[SyncReport]:
    """A report for one crawler run, recorded in ``sync_runs`` however the run ends."""
    baseline = client.requests_made
    report = SyncReport(resource, _requests=lambda: client.requests_made - baseline)
    run = start_run(db, resource, filter_id=client.filter_id)
    try:
        yield report
    except BaseException as e:
        report.freeze()
        stopped = isinstance(e, (KeyboardInterrupt, asyncio.CancelledError))
        message = "interrupted" if stopped else str(e) or type(e).__name__
        run.finish(db, status="failed", message=message, **report.counts())
        raise
    report.freeze()
    report.complete = True
    run.finish(db, status="ok", message="; ".join(report.remarks()) or None, **report.counts())
