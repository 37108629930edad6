"""The six search indexes of the API, as the mirror's tables answer them.

Each :class:`Index` names its table and row alias, the query language's field table (from
:mod:`.query`) and, for every field, the SQL that gives its value (reference section 6). Fields
the API never shows, so the mirror cannot know (who faved an image, a gallery's subscribers, a
post's topic position), are :class:`~.compile.Unknown` and match nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from .compile import Digest, Field, Linked, Related, Scalar, TrigramIndexed, Unknown
from .query import COMMENT_FIELDS, FILTER_FIELDS, GALLERY_FIELDS, IMAGE_FIELDS, POST_FIELDS, TAG_FIELDS, FieldSpec

__all__ = ["Index", "IMAGES", "COMMENTS", "POSTS", "GALLERIES", "TAGS", "FILTERS", "INDEXES",
           "TAG_COUNT_CATEGORIES"]

TAG_COUNT_CATEGORIES = ("body-type", "error", "character", "content-fanmade", "content-official", "oc", "origin",
                        "rating", "species", "spoiler")


@dataclass(frozen=True)
class Index:
    """One searchable resource: ``table`` aliased ``alias``, its query fields, their SQL."""

    name: str
    table: str
    alias: str
    spec: FieldSpec
    fields: Mapping[str, Field]


def _text(expr: str, folded: bool = False) -> Scalar:
    return Scalar(expr, "text", folded)


def _date(expr: str) -> Scalar:
    return Scalar(expr, "date")


def _bool(expr: str) -> Scalar:
    return Scalar(expr, "bool")


# An image's tag names plus the names of the tags aliased to them (reference section 6).
_IMAGE_TAGS = Linked(
    key="{t}.id",
    links="SELECT it.image_id FROM image_tags it WHERE it.tag_id",
    names=(("SELECT tg.id FROM tags tg", "tg.name"),
           ("SELECT tg.id FROM tags tg JOIN tags alias ON alias.aliased_tag = tg.slug", "alias.name")),
    folded=True)


def _category_count(category: str) -> Scalar:
    return Scalar("(SELECT count(*) FROM image_tags it JOIN tags tg ON tg.id = it.tag_id "
                  f"WHERE it.image_id = {{t}}.id AND tg.category = '{category}')")


IMAGES = Index("images", "images", "i", IMAGE_FIELDS, {
    **{name: Scalar(f"{{t}}.{name}") for name in
       ("id", "width", "height", "score", "upvotes", "downvotes", "faves", "comment_count", "uploader_id")},
    "hides": Scalar("coalesce({t}.hides, 0)"),
    "size": Scalar("coalesce({t}.size, 0)"),
    "orig_size": Scalar("coalesce({t}.orig_size, 0)"),
    "tag_count": Scalar("json_array_length({t}.tag_ids)"),
    "pixels": Scalar("coalesce({t}.width, 0) * coalesce({t}.height, 0)"),
    "source_count": Scalar("coalesce(json_array_length({t}.source_urls), 0)"),
    **{f"{c.replace('-', '_')}_tag_count": _category_count(c) for c in TAG_COUNT_CATEGORIES},
    "duplicate_id": Scalar("{t}.duplicate_of"),
    "favourited_by_user_ids": Unknown(),
    "favourited_by_users": Unknown(),
    "aspect_ratio": Scalar("{t}.aspect_ratio"),
    "wilson_score": Scalar("{t}.wilson_score"),
    "duration": Scalar("CASE WHEN {t}.animated THEN coalesce({t}.duration, 0.0) ELSE 0.0 END"),
    "created_at": _date("{t}.created_at"),
    "updated_at": _date("{t}.updated_at"),
    "first_seen_at": _date("{t}.first_seen_at"),
    "sha512_hash": Digest("{t}.sha512_hash", "text", stored="{t}.sha512_hash_bytes"),
    "orig_sha512_hash": Digest("{t}.orig_sha512_hash", "text", stored="{t}.orig_sha512_hash_bytes"),
    "uploader": _text("{t}.uploader"),
    "source_url": Related("", "SELECT 1 FROM json_each({t}.source_urls) src WHERE 1", "src.value", per_row=True),
    "original_format": _text("{t}.format"),
    "mime_type": _text("{t}.mime_type"),
    "file_name": _text("{t}.name"),
    "animated": _bool("{t}.animated"),
    "processed": _bool("{t}.processed"),
    "thumbnails_generated": _bool("{t}.thumbnails_generated"),
    "description": TrigramIndexed("{t}.description", "text", index="images_description",
                                  long_s="SELECT {t}.id FROM images {t} WHERE instr({t}.description, 'ſ') > 0"),
    "gallery_id": Related("{t}.id", "SELECT gallery_id_of.image_id FROM gallery_images gallery_id_of",
                          "gallery_id_of.gallery_id", kind="number"),
    "tags": _IMAGE_TAGS,
})

COMMENTS = Index("comments", "comments", "c", COMMENT_FIELDS, {
    "id": Scalar("{t}.id"),
    "author_id": Scalar("{t}.user_id"),
    "image_id": Scalar("{t}.image_id"),
    "created_at": _date("{t}.created_at"),
    "updated_at": _date("{t}.updated_at"),
    "author": _text("{t}.author"),
    "image.tags": Related("{t}.image_id", "SELECT it.image_id FROM image_tags it JOIN tags tg ON tg.id = it.tag_id",
                          "tg.name", folded=True),
    "body": _text("{t}.body"),
})

POSTS = Index("posts", "posts", "p", POST_FIELDS, {
    "id": Scalar("{t}.id"),
    "topic_position": Unknown(),
    "author_id": Scalar("{t}.user_id"),
    "forum_id": Unknown(),
    "topic_id": Unknown(),
    "created_at": _date("{t}.created_at"),
    "updated_at": _date("{t}.updated_at"),
    "author": _text("{t}.author"),
    "forum": _text("{t}.forum_short_name"),
    "body": _text("{t}.body"),
    "subject": _text("(SELECT title FROM topics WHERE forum_short_name = {t}.forum_short_name "
                     "AND slug = {t}.topic_slug)"),
})

GALLERIES = Index("galleries", "galleries", "g", GALLERY_FIELDS, {
    "id": Scalar("{t}.id"),
    "image_count": Scalar("(SELECT count(*) FROM gallery_images WHERE gallery_id = {t}.id)"),
    "subscriber_count": Unknown(),
    "creator_id": Scalar("{t}.creator_id"),
    "image_ids": Related("{t}.id", "SELECT gi.gallery_id FROM gallery_images gi", "gi.image_id", kind="number"),
    "thumbnail_id": Scalar("{t}.thumbnail_id"),
    "title": _text("{t}.title"),
    "creator": _text("{t}.creator"),
    "created_at": Unknown(),  # the gallery record carries no dates
    "updated_at": Unknown(),
    "description": _text("{t}.description"),
    "spoiler_warning": Unknown(),  # not in the engine's index mapping: never matches there either
})


def _tag_names_of_slugs(column: str) -> Related:
    """A JSON list of tag slugs (as tag records give relations), searched by the names they spell."""
    return Related("", f"SELECT 1 FROM json_each({{t}}.{column}) rel WHERE 1", "mirror_unslug(rel.value)",
                   folded=True, per_row=True)


TAGS = Index("tags", "tags", "tg", TAG_FIELDS, {
    "id": Scalar("{t}.id"),
    "images": Scalar("{t}.images"),
    "slug": _text("{t}.slug", folded=True),
    "name": _text("{t}.name", folded=True),
    "analyzed_name": _text("{t}.name", folded=True),
    "name_in_namespace": _text("{t}.name_in_namespace", folded=True),
    "namespace": _text("{t}.namespace", folded=True),
    "category": _text("{t}.category", folded=True),
    "implied_tags": _tag_names_of_slugs("implied_tags"),
    "implied_by_tags": _tag_names_of_slugs("implied_by_tags"),
    "aliases": _tag_names_of_slugs("aliases"),
    "aliased_tag": _text("mirror_unslug({t}.aliased_tag)", folded=True),
    "aliased": _bool("({t}.aliased_tag IS NOT NULL)"),
    "description": _text("{t}.description"),
    "short_description": _text("{t}.short_description"),
})

FILTERS = Index("filters", "filters", "f", FILTER_FIELDS, {
    "id": Scalar("{t}.id"),
    "spoilered_count": Scalar("coalesce(json_array_length({t}.spoilered_tag_ids), 0)"),
    "hidden_count": Scalar("coalesce(json_array_length({t}.hidden_tag_ids), 0)"),
    "user_id": Scalar("{t}.user_id"),
    "created_at": Unknown(),  # the filter record carries no date
    "description": _text("{t}.description"),
    "name": _text("{t}.name"),
    "creator": _text("(SELECT name FROM users WHERE id = {t}.user_id)"),
    "public": _bool("({t}.public OR {t}.system)"),
    "system": _bool("{t}.system"),
})

INDEXES = {index.name: index for index in (IMAGES, COMMENTS, POSTS, GALLERIES, TAGS, FILTERS)}

# Image search also knows the caller-dependent fields `my:` and `filter_id:` (reference section 6).
IMAGE_SEARCH_SPEC = replace(IMAGE_FIELDS, custom=IMAGE_FIELDS.custom | {"my", "filter_id"})
