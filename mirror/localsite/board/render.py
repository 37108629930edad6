"""API shapes of every record, as Philomena's JSON views build them (reference section 3).

This is the one place that decides what a response record looks like. Records loaded from
fixtures carry their recorded body in `raw` and are served exactly as recorded.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ... import philomena
from ...philomena import display_key, wilson_score
from ...search.slugs import slug
from .records import anonymous_avatar

Record = dict[str, Any]

@dataclass(frozen=True)
class Urls:
    """Where the site's files live, derived from the origin a request came in on."""

    origin: str

    @property
    def img(self) -> str:
        return self.origin + "/img"

    @property
    def avatars(self) -> str:
        return self.origin + "/avatars"

    @property
    def badges(self) -> str:
        return self.origin + "/badge-img"

    @property
    def tag_images(self) -> str:
        return self.origin + "/tag-img"


def date_path(image: Record) -> str:
    return philomena.date_path(image["created_at"])


def representations(image: Record, root: str) -> dict[str, str]:
    """The `representations` map: a sized file only when the image exceeds that size's box."""
    return philomena.representations(image["id"], image["created_at"], image["width"], image["height"],
                                     image["format"], image["mime_type"], root)


def display_ordered(image: Record, tags: Mapping[int, Record]) -> list[Record]:
    """The image's tags in display order: by category (error, rating, origin, ...), then name."""
    return sorted((tags[i] for i in image["tag_ids"] if i in tags), key=lambda t: display_key(t["category"], t["name"]))


def view_url(image: Record, root: str, tags: Mapping[int, Record]) -> str:
    """`{root}/view/Y/M/D/{id}__{slugs}.{ext}` with tag slugs in display order, cut to 151 chars."""
    return philomena.view_url(image["id"], image["created_at"], image["format"],
                              (t["slug"] for t in display_ordered(image, tags)), root)


def image_stub(image: Record) -> Record:
    """The 7-key record of a hidden image: merged (duplicate_of) or deleted (deletion_reason)."""
    merged = image.get("duplicate_of") is not None
    return {
        "id": image["id"],
        "created_at": image["created_at"],
        "updated_at": image["updated_at"],
        "first_seen_at": image["first_seen_at"],
        "duplicate_of": image["duplicate_of"] if merged else None,
        "deletion_reason": None if merged else image.get("deletion_reason"),
        "hidden_from_users": True,
    }


def render_image(image: Record, root: str, tags: Mapping[int, Record] | None = None, *,
                 spoilered: bool = False) -> Record:
    """An image as the API shows it: the visible record (40 keys) or the 7-key stub."""
    if image.get("raw") is not None:
        return dict(image["raw"])
    if image["hidden_from_users"]:
        return image_stub(image)
    tags = tags or {}
    height = image["height"]
    return {
        "id": image["id"],
        "created_at": image["created_at"],
        "updated_at": image["updated_at"],
        "first_seen_at": image["first_seen_at"],
        "width": image["width"],
        "height": height,
        "mime_type": image["mime_type"],
        "size": image["size"],
        "orig_size": image["orig_size"],
        "duration": image["duration"],
        "animated": image["animated"],
        "format": image["format"],
        "aspect_ratio": image["width"] / height if height else 0.0,
        "name": image["name"],
        "sha512_hash": image["sha512_hash"],
        "orig_sha512_hash": image["orig_sha512_hash"],
        "tags": list(image["tags"]),
        "tag_ids": list(image["tag_ids"]),
        "uploader": image["uploader"],
        "uploader_id": image["uploader_id"],
        "wilson_score": wilson_score(image["upvotes"], image["downvotes"]),
        "intensities": dict(image["intensities"]) if image["intensities"] else None,
        "score": image["score"],
        "upvotes": image["upvotes"],
        "downvotes": image["downvotes"],
        "faves": image["faves"],
        "hides": image["hides"],
        "comment_count": image["comment_count"],
        "tag_count": len(image["tag_ids"]),
        "description": image["description"],
        "source_url": image["source_urls"][0] if image["source_urls"] else "",
        "source_urls": list(image["source_urls"]),
        "view_url": view_url(image, root, tags),
        "representations": representations(image, root),
        "thumbnails_generated": image["thumbnails_generated"],
        "processed": image["processed"],
        "deletion_reason": None,
        "duplicate_of": None,
        "hidden_from_users": False,
        "spoilered": spoilered,
    }


def render_tag(tag: Record, tags: Mapping[int, Record], image_counts: Mapping[int, int],
               aliases: Mapping[int, list[str]], implied_by: Mapping[int, list[int]], urls: Urls) -> Record:
    """A tag; relations are given as slugs, `images` is the live count of visible images."""
    if tag.get("raw") is not None:
        return dict(tag["raw"])
    aliased = tags.get(tag["aliased_tag_id"]) if tag.get("aliased_tag_id") is not None else None
    return {
        "id": tag["id"],
        "name": tag["name"],
        "slug": tag["slug"],
        "description": tag["description"],
        "short_description": tag["short_description"],
        "images": image_counts.get(tag["id"], 0),
        "spoiler_image_uri": f"{urls.tag_images}/{tag['spoiler_image']}" if tag.get("spoiler_image") else None,
        "namespace": tag["namespace"],
        "name_in_namespace": tag["name_in_namespace"],
        "category": tag["category"],
        "aliased_tag": aliased["slug"] if aliased else None,
        "aliases": [slug(n) for n in aliases.get(tag["id"], [])],
        "implied_tags": [tags[i]["slug"] for i in tag["implied_tag_ids"] if i in tags],
        "implied_by_tags": [tags[i]["slug"] for i in implied_by.get(tag["id"], [])],
        "dnp_entries": [dict(d) for d in tag["dnp_entries"]],
    }


def _avatar(record: Record, users: Mapping[int, Record], urls: Urls) -> str:
    user = users.get(record["user_id"]) if record.get("user_id") is not None else None
    if user is not None and not record.get("anonymous") and user.get("avatar"):
        return f"{urls.avatars}/{user['avatar']}"
    return anonymous_avatar(record["author"])


def _attributed(record: Record, users: Mapping[int, Record], urls: Urls, *, hidden: bool) -> Record:
    """Shared shape of comments and posts (author, avatar, body and edit fields)."""
    return {
        "id": record["id"],
        "user_id": None if record.get("anonymous") else record["user_id"],
        "author": record["author"],
        "avatar": _avatar(record, users, urls),
        "body": None if hidden else record["body"],
        "created_at": record["created_at"],
        "updated_at": record["updated_at"],
        "edited_at": None if hidden else record["edited_at"],
        "edit_reason": None if hidden else record["edit_reason"],
    }


def render_comment(comment: Record, image: Record | None, users: Mapping[int, Record], urls: Urls) -> Record | None:
    """A comment: null when destroyed, nulled without `avatar` when its image is hidden."""
    if comment.get("raw") is not None:
        return dict(comment["raw"])
    if comment["destroyed_content"]:
        return None
    if image is not None and image["hidden_from_users"]:
        return {"id": comment["id"], "image_id": comment["image_id"], "user_id": None, "author": None,
                "body": None, "created_at": None, "updated_at": None, "edited_at": None, "edit_reason": None}
    out = _attributed(comment, users, urls, hidden=comment["hidden_from_users"])
    out["image_id"] = comment["image_id"]
    return out


def render_post(post: Record, topic: Record, users: Mapping[int, Record], urls: Urls) -> Record | None:
    if post.get("raw") is not None:
        return dict(post["raw"])
    if post["destroyed_content"]:
        return None
    if topic.get("hidden"):
        return {"id": post["id"], "user_id": None, "author": None, "body": None, "created_at": None,
                "updated_at": None, "edited_at": None, "edit_reason": None}
    return _attributed(post, users, urls, hidden=post["hidden_from_users"])


def render_topic(topic: Record) -> Record:
    if topic.get("raw") is not None:
        return dict(topic["raw"])
    return {
        "slug": topic["slug"],
        "title": topic["title"],
        "post_count": topic["post_count"],
        "view_count": topic["view_count"],
        "sticky": topic["sticky"],
        "last_replied_to_at": topic["last_replied_to_at"],
        "locked": topic["locked"],
        "user_id": None if topic.get("anonymous") else topic["user_id"],
        "author": topic["author"],
    }


def render_forum(forum: Record) -> Record:
    if forum.get("raw") is not None:
        return dict(forum["raw"])
    return {key: forum[key] for key in ("name", "short_name", "description", "topic_count", "post_count")}


def render_gallery(gallery: Record, users: Mapping[int, Record]) -> Record:
    """A gallery. The live view names the creator `user`/`user_id` (as the recorded 2024 data does)."""
    if gallery.get("raw") is not None:
        return dict(gallery["raw"])
    user = users.get(gallery["user_id"])
    return {
        "id": gallery["id"],
        "title": gallery["title"],
        "thumbnail_id": gallery["thumbnail_id"],
        "spoiler_warning": gallery["spoiler_warning"],
        "description": gallery["description"],
        "user": user["name"] if user else None,
        "user_id": gallery["user_id"],
    }


def render_filter(flt: Record) -> Record:
    if flt.get("raw") is not None:
        return dict(flt["raw"])
    keys = ("id", "name", "description", "public", "system", "user_count", "user_id", "hidden_tag_ids",
            "spoilered_tag_ids", "hidden_complex", "spoilered_complex")
    out = {key: flt[key] for key in keys}
    out["hidden_tag_ids"] = list(flt["hidden_tag_ids"])
    out["spoilered_tag_ids"] = list(flt["spoilered_tag_ids"])
    return out


def render_user(user: Record, urls: Urls) -> Record:
    """A profile (served wrapped as `user`): only verified public links, awards by badge."""
    if user.get("raw") is not None:
        return dict(user["raw"])
    return {
        "id": user["id"],
        "name": user["name"],
        "slug": user["slug"],
        "role": user["role"],
        "description": user["description"],
        "avatar_url": f"{urls.avatars}/{user['avatar']}" if user.get("avatar") else None,
        "created_at": user["created_at"],
        "comments_count": user["comments_count"],
        "uploads_count": user["uploads_count"],
        "posts_count": user["posts_count"],
        "topics_count": user["topics_count"],
        "links": [dict(link) for link in user["links"] if link["state"] == "verified"],
        "awards": [
            {"id": a["id"], "title": a["title"], "image_url": f"{urls.badges}/{a['image']}", "label": a["label"],
             "awarded_on": a["awarded_on"]}
            for a in user["awards"]
        ],
    }
