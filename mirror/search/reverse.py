"""Reverse image search over ``image_intensities``, with the site's rules (reference section 9).

``distance`` is read as the site reads it (``"0"`` prefixed, the leading float taken: ``.5`` is
0.5, ``abc`` and ``-0.3`` are 0.0), defaults to 0.25 and must lie in 0..1; ``limit`` must be an
integer in 1..50 but does not cap the answer, which is always the first 50 matches with
``total`` counting them all. Parameters the site would refuse give no search at all (the site
then answers an empty 200, never a 400). A match has each intensity within ±3×distance and the
aspect ratio within ±distance, ordered by the summed squares of the differences (ties by id,
which the site leaves undefined).
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass

__all__ = ["ReverseQuery", "Match", "parse_distance", "parse_limit", "find_matches", "PAGE_SIZE", "DEFAULT_DISTANCE",
           "MAX_DISTANCE"]

DEFAULT_DISTANCE = 0.25
MAX_DISTANCE = 1.0  # the site refuses a wider search
PAGE_SIZE = 50
_LEADING_FLOAT = re.compile(r"[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?")


@dataclass(frozen=True)
class Match:
    image_id: int
    score: float  # the sum of squared differences the results are ordered by


@dataclass(frozen=True)
class ReverseQuery:
    intensities: tuple[float, float, float, float]
    aspect_ratio: float
    distance: float = DEFAULT_DISTANCE


def parse_distance(value: str | None) -> float | None:
    """The distance the site would use, or None when it would refuse the search."""
    if value is None:
        return DEFAULT_DISTANCE
    found = _LEADING_FLOAT.match("0" + value)
    distance = float(found.group(0)) if found else 0.0
    return distance if 0.0 <= distance <= MAX_DISTANCE else None


def parse_limit(value: str | None) -> bool:
    """Whether the site accepts ``limit`` (it is checked, then overridden by the page size)."""
    if value is None or value == "":
        return True
    text = value.strip()
    return bool(re.fullmatch(r"[-+]?[0-9]+", text)) and 1 <= int(text) <= PAGE_SIZE


def find_matches(conn: sqlite3.Connection, query: ReverseQuery, limit: int = PAGE_SIZE) -> tuple[list[Match], int]:
    """The first ``limit`` matches, best first, and how many match in all."""
    box, params = _box(query)
    total = conn.execute(f"SELECT count(*) FROM image_intensities WHERE {box}", params).fetchone()[0]
    if not total:
        return [], 0
    nw, ne, sw, se = query.intensities
    score = "(nw - ?) * (nw - ?) + (ne - ?) * (ne - ?) + (sw - ?) * (sw - ?) + (se - ?) * (se - ?) " \
            "+ (aspect_ratio - ?) * (aspect_ratio - ?)"
    score_params = [v for value in (nw, ne, sw, se, query.aspect_ratio) for v in (value, value)]
    rows = conn.execute(f"SELECT image_id, {score} AS score FROM image_intensities WHERE {box} "
                        f"ORDER BY score, image_id LIMIT ?", [*score_params, *params, limit]).fetchall()
    return [Match(int(row[0]), float(row[1])) for row in rows], int(total)


def _box(query: ReverseQuery) -> tuple[str, list[float]]:
    spread = query.distance * 3  # "for each color channel"
    clauses, params = [], []
    for column, value in zip(("nw", "ne", "sw", "se"), query.intensities):
        clauses.append(f"{column} BETWEEN ? AND ?")
        params += [value - spread, value + spread]
    clauses.append("aspect_ratio BETWEEN ? AND ?")
    params += [query.aspect_ratio - query.distance, query.aspect_ratio + query.distance]
    return " AND ".join(clauses), params
