"""Times as the board shows them: "3 days ago", the exact time in UTC on hover.

Drawn on the server (no script needed), as a ``<time>`` element whose ``datetime`` a script or a
reader can still take exactly. A value that is not a time is shown as it is.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

from markupsafe import Markup

__all__ = ["ago", "relative_time", "counted_from"]

# (seconds in the unit, its name), largest first.
UNITS = ((365 * 86400, "year"), (30 * 86400, "month"), (7 * 86400, "week"), (86400, "day"), (3600, "hour"),
         (60, "minute"))


def ago(seconds: float) -> str:
    """A span of time as the site says it: "less than a minute", "1 hour", "3 days"."""
    for size, name in UNITS:
        if seconds >= size:
            count = int(seconds // size)
            return f"{count} {name}{'' if count == 1 else 's'}"
    return "less than a minute"


def relative_time(value: object, now: datetime | None = None) -> Markup | object:
    """``value`` (an ISO 8601 time) as "N units ago" (or "in N units"), exact on hover."""
    if not isinstance(value, str) or not value:
        return "" if value is None else value
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return value
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    moment = moment.astimezone(UTC)
    seconds = ((now or datetime.now(UTC)) - moment).total_seconds()
    said = f"{ago(seconds)} ago" if seconds >= 0 else f"in {ago(-seconds)}"
    exact = moment.strftime("%Y-%m-%d %H:%M:%S UTC")
    return Markup('<time datetime="{}" title="{}">{}</time>').format(moment.isoformat().replace("+00:00", "Z"),
                                                                    exact, said)


_DRAWN = re.compile(r'<time datetime="([^"]+)" title="([^"]+)">[^<]*</time>')


def counted_from(html: str, now: datetime) -> str:
    """A page's relative times (each drawn by :func:`relative_time`) counted again from ``now``:
    a page of the board as it was at a moment says "3 days ago" of that moment, not of today."""
    return _DRAWN.sub(lambda m: str(relative_time(m[1], now)), html)
