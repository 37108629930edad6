"""``mirror verify``: re-hash every kept file against the sha512 recorded when it was written.

Disks rot, people delete things, buckets get lifecycle rules. A file that is missing or whose
bytes changed is reported. A thumbnail or rendering, whose record states no hash (so the one
recorded is only what was received), must also be a whole file of its format: a copy kept by an
older version from an HTML error page is found that way. An original was checked against the
record's ``sha512_hash`` when it was kept, so its recorded sha512 is that hash. With
``repair`` the damaged copy is removed (so that it is not adopted again), the file is
re-queued, and a download run fetches it afresh.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from sqlite_utils import Database

from ..api import PhilomenaClient
from ..api.polite import Politeness
from ..progress import Reporter
from ..store import downloads as state
from .fingerprints import backfill_fingerprints
from .intensities import backfill_intensities
from .run import DownloadOptions, DownloadReport, run_downloads
from .storage import Storage


@dataclass
class VerifyReport:
    """What a verify run found (and, with repair, fixed)."""

    resource: str = "verify"
    fetched: int = 0  # files checked so far (the progress display's count)
    expected: int | None = None
    missing: list[str] = field(default_factory=list)
    corrupt: list[str] = field(default_factory=list)
    repaired: DownloadReport | None = None
    unrepaired: int = 0  # damaged files still not kept after the repair
    intensities: int = 0  # kept files whose intensities were computed now (for reverse search)
    fingerprints: int = 0  # images whose fingerprints were read now (for finding near-duplicates)

    @property
    def damaged(self) -> int:
        return len(self.missing) + len(self.corrupt)

    def summary(self) -> str:
        text = f"verify: {self.fetched} files checked, {len(self.missing)} missing, {len(self.corrupt)} corrupt"
        if self.intensities:
            text += f", intensities computed for {self.intensities}"
        if self.fingerprints:
            text += f", fingerprints read for {self.fingerprints}"
        if self.repaired is not None:
            text += f"; re-fetched {self.repaired.downloaded + self.repaired.adopted}, {self.unrepaired} not repaired"
        elif self.damaged:
            text += "; run `mirror verify --repair` to fetch them again"
        return text


async def verify_files(db: Database, client: PhilomenaClient, politeness: Politeness, storage: Storage,
                       options: DownloadOptions, reporter: Reporter | None = None, *,
                       repair: bool = False) -> VerifyReport:
    """Check every kept file in ``storage``; with ``repair``, re-queue the missing and corrupt ones
    and re-fetch them with a download run (which the other arguments are for)."""
    reporter = reporter or Reporter(interactive=False)
    report = VerifyReport(expected=state.counts(db)[state.DONE])
    damaged: list[tuple[int, str]] = []
    for row in state.kept(db):  # read as it goes: millions of kept files need not sit in memory
        problem = await asyncio.to_thread(_check, storage, row)
        if problem:
            where = storage.describe(row["path"])
            (report.missing if problem == "missing" else report.corrupt).append(where)
            reporter.line(f"{problem}: image {row['image_id']} {row['representation']} at {where}")
            damaged.append((row["image_id"], row["representation"]))
            if repair and problem == "corrupt":
                await asyncio.to_thread(storage.remove, row["path"])
        report.fetched += 1
        reporter.update(report)
    if repair and damaged:
        state.requeue(db, damaged, "verify found it missing or corrupt")
        report.repaired = await run_downloads(db, client, politeness, storage, options, reporter)
        report.unrepaired = state.not_kept(db, damaged)
    report.intensities = await backfill_intensities(db, storage)
    report.fingerprints = await backfill_fingerprints(db, storage)
    reporter.done(report)
    return report


def _check(storage: Storage, row: dict[str, Any]) -> str | None:
    """``missing``, ``corrupt`` or None for one kept file."""
    digest = storage.digest(row["path"])
    if digest is None:
        return "missing"
    if digest.sha512 != row["sha512"] or digest.size != row["bytes"]:
        return "corrupt"
    if not row["original"] and storage.problem(row["path"]):
        return "corrupt"
    return None
