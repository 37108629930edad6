"""A search's total month by month, as a small chart on the tag and search pages: the past as
data (:mod:`mirror.asof.trend`), drawn as the history page draws score and faves.

Drawn only where it is one walk back over the lists (a search of tags and ids): a search that
reads scores or words would be a search per month, too slow for a page. Even one walk back takes
seconds for a common tag on the whole board (the tag's every change since its first image), so the
chart is a page of its own (:data:`TREND_PATH`) that the tag and search pages frame (``<iframe
loading="lazy">``): the browser asks for it once the page is shown, and the page never waits for it.
"""

from __future__ import annotations

import sqlite3
from urllib.parse import urlencode

from markupsafe import Markup

from ..asof import Moment
from ..asof.trend import steps, trend, walkable
from ..dates import utc_text
from ..search.bitmap_search import ImageScope
from ..search.engine import SearchTooSlow
from ..search.postings import Postings
from ..search.query import Node
from .history_chart import Series, chart
from .moment import within

__all__ = ["TREND_PATH", "chart_document", "trend_chart", "trend_src"]

SECONDS = 2.0
TREND_PATH = "/-/trend"


def trend_src(q: str, moment: Moment | None) -> str:
    """The address of the chart of search ``q`` as of ``moment`` (today when None), for a frame."""
    return within(f"{TREND_PATH}?{urlencode({'q': q})}", moment)


def chart_document(drawn: Markup | None, q: str) -> str:
    """The page a frame shows: the chart alone, or a line saying why there is none."""
    body = drawn if drawn is not None else Markup(
        '<p class="booru-no-chart">No month-by-month chart: the history is too short, or reading it took too long.</p>')
    return str(Markup('<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{} month by month</title>'
                      '<style>body {{ margin: 0; font: 13px sans-serif; color: #555; }} '
                      '.booru-chart {{ background: #fafafa; border: 1px solid #ddd; max-width: 100%; height: auto; }}'
                      '</style></head><body>{}</body></html>').format(q, body))


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
