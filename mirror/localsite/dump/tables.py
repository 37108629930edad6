"""The tables of the site's public dumps, and the query that reads each one's rows from a board.

The layouts are those Derpibooru's data-dumps page lists: ``2026`` (the 25 tables the page's
list holds, though its text says 26) and ``2022`` (before Philomena batched tag changes: no
``images.description``, no ``tag_change_tags``, one ``tag_changes`` row per tag). Each table's
columns are written as the page writes them, a trailing ``?`` marking a nullable column; every
id is ``bigint`` and every string ``text``, as in the dump (a schema built for export, not the
site's own). Like the page, the tables have no keys or indexes: only ``NOT NULL``.

Each query reads the board (a database in the mirror's schema, plus the test site's ``site_*``
tables) and names its columns as the dump does; a layout selects the columns it has. Only what
the public can see is written, as the page promises: hidden and destroyed comments and posts,
hidden topics and the forums the API cannot reach (their topics and posts are not on the board's
served tables at all) are left out; hidden, deleted and merged images keep their full row, marked
by ``hidden_from_users`` and listed in ``image_hides`` or ``image_duplicates``. Forums, which the
API names by short name only, are numbered in short-name order. Timestamps are the records' UTC
ISO strings, which PostgreSQL reads as ``timestamp without time zone``; those the board does not
know (a recorded board's gallery dates, a forum with no topics) are ``UNKNOWN_TIME``.

What the API never shows is made up plainly: a topic's creation is its first post's, a forum's
its first topic's; a favourite is dated at the image's upload; badges have no description and
artist links no URL; each merged image has one accepted duplicate report, by no one, at its
merge; award and link ids are numbered in user order.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["LAYOUTS", "Column", "Table", "UNKNOWN_TIME"]

UNKNOWN_TIME = "1970-01-01T00:00:00Z"


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    nullable: bool

    @property
    def ddl(self) -> str:
        return f"{self.name} {self.type}{'' if self.nullable else ' NOT NULL'}"


@dataclass(frozen=True)
class Table:
    """A dump table: its columns in order, and the board query whose columns carry their names."""

    name: str
    columns: tuple[Column, ...]
    query: str

    @property
    def create(self) -> str:
        return f"CREATE TABLE public.{self.name} ({', '.join(c.ddl for c in self.columns)});"

    @property
    def select(self) -> str:
        """The board query, narrowed to this layout's columns in this layout's order."""
        return f"SELECT {', '.join(c.name for c in self.columns)} FROM ({self.query})"


def table(name: str, columns: str, query: str) -> Table:
    """A table from the page's notation: ``"id bigint, user_id bigint?, url text?"``."""
    parsed = []
    for column in columns.split(","):
        column_name, kind = column.split()
        parsed.append(Column(column_name, kind.rstrip("?"), kind.endswith("?")))
    return Table(name, tuple(parsed), query)


# Images whose record the board has in full (a recorded board may know a hidden one by its stub only).
_FULL_IMAGES = "FROM images WHERE raw ->> '$.width' IS NOT NULL"

_IMAGES = f"""
    SELECT id, raw ->> '$.created_at' AS created_at, raw ->> '$.updated_at' AS updated_at,
           raw ->> '$.width' AS image_width, raw ->> '$.height' AS image_height, raw ->> '$.size' AS image_size,
           raw ->> '$.comment_count' AS comment_count, raw ->> '$.score' AS score, raw ->> '$.faves' AS favorites,
           raw ->> '$.upvotes' AS upvotes, raw ->> '$.downvotes' AS downvotes, raw ->> '$.hides' AS hides,
           raw ->> '$.aspect_ratio' AS image_aspect_ratio, raw ->> '$.uploader_id' AS user_id,
           coalesce(hidden_from_users, 0) AS hidden_from_users, raw ->> '$.mime_type' AS image_mime_type,
           raw ->> '$.format' AS image_format, raw ->> '$.name' AS image_name,
           coalesce(url_path(raw ->> '$.view_url'), '') AS version_path,
           nullif(raw ->> '$.sha512_hash', '') AS image_sha512_hash,
           nullif(raw ->> '$.orig_sha512_hash', '') AS image_orig_sha512_hash, raw ->> '$.description' AS description
    {_FULL_IMAGES} ORDER BY id"""

# Each tag of each change, added ones first, as the 2022 layout lists them.
_CHANGED_TAGS = """
    SELECT c.id AS change_id, c.image_id, c.created_at, c.user_id, tag.value AS tag_id, 1 AS added, tag.key AS place
    FROM site_tag_changes c, json_each(c.added) tag
    UNION ALL
    SELECT c.id, c.image_id, c.created_at, c.user_id, tag.value, 0, tag.key
    FROM site_tag_changes c, json_each(c.removed) tag"""

# Forums by short name, numbered; their first and last post times, from their topics.
_FORUM_IDS = "SELECT short_name, row_number() OVER (ORDER BY short_name) AS id FROM forums"
_TOPIC_TIMES = """
    SELECT s.topic_id, min(p.created_at) AS first_post_at
    FROM site_post_positions s JOIN posts p ON p.id = s.post_id GROUP BY s.topic_id"""
_TOPICS = f"""
    SELECT s.id, f.id AS forum_id, t.post_count, t.view_count,
           coalesce(times.first_post_at, t.last_replied_to_at, '{UNKNOWN_TIME}') AS created_at,
           coalesce(t.last_replied_to_at, times.first_post_at, '{UNKNOWN_TIME}') AS updated_at,
           coalesce(t.sticky, 0) AS sticky, coalesce(t.locked, 0) AS locked, t.title, t.slug,
           t.forum_short_name
    FROM site_topics s
    JOIN topics t ON t.forum_short_name = s.forum AND t.slug = s.slug
    JOIN ({_FORUM_IDS}) f ON f.short_name = t.forum_short_name
    LEFT JOIN ({_TOPIC_TIMES}) times ON times.topic_id = s.id
    WHERE coalesce(s.hidden, 0) = 0"""

_MESSAGE = ("raw ->> '$.created_at' AS created_at, raw ->> '$.updated_at' AS updated_at, "
            "raw ->> '$.user_id' AS user_id, coalesce(raw ->> '$.body', '') AS body")
_VISIBLE = "coalesce(hidden_from_users, 0) = 0"
# Every account the site has, deleted profiles included: their uploads and comments still name
# them (the board keeps a deleted account's name only in those records).
_USERS = """SELECT id, name FROM (SELECT id, name, min(rank) FROM (
    SELECT id, name, 0 AS rank FROM users
    UNION ALL SELECT uploader_id, uploader, 1 FROM images WHERE uploader_id IS NOT NULL AND uploader IS NOT NULL
    UNION ALL SELECT user_id, author, 1 FROM comments WHERE user_id IS NOT NULL AND author IS NOT NULL
    UNION ALL SELECT user_id, author, 1 FROM posts WHERE user_id IS NOT NULL AND author IS NOT NULL
  ) GROUP BY id) ORDER BY id"""

_COMMON = [
    table("artist_links", "id bigint, user_id bigint, tag_id bigint?, url text?", """
        SELECT row_number() OVER (ORDER BY u.id, link.key) AS id, u.id AS user_id,
               link.value ->> '$.tag_id' AS tag_id, link.value ->> '$.url' AS url
        FROM users u, json_each(u.links) link"""),
    table("badge_awards", "id bigint, user_id bigint, badge_id bigint, created_at timestamp, label text?", f"""
        SELECT row_number() OVER (ORDER BY u.id, award.key) AS id, u.id AS user_id,
               award.value ->> '$.id' AS badge_id,
               coalesce(award.value ->> '$.awarded_on', '{UNKNOWN_TIME}') AS created_at,
               award.value ->> '$.label' AS label
        FROM users u, json_each(u.awards) award"""),
    table("badges", "id bigint, title text, description text, image_url text", """
        SELECT award.value ->> '$.id' AS id, min(award.value ->> '$.title') AS title, '' AS description,
               coalesce(min(award.value ->> '$.image_url'), '') AS image_url
        FROM users u, json_each(u.awards) award GROUP BY award.value ->> '$.id' ORDER BY 1"""),
    table("comments", "id bigint, image_id bigint, created_at timestamp, updated_at timestamp, user_id bigint?, "
          "body text", f"SELECT id, image_id, {_MESSAGE} FROM comments WHERE {_VISIBLE} ORDER BY id"),
    table("duplicate_reports", "id bigint, image_id bigint, duplicate_of_image_id bigint, created_at timestamp, "
          "updated_at timestamp, user_id bigint?, state text, reason text?", """
        SELECT row_number() OVER (ORDER BY id) AS id, id AS image_id, duplicate_of AS duplicate_of_image_id,
               updated_at AS created_at, updated_at, NULL AS user_id, 'accepted' AS state, NULL AS reason
        FROM images WHERE hidden_from_users = 1 AND duplicate_of IS NOT NULL"""),
    table("forums", "id bigint, topic_count bigint, post_count bigint, created_at timestamp, updated_at timestamp, "
          "name text, short_name text, description text", f"""
        SELECT f.id, coalesce(forums.topic_count, 0) AS topic_count, coalesce(forums.post_count, 0) AS post_count,
               coalesce(min(t.created_at), '{UNKNOWN_TIME}') AS created_at,
               coalesce(max(t.updated_at), '{UNKNOWN_TIME}') AS updated_at,
               coalesce(forums.name, '') AS name, forums.short_name, coalesce(forums.description, '') AS description
        FROM forums JOIN ({_FORUM_IDS}) f ON f.short_name = forums.short_name
        LEFT JOIN ({_TOPICS}) t ON t.forum_short_name = forums.short_name
        GROUP BY forums.short_name ORDER BY f.id"""),
    table("galleries", "id bigint, thumbnail_id bigint, user_id bigint, image_count bigint, created_at timestamp, "
          "updated_at timestamp, title text, spoiler_warning text, description text", f"""
        SELECT g.id, g.thumbnail_id, g.raw ->> '$.user_id' AS user_id,
               (SELECT count(*) FROM gallery_images m WHERE m.gallery_id = g.id) AS image_count,
               coalesce(d.created_at, '{UNKNOWN_TIME}') AS created_at,
               coalesce(d.updated_at, d.created_at, '{UNKNOWN_TIME}') AS updated_at,
               coalesce(g.title, '') AS title, coalesce(g.spoiler_warning, '') AS spoiler_warning,
               coalesce(g.description, '') AS description
        FROM galleries g LEFT JOIN site_gallery_dates d ON d.gallery_id = g.id
        WHERE g.thumbnail_id IS NOT NULL AND g.raw ->> '$.user_id' IS NOT NULL ORDER BY g.id"""),
    table("gallery_interactions", "image_id bigint, gallery_id bigint, position integer", """
        SELECT m.image_id, m.gallery_id, m.position FROM gallery_images m JOIN galleries g ON g.id = m.gallery_id
        WHERE g.thumbnail_id IS NOT NULL AND g.raw ->> '$.user_id' IS NOT NULL ORDER BY m.gallery_id, m.position"""),
    table("image_duplicates", "image_id bigint, target_id bigint", """
        SELECT id AS image_id, duplicate_of AS target_id FROM images
        WHERE hidden_from_users = 1 AND duplicate_of IS NOT NULL ORDER BY id"""),
    table("image_faves", "created_at timestamp, image_id bigint, user_id bigint", """
        SELECT i.created_at, s.image_id, s.user_id FROM site_interactions s JOIN images i ON i.id = s.image_id
        WHERE s.interaction_type = 'faved' ORDER BY s.image_id, s.user_id"""),
    table("image_features", "image_id bigint, created_at timestamp",
          "SELECT image_id, seen_at AS created_at FROM featured_images ORDER BY day"),
    table("image_hides", "image_id bigint, reason text", """
        SELECT id AS image_id, coalesce(deletion_reason, '') AS reason FROM images
        WHERE hidden_from_users = 1 AND duplicate_of IS NULL ORDER BY id"""),
    table("image_intensities", "image_id bigint, nw_intensity float, ne_intensity float, sw_intensity float, "
          "se_intensity float", f"""
        SELECT id AS image_id, raw ->> '$.intensities.nw' AS nw_intensity, raw ->> '$.intensities.ne' AS ne_intensity,
               raw ->> '$.intensities.sw' AS sw_intensity, raw ->> '$.intensities.se' AS se_intensity
        {_FULL_IMAGES} AND raw ->> '$.intensities.nw' IS NOT NULL ORDER BY id"""),
    table("image_sources", "image_id bigint, source text", """
        SELECT i.id AS image_id, source.value AS source FROM images i, json_each(i.raw, '$.source_urls') source
        ORDER BY i.id, source.key"""),
    table("image_taggings", "image_id bigint, tag_id bigint", """
        SELECT i.id AS image_id, tag.value AS tag_id FROM images i, json_each(i.raw, '$.tag_ids') tag
        ORDER BY i.id, tag.key"""),
    table("posts", "id bigint, topic_id bigint, created_at timestamp, updated_at timestamp, user_id bigint?, "
          "body text", f"""
        SELECT p.id, s.topic_id, {_MESSAGE} FROM posts p JOIN site_post_positions s ON s.post_id = p.id
        WHERE {_VISIBLE} ORDER BY p.id"""),
    table("source_changes", "id bigint, image_id bigint, created_at timestamp, updated_at timestamp, "
          "user_id bigint?, new_value text", """
        SELECT id, image_id, created_at, created_at AS updated_at, user_id, new_value FROM site_source_changes
        ORDER BY id"""),
    table("tag_aliases", "tag_id bigint, target_tag_id bigint", """
        SELECT t.id AS tag_id, target.id AS target_tag_id FROM tags t JOIN tags target ON target.slug = t.aliased_tag
        ORDER BY t.id"""),
    table("tag_implications", "tag_id bigint, target_tag_id bigint", """
        SELECT t.id AS tag_id, target.id AS target_tag_id
        FROM tags t, json_each(t.implied_tags) implied JOIN tags target ON target.slug = implied.value
        ORDER BY t.id, implied.key"""),
    table("tags", "id bigint, image_count bigint, name text, slug text, category text?, description text?, "
          "short_description text?", """
        SELECT id, coalesce(images, 0) AS image_count, name, slug, category, description, short_description
        FROM tags WHERE raw IS NOT NULL ORDER BY id"""),
    table("topics", "id bigint, forum_id bigint, post_count bigint, view_count bigint, created_at timestamp, "
          "updated_at timestamp, sticky boolean, locked boolean, title text, slug text",
          f"SELECT * FROM ({_TOPICS}) ORDER BY id"),
    table("users", "id bigint, name text", _USERS),
]

_IMAGE_COLUMNS = ("id bigint, created_at timestamp, updated_at timestamp, image_width integer, image_height integer, "
                  "image_size integer, comment_count integer, score integer, favorites integer, upvotes integer, "
                  "downvotes integer, hides integer, image_aspect_ratio float, user_id bigint?, "
                  "hidden_from_users boolean, image_mime_type text, image_format text, image_name text, "
                  "version_path text, image_sha512_hash text?, image_orig_sha512_hash text?")

_LAYOUT_2026 = [
    table("images", _IMAGE_COLUMNS + ", description text?", _IMAGES),
    table("tag_change_tags", "tag_change_id bigint, tag_id bigint, added boolean", f"""
        SELECT change_id AS tag_change_id, tag_id, added FROM ({_CHANGED_TAGS})
        ORDER BY change_id, added DESC, place"""),
    table("tag_changes", "id bigint, image_id bigint, created_at timestamp, user_id bigint?",
          "SELECT id, image_id, created_at, user_id FROM site_tag_changes ORDER BY id"),
]

_LAYOUT_2022 = [
    table("images", _IMAGE_COLUMNS, _IMAGES),
    table("tag_changes", "id bigint, image_id bigint, created_at timestamp, updated_at timestamp, user_id bigint?, "
          "tag_id bigint, added boolean, tag_name_cache text", f"""
        SELECT row_number() OVER (ORDER BY c.change_id, c.added DESC, c.place) AS id, c.image_id, c.created_at,
               c.created_at AS updated_at, c.user_id, c.tag_id, c.added, coalesce(t.name, '') AS tag_name_cache
        FROM ({_CHANGED_TAGS}) c LEFT JOIN tags t ON t.id = c.tag_id ORDER BY id"""),
]

LAYOUTS: dict[str, tuple[Table, ...]] = {
    layout: tuple(sorted(_COMMON + own, key=lambda t: t.name))
    for layout, own in (("2026", _LAYOUT_2026), ("2022", _LAYOUT_2022))
}
