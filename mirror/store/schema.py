"""The database schema, declared up front and changed only by migrations.

Tables are never inferred from the first batch: a column that happened to be NULL on the first
page would otherwise become TEXT forever. Each typed column carries the API's field name; the
record as the site sent it is kept whole in ``raw``. Later work adds tables with new migrations
appended to :data:`migrations`; an applied migration is never edited.
"""

from __future__ import annotations

from sqlite_utils import Database, Migrations

# How each API field of an image is stored. "json" columns hold lists and objects as JSON text;
# "url" and "url_map" columns hold site URLs made https (see mirror.urls.https_url).
IMAGE_FIELDS: dict[str, str] = {
    "id": "int",
    "created_at": "text",
    "updated_at": "text",
    "first_seen_at": "text",
    "width": "int",
    "height": "int",
    "aspect_ratio": "float",
    "mime_type": "text",
    "format": "text",
    "size": "int",
    "orig_size": "int",
    "duration": "float",
    "animated": "bool",
    "name": "text",
    "sha512_hash": "text",
    "orig_sha512_hash": "text",
    "tags": "json",
    "tag_ids": "json",
    "tag_count": "int",
    "uploader": "text",
    "uploader_id": "int",
    "score": "int",
    "upvotes": "int",
    "downvotes": "int",
    "faves": "int",
    "hides": "int",
    "wilson_score": "float",
    "comment_count": "int",
    "intensities": "json",
    "description": "text",
    "source_url": "text",
    "source_urls": "json",
    "view_url": "url",
    "representations": "url_map",
    "thumbnails_generated": "bool",
    "processed": "bool",
    "spoilered": "bool",
    "deletion_reason": "text",
    "duplicate_of": "int",
    "hidden_from_users": "bool",
}

# The keys of a hidden, deleted or merged image's stub (reference section 3).
IMAGE_STUB_FIELDS = ("id", "created_at", "updated_at", "first_seen_at", "duplicate_of", "deletion_reason",
                     "hidden_from_users")

SQL_TYPES = {"int": int, "float": float, "bool": int, "text": str, "json": str, "url": str, "url_map": str}

FTS_TOKENIZER = "porter unicode61 remove_diacritics 2"

migrations = Migrations("booru-mirror")


def apply_migrations(db: Database) -> None:
    """Bring ``db`` up to the newest schema; safe to call on every open."""
    migrations.apply(db)


@migrations(name="0001_images_tags_state")
def _images_tags_state(db: Database) -> None:
    columns = {name: SQL_TYPES[kind] for name, kind in IMAGE_FIELDS.items()}
    columns.update({"raw": str, "stub": str, "mirrored_at": str})
    db["images"].create(columns, pk="id", not_null={"raw", "mirrored_at"}, strict=True)
    db["tags"].create({"id": int, "name": str, "raw": str, "mirrored_at": str}, pk="id", strict=True)
    db.execute("""
        CREATE TABLE image_tags (
            image_id INTEGER NOT NULL REFERENCES images(id),
            tag_id INTEGER NOT NULL REFERENCES tags(id),
            PRIMARY KEY (image_id, tag_id)
        ) STRICT, WITHOUT ROWID""")
    db.execute("CREATE INDEX image_tags_by_tag ON image_tags (tag_id, image_id)")
    for column in ("updated_at", "created_at", "score", "uploader_id", "sha512_hash"):
        db["images"].create_index([column])
    db["tags"].create_index(["name"])
    _searchable(db, "images", ["description", "tags"])
    _searchable(db, "tags", ["name"])
    db["sync_state"].create({"name": str, "cursor": str, "updated_at": str}, pk="name", not_null={"cursor"},
                            strict=True)
    db["sync_runs"].create({
        "id": int, "resource": str, "started_at": str, "finished_at": str, "status": str,
        "requests": int, "fetched": int, "new": int, "updated": int, "hidden": int,
        "filter_id": int, "message": str,
    }, pk="id", strict=True)
    db["rejects"].create({
        "id": int, "resource": str, "record_key": str, "reason": str, "raw": str, "seen_at": str,
    }, pk="id", not_null={"resource", "reason", "raw", "seen_at"}, strict=True)


def _searchable(db: Database, table: str, columns: list[str]) -> None:
    """FTS5 over ``columns`` of ``table``, kept in step by triggers.

    The update trigger sqlite-utils generates re-indexes every updated row; ours only fires when
    an indexed column changed, so nightly re-syncs that touch scores do not rewrite the index.
    """
    db[table].enable_fts(columns, create_triggers=True, tokenize=FTS_TOKENIZER)
    fts = f"{table}_fts"
    changed = " OR ".join(f'old."{c}" IS NOT new."{c}"' for c in columns)
    cols = ", ".join(f'"{c}"' for c in columns)
    old = ", ".join(f'old."{c}"' for c in columns)
    new = ", ".join(f'new."{c}"' for c in columns)
    db.execute(f'DROP TRIGGER "{table}_au"')
    db.execute(f"""
        CREATE TRIGGER "{table}_au" AFTER UPDATE ON "{table}" WHEN {changed}
        BEGIN
          INSERT INTO "{fts}" ("{fts}", rowid, {cols}) VALUES ('delete', old.rowid, {old});
          INSERT INTO "{fts}" (rowid, {cols}) VALUES (new.rowid, {new});
        END""")
