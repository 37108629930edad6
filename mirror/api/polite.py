"""Politeness: one pacing budget per site, retries that wait, and knowing when to give up.

Every attempt, retries included, takes a slot from one ``aiolimiter`` bucket of size 1, so the
site never sees more than ``requests_per_second``; a search also takes one from a second bucket
paced by the site's search limit (20 per 10 s), so a walk stays under it at any configured rate.
Slots are 1% longer than ``1 / rate``: paced exactly at the rate, 26 requests span exactly 5 s at
5 a second, and a first one that reaches the site a few milliseconds late (the network, a busy
machine) put 26 in a 5 s window there (seen). A 429 or 503 with ``Retry-After`` pauses the whole
budget for at least that long, so concurrent callers wait too. Other failures back off
exponentially with jitter (tenacity). ``give_up_after`` failures in a row, across requests,
end the run: a site that is down should cost it a handful of requests, not a night of them.
"""

from __future__ import annotations

import asyncio
import email.utils
import time
from collections.abc import Awaitable, Callable
from datetime import datetime, timezone
from typing import TypeVar

from aiolimiter import AsyncLimiter
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, stop_after_attempt
from tenacity.wait import wait_exponential_jitter

from .errors import RateLimited, RetriesExhausted, SiteUnavailable

T = TypeVar("T")

# Beyond this the site is asking us to come back another day, not to slow down.
LONGEST_RETRY_AFTER = 900.0
# How much longer than 1 / rate each slot lasts: room for 50 ms of arrival jitter per 5 s at 5/s.
PACING_MARGIN = 1.01
# The site's own limit on its search endpoints (Derpibooru: 20 per 10 s, beside 30 per 5 s overall):
# searches get a second bucket of one slot every 10/20 s (with the margin), whatever the overall rate.
SEARCH_PATH = "/api/v1/json/search"
SEARCHES_PER_10S = 20.0
# Derpibooru's anti-bot middleware answers 501 and wants clients to back off at least this long.
CHALLENGE_BACKOFF = 5.0


class RetryableFailure(Exception):
    """One attempt failed in a way that may pass: 429, 5xx, a timeout or a broken connection."""

    def __init__(self, reason: str, *, status: int | None = None, retry_after: float | None = None,
                 min_wait: float = 0.0, hint: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.status = status
        self.retry_after = retry_after
        self.min_wait = min_wait
        self.hint = hint  # what to check if it never passes, when that is not "is the site up?"


def parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or HTTP-date), else None."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())


class Politeness:
    """The pacing budget, retry policy and failure count shared by every request to one site."""

    def __init__(self, requests_per_second: float = 1.0, *, max_retries: int = 5, give_up_after: int = 10,
                 backoff: float = 1.0, max_backoff: float = 60.0, searches_per_10s: float = SEARCHES_PER_10S) -> None:
        self.requests_per_second = requests_per_second
        self.max_retries = max_retries
        self.give_up_after = give_up_after
        self.limiter = AsyncLimiter(1, PACING_MARGIN / requests_per_second)
        self.search_limiter = AsyncLimiter(1, PACING_MARGIN * 10.0 / searches_per_10s)
        self.consecutive_failures = 0
        self.attempts = 0
        # Told, in one line, of each wait before a retry (the run's Reporter.warn), so a run waiting
        # on a site that is down says so instead of staying silent.
        self.on_retry: Callable[[str], None] | None = None
        self.failures = 0  # attempts that failed in a way that may pass (each retried unless the run gave up)
        self.rate_limited = 0  # of those, the 429s
        self._resume_at = 0.0
        self._backoff = wait_exponential_jitter(multiplier=backoff, max=max_backoff, jitter=backoff)
        self._backoff_base, self._max_backoff = backoff, max_backoff

    async def slot(self, path: str = "") -> None:
        """Wait until a pause (from ``Retry-After``) is over and the pacing bucket has room; for a
        search (``path`` under the search endpoints), the search bucket too."""
        while True:
            delay = self._resume_at - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            if path.startswith(SEARCH_PATH):
                await self.search_limiter.acquire()
            await self.limiter.acquire()
            if time.monotonic() >= self._resume_at:
                return

    async def take_turn(self, path: str = "") -> None:
        """Wait for a slot and count the request that takes it. Every request sent goes through
        here, retries and a download's redirect hops included, so the pace and the count hold."""
        await self.slot(path)
        self.attempts += 1

    def pause(self, seconds: float) -> None:
        """Hold every request to this site for ``seconds`` from now."""
        self._resume_at = max(self._resume_at, time.monotonic() + seconds)

    async def call(self, attempt: Callable[[], Awaitable[T]], what: str, *, path: str = "") -> T:
        """Run ``attempt`` paced, retrying :class:`RetryableFailure` as the rules say.

        ``what`` names the request in error messages (already redacted by the caller); ``path``,
        the URL path asked, paces searches by their own limit too.
        """
        retrying = AsyncRetrying(
            retry=retry_if_exception_type(RetryableFailure),
            wait=self._wait,
            stop=stop_after_attempt(self.max_retries + 1),
            before_sleep=self._announce,
            reraise=True,
        )
        try:
            async for try_ in retrying:
                with try_:
                    await self.take_turn(path)
                    try:
                        result = await attempt()
                    except RetryableFailure as failure:
                        self._count_failure(failure, what)
                        raise
                    self.consecutive_failures = 0
                    return result
        except RetryableFailure as failure:
            raise _exhausted(failure, what, f"after {self.max_retries + 1} attempts", RetriesExhausted) from None
        raise AssertionError("unreachable")  # pragma: no cover

    def failed(self, failure: RetryableFailure, what: str, attempt: int) -> None:
        """Count a failure of a request its caller retries by hand (an upload, which must be
        checked before it is sent again), and hold the budget as :meth:`call` would wait before
        retry ``attempt`` (1 for the first). Raises when the run should give up."""
        self._count_failure(failure, what)
        backoff = min(self._backoff_base * 2 ** (attempt - 1), self._max_backoff)
        self.pause(failure.retry_after if failure.retry_after is not None else max(backoff, failure.min_wait))

    def succeeded(self) -> None:
        self.consecutive_failures = 0

    def _count_failure(self, failure: RetryableFailure, what: str) -> None:
        self.consecutive_failures += 1
        self.failures += 1
        self.rate_limited += failure.status == 429
        if failure.retry_after is not None:
            if failure.retry_after > LONGEST_RETRY_AFTER:
                raise RateLimited(
                    f"{what}: the site asks us to wait {failure.retry_after:.0f} s ({failure.reason}); "
                    "stopping now, run again later", url=what, status=failure.status, reason=failure.reason) from None
            self.pause(failure.retry_after)
        if self.consecutive_failures >= self.give_up_after:
            raise _exhausted(failure, what, f"after {self.consecutive_failures} failures in a row") from None

    def _announce(self, state: RetryCallState) -> None:
        failure = state.outcome.exception() if state.outcome else None
        if self.on_retry is None or not isinstance(failure, RetryableFailure) or state.next_action is None:
            return
        self.on_retry(f"{failure.reason}; retrying in {state.next_action.sleep:.0f} s "
                      f"(attempt {state.attempt_number + 1} of {self.max_retries + 1})")

    def _wait(self, state: RetryCallState) -> float:
        failure = state.outcome.exception() if state.outcome else None
        backoff = self._backoff(state)
        if isinstance(failure, RetryableFailure):
            if failure.retry_after is not None:
                return failure.retry_after
            return max(backoff, failure.min_wait)
        return backoff


def _exhausted(failure: RetryableFailure, what: str, when: str,
               kind: type[SiteUnavailable] = SiteUnavailable) -> SiteUnavailable:
    kind = RateLimited if failure.status == 429 else kind
    return kind(
        f"gave up on {what} {when}: {failure.reason}. Everything fetched so far is kept; "
        f"{failure.hint or 'check that the site is up'}, then run again later.",
        url=what, status=failure.status, reason=failure.reason)
