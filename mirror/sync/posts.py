"""``mirror sync posts``: forum posts site-wide through /search/posts, kept current by ``updated_at``.

/search/posts sorts by ``created_at`` descending whatever ``sf`` says, so this is a run of
:class:`.follow.FollowRun` over keyset walks (``created_at.lte:<oldest seen>``), which neither
skip nor loop when posts are written or hidden under them: every post on the first run, then
``updated_at.gte:<last start - refresh_overlap>``, that is new posts and edited ones. Edits to old
posts arrive here: the ``forums`` crawler reads a topic again only from its new posts on.

Search leaves hidden posts out and says nothing of forum or topic, so records are saved without
context: the ``forum_short_name`` and ``topic_slug`` the forums crawler stored stay as they are.
A post hidden after it was mirrored is not seen here; the forums crawler marks it when it reads
that topic page again.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlite_utils import Database

from ..api import PhilomenaClient
from ..store.specs import POSTS
from ..store.writer import RecordWriter
from . import follow
from .follow import FollowRun
from .report import Progress, SyncReport, recorded_run

NAME = "posts"
SCOPE = "all"  # search says nothing of forum or topic: every post is kept


@dataclass(frozen=True)
class PostsOptions:
    """``refresh_overlap``: seconds of ``updated_at`` read again, for clock skew and indexing delays."""

    refresh_overlap: int = 900


async def sync(client: PhilomenaClient, db: Database, options: PostsOptions,
               progress: Progress | None = None) -> SyncReport:
    """Mirror every post search returns: all of them the first time, then what changed."""
    writer = RecordWriter(db, POSTS, client.base_url)
    with recorded_run(db, client, NAME) as report:
        run = FollowRun(client, db, NAME, scope=SCOPE, overlap=options.refresh_overlap, search=client.search_posts,
                        report=report, progress=progress)
        if run.since:
            await run.walk(run.state, "changed", f"updated_at.gte:{run.since}", writer.save)
        await run.walk_everything(writer.save)
        run.finish()
    return report


def hand_over(db: Database, filter_id: int | None, as_of: str) -> None:
    """Leave the crawler as a complete first run started at ``as_of`` would (:func:`.follow.hand_over`)."""
    follow.hand_over(db, NAME, SCOPE, filter_id, as_of)
