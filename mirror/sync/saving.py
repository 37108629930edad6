"""Saving what a crawler fetched: the records, the cursor past them and the report, one commit.

What the report counts is what :class:`RecordWriter` counts: ``new`` for records kept for the
first time, ``updated`` only for those whose stored content changed (crawlers re-read many
records that did not: tags, filters and profiles carry no ``updated_at``, and an image refresh
re-reads the overlap).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlite_utils import Database

from ..store.state import save_cursor
from ..store.writer import RecordWriter, Saved
from .report import Progress, SyncReport


@dataclass
class PageSaver:
    """Stores one crawler's pages: records, anything else the page settles, and the cursor past it,
    in one transaction; then counts the page in the report and shows progress."""

    db: Database
    writer: RecordWriter
    report: SyncReport
    progress: Progress | None
    state_name: str

    def save(self, records: Sequence[Any], cursor: dict[str, Any] | None = None, *,
             also: Callable[[Saved], None] | None = None) -> Saved:
        with self.db.atomic():
            saved = self.writer.save(records)
            if also is not None:
                also(saved)
            if cursor is not None:
                save_cursor(self.db, self.state_name, cursor)
        self.report.pages += 1
        self.report.count(len(records), saved)
        if self.progress:
            self.progress(self.report)
        return saved
