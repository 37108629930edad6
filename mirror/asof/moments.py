"""A moment of the board's past, as people and web archives write it.

``/as-of/WHEN/`` takes three spellings: a day (``2025-01-05``: the end of that day, UTC, so a
day's answer holds what the day did), a time (``2025-01-05T12:00:00Z``) and the 14 digits web
archives put in their URLs (``20250105120000``, Wayback and pywb). Memento (RFC 7089) speaks
HTTP dates (``Accept-Datetime: Sun, 05 Jan 2025 12:00:00 GMT``). Every one becomes the stored
time text the history is kept in (:mod:`mirror.dates`), which sorts as time does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone
from email.utils import format_datetime, parsedate_to_datetime

from ..dates import DATE_FORMAT, parse_utc, utc_text

__all__ = ["Moment", "parse_moment", "moment_of_http_date"]

_DAY = re.compile(r"(\d{4})-(\d\d)-(\d\d)")
_DIGITS = re.compile(r"\d{14}")
_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)")


@dataclass(frozen=True, order=True)
class Moment:
    """A moment, to the second, in UTC."""

    text: str  # as the history keeps times: 2025-01-05T23:59:59Z

    @classmethod
    def of(cls, when: datetime) -> Moment:
        return cls(utc_text(when.replace(microsecond=0)))

    @property
    def datetime(self) -> datetime:
        return datetime.strptime(self.text, DATE_FORMAT).replace(tzinfo=timezone.utc)

    @property
    def digits(self) -> str:
        """The 14 digits of web archives' URLs; what ``/as-of/`` links are written with."""
        return self.datetime.strftime("%Y%m%d%H%M%S")

    @property
    def http_date(self) -> str:
        """As Memento's headers write it (``Sun, 05 Jan 2025 12:00:00 GMT``)."""
        return format_datetime(self.datetime, usegmt=True)


def parse_moment(text: str) -> Moment:
    """``2025-01-05`` (the end of that day), ``2025-01-05T12:00:00Z`` or ``20250105120000``;
    ValueError saying what to give otherwise."""
    text = text.strip()
    try:
        if _DIGITS.fullmatch(text):
            return Moment.of(datetime.strptime(text, "%Y%m%d%H%M%S").replace(tzinfo=timezone.utc))
        if match := _DAY.fullmatch(text):
            day = datetime(*map(int, match.groups()), tzinfo=timezone.utc)
            return Moment.of(day.replace(hour=23, minute=59, second=59))
        if _TIME.fullmatch(text) and (when := parse_utc(text)) is not None:
            return Moment.of(when)
    except ValueError:
        pass  # a month 13, a day 32: said below as any other
    raise ValueError(f"{text!r} is not a moment: give a day (2025-01-05, its end in UTC), a time "
                     "(2025-01-05T12:00:00Z) or 14 digits (20250105120000)")


def moment_of_http_date(text: str) -> Moment:
    """An ``Accept-Datetime`` header's date (RFC 1123); ValueError when it is not one."""
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        raise ValueError(f"Accept-Datetime {text!r} is not an HTTP date (Sun, 05 Jan 2025 12:00:00 GMT)") from None
    return Moment.of(when if when.tzinfo else when.replace(tzinfo=timezone.utc))
