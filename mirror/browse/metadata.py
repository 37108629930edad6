"""Datasette metadata for a mirror: labels, facets, sorts, canned queries, and the plugins' settings.

It depends on the config only for two things: the site's address (attribution links to each
image's page there) and the files folder (thumbnails come from the files the mirror keeps, served
by datasette-media, never from the site).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from ..store.history import tag_name_sql
from ..store.tag_changes import of_history_row

__all__ = ["metadata", "PLUGIN", "KEPT_THUMBNAIL", "KEPT_PICTURE", "kept_extension"]

PLUGIN = "booru-mirror"

# The thumbnail shown for an image: the smallest kept file that is one (`:key` is the image id).
KEPT_THUMBNAIL = """
SELECT {root} || '/' || path AS filepath FROM downloads
WHERE image_id = CAST(:key AS INTEGER) AND status = 'done' AND representation IN ('thumb', 'thumb_small', 'full')
ORDER BY CASE representation WHEN 'thumb' THEN 0 WHEN 'thumb_small' THEN 1 ELSE 2 END LIMIT 1
"""

# The kept file shown, the largest first; a GIF's video transcodes after its original.
PICTURE_ORDER = ("full", "svg", "webm", "mp4", "tall", "large", "medium", "small", "thumb", "thumb_small", "thumb_tiny")
KEPT_PICTURE = ("SELECT {root} || '/' || path AS filepath FROM downloads WHERE image_id = CAST(:key AS INTEGER) "
                "AND status = 'done' AND representation IN ('full', 'tall', 'large', 'medium', 'small', 'thumb', "
                "'thumb_small', 'thumb_tiny') ORDER BY CASE representation "
                + " ".join(f"WHEN '{name}' THEN {rank}" for rank, name in enumerate(PICTURE_ORDER)) + " END LIMIT 1")

def kept_extension(conn: sqlite3.Connection, image_id: int, sql: str = KEPT_THUMBNAIL) -> str | None:
    """The extension of the file ``sql`` (:data:`KEPT_THUMBNAIL` or :data:`KEPT_PICTURE`) shows for
    an image, the one the media route serves; None when no such file is kept."""
    kept = conn.execute(sql.format(root="''"), {"key": image_id}).fetchone()
    return kept[0].rpartition(".")[2] if kept else None


QUERIES: dict[str, dict[str, Any]] = {
    "top_artists": {
        "title": "Top artists",
        "description": "Artists by the number of mirrored images tagged with their artist tag.",
        "sql": "SELECT substr(t.name, 8) AS artist, t.name AS tag, count(*) AS images\n"
               "FROM image_tags it JOIN tags t ON t.id = it.tag_id\n"
               "WHERE t.name LIKE 'artist:%' GROUP BY t.id ORDER BY images DESC, artist LIMIT 200",
    },
    "tags_with_tag": {
        "title": "Tags that go with a tag",
        "description": "The tags most often found on the images that carry :tag.",
        "sql": "SELECT other.name AS tag, count(*) AS images_together\n"
               "FROM tags t JOIN image_tags it ON it.tag_id = t.id\n"
               "JOIN image_tags ot ON ot.image_id = it.image_id AND ot.tag_id != t.id\n"
               "JOIN tags other ON other.id = ot.tag_id\n"
               "WHERE t.name = :tag GROUP BY other.id ORDER BY images_together DESC LIMIT 100",
    },
    "last_sync": {
        "title": "Images stored by the last sync",
        "description": "Images written (new or changed) by the most recent images sync.",
        "sql": "SELECT id, artists, rating, source_url, thumb_url, description FROM image_details\n"
               "WHERE id IN (SELECT id FROM images WHERE mirrored_at >= (\n"
               "  SELECT max(started_at) FROM sync_runs WHERE resource = 'images'))\n"
               "ORDER BY id DESC LIMIT 500",
    },
    "gone_from_the_site": {
        "title": "Images gone from the site but kept here",
        "description": "Hidden, deleted and merged images, with the reason the site gives.",
        "sql": "SELECT i.id, i.deletion_reason, i.duplicate_of AS merged_into, d.artists, d.source_url, d.thumb_url\n"
               "FROM images i JOIN image_details d ON d.id = i.id WHERE i.hidden_from_users = 1 ORDER BY i.id DESC",
    },
    "forum_thread": {
        "title": "A forum thread, in order",
        "description": "Every kept post of one topic (:forum short name, :topic slug), oldest first.",
        "sql": "SELECT id, author, created_at, body, hidden_from_users FROM posts\n"
               "WHERE forum_short_name = :forum AND topic_slug = :topic ORDER BY created_at, id",
    },
    "gallery_in_order": {
        "title": "A gallery, in order",
        "description": "The images of gallery :gallery in the gallery's own order.",
        "sql": "SELECT gi.position, d.id, d.artists, d.rating, d.source_url, d.thumb_url\n"
               "FROM gallery_images gi JOIN image_details d ON d.id = gi.image_id\n"
               "WHERE gi.gallery_id = CAST(:gallery AS INTEGER) ORDER BY gi.position",
    },
    "recent_changes": {
        "title": "What changed lately",
        "description": "Every change the syncs saw since :since (e.g. 2026-11-01), newest first: edits with "
                       "their old and new values, tags added and removed, images deleted or merged, comments "
                       "hidden, galleries reordered. `mirror changes` says the same on the command line.",
        "sql": "SELECT h.seen_at, h.resource, h.record_key AS id, h.event, h.changes,\n"
               f"  (SELECT group_concat(c.change || coalesce({tag_name_sql('c')}, c.tag_id), ' ') FROM image_tag_changes c\n"
               f"   WHERE h.resource = 'images' AND {of_history_row()}) AS tags\n"
               "FROM history h WHERE h.seen_at >= :since AND h.event != 'first_seen'\n"
               "ORDER BY h.id DESC LIMIT 1000",
    },
    "image_history": {
        "title": "An image's history",
        "description": "Every version of image :image the syncs saw: its old descriptions, sources and tags, "
                       "when it was hidden, deleted or merged, and why.",
        # An image first seen by a run that filled an empty table has no first_seen row: its
        # sighting is that run's count (mirror.store.first_sightings), dated at the run's end.
        "sql": "SELECT seen_at, event, changes, tags FROM (\n"
               "SELECT h.id, h.seen_at, h.event, h.changes,\n"
               f"  (SELECT group_concat(c.change || coalesce({tag_name_sql('c')}, c.tag_id), ' ') FROM image_tag_changes c\n"
               f"   WHERE h.resource = 'images' AND {of_history_row()}) AS tags\n"
               "FROM history h WHERE h.resource = 'images' AND h.record_key = CAST(CAST(:image AS INTEGER) AS TEXT)\n"
               "UNION ALL SELECT 0, f.at, 'first_seen', NULL, NULL FROM (SELECT max(last_at) AS at\n"
               "  FROM history_first_seen WHERE resource = 'images' AND counted = 1) f WHERE f.at IS NOT NULL\n"
               "  AND EXISTS (SELECT 1 FROM images WHERE id = CAST(:image AS INTEGER))\n"
               "  AND NOT EXISTS (SELECT 1 FROM history WHERE resource = 'images'\n"
               "    AND record_key = CAST(CAST(:image AS INTEGER) AS TEXT) AND event = 'first_seen'))\n"
               "ORDER BY id DESC",
    },
    "lost_a_tag": {
        "title": "Images that lost a tag",
        "description": "The images the tag :tag was removed from, and when (its additions with + in front: "
                       "search +:tag to see who is adding it).",
        "sql": f"SELECT c.seen_at, c.image_id, c.change, {tag_name_sql('c')} AS tag_name FROM image_tag_changes c\n"
               f"WHERE {tag_name_sql('c')} = :tag ORDER BY c.seen_at DESC, c.history_id DESC LIMIT 1000",
    },
}

# Facets shown by default only on the small tables. On the large ones (images and their views,
# comments, posts, image_tags, downloads, history: a million rows and more) a facet is a GROUP BY
# over every row, 0.2-1 s each at a million images, and a page showed five: any column is still
# a click away there (its menu's "Facet by this"), within Datasette's facet time limit.
TABLES: dict[str, dict[str, Any]] = {
    "images": {
        "description_html": "Every mirrored image; its thumbnail, artists, source and page on the site show in the "
                            "representations cell (image_details shows them first). The search box here finds words; "
                            "<a href=\"/-/booru\">search with the site's syntax</a> for tags and fields. "
                            "Facet by any column from its menu.",
        "sort_desc": "id",
        "label_column": "id",
        "size": 25,
    },
    "image_details": {
        "description": "Each image in one row: thumbnail, artists, rating and source.",
        "sort_desc": "id",
        "size": 25,
    },
    "tags": {"sort_desc": "images", "facets": ["category", "namespace"], "label_column": "name"},
    "comments": {"sort_desc": "created_at"},
    "posts": {"sort_desc": "created_at"},
    "topics": {"sort_desc": "last_replied_to_at", "facets": ["forum_short_name"], "label_column": "title"},
    "galleries": {"sort_desc": "id", "facets": ["creator"], "label_column": "title"},
    "users": {"sort": "name", "facets": ["role"], "label_column": "name"},
    "forums": {"label_column": "name"},
    "filters": {"facets": ["system", "public"], "label_column": "name"},
    # Each row counts its tag's images (a million index entries for the commonest at a million images).
    "tag_usage": {"size": 25},
    "history": {"sort_desc": "id",
                "description": "Every change a sync saw: the fields that changed, with old and new values."},
    "image_tag_changes": {"sort_desc": "image_id",  # its key: newest images first, as the table is kept
                          "description": "Tags added to (+) and removed from (-) each image, by id and name."},
}


def metadata(database: str, base_url: str, files: str | Path) -> dict[str, Any]:
    """Datasette metadata for the mirror database named ``database`` (the file's stem)."""
    root = Path(files).absolute().as_posix().replace("'", "''")
    tables = {name: dict(options) for name, options in TABLES.items()}
    return {
        "title": f"booru mirror of {base_url}",
        "description": "An offline copy of an image board. Images show with their artists and source; "
                       "search them with the site's own syntax at /-/booru.",
        "databases": {database: {"tables": tables, "queries": QUERIES}},
        "plugins": {
            "datasette-media": {"thumbnail": {"sql": KEPT_THUMBNAIL.format(root=f"'{root}'"), "database": database},
                                "picture": {"sql": KEPT_PICTURE.format(root=f"'{root}'"), "database": database}},
            PLUGIN: {"site": base_url.rstrip("/"), "database": database},
        },
    }
