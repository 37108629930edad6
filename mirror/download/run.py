"""``mirror download``: plan from the images table, fetch with N workers, record every outcome.

Each file is recorded the moment it is published, so a run killed at any instant loses at most
the transfers in flight: their ``.part`` files resume next time, and a file published just
before the kill (but not yet recorded) is found under its final name, hashed, and adopted
without another request.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
from sqlite_utils import Database

from ..api import ApiError, PhilomenaClient
from ..api.client import http_client
from ..api.polite import Politeness
from ..progress import Reporter
from ..store import ImageWriter, is_image_stub
from ..store import downloads as state
from ..words import counted, human_bytes
from .fetch import Fetcher, FileFailed, Job, Recheck
from .file_facts import keep_file_facts
from .fingerprints import Fingerprinter, backfill_fingerprints, keep_best_fingerprint, said_once
from .intensities import backfill_intensities, keep_intensities
from .layout import expected_hash, extension, file_path, file_url
from .storage import Digest, Storage


@dataclass(frozen=True)
class DownloadOptions:
    """How a download run works, besides where the files go (its Storage) and its pace (its Politeness)."""

    # The representation names to keep, extras included (:func:`.layout.wanted`).
    representations: tuple[str, ...] = ("thumb", "full")
    # Files fetched at once, and connections to the file host.
    concurrency: int = 4
    # Seconds one attempt at one file may take, first byte to last.
    file_deadline: float = 600.0
    # Seconds before a request to the file host times out.
    timeout: float = 30.0
    # The contact appended to the User-Agent.
    contact: str = ""


@dataclass
class DownloadReport:
    """What a download run did; fed to the progress display after every file."""

    resource: str = "downloads"
    fetched: int = 0  # files done this run: downloaded or found already kept
    expected: int | None = None
    downloaded: int = 0
    originals: int = 0  # of the files kept this run, the originals (checked against sha512_hash)
    adopted: int = 0
    failed: int = 0
    bytes: int = 0
    requests: int = 0  # to the file host and to the API (records fetched again), retries included
    complete: bool = False
    started: float = field(default_factory=time.monotonic)

    def summary(self) -> str:
        elapsed = max(time.monotonic() - self.started, 1e-6)
        parts = [counted(self.downloaded, "file"), human_bytes(self.bytes),
                 f"{self.downloaded / elapsed:.1f} files/s", f"{human_bytes(self.bytes / elapsed)}/s"]
        if self.fetched:
            parts.append(f"kept {counted(self.originals, 'original')} (sha512 checked) and "
                         f"{self.fetched - self.originals} thumbnails and renderings (format checked)")
        if self.adopted:
            parts.append(f"{self.adopted} already kept")
        if self.failed:
            parts.append(f"{self.failed} failed (see `mirror status`)")
        if self.expected is not None and self.fetched + self.failed < self.expected:
            parts.append(f"{self.expected - self.fetched - self.failed} left")
        return f"{self.resource}: {', '.join(parts)}; {counted(self.requests, 'request')}"


def _request_counter(politeness: Politeness, client: PhilomenaClient) -> Callable[[], int]:
    """Every request this run sends: to the file host, and to the API for the records of files that
    did not match (a board whose records changed since the sync costs one such request a file)."""
    api_before = client.requests_made
    return lambda: politeness.attempts + client.requests_made - api_before


def file_client(options: DownloadOptions) -> httpx.AsyncClient:
    """The HTTP client for the file host: one connection per worker, retries and redirects left to
    the Fetcher (which paces each hop and follows none to another origin)."""
    return http_client(timeout=options.timeout, contact=options.contact, max_connections=options.concurrency)


async def run_downloads(db: Database, client: PhilomenaClient, politeness: Politeness, storage: Storage,
                        options: DownloadOptions, reporter: Reporter | None = None, *,
                        retry_failed: bool = False) -> DownloadReport:
    """Fetch every pending file into ``storage``, paced by ``politeness`` (the file host's own
    budget); return what was done.

    ``client`` is the API client, for re-checking a record whose file does not match. Raises
    ``StorageFailure`` when files cannot be written and ``SiteUnavailable`` when the file host keeps
    failing; everything finished is kept either way.
    """
    reporter = reporter or Reporter(interactive=False)
    if retry_failed:
        state.requeue_failed(db)
    report = DownloadReport(expected=state.plan(db, options.representations))
    requests = _request_counter(politeness, client)
    # A file refused as it is kept is refused again by the backfill below: said once.
    with Fingerprinter.for_run(report.expected or 0, said_once(reporter.line)) as fingerprinter:
        async with file_client(options) as http:
            fetcher = Fetcher(http, politeness, storage, recheck=_rechecker(client, db),
                              deadline=options.file_deadline)
            try:
                await _work(db, fetcher, options.concurrency, report, reporter, requests, fingerprinter)
            finally:
                report.requests = requests()
        # A run killed between keeping a file and reading it left that file without intensities.
        await backfill_intensities(db, storage)
        await backfill_fingerprints(db, storage, fingerprinter)
    report.complete = True
    reporter.done(report)
    return report


async def _work(db: Database, fetcher: Fetcher, concurrency: int, report: DownloadReport,
                reporter: Reporter, requests: Callable[[], int], fingerprinter: Fingerprinter) -> None:
    """Feed pending images to ``concurrency`` workers; the first fatal error stops them all."""
    queue: asyncio.Queue[list[dict[str, Any]] | None] = asyncio.Queue(maxsize=concurrency * 2)

    async def produce() -> None:
        for _, rows in itertools.groupby(state.pending(db), key=lambda row: row["image_id"]):
            await queue.put(list(rows))
        for _ in range(concurrency):
            await queue.put(None)

    async def consume() -> None:
        while (rows := await queue.get()) is not None:
            await _image(db, fetcher, rows, report, reporter, fingerprinter)
            report.requests = requests()
            reporter.update(report)

    try:
        async with asyncio.TaskGroup() as tasks:
            tasks.create_task(produce())
            for _ in range(concurrency):
                tasks.create_task(consume())
    except BaseExceptionGroup as group:
        raise group.exceptions[0] from None


async def _image(db: Database, fetcher: Fetcher, rows: list[dict[str, Any]], report: DownloadReport,
                 reporter: Reporter, fingerprinter: Fingerprinter) -> None:
    """One image's pending files: adopt those already kept, fetch each distinct URL once; then
    its fingerprint, once, from the best of the files kept."""
    by_url: dict[str, list[Job]] = {}
    done: list[Job] = []  # kept by now, adopted or fetched
    for row in rows:
        job = make_job(row)
        if isinstance(job, str):
            _failed(db, row["image_id"], row["representation"], job, report, reporter)
            continue
        kept = await asyncio.to_thread(fetcher.storage.kept, job.path)
        if kept is not None and await _adoptable(fetcher.storage, job, kept):
            # Published by an earlier run that was stopped before it could record it.
            await asyncio.to_thread(fetcher.drop_staged, job)
            state.mark_done(db, job.image_id, job.representation, url=job.url, path=job.path, size=kept.size,
                            sha512=kept.sha512)
            await _read_kept(db, fetcher.storage, job)
            done.append(job)
            report.adopted += 1
            report.fetched += 1
            report.originals += job.original
        else:
            by_url.setdefault(job.url, []).append(job)
    for jobs in by_url.values():
        jobs.sort(key=lambda job: job.expected is None)  # the one with a hash to check leads
        try:
            got = await fetcher.fetch(jobs[0], jobs[1:])
        except FileFailed as e:
            for job in jobs:
                _failed(db, job.image_id, job.representation, str(e), report, reporter, job)
            continue
        for job in jobs:
            state.mark_done(db, job.image_id, job.representation, url=job.url, path=job.path, size=got.size,
                            sha512=got.sha512, attempts=job.attempts)
            await _read_kept(db, fetcher.storage, job)
            done.append(job)
        report.downloaded += 1
        report.fetched += len(jobs)
        report.originals += sum(job.original for job in jobs)
        report.bytes += got.size
    if done:
        # Read once all are kept: files come full first, and a fingerprint read from the full
        # picture, then replaced by the thumbnail's, was most of a demo's download time.
        await keep_best_fingerprint(db, fetcher.storage, done[0].image_id,
                                    [(job.representation, job.path) for job in done], fingerprinter)


async def _read_kept(db: Database, storage: Storage, job: Job) -> None:
    """What a kept file tells about its image: intensities and (for a dump's record) whether it
    is animated."""
    await keep_intensities(db, storage, job.image_id, job.representation, job.path)
    await keep_file_facts(db, storage, job.image_id, job.path, job.original)


async def _adoptable(storage: Storage, job: Job, kept: Digest) -> bool:
    """Whether a file found under its final name is the one ``job`` wants: the stated hash, or
    (with none stated) a whole file of its format."""
    if job.expected is not None:
        return kept.sha512 == job.expected
    return await asyncio.to_thread(storage.problem, job.path) is None


def _failed(db: Database, image_id: int, representation: str, reason: str, report: DownloadReport,
            reporter: Reporter, job: Job | None = None) -> None:
    state.mark_failed(db, image_id, representation, reason, url=job.url if job else None,
                      attempts=job.attempts if job else 0)
    report.failed += 1
    reporter.warn(f"failed: {reason} (`mirror download --retry-failed` tries it again)")


def make_job(row: dict[str, Any]) -> Job | str:
    """The job for a pending row, or why there cannot be one (returned as a message)."""
    image_id, representation = row["image_id"], row["representation"]
    ext = extension(representation, row["format"])
    url = file_url(row["representations"], representation)
    if ext is None:
        return f"image {image_id} {representation}: format {row['format']!r} is not one the mirror keeps"
    if url is None:
        return f"image {image_id} {representation}: the record has no URL for it"
    return Job(image_id, representation, url, file_path(image_id, representation, ext),
               expected_hash(representation, row), original=bool(row["original"]))


def _rechecker(client: PhilomenaClient, db: Database) -> Recheck:
    """Fetch an image's record again (and store it): the hash it states now, for a mismatch."""
    writer = ImageWriter(db, client.base_url)

    async def recheck(job: Job) -> str | None:
        try:
            record = await client.image(job.image_id)
        except ApiError as e:
            raise FileFailed(f"{job}: the file does not match its record, and the record could not be "
                             f"fetched again: {e}") from None
        writer.save_page([record])
        if is_image_stub(record):
            raise FileFailed(f"{job}: the site hid the image while it was being downloaded")
        return expected_hash(job.representation, record)

    return recheck
