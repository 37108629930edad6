"""Writing a board's records: rendered as the site shows them, stored through the store's writers.

The generator and the board editor both write here, so a generated board, a board changed by a
test and a mirror of either hold records of one shape (the served board is a database in the
mirror's schema, answered by the same code as ``mirror serve``).

Content the site hides is written first in full and then as the stub it serves, as a mirror that
saw it before it was hidden keeps it (searches with ``del=1`` still match a hidden image by its
tags, and the editor can show it again). A destroyed comment or post keeps its row, marked with
the ``null`` the site serves for it. Content no API caller can reach (restricted forums, hidden
topics, deleted accounts) is not written to the served tables at all.

What only the test site has goes to ``site_*`` tables that ``mirror serve`` databases do not
have: the board's seed (``site_board``), API keys (``site_keys``), the key owner's votes,
favourites and hides (``site_interactions``), each post's topic and place in it
(``site_post_positions``), topics by id, hidden ones included (``site_topics``), the dates
galleries are searched by (``site_gallery_dates``), files replaced or uploaded since
generation (``site_files``), and the history the site's public dumps publish and its API does
not: who added or removed which tags (``site_tag_changes``, one row per change with the tag ids
as JSON lists) and sources (``site_source_changes``), when.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlite_utils import Database

from ...dates import parse_utc
from ...store import ImageWriter
from ...store.intensities import save_record_intensities
from ...store.specs import COMMENTS, GALLERIES, POSTS, TOPICS, TableSpec
from ...store.writer import RecordWriter
from .render import Urls, render_comment, render_gallery, render_image, render_post, render_topic

__all__ = ["FILE_ROOT", "URLS", "create_site_tables", "save", "save_images", "save_messages", "save_topic",
           "save_galleries", "save_features", "save_history", "reachable_forums"]

Record = dict[str, Any]

# Where written records say the files are; the API points them at whichever origin serves them.
FILE_ROOT = "https://derpicdn.net"
URLS = Urls(FILE_ROOT)
_BATCH = 500

SITE_TABLES: dict[str, tuple[dict[str, type], str | None]] = {
    "site_board": ({"key": str, "value": str}, "key"),
    "site_keys": ({"key": str, "user_id": int}, "key"),
    "site_interactions": ({"image_id": int, "user_id": int, "interaction_type": str, "value": str}, None),
    "site_post_positions": ({"post_id": int, "topic_id": int, "position": int}, "post_id"),
    "site_topics": ({"id": int, "forum": str, "slug": str, "hidden": int}, "id"),
    "site_gallery_dates": ({"gallery_id": int, "created_at": str, "updated_at": str}, "gallery_id"),
    "site_files": ({"image_id": int, "file_key": str, "padding": int, "upload": bytes}, "image_id"),
    "site_tag_changes": ({"id": int, "image_id": int, "user_id": int, "created_at": str, "added": str,
                          "removed": str}, "id"),
    "site_source_changes": ({"id": int, "image_id": int, "user_id": int, "created_at": str, "new_value": str}, "id"),
}


def create_site_tables(db: Database) -> None:
    """The test site's own tables, empty."""
    for name, (columns, pk) in SITE_TABLES.items():
        db[name].create(columns, pk=pk, if_not_exists=True)
    db["site_interactions"].create_index(["user_id", "image_id"], if_not_exists=True)


def save(db: Database, spec: TableSpec, records: Sequence[Any], context: dict[str, Any] | None = None) -> None:
    """Write records of one resource through the store's writer, in batches."""
    writer = RecordWriter(db, spec, FILE_ROOT)
    for start in range(0, len(records), _BATCH):
        writer.save(records[start:start + _BATCH], context)


def save_images(writer: ImageWriter, images: Sequence[Record], tags: Mapping[int, Record]) -> None:
    """Images (internal records): each in full, then the stubs of the hidden ones over them."""
    visible = [render_image({**image, "hidden_from_users": False}, URLS.img, tags) for image in images]
    writer.save_page(visible)
    # What the site's reverse search reads: the intensities its processing computed.
    save_record_intensities(writer.db, visible, "site")
    writer.save_page([render_image(image, URLS.img, tags) for image in images if image["hidden_from_users"]])


def save_messages(db: Database, spec: TableSpec, messages: Sequence[Record], users: Mapping[int, Record],
                  topic: Record | None = None) -> None:
    """Comments, or posts of ``topic``: in full, then hidden ones as stubs and destroyed ones as null."""
    if spec is COMMENTS:
        def rendered(message: Record) -> Record | None:
            return render_comment(message, None, users, URLS)
        context = None
    else:
        def rendered(message: Record) -> Record | None:
            return render_post(message, topic, users, URLS)
        context = {"forum_short_name": topic["forum"], "topic_slug": topic["slug"]}
    shown = {"hidden_from_users": False, "destroyed_content": False}
    save(db, spec, [rendered({**m, **shown}) for m in messages], context)
    save(db, spec, [rendered(m) for m in messages if m["hidden_from_users"] and not m["destroyed_content"]],
         context)
    destroyed = [m["id"] for m in messages if m["destroyed_content"]]
    db.conn.executemany(f"UPDATE {spec.table} SET hidden_from_users = 1, stub = 'null' WHERE id = ?",
                        [(i,) for i in destroyed])


def reachable_forums(forums: Mapping[str, Record]) -> dict[str, Record]:
    """The forums an API caller can read (not the staff ones)."""
    return {s: f for s, f in forums.items() if f["access_level"] == "normal"}


def save_topic(db: Database, topic: Record, posts: Sequence[Record], users: Mapping[int, Record], *,
               readable: bool = True) -> None:
    """A topic and its posts; only a visible topic of a readable forum is served. Every topic is
    known by id, and every post by its place in its topic."""
    db["site_topics"].upsert({"id": topic["id"], "forum": topic["forum"], "slug": topic["slug"],
                              "hidden": int(bool(topic.get("hidden")))}, pk="id")
    db["site_post_positions"].upsert_all([{"post_id": p["id"], "topic_id": topic["id"],
                                           "position": p["topic_position"]} for p in posts], pk="post_id")
    if topic.get("hidden") or not readable:
        return
    save(db, TOPICS, [render_topic(topic)], {"forum_short_name": topic["forum"]})
    save_messages(db, POSTS, posts, users, topic)


def save_galleries(db: Database, galleries: Sequence[Record], users: Mapping[int, Record]) -> None:
    """Galleries, their images in gallery order, and their dates."""
    save(db, GALLERIES, [render_gallery(g, users) for g in galleries])
    ids = [g["id"] for g in galleries]
    db.conn.executemany("DELETE FROM gallery_images WHERE gallery_id = ?", [(i,) for i in ids])
    db["gallery_images"].insert_all(
        [{"gallery_id": g["id"], "image_id": image_id, "position": position}
         for g in galleries for position, image_id in enumerate(g["image_ids"])],
        pk=("gallery_id", "image_id"), replace=True)
    db["site_gallery_dates"].upsert_all([{"gallery_id": g["id"], "created_at": g.get("created_at"),
                                          "updated_at": g.get("updated_at")} for g in galleries], pk="gallery_id")


def save_features(db: Database, features: Iterable[Record]) -> None:
    """Featured images ({"image_id", "created_at"}): the last one featured each day is that day's."""
    days = {}
    for feature in sorted(features, key=lambda f: f["created_at"]):
        days[parse_utc(feature["created_at"]).date().isoformat()] = feature
    db["featured_images"].insert_all([{"day": day, "image_id": f["image_id"], "seen_at": f["created_at"]}
                                      for day, f in days.items()], pk="day", replace=True)


def save_history(db: Database, images: Iterable[tuple[Record, Record | None]], at: str | None = None) -> None:
    """The tag and source changes that made each image what it is: ``(image, before)`` pairs, where
    ``before`` is its earlier record (None for a new image, which adds all its tags and sources).
    Each change is its uploader's (None if anonymous), at ``at`` (the image's upload time if None)."""
    tag_rows, source_rows = [], []
    for image, before in images:
        old_tags, old_sources = (before["tag_ids"], before.get("source_urls") or []) if before else ([], [])
        who, when = image.get("uploader_id"), at or image["created_at"]
        added = [t for t in image["tag_ids"] if t not in old_tags]
        removed = [t for t in old_tags if t not in image["tag_ids"]]
        if added or removed:
            tag_rows.append({"image_id": image["id"], "user_id": who, "created_at": when, "added": added,
                             "removed": removed})
        source_rows += [{"image_id": image["id"], "user_id": who, "created_at": when, "new_value": source}
                        for source in image.get("source_urls") or [] if source not in old_sources]
    db["site_tag_changes"].insert_all(tag_rows)
    db["site_source_changes"].insert_all(source_rows)
