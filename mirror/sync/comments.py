"""``mirror sync comments``: the comments on the mirrored images (or every comment of the site).

/search/comments sorts by ``created_at`` desc whatever ``sf`` says, so walks go by the keyset of
:mod:`newest_first`. A run does two things:

1. **What changed.** ``updated_at.gte:<last run's start - overlap>``, site-wide: new comments and
   edited ones. With ``scope = "mirrored"`` those on images that are not mirrored are skipped.
   With nothing changed this is one request.
2. **What is not covered yet.** ``scope = "mirrored"``: comments of the mirrored images not yet
   covered, 50 images per query (``image_id:1 || image_id:2 || ...``); an image mirrored later
   is covered by a later run. ``scope = "all"``: one walk over every comment, on the first run.

What search cannot tell: it leaves out hidden comments (and comments on hidden images), so a
comment hidden after it was mirrored is never seen again; its row keeps the body it had. Hiding
a comment does not change the image's ``comment_count`` on the real site (destroying one does,
without touching the image's ``updated_at``), so there is no cheap signal for it.
Destroyed comments come as null elements and are skipped.
"""

from __future__ import annotations

from typing import Any

from sqlite_utils import Database

from ..api import PhilomenaClient
from ..store.follow_ups import mirrored_among
from ..store.specs import COMMENTS
from ..store.writer import RecordWriter, Saved
from .follow import FollowRun
from .newest_first import EVERYTHING
from .report import Progress, SyncReport, recorded_run

NAME = "comments"


async def sync_comments(client: PhilomenaClient, db: Database, *, scope: str = "mirrored", overlap: int = 900,
                        progress: Progress | None = None) -> SyncReport:
    """Mirror the comments ``scope`` names into ``db``; resume or refresh as the cursor says."""
    writer = RecordWriter(db, COMMENTS, client.base_url)

    def on_mirrored(records: list[Any]) -> Saved:
        mirrored = mirrored_among(db, [r["image_id"] for r in records if type(r.get("image_id")) is int])
        return writer.save([r for r in records if r.get("image_id") in mirrored])

    with recorded_run(db, client, NAME) as report:
        run = FollowRun(client, db, NAME, scope=scope, overlap=overlap, search=client.search_comments,
                        report=report, progress=progress)
        if run.since:
            await run.walk(run.state, "changed", f"updated_at.gte:{run.since}",
                           writer.save if scope == "all" else on_mirrored)
        if scope == "all":
            await run.walk(run.cursor, "everything", EVERYTHING, writer.save)
        else:
            await run.image_batches("image_id", writer.save)
        run.finish()
    return report


async def sync(client: PhilomenaClient, db: Database, options: dict[str, Any],
               progress: Progress | None = None) -> SyncReport:
    """The runner's entry point: ``options`` is the ``[comments]`` section of the config."""
    return await sync_comments(client, db, scope=options["scope"], overlap=options["refresh_overlap"],
                               progress=progress)
