"""Health-check pings, as healthchecks.io takes them: ``URL/start`` when a run starts, ``URL`` when
it ends with exit code 0, ``URL/CODE`` when it ends with another, so the check fails on a missed
night and on a failed one alike.

The ping goes to the user's URL alone, through a client of its own: the site's API key is never
added to it. A ping that fails (the service down, a timeout, a URL httpx refuses) is one warning
line naming the host alone, with no password; the run goes on and its exit code is its own.

``healthcheck_timeout`` bounds the whole ping, from the connection to the last byte of the answer:
httpx's timeouts bound each read alone, so a host answering a byte a second would hold the run
for ever. The request runs in an event loop of its own under :func:`asyncio.timeout`, which can
stop it between any two reads.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from urllib.parse import urlsplit

import httpx

from ..api.client import tls_settings
from ..urls import redact


class Pinger:
    """Pings one health-check URL; ``warn`` receives a line when a ping fails."""

    def __init__(self, url: str, *, timeout: float, user_agent: str, warn: Callable[[str], None]) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.user_agent = user_agent
        self.warn = warn

    def start(self) -> None:
        self._ping(f"{self.url}/start", "")

    def alive(self, body: str) -> None:
        """A ping of a process that runs for good (``mirror follow``), once a period: still well."""
        self._ping(self.url, body)

    def end(self, exit_code: int, body: str) -> None:
        """``body`` (the run's summary) shows in the check's log."""
        self._ping(self.url if exit_code == 0 else f"{self.url}/{exit_code}", body)

    def _ping(self, url: str, body: str) -> None:
        try:
            asyncio.run(self._post(url, body.encode()))
        except TimeoutError:
            self._failed(url, f"no whole answer within {self.timeout:g} s")
        except (httpx.HTTPError, httpx.InvalidURL) as e:  # InvalidURL is no HTTPError (a control character)
            self._failed(url, f"HTTP {e.response.status_code}" if isinstance(e, httpx.HTTPStatusError)
                         else redact(str(e)) or type(e).__name__)

    async def _post(self, url: str, body: bytes) -> None:
        """The ping, all of it within ``timeout`` seconds (TimeoutError past them)."""
        async with asyncio.timeout(self.timeout):
            async with httpx.AsyncClient(timeout=self.timeout, follow_redirects=True, verify=tls_settings(),
                                         headers={"User-Agent": self.user_agent}) as client:
                response = await client.post(url, content=body)
                response.raise_for_status()

    def _failed(self, url: str, reason: str) -> None:
        self.warn(f"health check: the ping to {where(url)} failed ({reason}); the run goes on")


def where(url: str) -> str:
    """The ping URL's scheme and host only: its path is the check's secret (anyone with it can ping),
    and a password in it is masked."""
    parts = urlsplit(url)
    return redact(f"{parts.scheme}://{parts.netloc}")
