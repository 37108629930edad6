"""The oracle for the SQL search: documents built in plain Python from a mirror's rows, in the
shape the search engine indexes them (reference section 6), and a plain evaluator of parsed
queries over them (:func:`matches`).

It shares nothing with ``mirror.search.compile`` or ``mirror.search.indexes`` but the fuzzy
distance, on purpose: the compiled SQL must find exactly the rows this plain evaluation finds.
"""

from __future__ import annotations

import functools
import json
import operator
import re
from collections.abc import Mapping
from datetime import datetime, timezone

from mirror.search.query import And, MatchAll, MatchNone, Node, Not, Or, Term, edit_distance, wildcard_regex
from mirror.search.slugs import unslug

_COMPARE = {"eq": operator.eq, "gt": operator.gt, "gte": operator.ge, "lt": operator.lt, "lte": operator.le}


def matches(node: Node, doc: Mapping[str, object]) -> bool:
    """Whether ``doc`` matches the parsed query ``node``; a missing field or None never matches,
    a list-valued field matches if any element does."""
    if isinstance(node, MatchAll):
        return True
    if isinstance(node, MatchNone):
        return False
    if isinstance(node, And):
        return all(matches(child, doc) for child in node.children)
    if isinstance(node, Or):
        return any(matches(child, doc) for child in node.children)
    if isinstance(node, Not):
        return not matches(node.child, doc)
    if isinstance(node, Term):
        raw = doc.get(node.field)
        items = raw if isinstance(raw, (list, tuple, set, frozenset)) else (raw,)
        return any(x is not None and _term(node, x) for x in items)
    raise TypeError(f"no rule for {type(node).__name__}")


def _term(term: Term, x: object) -> bool:
    if term.kind in ("compare", "between"):
        bound = term.value[1] if term.kind == "compare" else term.value[0]
        x = _comparable(x, bound)
        if x is None:
            return False
        if term.kind == "compare":
            return _COMPARE[term.value[0]](x, bound)
        lower, upper, inclusive = term.value
        return lower <= x and (x <= upper if inclusive else x < upper)
    if not isinstance(x, str):
        return False
    text = x.lower() if term.fold else x
    if term.kind == "term":
        return text == term.value
    if term.kind == "wildcard":
        return _regex(term.value).fullmatch(text) is not None
    if term.kind == "fuzzy":
        target, distance = term.value
        return edit_distance(text, target, distance) <= distance
    if term.kind == "phrase":
        return term.value != "" and term.value in text
    return any(_regex(term.value).fullmatch(word) for word in text.split())  # phrase_wildcard


def _comparable(x: object, like: object) -> object | None:
    """``x`` in a form comparable with ``like``, or None if the types do not fit."""
    if isinstance(like, bool):
        return x if isinstance(x, bool) else None
    if isinstance(like, (int, float)):
        return x if isinstance(x, (int, float)) and not isinstance(x, bool) else None
    if isinstance(like, datetime):
        if isinstance(x, str):
            try:
                x = datetime.fromisoformat(x)
            except ValueError:
                return None
        if not isinstance(x, datetime):
            return None
        return x if x.tzinfo is not None else x.replace(tzinfo=timezone.utc)
    return None


@functools.lru_cache(maxsize=1024)
def _regex(pattern: str) -> re.Pattern[str]:
    return re.compile(wildcard_regex(pattern), re.DOTALL)

CATEGORIES = ("body-type", "error", "character", "content-fanmade", "content-official", "oc", "origin",
              "rating", "species", "spoiler")


def _date(text):
    return datetime.fromisoformat(text.replace("Z", "+00:00")) if text else None


def _bool(value):
    return None if value is None else bool(value)


def _list(text):
    return json.loads(text) if text else []


def image_docs(db) -> dict[int, dict]:
    tags = {row["id"]: row for row in db["tags"].rows}
    aliases: dict[str, list[str]] = {}
    for tag in tags.values():
        if tag["aliased_tag"]:
            aliases.setdefault(tag["aliased_tag"], []).append(tag["name"])
    links: dict[int, list[int]] = {}
    for image_id, tag_id in db.execute("SELECT image_id, tag_id FROM image_tags"):
        links.setdefault(image_id, []).append(tag_id)
    galleries: dict[int, list[int]] = {}
    for gallery_id, image_id in db.execute("SELECT gallery_id, image_id FROM gallery_images"):
        galleries.setdefault(image_id, []).append(gallery_id)
    docs = {}
    for row in db["images"].rows:
        own = [tags[t] for t in links.get(row["id"], []) if t in tags]
        names = [t["name"] for t in own] + [a for t in own for a in aliases.get(t["slug"], [])]
        width, height = row["width"] or 0, row["height"] or 0
        doc = {
            "id": row["id"], "width": row["width"], "height": row["height"], "score": row["score"],
            "upvotes": row["upvotes"], "downvotes": row["downvotes"], "faves": row["faves"],
            "comment_count": row["comment_count"], "uploader_id": row["uploader_id"],
            "hides": row["hides"] or 0, "size": row["size"] or 0, "orig_size": row["orig_size"] or 0,
            "tag_count": len(_list(row["tag_ids"])) if row["tag_ids"] else None,
            "pixels": width * height,
            "source_count": len(_list(row["source_urls"])),
            "duplicate_id": row["duplicate_of"],
            "aspect_ratio": row["aspect_ratio"], "wilson_score": row["wilson_score"],
            "duration": (row["duration"] or 0.0) if row["animated"] else 0.0,
            "created_at": _date(row["created_at"]), "updated_at": _date(row["updated_at"]),
            "first_seen_at": _date(row["first_seen_at"]),
            "sha512_hash": row["sha512_hash"], "orig_sha512_hash": row["orig_sha512_hash"],
            "uploader": row["uploader"],
            "source_url": [s.lower() for s in _list(row["source_urls"])],
            "original_format": row["format"], "mime_type": row["mime_type"], "file_name": row["name"],
            "animated": _bool(row["animated"]), "processed": _bool(row["processed"]),
            "thumbnails_generated": _bool(row["thumbnails_generated"]),
            "description": row["description"],
            "gallery_id": galleries.get(row["id"], []),
            "tags": names,
        }
        for category in CATEGORIES:
            doc[f"{category.replace('-', '_')}_tag_count"] = sum(t["category"] == category for t in own)
        docs[row["id"]] = doc
    return docs


def comment_docs(db) -> dict[int, dict]:
    image_tags: dict[int, list[str]] = {}
    for image_id, name in db.execute("SELECT it.image_id, t.name FROM image_tags it JOIN tags t ON t.id = it.tag_id"):
        image_tags.setdefault(image_id, []).append(name)
    return {row["id"]: {
        "id": row["id"], "author_id": row["user_id"], "image_id": row["image_id"],
        "created_at": _date(row["created_at"]), "updated_at": _date(row["updated_at"]),
        "author": row["author"], "image.tags": image_tags.get(row["image_id"], []), "body": row["body"],
    } for row in db["comments"].rows}


def post_docs(db) -> dict[int, dict]:
    titles = {(t["forum_short_name"], t["slug"]): t["title"] for t in db["topics"].rows}
    return {row["id"]: {
        "id": row["id"], "author_id": row["user_id"],
        "created_at": _date(row["created_at"]), "updated_at": _date(row["updated_at"]),
        "author": row["author"], "forum": row["forum_short_name"], "body": row["body"],
        "subject": titles.get((row["forum_short_name"], row["topic_slug"])),
    } for row in db["posts"].rows}


def gallery_docs(db) -> dict[int, dict]:
    members: dict[int, list[int]] = {}
    for gallery_id, image_id in db.execute("SELECT gallery_id, image_id FROM gallery_images"):
        members.setdefault(gallery_id, []).append(image_id)
    return {row["id"]: {
        "id": row["id"], "image_count": len(members.get(row["id"], [])), "creator_id": row["creator_id"],
        "image_ids": members.get(row["id"], []), "thumbnail_id": row["thumbnail_id"], "title": row["title"],
        "creator": row["creator"], "description": row["description"],
    } for row in db["galleries"].rows}


def tag_docs(db) -> dict[int, dict]:
    """Relations are slugs in tag records; the index holds the names they spell (the tag's own
    name when the mirror keeps it, which is the same)."""
    rows = list(db["tags"].rows)
    by_slug = {row["slug"]: row["name"] for row in rows if row["slug"]}

    def name(slug):
        return by_slug.get(slug, unslug(slug)) if slug else None

    def names(slugs):
        return [name(s) for s in _list(slugs)]

    return {row["id"]: {
        "id": row["id"], "images": row["images"], "slug": row["slug"], "name": row["name"],
        "analyzed_name": row["name"], "name_in_namespace": row["name_in_namespace"],
        "namespace": row["namespace"], "category": row["category"],
        "implied_tags": names(row["implied_tags"]), "implied_by_tags": names(row["implied_by_tags"]),
        "aliases": names(row["aliases"]), "aliased_tag": name(row["aliased_tag"]),
        "aliased": row["aliased_tag"] is not None,
        "description": row["description"], "short_description": row["short_description"],
    } for row in rows}


def filter_docs(db) -> dict[int, dict]:
    users = {row["id"]: row["name"] for row in db["users"].rows}
    return {row["id"]: {
        "id": row["id"], "spoilered_count": len(_list(row["spoilered_tag_ids"])),
        "hidden_count": len(_list(row["hidden_tag_ids"])), "user_id": row["user_id"],
        "description": row["description"], "name": row["name"], "creator": users.get(row["user_id"]),
        "public": bool(row["public"] or row["system"]), "system": _bool(row["system"]),
    } for row in db["filters"].rows}


DOCS = {"images": image_docs, "comments": comment_docs, "posts": post_docs, "galleries": gallery_docs,
        "tags": tag_docs, "filters": filter_docs}
