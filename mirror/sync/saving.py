"""Saving what a crawler fetched: the records, the cursor past them and the report, one commit.

Tags, filters and profiles carry no ``updated_at``, so their crawlers re-fetch records that may
well be unchanged. :class:`RecordWriter` counts every known key as updated; a nightly report
saying "100 updated" when nothing moved would hide the changes that did happen, so
:func:`save_changes` compares each record with the ``raw`` kept before writing it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlite_utils import Database

from ..store.records import to_json
from ..store.state import save_cursor
from ..store.writer import RecordWriter, Saved
from .report import Progress, SyncReport


def save_changes(writer: RecordWriter, records: Sequence[Any], context: Mapping[str, Any] | None = None) -> Saved:
    """Save ``records`` (every row's ``mirrored_at`` moves on); ``new`` counts records kept for the
    first time (a row with no ``raw`` yet counts as new), ``updated`` those whose ``raw`` changed.

    Each record counts once however often a page holds it (a site building a page while records
    change can send one twice): the last copy is the one kept, and the one counted."""
    context = dict(context or {})
    keyed = {key: r for r in records if isinstance(r, dict) and (key := writer.key_of(r, context)) is not None}
    saved = writer.save(records, context)
    before = saved.raw_before
    saved.new = sum(1 for key in keyed if before.get(key) is None)
    saved.updated = sum(1 for key, r in keyed.items() if before.get(key) is not None and before[key] != to_json(r))
    return saved


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
            saved = save_changes(self.writer, records)
            if also is not None:
                also(saved)
            if cursor is not None:
                save_cursor(self.db, self.state_name, cursor)
        self.report.pages += 1
        self.report.count(len(records), saved)
        if self.progress:
            self.progress(self.report)
        return saved
