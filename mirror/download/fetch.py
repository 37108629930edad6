"""Fetching one file: streamed to a ``.part``, hashed as it is written, verified, then published.

Every attempt is paced and retried by the file host's :class:`~mirror.api.polite.Politeness`,
exactly like API requests. An attempt that was cut short leaves its ``.part`` in place and the
next one asks only for the rest (``Range: bytes=N-``); a server that ignores the range answers
200 and the file starts over. The site may regenerate a file in between (thumbnails are, and
only ``full`` is checked against a hash), so the resume also sends ``If-Range`` with the
validator of the response the ``.part`` began with (its strong ETag, else its Last-Modified,
kept beside it in ``<part>.validator``): a site that still has that file answers 206 with the
tail, one whose file changed answers 200 with the new file, never a mix of the two. A server
that sent no validator cannot evaluate If-Range, so its parts resume with Range alone. A
``.part`` that already holds the whole file (a run stopped between its last byte and publishing
it) is answered 416 with the file's length: it is checked and kept as it is, not fetched again.

A read timeout only notices a host that stops sending; one that trickles a few bytes at a time
would hold a worker for ever. So each attempt has an overall ``deadline``: past it the attempt is
abandoned as a retryable failure, its ``.part`` kept, so the retries (and a later run) resume
where it stopped, and a host that never finishes costs that one file, not the run.

An original whose sha512 does not match the record is not called corrupt at once: the record is
fetched again first, since the site may have replaced the file. A file whose record states no
hash (thumbnails, renderings) must be a whole file of the format its name says
(:mod:`~mirror.download.kinds`), so an HTML error page or a body cut short is never kept.

Redirects are followed here, not by httpx, and only within the origin (scheme, host and port) of
the URL the record names: each hop is a request of its own, so it takes its turn in the pacing
budget. A redirect to another origin, an https to http downgrade among them, is not followed: the
budget, the politeness and the trust all belong to the file host, so that file is marked failed
with the place it pointed to, and the run goes on.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiofiles
import httpx

from ..api.client import describe_transport_error, raise_for_retry
from ..api.errors import RetriesExhausted
from ..api.polite import Politeness, RetryableFailure
from ..urls import redact
from .kinds import file_problem
from .storage import Digest, Storage, hash_stream, storage_failure

# Redirects one file may take within its origin before it is given up as a loop.
MAX_REDIRECTS = 5
# body_mode's answer for a .part that holds the whole file already: nothing to write.
WHOLE = "whole"


@dataclass
class Job:
    """One file to fetch: from ``url`` to the kept ``path``, verified against ``expected`` if set.

    ``original`` marks the image's original (the file ``sha512_hash`` describes).
    """

    image_id: int
    representation: str
    url: str
    path: str
    expected: str | None = None
    original: bool = False
    attempts: int = 0

    @property
    def extension(self) -> str:
        return self.path.rpartition(".")[2]

    @property
    def label(self) -> str:
        """The file in words, without its URL: for messages that name another URL."""
        return f"image {self.image_id} {self.representation}"

    def __str__(self) -> str:
        return f"{self.label} ({redact(self.url)})"


class FileFailed(Exception):
    """This one file cannot be fetched now (404, a persistent mismatch); the run goes on."""


# Given a job whose body did not match, fetch the record again and return the hash it states now.
Recheck = Callable[[Job], Awaitable[str | None]]


class Fetcher:
    """Fetches files over one HTTP client into one storage, under one pacing budget; each attempt
    at a file is given up after ``deadline`` seconds (None: no limit)."""

    def __init__(self, http: httpx.AsyncClient, politeness: Politeness, storage: Storage,
                 recheck: Recheck | None = None, deadline: float | None = None) -> None:
        self.http = http
        self.politeness = politeness
        self.storage = storage
        self.recheck = recheck
        self.deadline = deadline

    async def fetch(self, job: Job, twins: Sequence[Job] = ()) -> Digest:
        """Download ``job`` and publish it under its final name; return its size and sha512.

        ``twins`` are other representations of the same image at the same URL (a small image's
        sized representations all point at one file): they get copies, not requests of their own.

        Raises :class:`FileFailed` for this file alone, :class:`SiteUnavailable` when the host
        keeps failing, and :class:`~mirror.download.storage.StorageFailure` when files cannot be
        written (the ``.part`` is removed then, to give the space back).
        """
        part = self.storage.part(job.path)
        rechecked = False

        async def attempt() -> Digest:
            nonlocal rechecked
            job.attempts += 1
            got = await self._transfer(job, part)
            if job.expected and got.sha512 != job.expected and not rechecked and self.recheck:
                rechecked = True
                job.expected = await self.recheck(job)
            if job.expected and got.sha512 != job.expected:
                discard(part)
                raise RetryableFailure("the body does not match the record's sha512 (corrupted in transit?)")
            if not job.expected and (wrong := await asyncio.to_thread(file_problem, part, job.extension)):
                discard(part)
                raise RetryableFailure(f"the body is {wrong}")
            return got

        try:
            got = await self.politeness.call(attempt, f"GET {redact(job.url)}")
        except FileFailed:
            discard(part)  # its bytes are known bad, or the file is gone: nothing to resume
            raise
        except RetriesExhausted as e:
            # Out of retries for this file alone (the .part stays, to resume): note it and go on.
            # A host that keeps failing (give_up_after in a row) or rate limiting stops the run.
            raise FileFailed(f"{job}: {e}") from None
        await asyncio.to_thread(self.storage.publish, part, job.path, *(twin.path for twin in twins))
        await asyncio.to_thread(validator_file(part).unlink, missing_ok=True)
        return got

    def drop_staged(self, job: Job) -> None:
        """Remove what a transfer of ``job`` left in the staging area, for a file found already kept.

        A run killed between publishing the file and removing its validator leaves the validator
        behind; the rerun adopts the file, and nothing would ever remove it.
        """
        discard(self.storage.part(job.path))

    async def _transfer(self, job: Job, part: Path) -> Digest:
        """One attempt, cut off at the deadline; what came by then stays in ``part`` to resume."""
        timer = asyncio.timeout(self.deadline)
        try:
            async with timer:
                return await self._stream(job, part)
        except TimeoutError:
            if not timer.expired():
                raise
            kept = await asyncio.to_thread(part_size, part)
            raise RetryableFailure(f"the transfer took longer than download.file_deadline ({self.deadline:g} s); "
                                   f"{kept} bytes are kept to resume from") from None

    async def _stream(self, job: Job, part: Path) -> Digest:
        """Stream the body (or its missing tail) into ``part``, hashing as it goes."""
        offset, digest = await asyncio.to_thread(resume_point, part)
        headers = {"Accept-Encoding": "identity"}
        if offset:
            headers.update(await asyncio.to_thread(resume_headers, part, offset))
        try:
            async with self._open(job, headers) as response:
                raise_for_retry(response)
                start, total = content_range(response)
                mode = self._write_mode(response, job, part, offset, start, headers.get("If-Range"))
                if mode == WHOLE:
                    return Digest(offset, digest.hexdigest())
                if mode == "wb":
                    offset, digest = 0, hashlib.sha512()
                try:
                    await write_body(response, part, mode, digest.update)
                except OSError as e:
                    discard(part)
                    raise storage_failure(e, f"{part} (for {job})") from None
                size = offset + response.num_bytes_downloaded
        except httpx.TransportError as e:
            raise RetryableFailure(describe_transport_error(e)) from None
        if total is not None and size != total:
            raise RetryableFailure(f"the body was cut short ({size} of {total} bytes)")
        return Digest(size, digest.hexdigest())

    def _open(self, job: Job, headers: dict[str, str]) -> AbstractAsyncContextManager[httpx.Response]:
        """The streamed answer to GET ``job.url``, after the redirects :func:`check_redirect` allows."""
        return open_stream(self.http, self.politeness, job.url, headers,
                           lambda target, hops: check_redirect(job, target, hops))

    @staticmethod
    def _write_mode(response: httpx.Response, job: Job, part: Path, offset: int, start: int | None,
                    if_range: str | None = None) -> str:
        """``ab`` to append a resumed tail, ``wb`` to start over; raise for answers without a body."""
        if mode := body_mode(response, offset, start, if_range):
            return mode
        status = response.status_code
        if status in (206, 416) and offset:
            discard(part)  # the .part does not fit the file the site has now
            raise RetryableFailure(f"the site answered {status} to a resumed request; starting over")
        raise FileFailed(f"{job}: the site answered {status} {response.reason_phrase}".rstrip()
                         + ("; the site has no such file" if status in (404, 410) else ""))


def check_redirect(job: Job, target: httpx.URL, hops: int) -> None:
    """Raise :class:`FileFailed` unless the ``hops``-th redirect of ``job`` may be followed."""
    if problem := redirect_problem(job.url, target, hops):
        raise FileFailed(f"{job.label}: {problem}")


def redirect_problem(url: str, target: httpx.URL, hops: int) -> str | None:
    """Why the ``hops``-th redirect of a request for ``url`` may not be followed, or None when it
    may: it must stay in the origin of ``url`` (so never go from https to http), and not be one
    too many (a loop)."""
    start = httpx.URL(url)
    # httpx.URL drops a scheme's default port, so (scheme, host, port) compares origins.
    if (target.scheme, target.host, target.port) != (start.scheme, start.host, start.port):
        return f"the file host redirected to another site ({redact(str(target))}); not followed"
    if hops > MAX_REDIRECTS:
        return f"the file host redirected more than {MAX_REDIRECTS} times; not followed"
    return None


# Shared with the dump fetcher (mirror.dump.fetch), which streams one large file the same way.

@asynccontextmanager
async def open_stream(http: httpx.AsyncClient, politeness: Politeness, url: str, headers: dict[str, str],
                      check: Callable[[httpx.URL, int], None]) -> AsyncIterator[httpx.Response]:
    """The streamed answer to GET ``url``, after the redirects ``check(target, hops)`` lets through
    (it raises for one it does not), each hop taking its turn in the pacing budget (the first
    request took it in :meth:`Politeness.call`)."""
    response = await http.send(http.build_request("GET", url, headers=headers), stream=True)
    hops = 0
    while response.next_request is not None:  # a 3xx with a Location
        await response.aclose()
        hops += 1
        check(response.next_request.url, hops)
        await politeness.take_turn()
        response = await http.send(response.next_request, stream=True)
    try:
        yield response
    finally:
        await response.aclose()


def body_mode(response: httpx.Response, offset: int, start: int | None, if_range: str | None) -> str | None:
    """How the body of ``response`` goes into a ``.part`` holding ``offset`` bytes: ``wb`` for a
    whole file (200), ``ab`` for the tail that follows those bytes, of the same file (206),
    :data:`WHOLE` when the ``.part`` is the whole file already (416 stating that length); None
    for an answer that is none of these (the caller says why)."""
    status = response.status_code
    if status == 200:
        return "wb"
    if status == 206 and offset and start == offset and not _other_file(if_range, response):
        return "ab"
    if status == 416 and offset and _unsatisfied_length(response) == offset:
        return WHOLE
    return None


def _unsatisfied_length(response: httpx.Response) -> int | None:
    """The file's length a 416 states (``Content-Range: bytes */N``), None when it states none."""
    match = re.fullmatch(r"bytes \*/(\d+)", response.headers.get("content-range", "").strip())
    return int(match.group(1)) if match else None


async def write_body(response: httpx.Response, part: Path, mode: str, take: Callable[[bytes], None]) -> None:
    """Write (``wb``) or append (``ab``) the body to ``part`` as the bytes arrive (no re-chunking:
    a body cut short keeps what came), handing each block to ``take`` once written, then fsync.
    A new file gets the response's validator beside it, saved once the old bytes are gone so
    that it never names a stale head. OSError is the caller's to report."""
    async with aiofiles.open(part, mode) as f:
        if mode == "wb":
            await asyncio.to_thread(_save_validator, part, response.headers)
        async for block in response.aiter_raw():
            await f.write(block)
            take(block)
        await f.flush()
        await asyncio.to_thread(os.fsync, f.fileno())


def _other_file(if_range: str | None, response: httpx.Response) -> bool:
    """True when a 206 names, by its strong ETag, another file than the one the ``.part`` began
    with: a server that ignores If-Range would otherwise have the tail glued to the old head."""
    etag = response.headers.get("etag", "")
    return bool(if_range and if_range.startswith('"') and etag.startswith('"') and etag != if_range)


def resume_point(part: Path, new_digest: Callable[[], Any] = hashlib.sha512) -> tuple[int, Any]:
    """How much of the file a previous attempt kept, and the hash (sha512 unless ``new_digest``
    says otherwise) of those bytes, read in chunks."""
    try:
        with open(part, "rb") as f:
            return hash_stream(f.read, new_digest())
    except FileNotFoundError:
        return 0, new_digest()


def part_size(part: Path) -> int:
    """How many bytes ``part`` keeps (0 when there is none)."""
    try:
        return part.stat().st_size
    except FileNotFoundError:
        return 0


def validator_file(part: Path) -> Path:
    """Where the validator of the file ``part`` began from is kept: beside it, in the staging area."""
    return part.with_name(f"{part.name}.validator")


def resume_headers(part: Path, offset: int) -> dict[str, str]:
    """Range for the missing tail, and If-Range with the saved validator so that a file changed
    since gives a whole new body instead of a tail glued to the old head. Without a saved
    validator (the server sent none) Range goes alone, as a server without validators cannot
    evaluate If-Range anyway."""
    headers = {"Range": f"bytes={offset}-"}
    try:
        validator = validator_file(part).read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        validator = ""
    if validator:
        headers["If-Range"] = validator
    return headers


def _save_validator(part: Path, response_headers: httpx.Headers) -> None:
    """Keep what identifies the file ``part`` starts from, for a resume's If-Range: a strong ETag
    (a weak one may not be sent in If-Range), else Last-Modified; with neither, forget any older one."""
    etag = response_headers.get("etag", "")
    validator = etag if etag and not etag.startswith("W/") else response_headers.get("last-modified")
    if validator:
        validator_file(part).write_text(validator, encoding="utf-8")
    else:
        validator_file(part).unlink(missing_ok=True)


def content_range(response: httpx.Response) -> tuple[int | None, int | None]:
    """Where a 206 body starts, and the whole file's size (from Content-Range on a 206, else
    Content-Length), each None when not stated."""
    if response.status_code == 206:
        match = re.fullmatch(r"bytes (\d+)-\d+/(\d+|\*)", response.headers.get("content-range", "").strip())
        if not match:
            return None, None
        return int(match.group(1)), int(match.group(2)) if match.group(2).isdigit() else None
    length = response.headers.get("content-length")
    return None, int(length) if length and length.isdigit() else None


def discard(part: Path) -> None:
    """Drop a ``.part`` that cannot be resumed, with its validator."""
    part.unlink(missing_ok=True)
    validator_file(part).unlink(missing_ok=True)
