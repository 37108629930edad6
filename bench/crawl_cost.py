"""Crawl cost: the requests a sync makes, itemised by reason, against the fewest possible.

A board of ``--images`` images (with its tags, comments, galleries, forums, posts, filters and
users) is mirrored whole; then three syncs of every resource are counted from the site's
request log, each request classified by what it asks (its path and query):

1. nothing changed on the site: every request is listed with why it is made;
2. ``--changes`` new images were uploaded;
3. ``--changes`` existing images changed (their score, which moves ``updated_at``).

The images rows are compared with the minimum, ceil(n / 50) + 1: one request per page of 50 and
the one that finds nothing more. ``images.refresh_overlap`` is set to 0 (and the phases are
seconds apart) so each phase counts its own changes only: with the default 900 s, what changed
in the 15 minutes before a run started is fetched again by the next one, by design.

    .venv/bin/python bench/crawl_cost.py [--images 2000] [--changes 1000]
"""

from __future__ import annotations

import argparse
import collections
import tempfile
import time
from pathlib import Path
from urllib.parse import parse_qs

from common import ALL, Logged, logged, minimum_requests, mirror_config, print_table, sync

from mirror.localsite.board.editor import BoardEditor
from mirror.localsite.http.server import SiteServer

API = "/api/v1/json"
# Why each kind of request is made, for the table of a no-change sync.
WHY = {
    ("images", "walk: new + changed"): "one query for ids past the cursor or updated since the last run",
    ("images", "walk"): "ids past the cursor",
    ("images", "lookup"): "an image fetched by id (featured image, or a record a download re-checks)",
    ("images", "featured"): "the featured image, once per UTC day",
    ("tags", "lookup by id"): "tags named by new/changed images, and tags.refresh_per_run oldest (no tag date to ask by)",
    ("tags", "walk"): "tags.scope = all: every tag by id",
    ("comments", "refresh"): "comments created or edited since the last run",
    ("comments", "audit"): "comments.audit_per_run batches of 50 images (per_page=1): hiding moves no date",
    ("comments", "walk: new images"): "comments of newly mirrored images, 50 images per query",
    ("comments", "lookup"): "a comment search no longer shows, asked for by id",
    ("galleries", "refresh"): "galleries updated since the last run",
    ("galleries", "rewalk lookup"): "galleries due a rewalk, looked up 50 ids per request",
    ("galleries", "rewalk"): "a gallery's images in order (rewalk_per_run: reordering moves no date)",
    ("galleries", "membership"): "which galleries hold mirrored images (25 per request)",
    ("forums", "forum list"): "the forums list: one page",
    ("forums", "topics"): "each forum's first topics page: new replies show there",
    ("forums", "topic pages"): "forums.audit_pages_per_run old pages (hiding a post moves no counter), "
                               "and the pages of topics with new posts",
    ("posts", "refresh"): "posts created or edited since the last run",
    ("posts", "walk"): "every post, site-wide (first run)",
    ("filters", "system"): "the system filters: one page, no date to ask by",
    ("filters", "lookup"): "the filter in use, by id",
    ("profiles", "lookup"): "users named by new records, or older than profiles.refresh_days",
}


def classify(path: str, query: str) -> tuple[str, str]:
    """(resource, reason) of one API request, from its path and parameters alone."""
    q = parse_qs(query).get("q", [""])[0]
    parts = path.removeprefix(API).strip("/").split("/")
    if parts[0] == "search":
        return _search(parts[1], q, parse_qs(query))
    if parts[0] == "forums":
        return "forums", {1: "forum list", 3: "topics"}.get(len(parts), "topic pages")
    if parts[0] == "filters":
        return "filters", "system" if parts[1:] == ["system"] else "lookup"
    if parts[0] == "images":
        return "images", "featured" if parts[1:] == ["featured"] else "lookup"
    if parts[0] in ("profiles", "comments"):
        return parts[0], "lookup"
    return parts[0], "other"


def _search(kind: str, q: str, params: dict[str, list[str]]) -> tuple[str, str]:
    if kind == "images":
        if "gallery_id:" in q:
            return "galleries", "membership" if params.get("per_page") == ["1"] else "rewalk"
        if "id.gt:" in q and "updated_at.gte:" in q:
            return "images", "walk: new + changed"
        return "images", "walk" if "id.gt:" in q else "lookup"
    if kind == "comments":
        if "updated_at.gte:" in q:
            return "comments", "refresh"
        return "comments", "audit" if params.get("per_page") == ["1"] else "walk: new images"
    if kind == "galleries":
        return "galleries", "refresh" if "updated_at.gte:" in q else "rewalk lookup"
    if kind == "tags":
        return "tags", "lookup by id" if "id:" in q else "walk"
    if kind == "posts":
        return "posts", "refresh" if "updated_at.gte:" in q else "walk"
    return kind, "other"


def itemise(requests: list[Logged]) -> collections.Counter[tuple[str, str]]:
    return collections.Counter(classify(r.path, r.query) for r in requests if r.path.startswith(API))


def phase(site: SiteServer, config: object) -> collections.Counter[tuple[str, str]]:
    """Sync every resource and count its requests by reason. The phases are 2.5 s apart, so
    changes made before one phase are not counted again by the next: a run's start is taken as
    the earlier of its clock and the site's whole-second ``Date`` header, which can lag by 1 s."""
    time.sleep(2.5)
    site.clear_requests()
    sync(config, ALL)
    return itemise(logged(site))


def print_phase(title: str, counts: collections.Counter[tuple[str, str]], changed: int) -> int:
    """Print one phase's table; returns its images requests beyond the minimum."""
    order = {name: i for i, name in enumerate(ALL)}
    rows = [(resource, reason, n, WHY.get((resource, reason), "?"))
            for (resource, reason), n in sorted(counts.items(), key=lambda kv: (order.get(kv[0][0], 99), kv[0][1]))]
    rows.append(("all", "", sum(counts.values()), ""))
    print_table(["resource", "reason", "requests", "why"], rows, title)
    images = sum(n for (resource, reason), n in counts.items() if resource == "images" and reason != "featured")
    least = minimum_requests(changed)
    print(f"images: {images} requests for {changed:,} images; minimum ceil({changed}/50) + 1 = {least}; "
          f"excess {images - least:+d} ({images / least:.2f}x the minimum)")
    return images - least


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=2000, help="the board's size before the changes")
    parser.add_argument("--changes", type=int, default=1000, help="images added, then images changed")
    args = parser.parse_args()
    with SiteServer(BoardEditor.generate(seed=11, images=args.images)) as site, tempfile.TemporaryDirectory() as tmp:
        overlap = {"refresh_overlap": 0}
        config = mirror_config(site.url, site.editor.everything_filter_id, Path(tmp), resources=ALL,
                               images=overlap, comments=overlap, galleries=overlap, posts=overlap)
        sync(config, ALL)
        print(f"A board of {args.images:,} images mirrored whole (every resource); then:")
        excess = [print_phase("1. a sync with nothing changed on the site", phase(site, config), 0)]
        site.editor.add_images(args.changes)
        excess.append(print_phase(f"2. {args.changes:,} new images", phase(site, config), args.changes))
        with site.editor.lock:
            for image_id in sorted(site.editor.images)[:args.changes]:
                site.editor.edit_image(image_id, score=site.editor.images[image_id]["score"] + 1)
        excess.append(print_phase(f"3. {args.changes:,} changed images", phase(site, config), args.changes))
    met = all(e <= 1 for e in excess)
    print(f"\ntarget (images within 1 request of the minimum in every phase): {'met' if met else 'NOT met'}")


if __name__ == "__main__":
    main()
