"""A search's total month by month, as a small chart on the tag and search pages: the past as
data (:mod:`mirror.asof.trend`), drawn as the history page draws score and faves.

Drawn only where it is one walk back over the lists (a search of tags and ids): a search that
reads scores or words would be a search per month, too slow for a page.
"""

from __future__ import annotations

import sqlite3

from markupsafe import Markup

from ..asof import Moment
from ..asof.trend import steps, trend, walkable
from ..dates import utc_text
from ..search.bitmap_search import ImageScope
from ..search.engine import SearchTooSlow
from ..search.postings import Postings
from ..search.query import Node
from .history_chart import Series, chart

__all__ = ["trend_chart"]

SECONDS = 2.0


def trend_chart(conn: sqlite3.Connection, postings: Postings, node: Node, moment: Moment | None = None,
                scope: ImageScope = ImageScope()) -> Markup | None:
    """The chart of the images ``node`` found each month (each year past 50 years), from the
    board's first upload to ``moment`` (now when None); None when it is not one walk back, the
    span is no month or more than 600 years, or it takes longer than :data:`SECONDS`."""
    if not walkable(node, scope):
        return None
    first = conn.execute("SELECT min(created_at) FROM images").fetchone()[0]
    if not first:
        return None
    start, end = Moment(first[:19] + "Z"), moment or Moment(utc_text())
    if end < start:
        return None
    for every in ("month", "year"):  # years where there are more months than a chart draws
        try:
            moments = steps(start, end, every)
            break
        except ValueError:
            continue
    else:
        return None  # more years than a chart draws (a moment in year 9999)
    moments += [end] if moments[-1] != end else []  # the last point: the moment shown
    try:
        totals = trend(conn, postings, node, scope, moments, seconds=SECONDS)
    except SearchTooSlow:
        return None
    return chart([Series("images", [(m.text, total) for m, total in zip(moments, totals)])],
                 title="images found, month by month")
