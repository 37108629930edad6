"""How far each forum topic's posts are mirrored: the forums crawler's cursor per topic.

A topic's posts are revisited only when the site's ``post_count`` or ``last_replied_to_at``
differs from what they were last mirrored at, and then only from the page where new posts begin.
While a topic is being walked ``next_page`` says which page comes next; it is written in the same
transaction as each page of posts, so a run killed mid-topic resumes at that page. One row per
topic (not one JSON cursor) keeps each checkpoint a single-row write on a forum of any size.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from sqlite_utils import Database

from ..dates import utc_text

TABLE = "topic_progress"


@dataclass(frozen=True)
class TopicProgress:
    """The topic counters the posts were last mirrored at, and the page to fetch next, if any."""

    post_count: int | None = None
    last_replied_to_at: str | None = None
    next_page: int | None = None


def load_topic_progress(db: Database, forum: str) -> dict[str, TopicProgress]:
    """Every topic of ``forum`` with progress recorded, by slug."""
    rows = db.execute(f"SELECT slug, post_count, last_replied_to_at, next_page FROM {TABLE} "
                      "WHERE forum_short_name = ?", [forum])
    return {slug: TopicProgress(count, replied, page) for slug, count, replied, page in rows}


def save_topic_progress(db: Database, forum: str, slug: str, progress: TopicProgress) -> None:
    """Record ``progress``; call it inside the transaction that stored the page it describes."""
    db[TABLE].upsert({"forum_short_name": forum, "slug": slug, **asdict(progress), "updated_at": utc_text()},
                     pk=("forum_short_name", "slug"))
