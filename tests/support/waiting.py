"""Waiting for something another thread or process does: a condition polled until it holds."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any


async def eventually(check: Callable[[], Any], timeout: float = 5.0) -> Any:
    """``check()``'s first true value, polled in the event loop; AssertionError past ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not (found := check()):
        assert time.monotonic() < deadline, "not reached in time"
        await asyncio.sleep(0.02)
    return found


def wait_for(check: Callable[[], Any], timeout: float = 20.0) -> Any:
    """The same, for a test with no event loop (a process to watch)."""
    deadline = time.monotonic() + timeout
    while not (found := check()):
        assert time.monotonic() < deadline, "not reached in time"
        time.sleep(0.05)
    return found
