"""In-memory stand-in for Philomena's OpenSearch indexes: documents, filters and sorts.

Each resource gets a document builder producing the fields its query language knows (reference
section 6, field tables in `query.py`), plus the fixed visibility rules and sort orders of its
search endpoint (sections 5 and 11). Documents are cached on the dataset until its next mutation.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from .dataset import Dataset
from ..search.sort import integer_parse
from ..search.query import IMAGE_FIELDS, MatchAll, MatchNone, Node, QueryError, parse_query
from .records import parse_iso, wilson_score

# Image search also knows the user-dependent fields `my:` and `filter_id:` (reference section 6).
IMAGE_SEARCH_FIELDS = replace(IMAGE_FIELDS, custom=IMAGE_FIELDS.custom | {"my", "filter_id"})
MY_INTERACTIONS = {"faves": ("faved", ""), "upvotes": ("voted", "up"), "downvotes": ("voted", "down"),
                   "hidden": ("hidden", "")}

Record = dict[str, Any]

IMAGE_SORT_FIELDS = (
    "id", "updated_at", "first_seen_at", "aspect_ratio", "faves", "downvotes", "upvotes", "width", "height",
    "score", "comment_count", "tag_count", "wilson_score", "pixels", "size", "duration", "hides",
)
TAG_COUNT_CATEGORIES = ("body-type", "error", "character", "content-fanmade", "content-official", "oc", "origin",
                        "rating", "species", "spoiler")


def _date(value: str | None):
    return parse_iso(value) if value else None


def image_doc(ds: Dataset, image: Record) -> Record:
    """Everything the image index stores for one image (hidden ones included)."""
    tags = ds.tags
    names = list(image["tags"])
    aliases = ds.alias_names()
    for tag_id in image["tag_ids"]:
        names.extend(aliases.get(tag_id, ()))
    faved_by = [i["user_id"] for i in ds.interactions
                if i["image_id"] == image["id"] and i["interaction_type"] == "faved"]
    width, height = image["width"] or 0, image["height"] or 0
    doc = {
        "id": image["id"],
        "width": width,
        "height": height,
        "score": image["score"],
        "upvotes": image["upvotes"],
        "downvotes": image["downvotes"],
        "hides": image["hides"] or 0,
        "faves": image["faves"],
        "pixels": width * height,
        "size": image["size"] or 0,
        "orig_size": image["orig_size"] or 0,
        "comment_count": image["comment_count"],
        "source_count": len(image["source_urls"]),
        "tag_count": len(image["tag_ids"]),
        "uploader_id": image["uploader_id"],
        "favourited_by_user_ids": faved_by,
        "favourited_by_users": [ds.user_name(u) for u in faved_by],
        "duplicate_id": image["duplicate_of"],
        "aspect_ratio": width / height if height else 0.0,
        "wilson_score": float(wilson_score(image["upvotes"], image["downvotes"])),
        "duration": float(image["duration"] or 0) if image["animated"] else 0.0,
        "created_at": _date(image["created_at"]),
        "updated_at": _date(image["updated_at"]),
        "first_seen_at": _date(image["first_seen_at"]),
        "orig_sha512_hash": image["orig_sha512_hash"],
        "sha512_hash": image["sha512_hash"],
        "uploader": image["uploader"],
        "source_url": [s.lower() for s in image["source_urls"]],
        "original_format": image["format"],
        "mime_type": image["mime_type"],
        "file_name": image["name"],
        "animated": image["animated"],
        "processed": image["processed"],
        "thumbnails_generated": image["thumbnails_generated"],
        "description": image["description"],
        "gallery_id": list(ds.gallery_positions().get(image["id"], {})),
        "tags": names,
        "hidden_from_users": image["hidden_from_users"],
        "tag_ids": frozenset(image["tag_ids"]),
    }
    for category in TAG_COUNT_CATEGORIES:
        doc[category.replace("-", "_") + "_tag_count"] = sum(
            1 for i in image["tag_ids"] if i in tags and tags[i]["category"] == category)
    return doc


def image_docs(ds: Dataset) -> list[Record]:
    """Documents of all images, ordered by id."""
    return ds.cached("image_docs", lambda: [image_doc(ds, ds.images[i]) for i in sorted(ds.images)])


def comment_docs(ds: Dataset) -> list[tuple[Record, Record]]:
    def build() -> list[tuple[Record, Record]]:
        out = []
        for comment in ds.comments.values():
            image = ds.images.get(comment["image_id"])
            anonymous = comment.get("anonymous")
            out.append((comment, {
                "id": comment["id"],
                "author_id": None if anonymous else comment["user_id"],
                "image_id": comment["image_id"],
                "created_at": _date(comment["created_at"]),
                "updated_at": _date(comment["updated_at"]),
                "author": comment["author"],
                "image.tags": list(image["tags"]) if image else [],
                "body": comment["body"] or "",
            }))
        return out

    return ds.cached("comment_docs", build)


def post_docs(ds: Dataset) -> list[tuple[Record, Record]]:
    def build() -> list[tuple[Record, Record]]:
        out = []
        for post in ds.posts.values():
            topic = ds.topics[post["topic_id"]]
            forum = ds.forums[topic["forum"]]
            out.append((post, {
                "id": post["id"],
                "topic_position": post["topic_position"],
                "author_id": None if post.get("anonymous") else post["user_id"],
                "forum_id": forum["id"],
                "topic_id": topic["id"],
                "created_at": _date(post["created_at"]),
                "updated_at": _date(post["updated_at"]),
                "author": post["author"],
                "forum": forum["short_name"],
                "body": post["body"] or "",
                "subject": topic["title"],
            }))
        return out

    return ds.cached("post_docs", build)


def gallery_docs(ds: Dataset) -> list[tuple[Record, Record]]:
    def build() -> list[tuple[Record, Record]]:
        return [(g, {
            "id": g["id"],
            "image_count": len(g["image_ids"]),
            "subscriber_count": g.get("subscriber_count", 0),
            "creator_id": g["user_id"],
            "image_ids": list(g["image_ids"]),
            "thumbnail_id": g["thumbnail_id"],
            "title": g["title"],
            "creator": ds.user_name(g["user_id"]) or g.get("user"),
            "created_at": _date(g.get("created_at")),
            "updated_at": _date(g.get("updated_at")),
            "description": g["description"] or "",
        }) for g in ds.galleries.values()]

    return ds.cached("gallery_docs", build)


def tag_docs(ds: Dataset) -> list[tuple[Record, Record]]:
    def build() -> list[tuple[Record, Record]]:
        counts = ds.tag_image_counts()
        aliases = ds.alias_names()
        implied_by = ds.implied_by()
        names = ds.tag_name_of_slug  # recorded tags list their relations by slug; the index holds names
        out = []
        for tag in ds.tags.values():
            raw = tag.get("raw") or {}
            aliased = ds.tags.get(tag["aliased_tag_id"]) if tag.get("aliased_tag_id") is not None else None
            out.append((tag, {
                "id": tag["id"],
                "images": raw.get("images", counts.get(tag["id"], 0)),
                "slug": tag["slug"],
                "name": tag["name"],
                "analyzed_name": tag["name"],
                "name_in_namespace": tag["name_in_namespace"],
                "namespace": tag["namespace"],
                "category": tag["category"],
                "implied_tags": [names(s) for s in raw.get("implied_tags") or []]
                                or [ds.tags[i]["name"] for i in tag["implied_tag_ids"] if i in ds.tags],
                "implied_by_tags": [names(s) for s in raw.get("implied_by_tags") or []]
                                   or [ds.tags[i]["name"] for i in implied_by.get(tag["id"], [])],
                "aliased_tag": names(raw["aliased_tag"]) if raw.get("aliased_tag") else (
                    aliased["name"] if aliased else None),
                "aliases": [names(s) for s in raw.get("aliases") or []] or aliases.get(tag["id"], []),
                "aliased": bool(raw.get("aliased_tag") or aliased),
                "description": tag["description"] or "",
                "short_description": tag["short_description"] or "",
            }))
        return out

    return ds.cached("tag_docs", build)


def filter_docs(ds: Dataset) -> list[tuple[Record, Record]]:
    def build() -> list[tuple[Record, Record]]:
        return [(f, {
            "id": f["id"],
            "spoilered_count": len(f["spoilered_tag_ids"]),
            "hidden_count": len(f["hidden_tag_ids"]),
            "user_id": f["user_id"],
            "created_at": _date(f.get("created_at")),
            "description": f["description"] or "",
            "name": f["name"],
            "creator": ds.user_name(f["user_id"]),
            "public": bool(f["public"] or f["system"]),
            "system": bool(f["system"]),
        }) for f in ds.filters.values()]

    return ds.cached("filter_docs", build)


def can_view_filter(flt: Record, user_id: int | None) -> bool:
    """System, public, or the caller's own filter (the local site has no moderators)."""
    return bool(flt["system"] or flt["public"] or (user_id is not None and flt["user_id"] == user_id))


class IdIn(Node):
    """Matches documents whose id is in a fixed set (what `my:` queries expand to)."""

    def __init__(self, ids: Iterable[int]) -> None:
        self.ids = frozenset(ids)

    def matches(self, doc: Record) -> bool:
        return doc.get("id") in self.ids


class NotHiddenBy(Node):
    """`filter_id:N`: everything that filter would not hide."""

    def __init__(self, image_filter: ImageFilter) -> None:
        self.image_filter = image_filter

    def matches(self, doc: Record) -> bool:
        return not self.image_filter.hides(doc)


def parse_image_query(ds: Dataset, q: str, user_id: int | None) -> Node:
    """An image search query, with `my:` and `filter_id:` resolved for the caller."""

    def my(value: str) -> Node:
        if user_id is None:
            raise QueryError("You must be logged in to use `my' queries.")
        if value == "uploads":
            return IdIn(i for i, image in ds.images.items() if image["uploader_id"] == user_id)
        if value in ("subs", "watched"):
            return IdIn(())  # the local site has no subscriptions or watch lists
        if value not in MY_INTERACTIONS:
            raise QueryError("Unknown `my' value.")
        kind, vote = MY_INTERACTIONS[value]
        return IdIn(i["image_id"] for i in ds.interactions
                    if i["user_id"] == user_id and i["interaction_type"] == kind and i["value"] == vote)

    def filter_id(value: str) -> Node:
        flt = ds.filters.get(int(value)) if value.isdigit() else None
        if flt is None or not can_view_filter(flt, user_id):
            raise QueryError(f"Invalid filter `{value}`.")
        return NotHiddenBy(ImageFilter(ds, flt))

    return parse_query(q, IMAGE_SEARCH_FIELDS, transforms={"my": my, "filter_id": filter_id})


def _refuse_filter_id(value: str) -> Node:
    raise QueryError("Filter queries inside filters are not allowed.")


def compile_complex(ds: Dataset, text: str | None) -> Node:
    """A filter's complex string: lines OR-ed; unparseable compiles to match-all (hides everything)."""
    if not text or not text.strip():
        return MatchNone()

    def build() -> Node:
        lines = [line for line in text.splitlines() if line.strip()]
        joined = " || ".join(f"({line})" for line in lines) if len(lines) > 1 else lines[0]
        try:
            return parse_query(joined, IMAGE_SEARCH_FIELDS, transforms={"filter_id": _refuse_filter_id})
        except QueryError:
            return MatchAll()

    return ds.cached(f"complex:{text}", build)


class ImageFilter:
    """The current filter as it applies to one request: what it hides and what it spoilers."""

    def __init__(self, ds: Dataset, flt: Record | None) -> None:
        flt = flt or {}
        self.hidden_tags = frozenset(flt.get("hidden_tag_ids") or ())
        self.spoilered_tags = frozenset(flt.get("spoilered_tag_ids") or ())
        self.hidden_complex = compile_complex(ds, flt.get("hidden_complex"))
        self.spoilered_complex = compile_complex(ds, flt.get("spoilered_complex"))

    def hides(self, doc: Record) -> bool:
        return bool(self.hidden_tags & doc["tag_ids"]) or self.hidden_complex.matches(doc)

    def spoilers(self, doc: Record) -> bool:
        return (bool((self.hidden_tags | self.spoilered_tags) & doc["tag_ids"])
                or self.hidden_complex.matches(doc) or self.spoilered_complex.matches(doc))


def image_sort_key(sf: str | None, sd: str | None,
                   positions: dict[int, dict[int, int]]) -> tuple[Callable[[Record], Any], bool]:
    """(key, reverse) for an image search, following ImageSorter (reference section 5).

    `positions` maps image id -> {gallery id: position}, for `sf=gallery_id:N`.
    """
    reverse = sd != "asc"
    sf = sf or "first_seen_at"
    if sf == "id":
        return (lambda d: d["id"]), reverse
    if sf == "_score":
        return (lambda d: (0, d["id"])), reverse
    if sf.startswith("random"):
        parsed = integer_parse(sf.partition(":")[2])
        seed = parsed if parsed is not None else random.randrange(1, 2**32)
        return (lambda d: (random.Random(f"{seed}:{d['id']}").random(), d["id"])), reverse
    if sf.startswith("gallery_id:"):
        value = sf.partition(":")[2]
        if not value.isdigit():
            return (lambda d: 0), False
        gallery_id = int(value)
        return _gallery_key(gallery_id, reverse, positions), False
    field = sf if sf in IMAGE_SORT_FIELDS else "first_seen_at"
    return (lambda d: (_sortable(d[field]), d["id"])), reverse


def _gallery_key(gallery_id: int, reverse: bool,
                 positions: dict[int, dict[int, int]]) -> Callable[[Record], Any]:
    """Nested sort on the gallery position (direction sd, missing last), then id descending."""

    def key(doc: Record) -> Any:
        position = positions.get(doc["id"], {}).get(gallery_id)
        if position is None:
            return (1, 0, -doc["id"])
        return (0, -position if reverse else position, -doc["id"])

    return key


def _sortable(value: Any) -> Any:
    return float("-inf") if value is None else value


def matching(pairs: Iterable[tuple[Record, Record]], node: Node,
             keep: Callable[[Record, Record], bool] = lambda record, doc: True) -> list[tuple[Record, Record]]:
    """(record, doc) pairs whose doc matches `node` and that the endpoint's visibility rule keeps."""
    return [(record, doc) for record, doc in pairs if keep(record, doc) and node.matches(doc)]
