"""Score and faves over time as a small chart: inline SVG drawn on the server, no script.

Each series is a step line (a count holds until the next sync sees it move), its points carry
their value and time as a tooltip (``<title>``), and the axes say the lowest and highest value and
the first and last day.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from markupsafe import Markup

__all__ = ["Series", "chart"]

WIDTH, HEIGHT, LEFT, BOTTOM, TOP = 480, 140, 44, 22, 10
COLOURS = {"score": "#67af2b", "faves": "#c4b246"}


@dataclass(frozen=True)
class Series:
    """A count over time: (ISO time, value) points, oldest first."""

    name: str
    points: Sequence[tuple[str, int]]


def _seconds(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def chart(series: Sequence[Series], title: str = "score and faves over time") -> Markup | None:
    """The chart, or None when no series has two points to join."""
    drawn = [s for s in series if len(s.points) >= 2]
    if not drawn:
        return None
    times = [_seconds(t) for s in drawn for t, _ in s.points]
    values = [v for s in drawn for _, v in s.points]
    t0, t1 = min(times), max(times)
    low, high = min(values + [0]), max(values + [1])
    span_t, span_v = (t1 - t0) or 1.0, (high - low) or 1

    def x(stamp: str) -> float:
        return LEFT + (_seconds(stamp) - t0) / span_t * (WIDTH - LEFT - 8)

    def y(value: int) -> float:
        return TOP + (high - value) / span_v * (HEIGHT - TOP - BOTTOM)

    parts = [Markup('<svg class="booru-chart" role="img" viewBox="0 0 {w} {h}" width="{w}" height="{h}" '
                    'xmlns="http://www.w3.org/2000/svg"><title>{title}</title>').format(
        w=WIDTH, h=HEIGHT, title=title)]
    parts.append(Markup('<line x1="{l}" y1="{b}" x2="{r}" y2="{b}" stroke="#999"/>'
                        '<line x1="{l}" y1="{t}" x2="{l}" y2="{b}" stroke="#999"/>').format(
        l=LEFT, r=WIDTH - 8, t=TOP, b=HEIGHT - BOTTOM))
    for value in sorted({low, high}):
        parts.append(Markup('<text x="{}" y="{:.1f}" font-size="10" text-anchor="end">{}</text>').format(
            LEFT - 4, y(value) + 3, f"{value:,}"))
    first, last = min(p[0] for s in drawn for p in s.points), max(p[0] for s in drawn for p in s.points)
    parts.append(Markup('<text x="{}" y="{}" font-size="10">{}</text><text x="{}" y="{}" font-size="10" '
                        'text-anchor="end">{}</text>').format(LEFT, HEIGHT - 6, first[:10], WIDTH - 8, HEIGHT - 6,
                                                              last[:10]))
    for n, s in enumerate(drawn):
        colour = COLOURS.get(s.name, "#555")
        steps = []
        for i, (stamp, value) in enumerate(s.points):
            if i:
                steps.append(f"{x(stamp):.1f},{y(s.points[i - 1][1]):.1f}")
            steps.append(f"{x(stamp):.1f},{y(value):.1f}")
        parts.append(Markup('<polyline class="booru-series" data-series="{}" fill="none" stroke="{}" '
                            'stroke-width="2" points="{}"/>').format(s.name, colour, " ".join(steps)))
        for stamp, value in s.points:
            parts.append(Markup('<circle cx="{:.1f}" cy="{:.1f}" r="3" fill="{}"><title>{} {} at {}</title></circle>'
                                ).format(x(stamp), y(value), colour, s.name, f"{value:,}",
                                         stamp[:16].replace("T", " ")))
        parts.append(Markup('<text x="{}" y="{}" font-size="11" fill="{}">{}</text>').format(
            LEFT + 6 + 60 * n, TOP + 10, colour, s.name))
    parts.append(Markup("</svg>"))
    return Markup("").join(parts)
