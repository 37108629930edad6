"""``mirror sync galleries``: galleries and their images in gallery order.

/search/galleries sorts by ``created_at`` desc whatever ``sf`` says, so the gallery walks go by
the keyset of :mod:`newest_first`. A run:

1. **What changed.** ``updated_at.gte:<last run's start - overlap>`` (a search field, though the
   record has no ``updated_at``). Adding or removing an image, or editing the title, moves it.
   With ``scope = "mirrored"`` a changed gallery not held yet is kept only if it holds a
   mirrored image (one image search per 25 such galleries, see :func:`_holding_mirrored`).
2. **What is not covered yet.** ``scope = "mirrored"``: the galleries holding mirrored images
   not yet covered, 50 images per query (``image_ids:1 || ...``). ``scope = "all"``: one walk
   over every gallery, on the first run.
3. **The images of every gallery found new or changed** (and of ``rewalk_per_run`` galleries
   walked more than ``rewalk_after_days`` ago: a reorder leaves ``updated_at`` alone on the real
   site): ``gallery_id:N`` sorted ``sf=gallery_id:N&sd=asc``, so ``position`` 0 is the image
   added first. The site itself shows a gallery newest first unless its owner chose otherwise, a
   setting the API does not expose. Hidden and merged images are asked for too (``del=1``), so
   they keep their place. Each gallery's membership is replaced in one transaction after its
   last page; its images are stored in ``images`` too so joins work.

A deleted gallery vanishes from search, so its changes stop; the galleries due a rewalk are
first looked up by id (one search per 50), and those the site no longer has go to
``gone_galleries``, kept as they were last seen, order included.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlite_utils import Database

from ..api import PhilomenaClient
from ..store.database import chunks
from ..store.follow_ups import save_member_images
from ..store.galleries import (
    RECHECK,
    due_galleries,
    mark_due,
    mark_gone,
    mark_stale_due,
    replace_members,
    unwalked,
    walked_as_of,
)
from ..store.images import ImageWriter
from ..store.records import record_ids
from ..store.specs import GALLERIES
from ..store.state import load_cursor
from ..store.writer import RecordWriter, Saved
from . import follow
from .follow import FollowRun
from .newest_first import PER_PAGE
from .paging import search_pages
from .report import Progress, SyncReport, recorded_run

NAME = "galleries"
# Galleries tested per image search for holding a mirrored image.
MEMBERSHIP_BATCH = 25


@dataclass(frozen=True)
class GalleriesOptions:
    """``scope``: "mirrored" or "all"; ``refresh_overlap``: seconds of ``updated_at`` read again;
    galleries last walked ``rewalk_after_days`` ago are walked again, ``rewalk_per_run`` a run."""

    scope: str = "mirrored"
    refresh_overlap: int = 900
    rewalk_after_days: float = 30
    rewalk_per_run: int = 10


async def sync(client: PhilomenaClient, db: Database, options: GalleriesOptions,
               progress: Progress | None = None) -> SyncReport:
    """Mirror the galleries ``options.scope`` names, and their images in order, into ``db``."""
    scope = options.scope
    writer = RecordWriter(db, GALLERIES, client.base_url)

    def save_all(records: list[Any]) -> Saved:
        saved = writer.save(records)
        mark_due(db, saved.keys)
        return saved

    def save_unwalked(records: list[Any]) -> Saved:
        saved = writer.save(records)
        mark_due(db, unwalked(db, saved.keys))
        return saved

    def save_known(records: list[Any]) -> Saved:
        """Changed galleries: those held are saved; the others wait for the membership test."""
        held = set(_held(db, [r.get("id") for r in records]))
        run.state.setdefault("candidates", []).extend(r for r in records if r.get("id") not in held)
        return save_all([r for r in records if r.get("id") in held])

    with recorded_run(db, client, NAME) as report:
        run = FollowRun(client, db, NAME, scope=scope, overlap=options.refresh_overlap, search=client.search_galleries,
                        report=report, progress=progress)
        if run.since:
            await run.walk(run.state, "changed", f"updated_at.gte:{run.since}", save_all if scope == "all" else save_known)
        if run.state.get("candidates"):
            kept = await _holding_mirrored(client, db, run.state["candidates"])
            with db.atomic():
                saved = save_all(kept)
                run.state["candidates"] = []
                run.save()
            report.count(0, saved)
        if scope == "all":
            await run.walk_everything(save_all)
        else:
            await run.image_batches("image_ids", save_unwalked)
        if not run.state.get("rewalks_marked"):
            with db.atomic():
                mark_stale_due(db, options.rewalk_after_days, options.rewalk_per_run)
                run.state["rewalks_marked"] = True
                run.save()
        await _recheck(client, db, save_all, report)
        images = ImageWriter(db, client.base_url)
        for gallery_id in due_galleries(db):
            await _walk_gallery(client, db, images, gallery_id, report, progress)
        run.finish()
    return report


def hand_over(db: Database, options: GalleriesOptions, filter_id: int | None, as_of: str, walked_at: str) -> None:
    """Leave the crawler as a complete first run started at ``as_of`` would (:func:`.follow.hand_over`),
    every gallery held walked at ``walked_at``, so each is walked again ``rewalk_after_days`` after it."""
    follow.hand_over(db, NAME, options.scope, filter_id, as_of)
    walked_as_of(db, walked_at)


async def _recheck(client: PhilomenaClient, db: Database, save: Callable[[list[Any]], Saved],
                   report: SyncReport) -> None:
    """Look up the galleries due a rewalk: those still there are stored and walked, the rest are gone."""
    for batch in chunks(due_galleries(db, RECHECK), PER_PAGE):
        page = await client.search_galleries(" || ".join(f"id:{i}" for i in batch), per_page=PER_PAGE)
        report.pages += 1
        with db.atomic():
            saved = save(page.records)
            mark_gone(db, sorted(set(batch) - set(saved.keys)))
        report.count(len(page.records), saved)


async def _walk_gallery(client: PhilomenaClient, db: Database, images: ImageWriter, gallery_id: int,
                        report: SyncReport, progress: Progress | None) -> None:
    """Read the gallery's images in order; replace its membership once all are read.

    A change while the walk runs (an image added or removed) moves the gallery's ``updated_at``,
    so the next run walks it again.
    """
    order: list[int] = []

    async def fetch(page: int) -> Any:
        return await client.search_images(f"gallery_id:{gallery_id}", page=page, per_page=PER_PAGE,
                                          sf=f"gallery_id:{gallery_id}", sd="asc", include_hidden=True)

    async for _, page in search_pages(fetch, what=f"galleries: gallery {gallery_id}'s images"):
        save_member_images(db, images, page.records)
        order += record_ids(page.records)
        report.pages += 1
        if progress:
            progress(report)
    replace_members(db, gallery_id, list(dict.fromkeys(order)))


async def _holding_mirrored(client: PhilomenaClient, db: Database, galleries: list[dict[str, Any]]) -> list[Any]:
    """Those of ``galleries`` that hold an image of the mirror's query.

    One image search per 25 galleries, ``(gallery_id:1 || ...), (<images query>)``, answers for
    most at once (none holds one); a batch that does is asked about gallery by gallery.
    """
    query = (load_cursor(db, "images").get("query") or "*").strip()
    if query == "*":
        return galleries
    kept = []
    for start in range(0, len(galleries), MEMBERSHIP_BATCH):
        batch = galleries[start:start + MEMBERSHIP_BATCH]
        if await _holds(client, [g["id"] for g in batch], query):
            kept += [g for g in batch if len(batch) == 1 or await _holds(client, [g["id"]], query)]
    return kept


async def _holds(client: PhilomenaClient, gallery_ids: list[int], query: str) -> bool:
    ors = " || ".join(f"gallery_id:{i}" for i in gallery_ids)
    page = await client.search_images(f"({ors}), ({query})", per_page=1, include_hidden=True)
    return bool(page.total or page.records)


def _held(db: Database, ids: list[Any]) -> list[int]:
    ids = [i for i in ids if type(i) is int]
    if not ids:
        return []
    return [row[0] for row in db.execute(f"SELECT id FROM galleries WHERE id IN ({','.join('?' * len(ids))})", ids)]
