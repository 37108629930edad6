"""What each resource's table looks like: its API fields and their kinds, key, search, links.

One :class:`TableSpec` per resource drives both the migration that creates the table and the
writer that fills it, so a column can never be declared in one place and forgotten in the other.
Kinds: ``int``, ``float``, ``bool``, ``text``, ``json`` (lists and objects as JSON text), ``url``
and ``url_map`` (site URLs made https). Every table also gets ``raw`` (the record as last
received, whole), ``mirrored_at``, and, for resources the site can hide, ``stub`` and
``hidden_from_users``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

Record = Mapping[str, Any]


@dataclass(frozen=True)
class TableSpec:
    """How one resource is stored."""

    table: str
    fields: dict[str, str]
    pk: str | tuple[str, ...] = "id"
    # Columns the crawler supplies, not the record (e.g. the forum a post was crawled under).
    context: dict[str, str] = field(default_factory=dict)
    fts: tuple[str, ...] = ()
    # (column, other table, other column), declared so Datasette links the rows.
    foreign_keys: tuple[tuple[str, str, str], ...] = ()
    # Other names the same field has had in real responses, tried when the field is missing.
    aliases: dict[str, str] = field(default_factory=dict)
    # A record for which this is true is a stub: it marks the kept row and never wipes it.
    is_stub: Callable[[Record], bool] | None = None
    # The fields a stub carries over into the typed columns.
    stub_fields: tuple[str, ...] = ()
    indexes: tuple[str, ...] = ()

    @property
    def hideable(self) -> bool:
        return self.is_stub is not None

    @property
    def pk_columns(self) -> tuple[str, ...]:
        return (self.pk,) if isinstance(self.pk, str) else self.pk

    def columns(self) -> dict[str, str]:
        """Every typed column (API fields, then context), by kind."""
        return {**self.fields, **self.context}


def is_image_stub(record: Record) -> bool:
    """The cut-down record the site sends for hidden, deleted and merged images."""
    return record.get("hidden_from_users") is True and "tags" not in record


def is_hidden_message(record: Record) -> bool:
    """A hidden comment or post comes with ``body`` null; its image or topic hidden, all null."""
    return record.get("body") is None


IMAGES = TableSpec(
    table="images",
    fields={
        "id": "int", "created_at": "text", "updated_at": "text", "first_seen_at": "text",
        "width": "int", "height": "int", "aspect_ratio": "float", "mime_type": "text", "format": "text",
        "size": "int", "orig_size": "int", "duration": "float", "animated": "bool", "name": "text",
        "sha512_hash": "text", "orig_sha512_hash": "text", "tags": "json", "tag_ids": "json", "tag_count": "int",
        "uploader": "text", "uploader_id": "int", "score": "int", "upvotes": "int", "downvotes": "int",
        "faves": "int", "hides": "int", "wilson_score": "float", "comment_count": "int", "intensities": "json",
        "description": "text", "source_url": "text", "source_urls": "json", "view_url": "url",
        "representations": "url_map", "thumbnails_generated": "bool", "processed": "bool", "spoilered": "bool",
        "deletion_reason": "text", "duplicate_of": "int", "hidden_from_users": "bool",
    },
    fts=("description", "tags"),
    is_stub=is_image_stub,
    stub_fields=("id", "created_at", "updated_at", "first_seen_at", "duplicate_of", "deletion_reason",
                 "hidden_from_users"),
    indexes=("updated_at", "created_at", "score", "uploader_id", "sha512_hash"),
)

TAGS = TableSpec(
    table="tags",
    fields={
        "id": "int", "name": "text", "slug": "text", "description": "text", "short_description": "text",
        "images": "int", "spoiler_image_uri": "url", "namespace": "text", "name_in_namespace": "text",
        "category": "text", "aliased_tag": "text", "aliases": "json", "implied_tags": "json",
        "implied_by_tags": "json", "dnp_entries": "json",
    },
    fts=("name", "description", "short_description"),
    indexes=("name", "slug", "category"),
)

COMMENTS = TableSpec(
    table="comments",
    fields={
        "id": "int", "image_id": "int", "user_id": "int", "author": "text", "avatar": "url", "body": "text",
        "created_at": "text", "updated_at": "text", "edited_at": "text", "edit_reason": "text",
    },
    fts=("body",),
    foreign_keys=(("image_id", "images", "id"), ("user_id", "users", "id")),
    is_stub=is_hidden_message,
    stub_fields=("id", "image_id", "updated_at"),
    indexes=("image_id", "user_id", "updated_at", "created_at"),
)

FORUMS = TableSpec(
    table="forums",
    fields={"short_name": "text", "name": "text", "description": "text", "topic_count": "int", "post_count": "int"},
    pk="short_name",
)

TOPICS = TableSpec(
    table="topics",
    fields={
        "slug": "text", "title": "text", "post_count": "int", "view_count": "int", "sticky": "bool",
        "last_replied_to_at": "text", "locked": "bool", "user_id": "int", "author": "text",
    },
    pk=("forum_short_name", "slug"),
    context={"forum_short_name": "text"},
    fts=("title",),
    foreign_keys=(("forum_short_name", "forums", "short_name"), ("user_id", "users", "id")),
    indexes=("user_id", "last_replied_to_at"),
)

POSTS = TableSpec(
    table="posts",
    fields={
        "id": "int", "user_id": "int", "author": "text", "avatar": "url", "body": "text", "created_at": "text",
        "updated_at": "text", "edited_at": "text", "edit_reason": "text",
    },
    context={"forum_short_name": "text", "topic_slug": "text"},
    fts=("body",),
    foreign_keys=(("forum_short_name", "forums", "short_name"), ("user_id", "users", "id")),
    is_stub=is_hidden_message,
    stub_fields=("id", "updated_at"),
    indexes=("user_id", "created_at", "updated_at"),
)

GALLERIES = TableSpec(
    table="galleries",
    fields={
        "id": "int", "title": "text", "thumbnail_id": "int", "spoiler_warning": "text", "description": "text",
        "creator": "text", "creator_id": "int",
    },
    fts=("title", "description"),
    foreign_keys=(("thumbnail_id", "images", "id"), ("creator_id", "users", "id")),
    # Derpibooru answered with user/user_id in 2024 where the source names creator/creator_id.
    aliases={"creator": "user", "creator_id": "user_id"},
    indexes=("creator_id",),
)

USERS = TableSpec(
    table="users",
    fields={
        "id": "int", "name": "text", "slug": "text", "role": "text", "description": "text", "avatar_url": "url",
        "created_at": "text", "comments_count": "int", "uploads_count": "int", "posts_count": "int",
        "topics_count": "int", "links": "json", "awards": "json",
    },
    indexes=("name",),
)

FILTERS = TableSpec(
    table="filters",
    fields={
        "id": "int", "name": "text", "description": "text", "public": "bool", "system": "bool",
        "user_count": "int", "user_id": "int", "hidden_tag_ids": "json", "spoilered_tag_ids": "json",
        "hidden_complex": "text", "spoilered_complex": "text",
    },
    foreign_keys=(("user_id", "users", "id"),),
)

SPECS: dict[str, TableSpec] = {spec.table: spec for spec in
                               (IMAGES, TAGS, COMMENTS, FORUMS, TOPICS, POSTS, GALLERIES, USERS, FILTERS)}
