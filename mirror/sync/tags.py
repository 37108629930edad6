"""``mirror sync tags``: full tag records, fetched 50 at a time through /search/tags.

Tags carry no ``updated_at`` and the tag search cannot select what changed, so a run re-fetches a
tag only when there is a reason to, batching 50 ids per request (``id:1 || id:2 || ...``):

1. with ``scope = "all"``, every tag of the site, walked by id windows (below);
2. tags with no full record yet (the rows the image sync creates hold only id and name) and tags
   the image sync renamed;
3. tags whose ``images`` count moved since the last tags run, as the mirror's history of images
   says: the tags an image gained or lost, and every tag of an image first seen, hidden, merged,
   deleted or shown again. A vote or a description edit moves no tag's count, and fetches none
   (on a night of Derpibooru's size, 27,000 of the 31,500 images the site changes);
4. ``refresh_per_run`` tags fetched longest ago, so description or alias edits, which touch no
   image, are picked up within ``tags / refresh_per_run`` runs.

The tag search sorts by ``images`` desc with no tie-breaker, so page offsets over it skip and
repeat tags as counts move. The full walk therefore asks for id windows ``id.gte:A, id.lt:B``
sized so one window fits one page (a window whose ``total`` exceeds a page is shrunk and asked
again), and the window start is the cursor. A window found empty is followed by one open-ended
probe ``id.gte:A``: when that fits a page the walk is over. After a complete walk later runs only
walk past the highest id seen, which costs one request when the site has no new tag. The walk
moves by the windows it asks for, not by the ids it gets, so a page whose tags lie outside the
window asked for (a site serving one page whatever it is asked) stops it (``ProgressGuard``)
instead of letting it step through the id space one id at a time.

Ids asked for and not returned (a tag deleted on the site) get ``mirrored_at`` set with ``raw``
left as it was, so they are not asked again every night but only when the rolling refresh comes
round to them. Steps 2 and 4 need no cursor: a tag fetched is committed with its page and leaves
the step's selection. Step 3 keeps its history mark (the newest image history row accounted for)
and progress in the cursor.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlite_utils import Database

from ..api import Page, PhilomenaClient
from ..dates import utc_text
from ..store.database import chunks
from ..store.records import record_ids
from ..store.specs import TAGS
from ..store.state import load_cursor, save_cursor
from ..store.tag_changes import of_history_row
from ..store.writer import RecordWriter, Saved
from .paging import ProgressGuard
from .report import Progress, SyncReport, recorded_run
from .saving import PageSaver

STATE_NAME = "tags"
PER_PAGE = 50
FIRST_WINDOW = 256

Cursor = dict[str, Any]


@dataclass(frozen=True)
class TagsOptions:
    """``scope``: "mirrored" or "all"; ``refresh_per_run``: tags re-fetched a run, longest-fetched first."""

    scope: str = "mirrored"
    refresh_per_run: int = 100


class TagSync:
    """One run of the tags crawler: the phases above, sharing a writer, a report and the cursor."""

    def __init__(self, client: PhilomenaClient, db: Database, report: SyncReport, progress: Progress | None) -> None:
        self.client = client
        self.db = db
        self.report = report
        self.saver = PageSaver(db, RecordWriter(db, TAGS, client.base_url), report, progress, STATE_NAME)
        self.cursor = load_cursor(db, STATE_NAME)
        self.fetched: set[int] = set()  # ids fetched this run, left out of the rolling refresh
        self.guard = ProgressGuard("tags: the walk of every tag")

    async def run(self, scope: str, refresh_per_run: int) -> None:
        if scope == "all":
            await self.walk_all()
        await self.refresh_stale_and_changed()
        await self.fetch_ids(oldest_tag_ids(self.db, refresh_per_run, exclude=self.fetched))

    # ------------------------------------------------------------------ fetching pages

    def store(self, page: Page, asked: Sequence[int] = (), cursor: Cursor | None = None) -> None:
        """A page's tags, the ``asked`` ids it lacked and the ``cursor`` past it, in one commit."""

        def mark_missing(saved: Saved) -> None:
            missing = set(asked) - set(saved.keys)
            if missing:
                mark_asked(self.db, sorted(missing))

        saved = self.saver.save(page.records, cursor, also=mark_missing)
        if cursor is not None:
            self.cursor = cursor
        self.fetched.update(saved.keys)
        self.fetched.update(asked)

    async def fetch_ids(self, ids: Sequence[int], cursor_after: Callable[[int], Cursor] | None = None) -> None:
        """Fetch tags by id, 50 per request; ``cursor_after(last id)`` is saved with each batch."""
        for batch in chunks(sorted(ids), PER_PAGE):
            page = await self.client.search_tags(ids_query(batch), per_page=PER_PAGE)
            self.store(page, batch, cursor_after(batch[-1]) if cursor_after else None)

    # ------------------------------------------------------------------ phase 1: every tag of the site

    async def walk_all(self) -> None:
        walk: Cursor | None = self.cursor.get("walk") or {
            "start": next_start(self.cursor), "size": FIRST_WINDOW, "probe": True,
            "max_seen": self.cursor.get("high_water")}
        while walk is not None:
            walk = await self.walk_step(walk)

    async def walk_step(self, walk: Cursor) -> Cursor | None:
        """One request of the walk; the walk's next state, or None once it is over."""
        start, size = walk["start"], walk["size"]
        if walk["probe"]:
            page = await self.client.search_tags(f"id.gte:{start}", per_page=PER_PAGE)
            self.guard.check(page, scope=(start, None), answered=within(page.records, start))
            if self.report.expected is None:
                self.report.expected = page.total
            if (page.total or 0) <= PER_PAGE:  # the rest fits one page: keep it, the walk is over
                self.store(page, cursor={**self.cursor, "walk": None,
                                         "high_water": max_id(walk["max_seen"], page.records)})
                return None
            self.report.pages += 1
            return {**walk, "probe": False}
        page = await self.client.search_tags(window_query(start, size), per_page=PER_PAGE)
        self.guard.check(page, scope=(start, size), answered=within(page.records, start, start + size))
        total = page.total or 0
        if total > PER_PAGE and size > 1:  # the window does not fit a page: shrink it, ask again
            self.report.pages += 1
            return {**walk, "size": max(1, size * PER_PAGE * 3 // (4 * total))}
        walk = {"start": start + size, "size": size * 2 if total < PER_PAGE // 2 else size,
                "probe": total == 0, "max_seen": max_id(walk["max_seen"], page.records)}
        self.store(page, cursor={**self.cursor, "walk": walk})
        return walk

    # ------------------------------------------------------------------ phases 2 and 3, batched together

    async def refresh_stale_and_changed(self) -> None:
        """Tags with no full record (or renamed), and tags whose count the images changed since the
        mark of the last tags run moved, in one id-ordered list so that batches stay full.

        ``changed.after`` is saved with each batch: every id up to it has been fetched. The stale
        ones need no cursor, as a fetched tag is no longer stale.
        """
        since = history_after(self.db, self.cursor)
        pending = self.cursor.get("changed") or {"until": history_mark(self.db), "after": -1}
        ids = set(stale_tag_ids(self.db))
        if since is not None:
            ids.update(i for i in tags_moved(self.db, since, pending["until"]) if i > pending["after"])
        await self.fetch_ids(sorted(ids - self.fetched),
                             lambda last: {**self.cursor, "changed": {**pending, "after": last}})
        with self.db.atomic():
            self.cursor = {key: value for key, value in self.cursor.items() if key != "images_mark"}
            self.cursor.update(history_after=pending["until"], changed=None)
            save_cursor(self.db, STATE_NAME, self.cursor)


# ---------------------------------------------------------------------- queries to the site


def ids_query(ids: Sequence[int]) -> str:
    return " || ".join(f"id:{i}" for i in ids)


def window_query(start: int, size: int) -> str:
    return f"id.gte:{start}, id.lt:{start + size}"


def next_start(cursor: Cursor) -> int:
    """Where a new walk begins: past the highest id a complete walk saw, or at the first id."""
    high = cursor.get("high_water")
    return 0 if high is None else high + 1


def within(records: Sequence[Any], start: int, end: int | None = None) -> bool:
    """Whether every valid id of ``records`` lies in the window ``[start, end)`` (no ``end``: open)."""
    return all(start <= i and (end is None or i < end) for i in record_ids(records))


def max_id(current: int | None, records: Sequence[Any]) -> int | None:
    ids = record_ids(records)
    return max([*ids, *([current] if current is not None else [])], default=None)


# ---------------------------------------------------------------------- what the mirror says needs fetching


def stale_tag_ids(db: Database) -> list[int]:
    """Tags never fetched in full (and never asked for), and tags the image sync renamed since."""
    return [row[0] for row in db.execute("""
        SELECT id FROM tags
        WHERE (raw IS NULL AND mirrored_at IS NULL)
           OR (raw IS NOT NULL AND json_extract(raw, '$.name') IS NOT name)
        ORDER BY id""")]


def oldest_tag_ids(db: Database, limit: int, exclude: set[int]) -> list[int]:
    """The ``limit`` tags fetched longest ago, leaving out those fetched this run."""
    if limit <= 0:
        return []
    out: list[int] = []
    rows = db.execute("SELECT id FROM tags WHERE mirrored_at IS NOT NULL ORDER BY mirrored_at, id")
    for (tag_id,) in rows:
        if tag_id not in exclude:
            out.append(tag_id)
            if len(out) == limit:
                break
    return out


def mark_asked(db: Database, ids: Sequence[int]) -> None:
    """Ids the site did not return: keep whatever ``raw`` holds, note when they were asked."""
    now = utc_text()
    for batch in chunks(list(ids)):
        db.execute(f"UPDATE tags SET mirrored_at = ? WHERE id IN ({','.join('?' * len(batch))})", [now, *batch])


def history_mark(db: Database) -> int:
    """The newest history row of an image (0: none): how far the mirror's images are accounted for."""
    row = db.execute("SELECT id FROM history WHERE resource = 'images' ORDER BY id DESC LIMIT 1").fetchone()
    return row[0] if row else 0


def history_after(db: Database, cursor: Cursor) -> int | None:
    """The history mark of the last tags run (None: there was none). A cursor saved before the mark
    holds the images' ``updated_at`` mark instead: then the rows kept since the last tags run began."""
    if "history_after" in cursor or "images_mark" not in cursor:
        return cursor.get("history_after")
    (last_run,) = db.execute("SELECT max(id) FROM sync_runs WHERE resource = 'tags' "
                             "AND finished_at IS NOT NULL").fetchone()
    (first,) = db.execute("SELECT min(id) FROM history WHERE run_id > ?", [last_run or 0]).fetchone()
    return history_mark(db) if first is None else first - 1


def tags_moved(db: Database, after: int, until: int) -> list[int]:
    """The tags whose ``images`` count the image history rows past ``after`` and up to ``until``
    moved: those an image gained or lost (the site's own past changes from its dump, ``site_tags``,
    are not news), and every tag of an image first seen, hidden, merged, deleted or shown again."""
    return [row[0] for row in db.execute(f"""
        SELECT c.tag_id FROM history h NOT INDEXED
        JOIN image_tag_changes c ON {of_history_row()}
        WHERE h.id > :after AND h.id <= :until AND h.resource = 'images' AND h.event != 'site_tags'
        UNION
        SELECT it.tag_id FROM history h NOT INDEXED  -- the id range, not every image's first sighting
        JOIN image_tags it ON it.image_id = CAST(h.record_key AS INTEGER)
        WHERE h.id > :after AND h.id <= :until AND h.resource = 'images'
          AND h.event IN ('first_seen', 'hidden', 'merged', 'deleted', 'shown')
        ORDER BY 1""", {"after": after, "until": until})]


def hand_over(db: Database, options: TagsOptions) -> None:
    """Save the cursor a complete first run would leave, for a mirror whose tags and images came
    from a dump: the history mark of the images held, so the next run fetches the tags whose count
    the images changed since moved, and (``scope = "all"``) the walk of every tag done up to the highest id held. The
    rolling refresh needs no cursor: it goes by each tag's ``mirrored_at``."""
    cursor: Cursor = {"history_after": history_mark(db), "changed": None}
    if options.scope == "all":
        (highest,) = db.execute("SELECT max(id) FROM tags").fetchone()
        cursor.update(walk=None, high_water=highest)
    save_cursor(db, STATE_NAME, cursor)


async def sync(client: PhilomenaClient, db: Database, options: TagsOptions,
               progress: Progress | None = None) -> SyncReport:
    """Mirror full tag records into ``db``: see the module docstring for what each run fetches."""
    with recorded_run(db, client, "tags") as report:
        await TagSync(client, db, report, progress).run(options.scope, options.refresh_per_run)
    return report
