"""``mirror verify``: re-hash every kept file against the sha512 recorded when it was written.

Disks rot, people delete things, buckets get lifecycle rules. A file that is missing or whose
bytes changed is reported. A thumbnail or rendering, whose record states no hash (so the one
recorded is only what was received), must also be a whole file of its format: a copy kept by an
older version from an HTML error page is found that way. An original was checked against the
record's ``sha512_hash`` when it was kept, so its recorded sha512 is that hash. With
``repair`` the damaged copy is removed (so that it is not adopted again), the file is
re-queued, and a download run fetches it afresh.

A large archive is re-hashed a slice a night (:class:`Sample`), as restic's
``check --read-data-subset n/t`` reads one part of its packs: slice K of N holds the files of the
images whose id modulo N is K - 1, so N nights with K = 1..N check every file once. ``auto/N``
takes the slice checked longest ago, so a cron line needs no arithmetic and a missed night skips
no slice. Each file checked gets ``verified_at``.
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

CHECKED_BATCH = 200  # files re-hashed between two commits of their verified_at
# The most slices: N goes into SQLite as an integer (past 2^63 it cannot), and no board has more images.
MAX_PARTS = 10**12


@dataclass(frozen=True)
class Sample:
    """Slice ``part`` of ``parts`` of the kept files (``part`` None: the one checked longest ago)."""

    part: int | None
    parts: int

    @classmethod
    def parse(cls, text: str) -> Sample:
        """``K/N`` (1 <= K <= N) or ``auto/N``; ValueError says what is wrong."""
        part, slash, parts = text.strip().partition("/")
        if not slash or not parts.isdigit() or not (part.isdigit() or part == "auto"):
            raise ValueError(f"--sample takes K/N or auto/N (such as 3/7 or auto/7), got {text!r}")
        if len(parts) > len(str(MAX_PARTS)) or int(parts) > MAX_PARTS:
            raise ValueError(f"--sample K/N: N is at most {MAX_PARTS:,} slices, got {text.strip()!r}")
        sample = cls(None if part == "auto" else int(part), int(parts))
        if sample.parts < 1 or (sample.part is not None and not 1 <= sample.part <= sample.parts):
            raise ValueError(f"--sample K/N needs 1 <= K <= N, got {text!r}")
        return sample

    def resolved(self, db: Database) -> Sample:
        """This sample with ``auto`` turned into the slice whose files were checked longest ago."""
        return self if self.part is not None else Sample(state.stalest_slice(db, self.parts), self.parts)

    def __str__(self) -> str:
        return f"{'auto' if self.part is None else self.part}/{self.parts}"


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
    sample: Sample | None = None  # the slice checked, when not every file

    @property
    def damaged(self) -> int:
        return len(self.missing) + len(self.corrupt)

    def summary(self) -> str:
        text = f"verify: {self.fetched} files checked, {len(self.missing)} missing, {len(self.corrupt)} corrupt"
        if self.sample is not None:
            text = text.replace(" files checked", f" files checked (slice {self.sample})", 1)
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
                       repair: bool = False, sample: Sample | None = None) -> VerifyReport:
    """Check every kept file in ``storage`` (``sample``: one slice of them); with ``repair``,
    re-queue the missing and corrupt ones and re-fetch them with a download run (which the other
    arguments are for)."""
    reporter = reporter or Reporter(interactive=False)
    sample = sample.resolved(db) if sample else None
    part, parts = (sample.part or 1, sample.parts) if sample else (1, 1)
    report = VerifyReport(expected=state.kept_in_slice(db, part, parts), sample=sample)
    damaged: list[tuple[int, str]] = []
    checked: list[tuple[int, str]] = []
    for row in state.kept(db, part, parts):  # read as it goes: millions of kept files need not sit in memory
        problem = await asyncio.to_thread(_check, storage, row)
        if problem:
            where = storage.describe(row["path"])
            (report.missing if problem == "missing" else report.corrupt).append(where)
            reporter.warn(f"{problem}: image {row['image_id']} {row['representation']} at {where}")
            damaged.append((row["image_id"], row["representation"]))
            if repair and problem == "corrupt":
                await asyncio.to_thread(storage.remove, row["path"])
        report.fetched += 1
        checked.append((row["image_id"], row["representation"]))
        if len(checked) >= CHECKED_BATCH:
            state.mark_checked(db, checked)
            checked.clear()
        reporter.update(report)
    state.mark_checked(db, checked)
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
