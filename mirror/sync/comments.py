"""``mirror sync comments``: the comments on the mirrored images (or every comment of the site).

/search/comments sorts by ``created_at`` desc whatever ``sf`` says, so walks go by the keyset of
:mod:`newest_first`. A run does two things:

1. **What changed.** ``updated_at.gte:<last run's start - overlap>``, site-wide: new comments and
   edited ones. With ``scope = "mirrored"`` those on images that are not mirrored are skipped.
   With nothing changed this is one request.
2. **What is not covered yet.** ``scope = "mirrored"``: comments of the mirrored images not yet
   covered, 50 images per query (``image_id:1 || image_id:2 || ...``); an image mirrored later
   is covered by a later run. ``scope = "all"``: one walk over every comment, on the first run.

3. **An audit.** Search leaves out hidden comments (and comments on hidden images), and hiding
   a comment changes no date or count the mirror could see, so a comment hidden after it was
   mirrored would never be seen again. Each run therefore checks ``audit_per_run`` batches of 50
   mirrored images, in a rolling order: one request with ``per_page=1`` gives the site's count of
   visible comments on the batch; only when it differs from the mirror's is the batch read again
   and each mirrored comment missing from it asked for by id. A hidden one comes back with its
   body null (a stub: the row keeps its body and is marked); a destroyed one (404) or one on a
   hidden image (403) is marked hidden, its row kept. Nothing changed costs one request a batch.

Destroyed comments come as null elements in lists and are skipped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlite_utils import Database

from ..api import Forbidden, NotFound, PhilomenaClient
from ..store.follow_ups import mirrored_among, mirrored_count, mirrored_images_after
from ..store.records import record_ids, valid_id
from ..store.specs import COMMENTS
from ..store.writer import RecordWriter, Saved, mark_hidden
from . import follow
from .follow import BATCH, FollowRun
from .paging import PER_PAGE, search_pages
from .report import Progress, SyncReport, recorded_run

NAME = "comments"


@dataclass(frozen=True)
class CommentsOptions:
    """``scope``: "mirrored" or "all"; ``refresh_overlap``: seconds of ``updated_at`` read again;
    ``audit_per_run``: batches of mirrored images checked for hidden comments (0: none)."""

    scope: str = "mirrored"
    refresh_overlap: int = 900
    audit_per_run: int = 2


async def sync(client: PhilomenaClient, db: Database, options: CommentsOptions,
               progress: Progress | None = None) -> SyncReport:
    """Mirror the comments ``options.scope`` names into ``db``; resume or refresh as the cursor says."""
    scope = options.scope
    writer = RecordWriter(db, COMMENTS, client.base_url)

    def on_mirrored(records: list[Any]) -> Saved:
        mirrored = mirrored_among(db, [r["image_id"] for r in records if valid_id(r.get("image_id"))])
        return writer.save([r for r in records if r.get("image_id") in mirrored])

    with recorded_run(db, client, NAME) as report:
        run = FollowRun(client, db, NAME, scope=scope, overlap=options.refresh_overlap, search=client.search_comments,
                        report=report, progress=progress)
        if run.since:
            await run.walk(run.state, "changed", f"updated_at.gte:{run.since}",
                           writer.save if scope == "all" else on_mirrored)
        if scope == "all":
            await run.walk_everything(writer.save)
        else:
            await run.image_batches("image_id", writer.save)
        for _ in range(min(options.audit_per_run, -(-mirrored_count(db) // BATCH))):  # never the same batch twice a run
            await audit_batch(run, writer)
        run.finish()
    return report


def hand_over(db: Database, options: CommentsOptions, filter_id: int | None, as_of: str) -> None:
    """Leave the crawler as a complete first run started at ``as_of`` would (:func:`.follow.hand_over`)."""
    follow.hand_over(db, NAME, options.scope, filter_id, as_of)


async def audit_batch(run: FollowRun, writer: RecordWriter) -> None:
    """Check the next batch of mirrored images for comments hidden or destroyed since mirrored.

    Batches go round the mirrored images by id, starting over after the last.
    """
    db, client = run.db, run.client
    after = run.cursor.get("audit_after", -1)
    ids = mirrored_images_after(db, after, BATCH)
    if not ids and after != -1:  # round complete: start the next one
        ids = mirrored_images_after(db, -1, BATCH)
    if not ids:
        return
    query = " || ".join(f"image_id:{i}" for i in ids)
    marks = ",".join("?" * len(ids))
    visible_here = f"SELECT id FROM comments WHERE hidden_from_users = 0 AND image_id IN ({marks})"
    ours = {row[0] for row in db.execute(visible_here, ids)}
    page = await client.search_comments(query, per_page=1)
    run.report.pages += 1
    if page.total != len(ours):
        seen: set[int] = set()
        async for _, page in search_pages(lambda n: client.search_comments(query, page=n, per_page=PER_PAGE),
                                          what="comments audit"):
            records = [r for r in page.records if isinstance(r, dict)]
            seen |= set(record_ids(records))
            run.report.count(len(records), writer.save(records))
        for comment_id in sorted(ours - seen):
            await _recheck(client, db, writer, comment_id, run.report)
    with db.atomic():
        run.cursor["audit_after"] = ids[-1]
        run.save()


async def _recheck(client: PhilomenaClient, db: Database, writer: RecordWriter, comment_id: int,
                   report: SyncReport) -> None:
    """Ask for one comment that search no longer shows, and mark its row as the site now has it."""
    try:
        record = await client.comment(comment_id)
    except NotFound:  # destroyed: lists render it as null
        mark_hidden(db, "comments", comment_id, destroyed=True)
    except Forbidden:  # its image is hidden
        mark_hidden(db, "comments", comment_id)
    else:
        report.count(1, writer.save([record]))
        return
    report.hidden += 1
