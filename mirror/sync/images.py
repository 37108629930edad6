"""``mirror sync images``: walk /search/images by keyset and keep the mirror current.

The first run walks ``(query), id.gt:N`` with ``sf=id&sd=asc``, 50 per page, so every page is a
cheap keyset query rather than a deep offset. A later run walks the same way over
``(query), (id.gt:HIGH || updated_at.gte:SINCE)``: the images added since the last complete walk,
and the ones the site changed (score, tags, hidden, merged) since it started, less a safety
overlap. When nothing changed that is a single request.

The cursor is saved in the same transaction as each page, so a run killed at any instant resumes
from its last committed page; images already stored are simply upserted again if re-read.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from sqlite_utils import Database

from ..api import Page, PhilomenaClient
from ..dates import utc_text
from ..store import ImageWriter
from ..store.state import load_cursor, save_cursor
from .clock import earliest, since
from .filtered import note_filtered_out
from .paging import PER_PAGE, ProgressGuard, keyset_unseen, last_search_page
from .report import Progress, SyncReport, recorded_run

STATE_NAME = "images"


@dataclass(frozen=True)
class ImagesOptions:
    """What to mirror: the images ``query`` finds (``include_hidden``: hidden ones as stubs too), and
    how many seconds of ``updated_at`` to read again, for clock skew and indexing delays."""

    query: str = "*"
    include_hidden: bool = True
    refresh_overlap: int = 900


@dataclass
class Walk:
    """Where an unfinished walk is, saved as the ``walk`` of the images cursor with each page.

    ``to_json`` gives the keys in the order the cursor has always had them, so ``sync_state``
    reads the same as before; a walk saved before ``counted`` was kept takes it from its next page.
    """

    high_water: int | None  # the highest id of the last complete walk: ids above it are new
    since: str | None  # images updated since then are walked again (None: the first walk)
    after: int = -1  # the keyset: the highest id stored by this walk (image ids start at 0)
    started: str = ""  # when the walk began, by the earlier of our clock and the site's
    counted: int | None = None  # what the site counted on the walk's first page
    unseen: int = 0  # of those, how many were never sent
    previous: list[int | None] | None = None  # the last page's [total, records], for keyset_unseen

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Walk:
        return cls(**data)


def walk_query(query: str, after: int, *, high_water: int | None, since: str | None) -> str:
    """The search for one keyset page: the user's query, what changed, and ids past ``after``."""
    terms = [f"({query})"]
    if high_water is not None and since is not None:
        terms.append(f"(id.gt:{high_water} OR updated_at.gte:{since})")
    elif high_water is not None:
        terms.append(f"id.gt:{high_water}")
    terms.append(f"id.gt:{after}")
    return ", ".join(terms)


async def sync(client: PhilomenaClient, db: Database, options: ImagesOptions,
               progress: Progress | None = None) -> SyncReport:
    """Mirror the images matching ``options.query`` into ``db``; resume or refresh as the cursor says."""
    query = options.query
    writer = ImageWriter(db, client.base_url)
    cursor = _current_cursor(db, query, client.filter_id)
    walk = Walk.from_json(cursor["walk"]) if cursor.get("walk") else _new_walk(cursor, options.refresh_overlap)
    guard = ProgressGuard("images")
    with recorded_run(db, client, "images") as report:
        while True:
            q = walk_query(query, walk.after, high_water=walk.high_water, since=walk.since)
            page = await client.search_images(q, per_page=PER_PAGE, sf="id", sd="asc",
                                              include_hidden=options.include_hidden)
            if report.pages == 0:
                report.expected = page.total
                walk.started = earliest(walk.started, page.server_date)
            report.pages += 1
            after = walk.after
            finished = last_search_page(page, PER_PAGE)
            _count_unseen(walk, page, finished)
            with db.atomic():
                saved = writer.save_page(page.records)
                if saved.keys:
                    walk.after = max(walk.after, max(saved.keys))
                cursor = _finish(cursor, walk) if finished else {**cursor, "walk": walk.to_json()}
                save_cursor(db, STATE_NAME, cursor)
            report.count(len(page.records), saved)
            if progress:
                progress(report)
            guard.check(page, moved=finished or walk.after != after)
            if finished:
                _note_unseen(report, walk)
                break
        await note_filtered_out(client, query, options.include_hidden, report)
    return report


def _current_cursor(db: Database, query: str, filter_id: int | None) -> dict[str, Any]:
    """The saved cursor, or a fresh one when the query or filter changed since it was made."""
    cursor = load_cursor(db, STATE_NAME)
    if cursor.get("query") != query or cursor.get("filter_id") != filter_id:
        return _fresh_cursor(query, filter_id)
    return cursor


def hand_over(db: Database, options: ImagesOptions, filter_id: int | None, as_of: str) -> None:
    """Save the cursor a complete first walk started at ``as_of`` would leave, for a mirror whose
    images came from a dump made then: ids above the highest held are new, and images updated
    since ``as_of`` (less the overlap) are walked again. This takes ``images`` to hold every image
    of ``options.query`` up to that id, as the dump had them."""
    (highest,) = db.execute("SELECT max(id) FROM images").fetchone()
    walk = Walk(high_water=None, since=None, after=-1 if highest is None else highest, started=as_of)
    save_cursor(db, STATE_NAME, _finish(_fresh_cursor(options.query, filter_id), walk))


def _fresh_cursor(query: str, filter_id: int | None) -> dict[str, Any]:
    return {"query": query, "filter_id": filter_id, "high_water": None, "last_start": None}


def _count_unseen(walk: Walk, page: Page, last: bool) -> None:
    """Keep in the walk's cursor what the site counted and how many of those it never sent, so
    that records lost between pages are reported, even by a run that resumed the walk. The last
    page's ``total`` counted every record from its start on: any it did not hold were never sent
    (an empty page claiming a total is the whole of that)."""
    if walk.counted is None:
        walk.counted = page.total
    walk.unseen += keyset_unseen(walk.previous, page.total)
    walk.previous = [page.total, len(page.records)]
    if last:
        walk.unseen += keyset_unseen(walk.previous, 0)


def _note_unseen(report: SyncReport, walk: Walk) -> None:
    """Say in the summary and in ``sync_runs`` how many records the site counted and never sent.

    They cannot be asked for again: the keyset walk is past their ids, and a search that left them
    out once (rows missing behind the index) leaves them out again. An image changed later comes
    back through the next run's ``updated_at`` refresh.
    """
    if walk.unseen:
        report.note(f"the site counted {walk.counted}: {walk.unseen} not seen "
                    "(deleted or hidden during the walk?)")


def _new_walk(cursor: dict[str, Any], overlap: int) -> Walk:
    return Walk(high_water=cursor.get("high_water"), since=since(cursor.get("last_start"), overlap), started=utc_text())


def _finish(cursor: dict[str, Any], walk: Walk) -> dict[str, Any]:
    high_water = max(cursor.get("high_water") or -1, walk.after)  # the walk goes up by id
    return {**cursor, "high_water": high_water if high_water >= 0 else None, "last_start": walk.started,
            "walk": None}
