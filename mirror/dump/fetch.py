"""Fetching a public dump: one large file, resumed across runs, checked against its SHA-256.

The site publishes its nightly dump as a single file of some 5 GB and lists a SHA-256 for it. A
transfer that long gets cut short now and then, so it goes the way image files go
(:mod:`mirror.download.fetch`, whose pieces it uses): streamed into ``<name>.part`` beside the
final name, every attempt paced and retried by the file host's
:class:`~mirror.api.polite.Politeness`, resumed with ``Range`` and ``If-Range`` (a dump replaced
on the server starts over instead of gluing two files together), and renamed to its final name
only once whole and verified. A run that stops for any reason keeps its ``.part``, and the next
one asks only for the rest.

A host that stops sending, or trickles a few bytes a second, would hold the run for days without
a word (an overall deadline would not do: 5 GB takes minutes on one line and hours on another).
So each attempt follows a :class:`Stall` rule instead: fewer than ``min_rate`` bytes a second
over any ``seconds`` (``download.dump_stall_seconds`` and ``download.dump_min_rate``) abandons it
as a retryable failure, its part kept, and the retries (or the next run) resume from there.

The SHA-256 covers the whole file, so a resumed part is hashed from its first byte (in chunks:
memory stays flat whatever the size) before the rest is asked for; an attempt retried within one
run goes on from the hash it had instead of reading the part again.

The file is named by the URL's last path segment alone, sanitized: nothing the server sends
chooses where it is written. The HTTP client given must be one without the API key (the file
host is not the API, and the key is never sent there).
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import httpx

from ..api.client import describe_transport_error, raise_for_retry
from ..api.polite import Politeness, RetryableFailure
from ..download.fetch import (content_range, discard, part_size, resume_headers, resume_point,
                              validator_file, body_mode, open_stream, redirect_problem, write_body)
from ..download.storage import StorageFailure, hash_stream
from ..store.errors import WHAT, os_error_kind
from ..urls import is_loopback, redact
from ..words import human_bytes, human_duration
from .archive import DumpError

__all__ = ["fetch_dump", "check_sha256", "check_url", "dump_path", "normalized_sha256", "Stall"]

# (bytes so far, the whole file's size or None when the host does not say)
Progress = Callable[[int, int | None], None]
# Says one line to the user: a resume, a restart, the closing summary.
Line = Callable[[str], None]


@dataclass(frozen=True)
class Stall:
    """When an attempt is abandoned as stalled: fewer than ``min_rate`` bytes a second over any
    ``seconds`` (and always when not one byte came in ``seconds``)."""

    seconds: float
    min_rate: float = 0.0

    @property
    def quota(self) -> int:
        """The bytes each ``seconds`` must bring."""
        return max(1, math.ceil(self.min_rate * self.seconds))

    def describe(self, got: int) -> str:
        if self.min_rate <= 0:
            return f"not one byte came in {self.seconds:g} s (download.dump_stall_seconds)"
        return (f"only {got} bytes came in {self.seconds:g} s, under download.dump_min_rate "
                f"({self.min_rate:g} bytes/s over download.dump_stall_seconds)")

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_SHA256 = re.compile(r"[0-9a-f]{64}")


async def fetch_dump(url: str, folder: Path, http: httpx.AsyncClient, politeness: Politeness, *,
                     sha256: str | None = None, progress: Progress | None = None, line: Line | None = None,
                     stall: Stall | None = None) -> Path:
    """Download the dump at ``url`` into ``folder`` (see :func:`dump_path`) and return its path.

    A file already kept under that name is not fetched again (no request at all): it is checked
    against ``sha256`` when one is given. Otherwise the dump is streamed into ``<name>.part``,
    resuming what an earlier run kept, and renamed only once whole (as long as the host said) and
    matching ``sha256``. ``progress`` hears of every block, ``line`` of a resume, a restart and the
    closing summary (size, time, whether the SHA-256 matched); an attempt that breaks ``stall``
    is abandoned and retried.

    Raises :class:`DumpError` for a URL that cannot be fetched as asked (not https, no file name,
    404, a redirect elsewhere) or a dump that does not match ``sha256`` (its part is removed then);
    :class:`~mirror.api.errors.SiteUnavailable` when the host keeps failing and
    :class:`StorageFailure` when the folder cannot be written (the part is kept, to resume from).
    """
    check_url(url)
    expected = normalized_sha256(sha256) if sha256 is not None else None
    say = line or (lambda text: None)
    final = dump_path(url, folder)
    if final.exists():
        if expected:
            await asyncio.to_thread(_check_kept, final, expected)
        say(f"{final} is already downloaded: not fetched again" + (", SHA-256 matches" if expected else ""))
        return final
    part = final.with_name(final.name + ".part")
    try:
        await asyncio.to_thread(final.parent.mkdir, parents=True, exist_ok=True)
    except OSError as e:
        raise _write_failure(e, final.parent) from None
    transfer = _Transfer(url, part, http, politeness, hashing=expected is not None, progress=progress, line=say,
                         stall=stall)
    got = await politeness.call(transfer.attempt, f"GET {redact(url)}")
    if expected and got != expected:
        await asyncio.to_thread(discard, part)
        raise DumpError(f"the dump at {redact(url)} does not match its SHA-256 (expected {expected}, got {got}); "
                        "it was removed: fetch it again")
    await asyncio.to_thread(_publish, part, final)
    say(transfer.summary(expected is not None))
    return final


def check_sha256(path: Path, expected: str) -> None:
    """Raise :class:`DumpError` unless the file at ``path`` has the SHA-256 ``expected`` (the one
    the site lists for the dump), read in chunks."""
    expected = normalized_sha256(expected)
    got = _sha256_of(path)
    if got != expected:
        raise DumpError(f"{path} does not match its SHA-256 (expected {expected}, got {got}): it is damaged, "
                        "cut short or another file; fetch it again")


def dump_path(url: str, folder: Path) -> Path:
    """Where :func:`fetch_dump` keeps the dump at ``url``: ``folder`` / the URL's last path
    segment, with anything but letters, digits, ``.``, ``_`` and ``-`` made ``_`` (a ``%2F`` in it
    included), so that the URL can never name a place outside ``folder``."""
    name = _UNSAFE.sub("_", unquote(urlsplit(url).path.rpartition("/")[2]))
    if name in ("", ".", ".."):
        raise DumpError(f"{redact(url)} names no file: give the address of the dump itself "
                        "(such as https://files.derpicdn.net/derpibooru_public_dump_2026_08_13.pgdump)")
    return Path(folder) / name


class _Transfer:
    """The attempts at one dump. ``size`` and ``digest`` describe what the part holds (the digest
    only when ``hashing``), kept from one attempt to the next so a retry does not read it again."""

    def __init__(self, url: str, part: Path, http: httpx.AsyncClient, politeness: Politeness, *,
                 hashing: bool, progress: Progress | None, line: Line, stall: Stall | None) -> None:
        self.url, self.part, self.http, self.politeness = url, part, http, politeness
        self.hashing, self.progress, self.line, self.stall = hashing, progress, line, stall
        self.size = -1  # not known until the first attempt looks
        self.digest: Any = None
        self.total: int | None = None
        self.started, self.received, self.resumed_at = time.monotonic(), 0, 0
        self._timer: asyncio.Timeout | None = None
        self._mark = 0  # the size when the stall rule last found the pace kept

    async def attempt(self) -> str | None:
        """Fetch what the part lacks; return the whole file's SHA-256 (None when not hashing)."""
        await self._catch_up()
        headers = {"Accept-Encoding": "identity"}
        if self.size:
            headers.update(await asyncio.to_thread(resume_headers, self.part, self.size))
        # timeout_at: the first window ends at a loop time, as each reschedule's does (asyncio.timeout
        # takes a delay, and read that time as one: the rule never fired for a host slow from its first byte)
        self._timer, self._mark = asyncio.timeout_at(self._next_check()), self.size
        try:
            async with self._timer:
                async with open_stream(self.http, self.politeness, self.url, headers, self._check_redirect) as response:
                    raise_for_retry(response)
                    await self._receive(response, headers.get("If-Range"))
        except httpx.TransportError as e:
            raise RetryableFailure(describe_transport_error(e)) from None
        except TimeoutError:
            if not (self.stall and self._timer.expired()):
                raise
            raise RetryableFailure(f"the transfer stalled: {self.stall.describe(self.size - self._mark)}; "
                                   f"{self.size} bytes are kept to resume from") from None
        if self.total is not None and self.size != self.total:
            raise RetryableFailure(f"the body was cut short ({self.size} of {self.total} bytes; "
                                   "they are kept to resume from)")
        return self.digest.hexdigest() if self.digest else None

    def summary(self, checked: bool) -> str:
        """The closing line: how much, how long, from where, and whether the SHA-256 was checked."""
        elapsed = time.monotonic() - self.started
        name = self.part.name.removesuffix(".part")
        text = f"downloaded {name}: {human_bytes(self.size)} in {human_duration(elapsed)}"
        if self.resumed_at:
            text += f" (resumed at {self.resumed_at} bytes: {human_bytes(self.received)} this run)"
        text += f", {human_bytes(self.received / max(elapsed, 1e-6))}/s"
        return text + (", SHA-256 matches" if checked else "; no --sha256 given, so it was not checked")

    def _next_check(self) -> float | None:
        return asyncio.get_running_loop().time() + self.stall.seconds if self.stall else None

    async def _catch_up(self) -> None:
        """Make ``size`` (and ``digest``) describe the part on disk, reading it only when they do not."""
        on_disk = await asyncio.to_thread(part_size, self.part)
        if on_disk == self.size and (self.digest or not self.hashing):
            return
        if self.hashing:
            self.size, self.digest = await asyncio.to_thread(resume_point, self.part, hashlib.sha256)
        else:
            self.size = on_disk

    async def _receive(self, response: httpx.Response, if_range: str | None) -> None:
        """Write the body of ``response`` into the part, or note that the part is already whole."""
        start, self.total = content_range(response)
        if _already_whole(response, self.size):
            self.total = self.size
            return
        mode = self._mode(response, start, if_range)
        if mode == "ab":
            self.resumed_at = self.resumed_at or self.size
            self.line(f"resumed at {self.size} bytes ({human_bytes(self.size)}"
                      + (f" of {human_bytes(self.total)}" if self.total else "") + "): asking only for the rest")
        elif self.size > 0:
            self.line(f"the host sent the whole dump again (it changed since, or ignores Range): "
                      f"the {self.size} bytes kept are dropped and it starts over")
        if mode == "wb":
            self.size, self.digest = 0, hashlib.sha256() if self.hashing else None
            self.resumed_at = self._mark = 0
        self._report()
        try:
            await write_body(response, self.part, mode, self._take)
        except OSError as e:
            raise _write_failure(e, self.part) from None

    def _mode(self, response: httpx.Response, start: int | None, if_range: str | None) -> str:
        """``wb`` or ``ab`` (as :func:`body_mode`); raise for an answer that brings no body to keep."""
        if mode := body_mode(response, self.size, start, if_range):
            return mode
        status = response.status_code
        if status in (206, 416) and self.size:
            discard(self.part)  # the part does not fit the file the host has now
            raise RetryableFailure(f"the site answered {status} to a resumed request; starting over")
        gone = status in (404, 410)
        raise DumpError(f"{redact(self.url)}: the site answered {status} {response.reason_phrase}".rstrip()
                        + ("; it has no such dump: check the address against the site's list of dumps" if gone
                           else "; check the address and run again"))

    def _take(self, block: bytes) -> None:
        """Count (and hash) one block once it is written; push the stall check on once the pace is kept."""
        self.size += len(block)
        self.received += len(block)
        if self.digest is not None:
            self.digest.update(block)
        if self.stall and self._timer and self.size - self._mark >= self.stall.quota:
            self._mark = self.size
            self._timer.reschedule(self._next_check())
        self._report()

    def _report(self) -> None:
        if self.progress:
            self.progress(self.size, self.total)

    def _check_redirect(self, target: httpx.URL, hops: int) -> None:
        if problem := redirect_problem(self.url, target, hops):
            raise DumpError(f"{redact(self.url)}: {problem}; fetch the dump from where it points yourself")


def _already_whole(response: httpx.Response, size: int) -> bool:
    """Whether a 416 says the part already holds the whole file (``bytes */SIZE``): a run stopped
    after the last byte but before the rename. If-Range went with the Range, so the host still has
    the file the part holds (one whose file changed answers 200)."""
    return (response.status_code == 416 and size > 0
            and response.headers.get("content-range", "").strip() == f"bytes */{size}")


def check_url(url: str) -> None:
    """Raise :class:`DumpError` unless ``url`` is one a dump is fetched from: https, or http to this machine."""
    scheme = urlsplit(url).scheme.lower()
    if scheme == "https" or (scheme == "http" and is_loopback(url)):
        return
    raise DumpError(f"{redact(url)}: a dump is fetched over https:// (plain http:// only from this machine); "
                    "give its https:// address")


def normalized_sha256(sha256: str) -> str:
    """``sha256`` as 64 lowercase hexadecimal digits; raise :class:`DumpError` for anything else."""
    value = sha256.strip().lower()
    if not _SHA256.fullmatch(value):
        raise DumpError(f"the SHA-256 must be 64 hexadecimal digits, as the site lists it; got {sha256!r}")
    return value


def _sha256_of(path: Path) -> str:
    try:
        with open(path, "rb") as f:
            return hash_stream(f.read, hashlib.sha256())[1].hexdigest()
    except OSError as e:
        raise DumpError(f"cannot read {path}: {e.strerror or e}; check the path and run again") from None


def _check_kept(final: Path, expected: str) -> None:
    """A dump already kept under its final name must be the one ``expected`` names; it is not
    removed when not (it may be a file the user put there), but reported."""
    got = _sha256_of(final)
    if got != expected:
        raise DumpError(f"{final} is already there but does not match its SHA-256 (expected {expected}, got {got}); "
                        "remove it (or check the SHA-256 given) and run again")


def _publish(part: Path, final: Path) -> None:
    """Give the whole, verified part its final name (same folder: atomic), and drop its validator."""
    os.replace(part, final)
    validator_file(part).unlink(missing_ok=True)


def _write_failure(error: OSError, where: Path) -> StorageFailure:
    what = WHAT.get(os_error_kind(error)) or error.strerror or str(error)
    return StorageFailure(f"cannot write {where}: {what}. What was fetched so far is kept; make room (or fix the "
                          "folder's permissions) and run again to resume.")
