"""The local site's stand-in for the real site's scraper: it fetches the ``url`` of an upload or a
reverse search, but only from this machine, so that the local site never reaches out to the
internet, and within an overall deadline, so that a URL that trickles cannot hold a request.
"""

from __future__ import annotations

import ipaddress
import re
import time
from urllib.parse import unquote, urlsplit

import httpx

from ...philomena import MAX_FILE_SIZE

__all__ = ["fetch_loopback"]

# The whole fetch, redirect included, takes at most this long (the site's scraper gives up too).
FETCH_SECONDS = 10.0


def fetch_loopback(url: str, redirects: int = 1, deadline: float | None = None) -> tuple[bytes, str] | None:
    """GET ``url`` as the site's scraper does (one redirect, 200 only, size-capped), from this
    machine only, and all within :data:`FETCH_SECONDS`."""
    deadline = time.monotonic() + FETCH_SECONDS if deadline is None else deadline
    if not _is_loopback(url):
        return None
    try:
        with httpx.Client(timeout=FETCH_SECONDS) as client, client.stream("GET", url) as response:
            if response.is_redirect and redirects > 0:
                target = str(response.next_request.url) if response.next_request else ""
                return fetch_loopback(target, redirects - 1, deadline)
            if response.status_code != 200:
                return None
            data = bytearray()
            for chunk in response.iter_bytes():
                data += chunk
                if len(data) > MAX_FILE_SIZE or time.monotonic() > deadline:
                    return None
            return bytes(data), _scraped_name(url, response.headers.get("content-disposition", ""))
    except httpx.HTTPError:
        return None


def _is_loopback(url: str) -> bool:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return False
    if parts.hostname == "localhost":
        return True
    try:
        return ipaddress.ip_address(parts.hostname).is_loopback
    except ValueError:
        return False


def _scraped_name(url: str, disposition: str) -> str:
    """The Content-Disposition file name, else the URL's last segment, cut to 127 characters."""
    found = re.search(r'filename="?([^";]+)"?', disposition)
    name = found.group(1) if found else unquote(urlsplit(url).path.rpartition("/")[2])
    return name[:127]
