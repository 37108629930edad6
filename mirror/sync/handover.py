"""Handing a mirror filled from elsewhere (the site's nightly database dump) over to `mirror sync`.

``mirror import-dump`` writes every record as it stood when the dump was made, at ``as_of``, but
none of the bookkeeping the crawlers keep. Left so, the next sync would take the mirror for new
and walk the whole board again: 1.3 million requests on Derpibooru. :func:`hand_over` writes
instead what a complete first sync started at ``as_of`` would have left, derived from the records
alone, so that the next sync asks only for what changed since then (less each crawler's refresh
overlap), as a nightly sync does. Each crawler module says how it is handed over
(its ``hand_over``), since its cursor is its own:

- images: the highest image id held, and ``as_of`` as the last walk's start;
- tags: the mark of the images held (the tags on images changed since are fetched), and with
  ``scope = "all"`` the walk of every tag done up to the highest tag id held;
- comments, galleries, posts: ``as_of`` as the last run's start, and the walk of everything done
  (``scope = "all"``) or every mirrored image covered in ``image_progress`` ("mirrored");
  every gallery held recorded in ``gallery_walks`` as walked at ``as_of``;
- forums: each topic's posts mirrored at the counters its record holds (``topic_progress``) and
  each forum's mark at its newest reply.

The rolling audits (hidden comments, old pages of posts) and the gallery rewalks carry on as after
any first sync, their rounds starting at the beginning. Three have nothing to hand over: filters
are all fetched again every run (a couple of requests); profiles go by the ``users`` table itself
(a user named and not held is fetched, one held as a name only, as a dump holds users, is fetched
``refresh_per_run`` a run, newest activity first, and a full profile is fetched again once its
``mirrored_at`` is ``refresh_days`` old); and the featured image of the day, which no dump holds, is asked for by
the next run (one request more than a nightly run makes, once).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from sqlite_utils import Database

from . import comments, forums, galleries, images, posts, tags
from .runner import ORDER

__all__ = ["hand_over"]


def hand_over(db: Database, as_of: str, crawls: Mapping[str, Any], *, filter_id: int | None,
              walked_at: str | None = None) -> list[str]:
    """Write, in one transaction, the state each crawler of ``crawls`` (resource -> its options, as
    :func:`.runner.run_sync` takes them) would hold after a complete first sync started at ``as_of``
    (UTC, as :func:`mirror.dates.utc_text` writes it) through the filter ``filter_id`` (the
    configured ``site.filter_id``); the resources handed over, in sync order.

    Call it on a mirror whose records are all in place, before its first sync: what it derives
    (highest ids, marks, progress) comes from them. ``walked_at`` (default ``as_of``) is when the
    galleries' membership was read (a dump's own time; ``as_of`` may be earlier, to be safe about
    what changed): their rewalks are due ``rewalk_after_days`` after it.
    """
    steps: dict[str, Callable[[Any], None]] = {
        "images": lambda options: images.hand_over(db, options, filter_id, as_of),
        "tags": lambda options: tags.hand_over(db, options),
        "comments": lambda options: comments.hand_over(db, options, filter_id, as_of),
        "galleries": lambda options: galleries.hand_over(db, options, filter_id, as_of, walked_at or as_of),
        "forums": lambda options: forums.hand_over(db, options),
        "posts": lambda options: posts.hand_over(db, filter_id, as_of),
    }
    handed = [name for name in ORDER if name in crawls and name in steps]
    with db.atomic():
        for name in handed:
            steps[name](crawls[name])
    return handed
