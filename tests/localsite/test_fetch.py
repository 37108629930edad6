"""The local site's stand-in for the site's scraper: loopback only, and never longer than its deadline."""

from __future__ import annotations

import asyncio
import time

from mirror.localsite.http import fetch
from mirror.localsite.http.server import LoopbackServer


async def trickle(scope, receive, send):
    """A file sent a byte at a time, 0.2 s apart, for as long as the client reads."""
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"image/png")]})
    for _ in range(200):
        await send({"type": "http.response.body", "body": b"x", "more_body": True})
        await asyncio.sleep(0.2)
    await send({"type": "http.response.body", "body": b""})


def test_a_url_that_trickles_is_given_up_at_the_deadline(monkeypatch):
    monkeypatch.setattr(fetch, "FETCH_SECONDS", 1.0)
    with LoopbackServer(trickle) as slow:
        started = time.monotonic()
        assert fetch.fetch_loopback(slow.url + "/slow.png") is None
        assert time.monotonic() - started < 3  # each byte came well within the read timeout


def test_only_this_machine_is_asked():
    assert fetch.fetch_loopback("http://example.com/a.png") is None
    assert fetch.fetch_loopback("http://10.0.0.1/a.png") is None
