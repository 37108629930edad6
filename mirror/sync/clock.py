"""Run start times and "changed since" bounds, shared by the crawlers that refresh by date.

A crawler refreshes what changed since its last complete run started, less an overlap (clock
skew, slow search indexing). The start is taken as the earlier of our clock and the site's
``Date`` header, so a fast local clock cannot make a run skip changes.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from ..dates import parse_utc, utc_text

__all__ = ["earliest", "since"]


def since(last_start: str | None, overlap: int) -> str | None:
    """The lower bound of a refresh: the last complete run's start less ``overlap`` seconds."""
    start = parse_utc(last_start) if last_start else None
    return utc_text(start - timedelta(seconds=overlap)) if start else None


def earliest(started: str, server_date: datetime | None) -> str:
    """The run's start by whichever clock is earlier, ours or the site's, against clock skew."""
    return started if server_date is None else min(started, utc_text(server_date))
