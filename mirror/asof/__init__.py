"""The board as it was at any moment: a way of reading the store, never a copy of it.

:mod:`.moments` reads the moments people and web archives write; :mod:`.records` gives one record
as it was at a moment, from today's row and the history kept since. ``mirror serve`` answers
``/as-of/WHEN/`` and Memento (RFC 7089) through here.
"""

from .moments import Moment, moment_of_http_date, parse_moment
from .records import AsOf, Version, Versions, record_as_of, versions_around, versions_of, versions_page

__all__ = ["Moment", "parse_moment", "moment_of_http_date", "AsOf", "Version", "Versions", "record_as_of",
           "versions_around", "versions_of", "versions_page"]
