"""A moment of the board's past, as people and web archives write it.

``/as-of/WHEN/`` takes three spellings: a day (``2025-01-05``: the end of that day, UTC, so a
day's answer holds what the day did), a time (``2025-01-05T12:00:00Z``) and the 14 digits web
archives put in their URLs (``20250105120000``, Wayback and pywb). Memento (RFC 7089) speaks
HTTP dates (``Accept-Datetime: Sun, 05 Jan 2025 12:00:00 GMT``). Every one becomes the stored
time text the history is kept in (:mod:`mirror.dates`), which sorts as time does.

One rule for every way a moment comes in (a path, ``Accept-Datetime``, ``--as-of``): a moment the
calendar can write in UTC, year 1 to year 9999, in ASCII digits, is one (year 1 answers the board as
it was then: nothing yet); anything else is a ValueError saying so, which serve and browse answer
with a 400 and the commands with exit 2. Unicode digits (Arabic-Indic, fullwidth) are not taken
for a moment, and an HTTP date's year is read as written (``0001`` is not 2001).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone
from email.utils import format_datetime

from ..dates import DATE_FORMAT, utc_text

__all__ = ["Moment", "parse_moment", "moment_of_http_date"]

_DAY = re.compile(r"(\d{4})-(\d\d)-(\d\d)", re.ASCII)
_DIGITS = re.compile(r"\d{14}", re.ASCII)
_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)", re.ASCII)
# RFC 7231's IMF-fixdate, the form RFC 7089 gives Accept-Datetime: Sun, 05 Jan 2025 12:00:00 GMT
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_HTTP_DATE = re.compile(r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), (\d\d) (" + "|".join(_MONTHS)
                        + r") (\d{4}) (\d\d):(\d\d):(\d\d) GMT", re.ASCII)
BEYOND = "beyond what the calendar can write (years 1 to 9999, in UTC)"


@dataclass(frozen=True, order=True)
class Moment:
    """A moment, to the second, in UTC."""

    text: str  # as the history keeps times: 2025-01-05T23:59:59Z

    @classmethod
    def of(cls, when: datetime) -> Moment:
        """``when`` to the second; ValueError when it is no time in UTC (an offset past year 1 or 9999)."""
        try:
            return cls(utc_text(when.replace(microsecond=0)))
        except OverflowError:
            raise ValueError(f"{when.isoformat()} is {BEYOND}") from None

    @property
    def datetime(self) -> datetime:
        if len(self.text) == 20 and self.text[10] == "T" and self.text[19] == "Z":  # the stored form: C's parser
            return datetime.fromisoformat(self.text)
        return datetime.strptime(self.text, DATE_FORMAT).replace(tzinfo=timezone.utc)

    @property
    def digits(self) -> str:
        """The 14 digits of web archives' URLs; what ``/as-of/`` links are written with."""
        return self.text.translate(_NOT_DIGITS)

    @property
    def http_date(self) -> str:
        """As Memento's headers write it (``Sun, 05 Jan 2025 12:00:00 GMT``)."""
        return format_datetime(self.datetime, usegmt=True)


_NOT_DIGITS = str.maketrans("", "", "-:TZ")


def parse_moment(text: str) -> Moment:
    """``2025-01-05`` (the end of that day), ``2025-01-05T12:00:00Z`` or ``20250105120000``;
    ValueError saying what to give otherwise, or that it is beyond the calendar."""
    text = text.strip()
    try:
        if _DIGITS.fullmatch(text):
            return Moment.of(datetime.strptime(text, "%Y%m%d%H%M%S").replace(tzinfo=timezone.utc))
        if match := _DAY.fullmatch(text):
            day = datetime(*map(int, match.groups()), tzinfo=timezone.utc)
            return Moment.of(day.replace(hour=23, minute=59, second=59))
        if _TIME.fullmatch(text):
            when = datetime.fromisoformat(text.replace("Z", "+00:00"))
            return Moment.of(when)
    except ValueError as error:
        if BEYOND in str(error):
            raise ValueError(f"{text!r} is {BEYOND}; give a moment within them") from None
        # a month 13, a day 32, a year 0: said below as any other
    raise ValueError(f"{text!r} is not a moment: give a day (2025-01-05, its end in UTC), a time "
                     "(2025-01-05T12:00:00Z) or 14 digits (20250105120000)")


def moment_of_http_date(text: str) -> Moment:
    """An ``Accept-Datetime`` header's date (RFC 1123's form, its year as written); ValueError when
    it is not one."""
    match = _HTTP_DATE.fullmatch(text.strip())
    try:
        if match:
            day, month, year, hour, minute, second = match.groups()
            return Moment.of(datetime(int(year), _MONTHS.index(month) + 1, int(day), int(hour), int(minute),
                                      int(second), tzinfo=timezone.utc))
    except ValueError:
        pass  # a 31 February, a year 0000
    raise ValueError(f"Accept-Datetime {text!r} is not an HTTP date (Sun, 05 Jan 2025 12:00:00 GMT) "
                     "of years 1 to 9999")
