"""Dates as the site writes them, and as the mirror keeps them: ISO 8601 in UTC, whole seconds,
a trailing ``Z`` (``2024-01-02T03:04:05Z``, Elixir's ``DateTime.to_iso8601`` of a
``:utc_datetime``). Text in that form sorts as time does, which the store's queries rely on.
"""

from __future__ import annotations

from datetime import datetime, timezone

__all__ = ["DATE_FORMAT", "utc_text", "parse_utc", "utc_now"]

DATE_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def utc_text(when: datetime | None = None) -> str:
    """``when`` (default: now) as the site writes dates: the year in four digits always (strftime
    writes year 1 as ``1``, which neither sorts as time does nor reads back)."""
    w = (when or datetime.now(timezone.utc)).astimezone(timezone.utc)
    return f"{w.year:04d}-{w.month:02d}-{w.day:02d}T{w.hour:02d}:{w.minute:02d}:{w.second:02d}Z"


def parse_utc(text: str) -> datetime | None:
    """A date the site wrote (fractions of a second and offsets tolerated), in UTC; None if it is none,
    or if its offset pushes it past year 1 or 9999 (no date in UTC then)."""
    try:
        value = datetime.fromisoformat(text.replace("z", "Z").replace("Z", "+00:00"))
        return (value if value.tzinfo else value.replace(tzinfo=timezone.utc)).astimezone(timezone.utc)
    except (AttributeError, ValueError, OverflowError):
        return None


def utc_now() -> datetime:
    """Now, in UTC, to the second (a date the site could have written)."""
    return datetime.now(timezone.utc).replace(microsecond=0)
