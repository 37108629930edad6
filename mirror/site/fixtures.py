"""Load recorded real responses (a folder such as tests/fixtures/real) into a `Dataset`.

Every record keeps its recorded body in `raw`, which the renderer serves unchanged; the other
internal fields are filled from it only so that search, sorting and lookups work. Images keep
their own representation URLs (they point at the real CDN; the site serves no files for them).
When one id occurs in several files, the newest recording wins (folders sort by year).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .dataset import Dataset
from .records import split_namespace

__all__ = ["load_fixtures"]

Record = dict[str, Any]
WRAPPERS = ("images", "image", "tags", "tag", "comments", "comment", "posts", "post", "topics", "topic",
            "forums", "forum", "galleries", "filters", "filter", "users", "user")


def _records(path: Path) -> tuple[list[tuple[str, Record]], int | None]:
    """(kind, record) pairs of one file (a wrapped response, or a bare array named by the file),
    and the response's `total` if it has one."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if isinstance(data, list):
        return [(path.stem, r) for r in data if isinstance(r, dict)], None
    out = []
    for key in WRAPPERS:
        value = data.get(key)
        kind = key if key.endswith("s") else key + "s"
        if isinstance(value, list):
            out += [(kind, r) for r in value if isinstance(r, dict)]
        elif isinstance(value, dict):
            out.append((kind, value))
    return out, data.get("total")


def _image(raw: Record) -> Record:
    sources = raw.get("source_urls")
    if sources is None:
        sources = [raw["source_url"]] if raw.get("source_url") else []
    return {
        "id": raw["id"],
        "created_at": raw.get("created_at"),
        "updated_at": raw.get("updated_at"),
        "first_seen_at": raw.get("first_seen_at"),
        "width": raw.get("width", 0),
        "height": raw.get("height", 0),
        "mime_type": raw.get("mime_type"),
        "format": raw.get("format"),
        "size": raw.get("size"),
        "orig_size": raw.get("orig_size"),
        "duration": raw.get("duration"),
        "animated": raw.get("animated", False),
        "name": raw.get("name"),
        "sha512_hash": raw.get("sha512_hash"),
        "orig_sha512_hash": raw.get("orig_sha512_hash"),
        "tag_ids": list(raw.get("tag_ids", [])),
        "tags": list(raw.get("tags", [])),
        "uploader_id": raw.get("uploader_id"),
        "uploader": raw.get("uploader"),
        "upvotes": raw.get("upvotes", 0),
        "downvotes": raw.get("downvotes", 0),
        "score": raw.get("score", 0),
        "faves": raw.get("faves", 0),
        "hides": raw.get("hides", 0),
        "comment_count": raw.get("comment_count", 0),
        "intensities": raw.get("intensities"),
        "description": raw.get("description") or "",
        "source_urls": sources,
        "thumbnails_generated": raw.get("thumbnails_generated", True),
        "processed": raw.get("processed", True),
        "hidden_from_users": raw.get("hidden_from_users", False),
        "deletion_reason": raw.get("deletion_reason"),
        "duplicate_of": raw.get("duplicate_of"),
        "file_key": None,
        "raw": raw,
    }


def _tag(raw: Record) -> Record:
    namespace, in_namespace = split_namespace(raw["name"])
    return {
        "id": raw["id"],
        "name": raw["name"],
        "slug": raw.get("slug"),
        "namespace": raw.get("namespace", namespace),
        "name_in_namespace": raw.get("name_in_namespace", in_namespace),
        "category": raw.get("category"),
        "description": raw.get("description") or "",
        "short_description": raw.get("short_description"),
        "aliased_tag_id": None,
        "implied_tag_ids": [],
        "dnp_entries": raw.get("dnp_entries", []),
        "spoiler_image": None,
        "raw": raw,
    }


def _attributed(raw: Record, **extra: Any) -> Record:
    """Comments and posts: the fields search and visibility rules read."""
    return {
        "id": raw["id"],
        "user_id": raw.get("user_id"),
        "anonymous": raw.get("user_id") is None,
        "author": raw.get("author"),
        "body": raw.get("body"),
        "created_at": raw.get("created_at"),
        "updated_at": raw.get("updated_at"),
        "edited_at": raw.get("edited_at"),
        "edit_reason": raw.get("edit_reason"),
        "hidden_from_users": False,
        "deletion_reason": None,
        "destroyed_content": False,
        "raw": raw,
        **extra,
    }


def load_fixtures(ds: Dataset, root: Path) -> None:
    """Fill `ds` with every record found in the JSON files below `root`."""
    files = sorted(p for p in root.rglob("*.json"))
    grouped: dict[str, list[Record]] = {}
    posts_total = None
    for path in files:
        records, total = _records(path)
        for kind, raw in records:
            grouped.setdefault(kind, []).append(raw)
            if kind == "posts":
                posts_total = total

    for raw in grouped.get("images", []):
        ds.images[raw["id"]] = _image(raw)
    for raw in grouped.get("tags", []):
        ds.add_tag(_tag(raw))
    for raw in grouped.get("users", []):
        ds.users[raw["id"]] = {**raw, "deleted": False, "raw": raw}
    for raw in grouped.get("filters", []):
        ds.filters[raw["id"]] = {**raw, "created_at": None, "raw": raw}
    for raw in grouped.get("comments", []):
        ds.comments[raw["id"]] = _attributed(raw, image_id=raw.get("image_id"))
    for raw in grouped.get("galleries", []):
        ds.galleries[raw["id"]] = {**raw, "image_ids": [], "created_at": None, "updated_at": None,
                                   "subscriber_count": 0, "raw": raw}
    for number, raw in enumerate(grouped.get("forums", []), start=1):
        ds.forums[raw["short_name"]] = {**raw, "id": number, "access_level": "normal", "raw": raw}
    _topics_and_posts(ds, grouped.get("topics", []), grouped.get("posts", []), posts_total)
    ds.invalidate()


def _topics_and_posts(ds: Dataset, topics: list[Record], posts: list[Record], posts_total: int | None) -> None:
    """Recorded topics carry no forum, and posts no topic: file them where they plausibly belong.

    Topics go to the `art` forum if there is one (the recorded ones are artists' threads), else
    the first forum; posts go to the topic whose `post_count` equals the recorded posts total, else
    the first topic, in recorded order.
    """
    if topics and not ds.forums:
        ds.forums["general"] = {"id": 1, "short_name": "general", "name": "General", "description": "",
                                "topic_count": len(topics), "post_count": 0, "access_level": "normal"}
    forum = "art" if "art" in ds.forums else next(iter(ds.forums), None)
    for topic_id, raw in enumerate(topics, start=1):
        ds.topics[topic_id] = {**raw, "id": topic_id, "forum": forum, "hidden": False,
                               "anonymous": raw.get("user_id") is None, "raw": raw}
    if not posts or not ds.topics:
        return
    topic = next((t for t in ds.topics.values() if t.get("post_count") == posts_total), None)
    topic = topic or ds.topics[min(ds.topics)]
    for position, raw in enumerate(posts):
        ds.posts[raw["id"]] = _attributed(raw, topic_id=topic["id"], topic_position=position)
