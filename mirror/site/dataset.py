"""The local site's data: every record the fake Philomena serves, and the edits tests make to it.

Records are plain dicts close to the API's own field names (see `render.py` for the exact output
shapes). A `Dataset` is either generated from a seed (`Dataset.generate`, see `generate.py`) or
loaded from the recorded real responses (`Dataset.from_fixtures`). The site reads it from the
server thread while tests mutate it from theirs, so every read and write goes through `lock`.
"""

from __future__ import annotations

import hashlib
import json
import random
import threading
from collections.abc import Callable, Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

from ..search.slugs import slug, unslug
from . import media, pictures
from .records import (
    NAMESPACE_CATEGORIES,
    RATINGS,
    background_pony,
    iso,
    parse_iso,
    slug_of_title,
    split_namespace,
    utc_now,
)
from .render import THUMB_SIZES

__all__ = ["Dataset"]

Record = dict[str, Any]


class Dataset:
    """All records of one fake board, with indexes, caches and thread-safe mutation helpers."""

    def __init__(self, seed: int = 1) -> None:
        self.seed = seed
        self.lock = threading.RLock()
        self.images: dict[int, Record] = {}
        self.tags: dict[int, Record] = {}
        self.users: dict[int, Record] = {}
        self.comments: dict[int, Record] = {}
        self.forums: dict[str, Record] = {}
        self.topics: dict[int, Record] = {}
        self.posts: dict[int, Record] = {}
        self.galleries: dict[int, Record] = {}
        self.filters: dict[int, Record] = {}
        self.interactions: list[Record] = []
        self.features: list[Record] = []  # {"image_id", "created_at"}
        self.api_keys: dict[str, int] = {}
        self.clock: Callable[[], datetime] = utc_now
        self._tag_by_name: dict[str, int] = {}
        self._tag_by_slug: dict[str, int] = {}
        self._cache: dict[str, Any] = {}
        self.version = 0  # bumped by every change, so the published board knows it is stale
        # Loaded from recordings: served exactly as recorded, file URLs included.
        self.recorded = False
        self.pictures = False  # real pictures (see generate) instead of tiny stand-ins
        # Uploads (mirror/site/write.py): their files, the seconds before the site has "processed"
        # one (thumbnails_generated turns true), and the tags the site forbids.
        self.uploads: dict[int, bytes] = {}
        self.processing_delay = 0.5
        self.tag_blacklist: tuple[str, ...] = ()

    # ------------------------------------------------------------------ construction

    @classmethod
    def generate(cls, seed: int = 1, images: int = 200, *, with_pictures: bool = False) -> Dataset:
        """A realistic board of `images` images (and proportional comments, posts, ...).

        ``with_pictures`` gives it files someone can look at (:mod:`.pictures`), at the cost of
        drawing them; otherwise its files are tiny stand-ins, which is all syncing needs.
        """
        from .generate import populate

        dataset = cls(seed)
        dataset.pictures = with_pictures
        populate(dataset, random.Random(seed), images)
        return dataset

    @classmethod
    def from_fixtures(cls, path: str | Path) -> Dataset:
        """Load every recorded response under `path` so the site serves those records unchanged."""
        from .fixtures import load_fixtures

        dataset = cls(seed=0)
        load_fixtures(dataset, Path(path))
        dataset.recorded = True
        return dataset

    def to_json(self) -> str:
        """Canonical JSON of every record: equal seeds give byte-identical output."""
        with self.lock:
            state = {
                name: [v for _, v in sorted(getattr(self, name).items(), key=lambda kv: str(kv[0]))]
                for name in ("images", "tags", "users", "comments", "forums", "topics", "posts",
                             "galleries", "filters")
            }
            state.update(interactions=self.interactions, features=self.features, api_keys=self.api_keys)
            return json.dumps(state, sort_keys=True, ensure_ascii=False)

    # ------------------------------------------------------------------ lookups

    @property
    def default_filter_id(self) -> int | None:
        """Id of the system filter named exactly "Default" (the anonymous filter), if any."""
        return next((f["id"] for f in self.filters.values() if f["system"] and f["name"] == "Default"), None)

    @property
    def everything_filter_id(self) -> int | None:
        return next((f["id"] for f in self.filters.values() if f["system"] and f["name"] == "Everything"), None)

    def tag_by_name(self, name: str) -> Record | None:
        tag_id = self._tag_by_name.get(name)
        return self.tags.get(tag_id) if tag_id is not None else None

    def tag_by_slug(self, value: str) -> Record | None:
        tag_id = self._tag_by_slug.get(value)
        return self.tags.get(tag_id) if tag_id is not None else None

    def user_name(self, user_id: int | None) -> str | None:
        user = self.users.get(user_id) if user_id is not None else None
        return user["name"] if user else None

    def cached(self, key: str, build: Callable[[], Any]) -> Any:
        """Memoise derived indexes; every mutation clears them all (mutations are rare)."""
        if key not in self._cache:
            self._cache[key] = build()
        return self._cache[key]

    def invalidate(self) -> None:
        """Forget what was derived from the data, and count a new version (the site republishes)."""
        self._cache.clear()
        self.version += 1

    def alias_names(self) -> dict[int, list[str]]:
        """tag id -> names of the tags aliased to it (the search index stores both)."""

        def build() -> dict[int, list[str]]:
            out: dict[int, list[str]] = {}
            for tag in self.tags.values():
                if tag.get("aliased_tag_id") is not None:
                    out.setdefault(tag["aliased_tag_id"], []).append(tag["name"])
            return out

        return self.cached("alias_names", build)

    def implied_by(self) -> dict[int, list[int]]:
        """tag id -> ids of the tags that imply it, by id."""

        def build() -> dict[int, list[int]]:
            out: dict[int, list[int]] = {}
            for other in sorted(self.tags):
                for implied in self.tags[other]["implied_tag_ids"]:
                    out.setdefault(implied, []).append(other)
            return out

        return self.cached("implied_by", build)

    def tag_name_of_slug(self, value: str) -> str:
        """The name of the tag with this slug; for a slug of a tag not loaded, the name it spells."""
        tag = self.tag_by_slug(value)
        return tag["name"] if tag else unslug(value)

    def tag_image_counts(self) -> dict[int, int]:
        """tag id -> number of visible images carrying it (the tag's `images` column)."""

        def build() -> dict[int, int]:
            counts: dict[int, int] = {}
            for image in self.images.values():
                if not image["hidden_from_users"]:
                    for tag_id in image["tag_ids"]:
                        counts[tag_id] = counts.get(tag_id, 0) + 1
            return counts

        return self.cached("tag_image_counts", build)

    def gallery_positions(self) -> dict[int, dict[int, int]]:
        """image id -> {gallery id: position in that gallery}."""

        def build() -> dict[int, dict[int, int]]:
            out: dict[int, dict[int, int]] = {}
            for gallery in self.galleries.values():
                for position, image_id in enumerate(gallery["image_ids"]):
                    out.setdefault(image_id, {})[gallery["id"]] = position
            return out

        return self.cached("gallery_positions", build)

    def topic_posts(self, topic_id: int) -> list[Record]:
        """Posts of a topic ordered by `topic_position` (destroyed ones included)."""

        def build() -> dict[int, list[Record]]:
            out: dict[int, list[Record]] = {}
            for post in self.posts.values():
                out.setdefault(post["topic_id"], []).append(post)
            for posts in out.values():
                posts.sort(key=lambda p: p["topic_position"])
            return out

        return self.cached("topic_posts", build).get(topic_id, [])

    def image_file(self, image: Record, variant: str, ext: str) -> bytes:
        """Bytes of one representation. `variant` is `full`, `orig`, `rendered` or a thumbnail name.

        `full` is the kept original, what the record's `sha512_hash` describes (an SVG image's is
        the SVG); `orig` is the upload, hashed by `orig_sha512_hash`; `rendered` is an SVG's PNG
        rendering, which every non-download URL of an SVG points at (`full.png`, sized `*.png`).
        Thumbnails are small distinct files of the same type.
        """
        key = image["file_key"]
        upload = self.uploads.get(image["id"])
        if upload is not None:
            return upload if variant in ("full", "orig") else media.make_file(f"{key}/{variant}", ext)
        if variant == "full" and image.get("full_padding"):
            # A large file for memory tests: the stand-in followed by `full_padding` zero bytes.
            return self.image_file({**image, "full_padding": 0}, variant, ext) + bytes(image["full_padding"])
        if self.pictures and ext in pictures.FORMATS:
            return self._picture(image, variant, ext)
        if variant in ("full", "orig"):
            return media.make_file(key, image["format"], animated=image["animated"])
        return media.make_file(f"{key}/{variant}", ext, animated=image["animated"])

    def _picture(self, image: Record, variant: str, ext: str) -> bytes:
        """A real picture at the size the record (or its thumbnail box) says."""
        width, height = image["width"] or 1, image["height"] or 1
        kind = variant.partition(".")[0]
        if kind in THUMB_SIZES:
            width, height = pictures.fit(width, height, THUMB_SIZES[kind])
        fmt = image["format"] if variant in ("full", "orig") else ext
        return pictures.picture(image["file_key"], fmt, width, height, f"#{image['id']}",
                                animated=image["animated"] and fmt == "gif")

    # ------------------------------------------------------------------ building blocks

    def now(self) -> str:
        return iso(self.clock())

    def ensure_tag(self, name: str, tag_id: int | None = None) -> Record:
        """The tag called `name`, created (with namespace and category rules) if missing."""
        name = " ".join(name.strip().lower().split())
        tag = self.tag_by_name(name)
        if tag is not None:
            return tag
        namespace, in_namespace = split_namespace(name)
        category = NAMESPACE_CATEGORIES.get(namespace) if namespace else None
        if name in RATINGS:
            category = "rating"
        tag = {
            "id": tag_id if tag_id is not None else max(self.tags, default=0) + 1,
            "name": name,
            "slug": slug(name),
            "namespace": namespace,
            "name_in_namespace": in_namespace,
            "category": category,
            "description": "",
            "short_description": "",
            "aliased_tag_id": None,
            "implied_tag_ids": [],
            "dnp_entries": [],
            "spoiler_image": None,
        }
        self.add_tag(tag)
        return tag

    def add_tag(self, tag: Record) -> None:
        self.tags[tag["id"]] = tag
        self._tag_by_name[tag["name"]] = tag["id"]
        self._tag_by_slug[tag["slug"]] = tag["id"]
        self.invalidate()

    def resolve_tags(self, names: Iterable[str]) -> list[Record]:
        """Tags for `names`, following aliases and adding implied tags, ordered by id."""
        found: dict[int, Record] = {}
        pending = [self.ensure_tag(n) for n in names if n.strip()]
        while pending:
            tag = pending.pop()
            if tag.get("aliased_tag_id") is not None:
                tag = self.tags[tag["aliased_tag_id"]]
            if tag["id"] in found:
                continue
            found[tag["id"]] = tag
            pending.extend(self.tags[i] for i in tag.get("implied_tag_ids", ()) if i in self.tags)
        return [found[i] for i in sorted(found)]

    def set_image_tags(self, image: Record, tags: list[Record]) -> None:
        image["tag_ids"] = [t["id"] for t in tags]
        image["tags"] = [t["name"] for t in tags]

    def finish_image_file(self, image: Record) -> None:
        """Set size, hashes and intensities from the image's files (as the site's processing does)."""
        full = self.image_file(image, "full", image["format"])
        orig = self.image_file(image, "orig", image["format"])
        image["size"], image["orig_size"] = len(full), len(orig)
        image["sha512_hash"] = hashlib.sha512(full).hexdigest()
        image["orig_sha512_hash"] = hashlib.sha512(orig).hexdigest()
        image["intensities"] = _intensities(full)

    # ------------------------------------------------------------------ mutations (tests)

    def _image(self, image_id: int) -> Record:
        try:
            return self.images[image_id]
        except KeyError:
            raise KeyError(f"no image {image_id}") from None

    def add_images(self, n: int) -> list[int]:
        """Upload `n` new images, dated now, with ids above the current maximum."""
        from .generate import new_image

        with self.lock:
            ids = []
            now = self.now()
            for _ in range(n):
                image_id = max(self.images, default=-1) + 1
                rng = random.Random(f"{self.seed}-image-{image_id}")
                image = new_image(self, rng, image_id, now)
                self.images[image_id] = image
                ids.append(image_id)
            self.invalidate()
            return ids

    def edit_image(
        self,
        image_id: int,
        *,
        tags: list[str] | None = None,
        score: int | None = None,
        description: str | None = None,
        thumbnails_generated: bool | None = None,
        **other_fields: Any,
    ) -> Record:
        """Change an image as a user or the site would; bumps `updated_at`.

        `tags` are names (aliases followed, implications added, unknown tags created). `score`
        adjusts upvotes/downvotes so that score = upvotes - downvotes. Other keyword arguments
        set internal fields directly (for example `processed=True`, `faves=3`, `source_urls=[]`).
        """
        with self.lock:
            image = self._image(image_id)
            _check_editable(other_fields, ("id", "raw"))  # before anything changes
            if tags is not None:
                self.set_image_tags(image, self.resolve_tags(tags))
            if score is not None:
                down = image["downvotes"]
                if score + down >= 0:
                    image["upvotes"] = score + down
                else:
                    image["upvotes"], image["downvotes"] = 0, -score
                image["score"] = image["upvotes"] - image["downvotes"]
            if description is not None:
                image["description"] = description
            if thumbnails_generated is not None:
                image["thumbnails_generated"] = thumbnails_generated
                if thumbnails_generated:
                    image["processed"] = True
            image.update(other_fields)
            image["updated_at"] = self.now()
            image.pop("raw", None)
            self.invalidate()
            return image

    def add_upload(self, data: bytes, *, name: str, fmt: str, mime_type: str, width: int, height: int,
                   duration: float, animated: bool, tags: list[str], description: str, source_urls: list[str],
                   user_id: int | None, anonymous: bool) -> Record:
        """Take an upload that passed the site's checks: a new image, not processed yet.

        Like the site, it answers at once with ``processed`` and ``thumbnails_generated`` false,
        and finishes ``processing_delay`` seconds later (``updated_at`` moves, so a sync sees it).
        """
        from .generate import new_image

        with self.lock:
            image_id = max(self.images, default=-1) + 1
            image = new_image(self, random.Random(f"{self.seed}-upload-{image_id}"), image_id, self.now())
            self.uploads[image_id] = data
            image.update(name=name, format=fmt, mime_type=mime_type, width=width, height=height, duration=duration,
                         animated=animated, description=description, source_urls=source_urls,
                         uploader_id=None if anonymous else user_id,
                         uploader=None if anonymous else self.user_name(user_id),
                         upvotes=0, downvotes=0, score=0, faves=0, hides=0,
                         thumbnails_generated=False, processed=False)
            self.set_image_tags(image, self.resolve_tags(tags))
            self.finish_image_file(image)
            self.images[image_id] = image
            self.invalidate()
        timer = threading.Timer(self.processing_delay, self._processed, (image_id,))
        timer.daemon = True
        timer.start()
        return image

    def _processed(self, image_id: int) -> None:
        with self.lock:
            if image_id in self.images:
                self.edit_image(image_id, thumbnails_generated=True)

    def image_by_orig_hash(self, sha512: str) -> Record | None:
        """The image uploaded with these bytes (the site's duplicate check), if any."""
        with self.lock:
            return next((i for i in self.images.values() if i["orig_sha512_hash"] == sha512), None)

    def hide_image(self, image_id: int, reason: str = "Rule #0") -> Record:
        """Delete an image: it becomes a stub carrying `deletion_reason`."""
        return self._set_hidden(image_id, deletion_reason=reason, duplicate_of=None)

    def merge_image(self, image_id: int, into: int) -> Record:
        """Merge an image into another: it becomes a stub carrying `duplicate_of`."""
        with self.lock:
            if into == image_id or into not in self.images:
                raise ValueError(f"cannot merge {image_id} into {into}")
            return self._set_hidden(image_id, deletion_reason=None, duplicate_of=into)

    def unhide_image(self, image_id: int) -> Record:
        return self._set_hidden(image_id, deletion_reason=None, duplicate_of=None, hidden=False)

    def _set_hidden(self, image_id: int, *, deletion_reason: str | None, duplicate_of: int | None,
                    hidden: bool = True) -> Record:
        with self.lock:
            image = self._image(image_id)
            image.update(hidden_from_users=hidden, deletion_reason=deletion_reason, duplicate_of=duplicate_of)
            image["updated_at"] = self.now()
            self.invalidate()
            return image

    def add_comments(self, image_id: int, n: int = 1, *, body: str | None = None,
                     user_id: int | None = None) -> list[int]:
        """Post `n` comments on an image (anonymous when `user_id` is None).

        Like the real site, this bumps the image's `comment_count` but not its `updated_at`
        (Philomena increments the counter with `update_all`, which leaves timestamps alone).
        """
        from .generate import make_comment

        with self.lock:
            image = self._image(image_id)
            ids = []
            for _ in range(n):
                comment_id = max(self.comments, default=0) + 1
                rng = random.Random(f"{self.seed}-comment-{comment_id}")
                comment = make_comment(self, rng, comment_id, image_id, user_id, self.now(), body=body)
                self.comments[comment_id] = comment
                image["comment_count"] += 1
                ids.append(comment_id)
            self.invalidate()
            return ids

    def edit_comment(self, comment_id: int, *, body: str | None = None, hidden: bool | None = None,
                     destroyed: bool | None = None, edit_reason: str | None = None) -> Record:
        """Edit, hide or destroy a comment; bumps `updated_at` (and `edited_at` for body edits)."""
        with self.lock:
            return self._edit_message(self.comments[comment_id], body=body, hidden=hidden, destroyed=destroyed,
                                      edit_reason=edit_reason)

    def edit_post(self, post_id: int, *, body: str | None = None, hidden: bool | None = None,
                  destroyed: bool | None = None, edit_reason: str | None = None) -> Record:
        """Edit, hide or destroy a forum post; bumps `updated_at` (and `edited_at` for body edits).

        Like Philomena, this leaves the topic's `post_count` and `last_replied_to_at` alone.
        """
        with self.lock:
            return self._edit_message(self.posts[post_id], body=body, hidden=hidden, destroyed=destroyed,
                                      edit_reason=edit_reason)

    def _edit_message(self, message: Record, *, body: str | None, hidden: bool | None, destroyed: bool | None,
                      edit_reason: str | None) -> Record:
        now = self.now()
        if body is not None:
            message.update(body=body, edited_at=now, edit_reason=edit_reason)
        if hidden is not None:
            message["hidden_from_users"] = hidden
        if destroyed is not None:
            message["destroyed_content"] = destroyed
        message["updated_at"] = now
        self.invalidate()
        return message

    def add_posts(self, topic: int | str, n: int = 1, *, body: str | None = None,
                  user_id: int | None = None) -> list[int]:
        """Reply `n` times to a topic (given by id or slug); bumps the topic's counters."""
        from .generate import make_post

        with self.lock:
            record = self.topics.get(topic) if isinstance(topic, int) else next(
                (t for t in self.topics.values() if t["slug"] == topic), None)
            if record is None:
                raise KeyError(f"no topic {topic!r}")
            ids = []
            now = self.now()
            for _ in range(n):
                post_id = max(self.posts, default=0) + 1
                rng = random.Random(f"{self.seed}-post-{post_id}")
                post = make_post(self, rng, post_id, record, record["post_count"], user_id, now, body=body)
                self.posts[post_id] = post
                record["post_count"] += 1
                self.forums[record["forum"]]["post_count"] += 1
                ids.append(post_id)
            record["last_replied_to_at"] = now
            self.invalidate()
            return ids

    def add_topic(self, forum: str, title: str, posts: int = 1, *, sticky: bool = False,
                  user_id: int | None = None) -> Record:
        """Open a topic in `forum` with `posts` posts (the first is the opening post); bumps the forum's counters."""
        with self.lock:
            topic_id = max(self.topics, default=0) + 1
            topic_slug = slug_of_title(title, topic_id)
            if any(t["forum"] == forum and t["slug"] == topic_slug for t in self.topics.values()):
                raise ValueError(f"forum {forum!r} already has a topic {topic_slug!r}")
            now = self.now()
            topic = {
                "id": topic_id, "forum": forum, "slug": topic_slug, "title": title,
                "user_id": user_id, "anonymous": user_id is None,
                "author": self.user_name(user_id) if user_id is not None else background_pony(topic_id, "op"),
                "view_count": 0, "sticky": sticky, "locked": False, "hidden": False, "created_at": now,
                "last_replied_to_at": now, "post_count": 0,
            }
            self.topics[topic["id"]] = topic
            self.forums[forum]["topic_count"] += 1
            self.add_posts(topic["id"], posts, user_id=user_id)
            return topic

    # ------------------------------------------------------------------ tags, users, filters, features (tests)

    def edit_tag(self, name: str, **fields: Any) -> Record:
        """Edit a tag's own fields (`description`, `short_description`, `dnp_entries`, ...).

        Like Philomena, this touches no image: a tag carries no `updated_at` and its images stay
        as they were.
        """
        with self.lock:
            tag = self.tag_by_name(name)
            if tag is None:
                raise KeyError(f"no tag {name!r}")
            return self._set_fields(tag, fields, fixed=("id", "name", "slug"))

    def alias_tag(self, alias: str, target: str) -> Record:
        """Make `alias` (created if missing) an alias of `target`: the target's `aliases` grow."""
        with self.lock:
            tag = self.ensure_tag(alias)
            tag["aliased_tag_id"] = self.ensure_tag(target)["id"]
            self.invalidate()
            return tag

    def add_user(self, name: str, **fields: Any) -> Record:
        """Register a user with an id above the current maximum (no links, awards or activity)."""
        with self.lock:
            user_id = max(self.users, default=0) + 1
            user = {
                "id": user_id, "name": name, "slug": slug(name), "role": "user", "description": None,
                "avatar": None, "created_at": self.now(), "links": [], "awards": [], "deleted": False,
                "uploads_count": 0, "comments_count": 0, "posts_count": 0, "topics_count": 0, **fields,
            }
            self.users[user_id] = user
            self.invalidate()
            return user

    def edit_user(self, user_id: int, **fields: Any) -> Record:
        """Change a user's profile fields (description, role, links, awards, ...)."""
        with self.lock:
            return self._set_fields(self.users[user_id], fields)

    def delete_user(self, user_id: int) -> Record:
        """Deactivate an account: its profile answers 404 from now on; its records stay."""
        with self.lock:
            user = self.users[user_id]
            user["deleted"] = True
            self.invalidate()
            return user

    def add_filter(self, user_id: int | None, name: str, **fields: Any) -> Record:
        """Create a filter owned by `user_id` (a system filter when None), hiding nothing."""
        with self.lock:
            filter_id = max(self.filters, default=0) + 1
            flt = {
                "id": filter_id, "name": name, "description": "", "public": False, "system": user_id is None,
                "user_count": 0, "user_id": user_id, "hidden_tag_ids": [], "spoilered_tag_ids": [],
                "hidden_complex": "", "spoilered_complex": "", "created_at": self.now(), **fields,
            }
            self.filters[filter_id] = flt
            self.invalidate()
            return flt

    def edit_filter(self, filter_id: int, **fields: Any) -> Record:
        """Change a filter's fields (rename it, make it public, ...)."""
        with self.lock:
            return self._set_fields(self.filters[filter_id], fields)

    def _set_fields(self, record: Record, fields: dict[str, Any], fixed: tuple[str, ...] = ("id",)) -> Record:
        _check_editable(fields, fixed)
        record.update(fields)
        self.invalidate()
        return record

    def clear_features(self) -> None:
        """Forget every featured image (a site that features nothing)."""
        self.features.clear()
        self.invalidate()

    def feature_image(self, image_id: int) -> None:
        """Feature an image now: /images/featured answers with it."""
        with self.lock:
            self._image(image_id)
            self.features.append({"image_id": image_id, "created_at": self.now()})
            self.invalidate()

    def add_gallery(self, image_ids: list[int], *, title: str = "A new gallery", user_id: int | None = None,
                    description: str = "") -> int:
        """Create a gallery holding `image_ids` in that order (position 0 first), dated now."""
        with self.lock:
            for image_id in image_ids:
                self._image(image_id)
            gallery_id = max(self.galleries, default=0) + 1
            now = self.now()
            self.galleries[gallery_id] = {
                "id": gallery_id, "title": title, "description": description, "spoiler_warning": "",
                "thumbnail_id": image_ids[0] if image_ids else None,
                "user_id": user_id if user_id is not None else min(self.users), "image_ids": list(image_ids),
                "subscriber_count": 0, "created_at": now, "updated_at": now,
            }
            self.invalidate()
            return gallery_id

    def edit_gallery(self, gallery_id: int, *, add: Iterable[int] = (), remove: Iterable[int] = (),
                     order: list[int] | None = None, **fields: Any) -> Record:
        """Add images (at the end), remove images, reorder, or set fields such as `title`.

        Like the real site, adding, removing and field edits bump `updated_at` (an Ecto update of
        the gallery row); a reorder alone does not (it rewrites the positions only).
        """
        with self.lock:
            gallery = self.galleries[gallery_id]
            _check_editable(fields, ("id", "image_ids"))  # before anything changes
            added, removed = [i for i in add if self._image(i)], set(remove)
            members = [i for i in gallery["image_ids"] if i not in removed]
            members += [i for i in added if i not in members]
            if order is not None:
                if sorted(order) != sorted(members):
                    raise ValueError("order must list exactly the gallery's images")
                members = list(order)
            gallery.update(fields)
            gallery["image_ids"] = members
            if added or removed or fields:
                gallery["updated_at"] = self.now()
            self.invalidate()
            return gallery

    def delete_gallery(self, gallery_id: int) -> None:
        """Delete a gallery: search no longer finds it, nor its images by ``gallery_id:``."""
        with self.lock:
            del self.galleries[gallery_id]
            self.invalidate()

    # ------------------------------------------------------------------ derived dates

    @staticmethod
    def date(value: str) -> datetime:
        return parse_iso(value)


def _intensities(data: bytes) -> dict[str, float] | None:
    """The file's corner intensities as the record shows them; None when it cannot be read."""
    from ..imaging import MediaError, intensities_of

    try:
        values, _ = intensities_of(data)
    except MediaError:
        return None
    return {name: round(value, 6) for name, value in zip(("nw", "ne", "sw", "se"), values.as_tuple())}


def _check_editable(fields: dict[str, Any], fixed: tuple[str, ...]) -> None:
    """Refuse an edit of a field that cannot change, before anything is changed."""
    for key in fields:
        if key in fixed:
            raise ValueError(f"cannot edit {key}")
