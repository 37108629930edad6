"""Cadence: does a long sync keep the configured pace, and never exceed it, nor the search limit?

A board of ``(--requests - 1) * 50`` images is mirrored at ``polite.requests_per_second =
--rate`` (and ``polite.searches_per_10s = --search-limit``, the site's 20) from a site that takes
``--latency`` seconds per answer (``slow:``). From the site's request log (arrival times) it
reports the achieved rate against the pace expected (the configured rate, or the search limit's
when that is slower: an image walk is all searches), the most requests in any ``--window``-second
window against what the rate allows there, the most searches (``/api/v1/json/search*``) in any
10 s against the search limit, and the gaps between requests. The latency is hidden only if
pacing counts from each request's start, not from its answer.

    .venv/bin/python bench/cadence.py [--rate 5] [--requests 100] [--latency 0.05] [--search-limit 20]
"""

from __future__ import annotations

import argparse
import bisect
import math
import statistics
import tempfile
from pathlib import Path

from common import SiteProcess, logged, mirror_config, print_table, sync

SEARCH_PATH = "/api/v1/json/search"  # the site limits these apart (20 per 10 s on Derpibooru)
SEARCH_WINDOW = 10.0


def most_in_window(times: list[float], window: float) -> int:
    """The most arrivals in any half-open window [t, t + window) (one starting at each arrival)."""
    return max(bisect.bisect_left(times, t + window) - i for i, t in enumerate(times))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=5.0, help="polite.requests_per_second")
    parser.add_argument("--requests", type=int, default=100, help="requests the sync makes (pages + 1)")
    parser.add_argument("--latency", type=float, default=0.05, help="seconds the site takes per answer")
    parser.add_argument("--window", type=float, default=5.0)
    parser.add_argument("--search-limit", type=float, default=20.0, help="polite.searches_per_10s")
    args = parser.parse_args()
    images = (args.requests - 1) * 50
    # The site runs in its own process, so the client's work never delays the arrivals it logs.
    with SiteProcess(images, seed=2) as site, tempfile.TemporaryDirectory() as tmp:
        site.warm()
        config = mirror_config(site.url, site.everything_filter_id, Path(tmp),
                               polite={"requests_per_second": args.rate, "searches_per_10s": args.search_limit})
        site.clear_requests()
        site.set_faults(f"slow:{args.latency:g}")
        sync(config)
        requests = [r for r in logged(site) if r.path.startswith("/api/")]
    times = sorted(r.time for r in requests)
    searches = sorted(r.time for r in requests if r.path.startswith(SEARCH_PATH))
    report(args, times, searches)


def report(args: argparse.Namespace, times: list[float], searches: list[float]) -> None:
    """Print the table and whether the targets are met."""
    span = times[-1] - times[0]
    # An image walk is searches (and the featured image): their pace is the slower of the two limits.
    achieved = (len(searches) - 1) / (searches[-1] - searches[0])
    pace = min(args.rate, args.search_limit / SEARCH_WINDOW)
    search_allowed = math.floor(args.search_limit)
    most_searches = most_in_window(searches, SEARCH_WINDOW) if searches else 0
    gaps = [b - a for a, b in zip(times, times[1:])]
    # A bucket of one slot refilled every 1/rate s lets rate * window requests start in a
    # half-open window of that length: the shortest span of that many + 1 requests shows by how
    # much the site saw more.
    allowed = math.floor(args.rate * args.window)
    most = most_in_window(times, args.window)
    tightest = min(b - a for a, b in zip(times, times[allowed:]))
    print(f"{len(times)} requests over {span:.1f} s, site latency {args.latency * 1000:.0f} ms, "
          f"configured {args.rate:g} requests/s")
    print_table(["measure", "value", "configured / allowed", "ratio"], [
        ("achieved search rate (requests/s)", achieved, pace, achieved / pace),
        (f"most requests in any {args.window:g} s", most, allowed, most / allowed),
        (f"most searches in any {SEARCH_WINDOW:g} s", most_searches, search_allowed, most_searches / search_allowed),
        (f"shortest span of {allowed + 1} requests (s)", tightest, args.window, tightest / args.window),
        ("median gap (ms)", statistics.median(gaps) * 1000, 1000 / args.rate, statistics.median(gaps) * args.rate),
        ("shortest gap (ms)", min(gaps) * 1000, 1000 / args.rate, min(gaps) * args.rate),
        ("longest gap (ms)", max(gaps) * 1000, 1000 / args.rate, max(gaps) * args.rate),
    ])
    rate_ok, window_ok = achieved / pace >= 0.98, most <= allowed and most_searches <= search_allowed
    print(f"target (at least 0.98 of the pace, never above the rate or the search limit): "
          f"{'met' if rate_ok and window_ok else 'NOT met'} (rate ratio {achieved / pace:.3f}, "
          f"window {most}/{allowed}, searches {most_searches}/{search_allowed} in {SEARCH_WINDOW:g} s)")


if __name__ == "__main__":
    main()
