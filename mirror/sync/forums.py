"""``mirror sync forums``: the forums, their topics and every topic's posts, revisiting only change.

1. /forums, all pages. Like a forum's topics it is Scrivener-paged: a page past the end repeats the
   last page, so :func:`scrivener_pages` stops on ``total``, never on an empty page.
2. Each forum's topics, stickies first, then newest reply first. A topic whose ``post_count`` and
   ``last_replied_to_at`` equal those its posts were last mirrored at is skipped; a changed one has
   its posts walked from the page where the new posts begin (``old post_count // 50 + 1``). The
   walk of a forum stops at the first non-sticky topic last replied to before the newest reply the
   previous complete walk of that forum saw (its *mark*), or at the mark and unchanged since it was
   mirrored: every topic after it is as old or older, so unchanged. A run with nothing new costs
   the forums page plus one topics page per forum, however many topics share the mark's second.
   (A topic first replied to in the mark's very second after that walk, listed among the ties
   after an unchanged one, waits for its next reply; its posts come with the ``posts`` crawler.)
   Why a mark and not "the first unchanged topic": after a killed run, the topics finished before
   the kill are unchanged and listed ahead of the changed ones still to do.
3. A topic's posts: windows of ``topic_position``, with gaps where posts were destroyed; hidden posts
   come with ``body`` null and only mark the row kept (the writer's stub rule). Posts and topics are
   stored with the forum ``short_name`` and topic ``slug`` they were crawled under.

Edits to old posts move neither counter of their topic, so pages before the new posts are not read
again: the ``posts`` crawler picks edits up site-wide by ``updated_at``. Hiding a post changes no
counter or date and search leaves hidden posts out, so nothing reports it; instead each run reads
``audit_pages_per_run`` old pages of posts again, going round every topic mirrored. A post hidden
since comes back with ``body`` null and marks its row, which keeps the body.

Checkpoints: each topics page is saved with the walk's place in the cursor (forums finished, the
topics page under way, the newest reply seen); each page of posts is saved with its topic's progress
(:mod:`mirror.store.topic_progress`). A run killed at any instant resumes at the page it was on.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from itertools import chain, islice, takewhile
from typing import Any

from sqlite_utils import Database

from ..api import NotFound, Page, PhilomenaClient
from ..store.specs import FORUMS, POSTS, TOPICS
from ..store.state import load_cursor, save_cursor
from ..store.topic_progress import TopicProgress, load_topic_progress, save_topic_progress
from ..store.writer import RecordWriter
from .paging import PER_PAGE, ProgressGuard, scrivener_pages, window_walk_done
from .report import Progress, SyncReport, recorded_run

STATE_NAME = "forums"

log = logging.getLogger(__name__)

Record = dict[str, Any]


@dataclass(frozen=True)
class ForumsOptions:
    """``forums``: the short names of the forums to mirror (none: every public forum);
    ``audit_pages_per_run``: old pages of posts read again each run, for posts hidden since."""

    forums: tuple[str, ...] = ()
    audit_pages_per_run: int = 0


async def sync(client: PhilomenaClient, db: Database, options: ForumsOptions,
               progress: Progress | None = None) -> SyncReport:
    """Mirror every public forum (or those named in ``options.forums``), topics and posts.

    The report counts posts; forums and topics are stored as well but not counted.
    """
    only = options.forums
    with recorded_run(db, client, STATE_NAME) as report:
        crawl = _ForumCrawl(client, db, report, progress)
        listed = await crawl.forum_list()
        for name in only:
            if name not in listed:
                log.warning("forums: no public forum %r on the site; skipped", name)
        for name in listed:
            if (not only or name in only) and name not in crawl.walk["done"]:
                await crawl.forum(name)
        await crawl.audit(options.audit_pages_per_run)
        crawl.finish()
    return report


def hand_over(db: Database, options: ForumsOptions) -> None:
    """Leave the crawler as a complete first walk would, for a mirror whose forums, topics and posts
    came from a dump: each topic's posts mirrored at the counters its record holds, and each
    forum's mark at its newest reply, so the next run reads only topics replied to since. The
    audit starts its round at the first topic."""
    only = options.forums
    topics = [row for row in db.execute("SELECT forum_short_name, slug, post_count, last_replied_to_at FROM topics")
              if not only or row[0] in only]
    marks: dict[str, str] = {}
    for forum, slug, count, replied in topics:
        save_topic_progress(db, forum, slug, TopicProgress(count, replied))
        if isinstance(replied, str):
            marks[forum] = max(replied, marks.get(forum, replied))
    save_cursor(db, STATE_NAME, _cursor(marks, None, None))


def _cursor(marks: dict[str, str], walk: dict[str, Any] | None, audited: list[Any] | None) -> dict[str, Any]:
    return {"marks": marks, "walk": walk, "audited": audited}


def start_page(progress: TopicProgress | None, topic: Record) -> int | None:
    """The first page of ``topic``'s posts to fetch, or None when they are mirrored already."""
    if progress is None:
        return 1
    if progress.next_page is not None:
        return progress.next_page  # a walk under way when the last run stopped
    count = topic.get("post_count")
    if count == progress.post_count and topic.get("last_replied_to_at") == progress.last_replied_to_at:
        return None
    if isinstance(count, int) and progress.post_count is not None and count > progress.post_count:
        return progress.post_count // PER_PAGE + 1
    return 1  # fewer posts, or a new reply with the same count: read the topic again


def _past_mark(topic: Record, mark: str | None, *, changed: bool) -> bool:
    """Whether the walk of a forum whose mark is ``mark`` may stop at ``topic``: a topic listed in
    reply order (stickies aside) last replied to before the mark, or at the mark and unchanged
    since it was mirrored. Without the second, every topic replied to in the mark's second is read
    again each run, pages of them where dates were clamped or imported alike."""
    replied = topic.get("last_replied_to_at")
    if not mark or topic.get("sticky") or not isinstance(replied, str):
        return False
    return replied < mark or (replied == mark and not changed)


def _newest(topics: Iterable[Any], newest: str | None) -> str | None:
    """The latest ``last_replied_to_at`` among ``topics`` and ``newest``."""
    replied = [t["last_replied_to_at"] for t in topics
               if isinstance(t, dict) and isinstance(t.get("last_replied_to_at"), str)]
    return max([*replied, *([newest] if newest else [])], default=None)


def _fresh_walk() -> dict[str, Any]:
    return {"done": [], "forum": None, "page": 1, "newest": None}


def _walkable(topics: Iterable[Any]) -> list[Record]:
    """Topics the crawl can follow: records with a slug (others are kept in rejects by the writer)."""
    return [t for t in topics if isinstance(t, dict) and isinstance(t.get("slug"), str)]


def next_audit_pages(db: Database, after: Sequence[Any] | None, count: int) -> list[tuple[str, str, int]]:
    """The ``count`` pages of posts after ``after`` in (forum, topic, page) order, going round;
    never the same page twice. Reads topics from ``after`` on, not every topic of the board."""
    if count <= 0:
        return []
    sql = "SELECT forum_short_name, slug, post_count FROM topic_progress {} ORDER BY forum_short_name, slug"
    if after is None:
        return list(islice(_pages(db.execute(sql.format(""))), count))
    forum, slug, _ = after
    rest = (p for p in _pages(db.execute(sql.format("WHERE (forum_short_name, slug) >= (?, ?)"), [forum, slug]))
            if list(p) > list(after))
    wrapped = takewhile(lambda p: list(p) <= list(after), _pages(db.execute(sql.format(""))))
    return list(islice(chain(rest, wrapped), count))


def _pages(topics: Iterable[tuple[str, str, int | None]]) -> Iterator[tuple[str, str, int]]:
    for forum, slug, posts in topics:
        for number in range(1, max(1, -(-(posts or 0) // PER_PAGE)) + 1):
            yield forum, slug, number


class _ForumCrawl:
    """One run over the forums: the writers, the cursor and the report it shares between steps."""

    def __init__(self, client: PhilomenaClient, db: Database, report: SyncReport, progress: Progress | None):
        self.client, self.db, self.report, self.progress = client, db, report, progress
        self.forums = RecordWriter(db, FORUMS, client.base_url)
        self.topics = RecordWriter(db, TOPICS, client.base_url)
        self.posts = RecordWriter(db, POSTS, client.base_url)
        self.cursor = load_cursor(db, STATE_NAME)
        self.marks: dict[str, str] = self.cursor.get("marks") or {}
        self.walk: dict[str, Any] = self.cursor.get("walk") or _fresh_walk()
        self.audited: list[Any] | None = self.cursor.get("audited")  # [forum, slug, page] read last

    async def forum_list(self) -> list[str]:
        """Store every page of /forums; the short names, in the site's order."""
        names: list[str] = []
        async for _, page in scrivener_pages(lambda n: self.client.forums(page=n, per_page=PER_PAGE), what="forums"):
            saved = self.forums.save(page.records)
            names += [key for key in saved.keys if key not in names]
            self._page_done()
        return names

    async def forum(self, name: str) -> None:
        """Walk ``name``'s topics down to the first one past its mark (:func:`_past_mark`), syncing what changed."""
        resumed = self.walk["forum"] == name
        newest = self.walk["newest"] if resumed else None
        mark = self.marks.get(name)
        progress = load_topic_progress(self.db, name)
        fetch = lambda n: self.client.topics(name, page=n, per_page=PER_PAGE)  # noqa: E731
        async for number, page in scrivener_pages(fetch, what=f"forums: {name}'s topics",
                                                  start=self.walk["page"] if resumed else 1):
            newest = _newest(page.records, newest)
            with self.db.atomic():
                self.topics.save(page.records, context={"forum_short_name": name})
                self._save_cursor(walk={**self.walk, "forum": name, "page": number, "newest": newest})
            self._page_done()
            if await self._topics(name, _walkable(page.records), mark, progress):
                break
        with self.db.atomic():
            if newest:
                self.marks[name] = newest
            self._save_cursor(walk={**_fresh_walk(), "done": [*self.walk["done"], name]})

    async def _topics(self, forum: str, topics: list[Record], mark: str | None,
                      progress: dict[str, TopicProgress]) -> bool:
        """Sync the changed topics of one page; True when the walk reached the topics the last walk
        saw: one older than ``mark``, or one at the mark and mirrored unchanged."""
        for topic in topics:
            first = start_page(progress.get(topic["slug"]), topic)
            if _past_mark(topic, mark, changed=first is not None):
                return True
            if first is not None:
                progress[topic["slug"]] = await self._posts(forum, topic, first, progress.get(topic["slug"]))
        return False

    async def _posts(self, forum: str, topic: Record, number: int, before: TopicProgress | None) -> TopicProgress:
        """Walk ``topic``'s posts from page ``number`` to its end; the progress it ends with."""
        slug = topic["slug"]
        context = {"forum_short_name": forum, "topic_slug": slug}
        done = TopicProgress(topic.get("post_count"), topic.get("last_replied_to_at"))
        state = before or TopicProgress()
        guard = ProgressGuard(f"forums: the posts of {forum}/{slug}")
        while True:
            try:
                page = await self.client.topic_posts(forum, slug, page=number, per_page=PER_PAGE)
            except NotFound:  # hidden or moved since its topics page was read: its next listing decides
                log.info("forums: topic %s/%s is gone; skipped", forum, slug)
                return state
            guard.check(page)
            state = done if window_walk_done(number, page) else replace(state, next_page=number + 1)
            self._save_posts(page, context, state)
            if state is done:
                return state
            number += 1

    def _save_posts(self, page: Page, context: dict[str, str], state: TopicProgress) -> None:
        with self.db.atomic():
            saved = self.posts.save(page.records, context)
            save_topic_progress(self.db, context["forum_short_name"], context["topic_slug"], state)
        self.report.count(len(page.records), saved)
        self._page_done()

    async def audit(self, pages: int) -> None:
        """Read ``pages`` pages of posts again, the next ones round every mirrored topic."""
        for place in next_audit_pages(self.db, self.audited, pages):
            forum, slug, number = place
            try:
                page = await self.client.topic_posts(forum, slug, page=number, per_page=PER_PAGE)
            except NotFound:  # the topic went since: its next listing decides
                page = Page([])
            with self.db.atomic():
                saved = self.posts.save(page.records, {"forum_short_name": forum, "topic_slug": slug})
                self.audited = list(place)
                self._save_cursor(walk=self.walk)
            self.report.count(len(page.records), saved)
            self._page_done()

    def finish(self) -> None:
        """The walk is complete: only the marks remain for the next run."""
        with self.db.atomic():
            self._save_cursor(walk=None)

    def _save_cursor(self, *, walk: dict[str, Any] | None) -> None:
        self.walk = walk or _fresh_walk()
        save_cursor(self.db, STATE_NAME, _cursor(self.marks, walk, self.audited))

    def _page_done(self) -> None:
        self.report.pages += 1
        if self.progress:
            self.progress(self.report)
