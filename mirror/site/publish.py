"""A generated board, written through the store into a database the API serves.

The local site keeps its world (users, keys, votes, hidden and destroyed content, forum access)
in a :class:`~mirror.site.dataset.Dataset`, where tests change it between syncs. What the site
shows of that world is rendered record by record, as Philomena's views render them, and written
with the store's own writers: the served board is a database in the mirror's schema, answered by
the same code as ``mirror serve``, so generated and mirrored data cannot drift apart.

Content the site hides is written first in full and then as the stub it serves, as a mirror that
saw it before it was hidden keeps it (searches with ``del=1`` still match it by its tags).
Content no API caller can reach (restricted forums, hidden topics, destroyed posts and comments,
deleted accounts) is not written at all. What only the test site has goes to extra tables that
``mirror serve`` databases do not have: API keys (``site_keys``), the key owner's votes,
favourites and hides (``site_interactions``), each post's place in its topic
(``site_post_positions``), and the dates galleries are searched by (``site_gallery_dates``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from ..store import ImageWriter, open_database
from ..store.intensities import save_record_intensities
from ..store.specs import COMMENTS, FILTERS, FORUMS, GALLERIES, POSTS, TAGS, TOPICS, USERS, TableSpec
from ..store.writer import RecordWriter
from .dataset import Dataset
from .records import parse_iso
from .render import (Urls, render_comment, render_filter, render_forum, render_gallery, render_image, render_post,
                     render_tag, render_topic, render_user)

__all__ = ["publish", "FILE_ROOT"]

Record = dict[str, Any]

# Where published records say the files are; the API points them at whichever origin serves them.
FILE_ROOT = "https://derpicdn.net"
_BATCH = 500


def publish(ds: Dataset, path: str | Path) -> None:
    """Write everything ``ds`` shows through the API into a new board database at ``path``."""
    db = open_database(path)
    urls = Urls(FILE_ROOT)
    with ds.lock:
        _images(db, ds, urls)
        save_tags(db, ds, ds.tag_image_counts(), urls)
        save_comments(db, [c for _, c in sorted(ds.comments.items())], ds.users, urls)
        _forums(db, ds, urls)
        save_galleries(db, [g for _, g in sorted(ds.galleries.items())], ds.users)
        save_filters_and_users(db, ds, urls)
        _site_only(db, ds)
    db.close()


def save(db: Database, spec: TableSpec, records: list[Any], context: dict[str, Any] | None = None) -> None:
    """Write records of one resource through the store's writer, in batches."""
    writer = RecordWriter(db, spec, FILE_ROOT)
    for start in range(0, len(records), _BATCH):
        writer.save(records[start:start + _BATCH], context)


def save_images(writer: ImageWriter, images: list[Record], urls: Urls, tags: Mapping[int, Record]) -> None:
    """One page of images: each in full, then the stubs of the hidden ones over them.

    A hidden image is kept as a mirror that saw it before it was hidden keeps it: its full
    record and tags, marked by the stub (searches with ``del=1`` still match it by its tags).
    """
    visible = [render_image({**image, "hidden_from_users": False}, urls.img, tags) for image in images]
    writer.save_page(visible)
    # What the site's reverse search reads: the intensities its processing computed.
    save_record_intensities(writer.db, visible, "site")
    writer.save_page([render_image(image, urls.img, tags) for image in images if image["hidden_from_users"]])


def _images(db: Database, ds: Dataset, urls: Urls) -> None:
    writer = ImageWriter(db, FILE_ROOT)
    images = [ds.images[i] for i in sorted(ds.images)]
    for start in range(0, len(images), _BATCH):
        save_images(writer, images[start:start + _BATCH], urls, ds.tags)
    save_features(db, ds.features)


def save_features(db: Database, features: list[Record]) -> None:
    """The featured image of each day (the last one featured that day)."""
    days = {}
    for feature in sorted(features, key=lambda f: f["created_at"]):
        days[parse_iso(feature["created_at"]).date().isoformat()] = feature
    db["featured_images"].insert_all([{"day": day, "image_id": f["image_id"], "seen_at": f["created_at"]}
                                      for day, f in days.items()], pk="day", replace=True)


def save_tags(db: Database, ds: Dataset, counts: Mapping[int, int], urls: Urls) -> None:
    """Every tag of ``ds`` in full; ``counts``: tag id -> visible images carrying it."""
    aliases, implied_by = ds.alias_names(), ds.implied_by()
    save(db, TAGS, [render_tag(t, ds.tags, counts, aliases, implied_by, urls) for _, t in sorted(ds.tags.items())])


def save_comments(db: Database, comments: list[Record], users: Mapping[int, Record], urls: Urls) -> None:
    """Comments, less the destroyed ones. Rendered as if the image were visible: the API refuses
    them while it is hidden (403)."""
    save(db, COMMENTS, [render_comment(c, None, users, urls) for c in comments if not c["destroyed_content"]])


def reachable_forums(forums: Mapping[str, Record]) -> dict[str, Record]:
    """The forums an API caller can read (not the staff ones)."""
    return {s: f for s, f in forums.items() if f["access_level"] == "normal"}


def save_topic(db: Database, forum: str, topic: Record, posts: list[Record], users: Mapping[int, Record],
               urls: Urls) -> None:
    """A topic of a readable forum and its posts; a hidden topic is not written at all."""
    if topic.get("hidden"):
        return
    save(db, TOPICS, [render_topic(topic)], {"forum_short_name": forum})
    rendered = [render_post(p, topic, users, urls) for p in posts]
    save(db, POSTS, [p for p in rendered if p is not None], {"forum_short_name": forum, "topic_slug": topic["slug"]})


def _forums(db: Database, ds: Dataset, urls: Urls) -> None:
    forums = reachable_forums(ds.forums)
    save(db, FORUMS, [render_forum(f) for _, f in sorted(forums.items())])
    for topic_id, topic in sorted(ds.topics.items()):
        if topic["forum"] in forums:
            save_topic(db, topic["forum"], topic, ds.topic_posts(topic_id), ds.users, urls)


def save_galleries(db: Database, galleries: list[Record], users: Mapping[int, Record]) -> None:
    """Galleries and their images in gallery order."""
    save(db, GALLERIES, [render_gallery(g, users) for g in galleries])
    db["gallery_images"].insert_all(
        [{"gallery_id": g["id"], "image_id": image_id, "position": position}
         for g in galleries for position, image_id in enumerate(g["image_ids"])],
        pk=("gallery_id", "image_id"), replace=True)


def save_filters_and_users(db: Database, ds: Dataset, urls: Urls) -> None:
    """Every filter, and the profiles of the accounts not deleted."""
    save(db, FILTERS, [render_filter(f) for _, f in sorted(ds.filters.items())])
    save(db, USERS, [render_user(u, urls) for _, u in sorted(ds.users.items()) if not u.get("deleted")])


def _site_only(db: Database, ds: Dataset) -> None:
    """API keys and the key owners' interactions: the test site's accounts."""
    db["site_keys"].create({"key": str, "user_id": int}, pk="key")
    db["site_keys"].insert_all([{"key": key, "user_id": user_id} for key, user_id in ds.api_keys.items()])
    db["site_interactions"].create({"image_id": int, "user_id": int, "interaction_type": str, "value": str})
    db["site_interactions"].create_index(["user_id", "image_id"])
    db["site_interactions"].insert_all([dict(i) for i in ds.interactions])
    # A topic's posts are paged by their place in it, which no record shows (destroyed ones leave gaps).
    db["site_post_positions"].create({"post_id": int, "position": int}, pk="post_id")
    db["site_post_positions"].insert_all([{"post_id": p["id"], "position": p["topic_position"]}
                                          for p in ds.posts.values()])
    # Galleries are searched and sorted by dates their records do not show.
    db["site_gallery_dates"].create({"gallery_id": int, "created_at": str, "updated_at": str}, pk="gallery_id")
    db["site_gallery_dates"].insert_all([{"gallery_id": g["id"], "created_at": g.get("created_at"),
                                          "updated_at": g.get("updated_at")} for g in ds.galleries.values()])
