"""The database schema, declared up front and changed only by migrations.

Tables are never inferred from the first batch: a column that happened to be NULL on the first
page would otherwise become TEXT forever. Each typed column carries the API's field name; the
record as the site sent it is kept whole in ``raw``. Later work adds tables with new migrations
appended to :data:`migrations`; an applied migration is never edited.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from sqlite_utils import Database, Migrations

from ..philomena import RATINGS as PHILOMENA_RATINGS
from .downloads import COUNTING_INDEXES, DOWNLOADS_BY_STATUS
from .errors import StoreError
from .first_sightings import count_first_runs
from .originals import ORIGINAL_REPRESENTATION
from .raw_rebuilt import REBUILT
from .records import fingerprint
from .history import keep_only_renamed_tag_names
from .relayout import relayout
from .specs import COMMENTS, FILTERS, FORUMS, GALLERIES, IMAGES, POSTS, TAGS, TOPICS, USERS, TableSpec
from .statistics import refresh_statistics, substring_index
from .tag_changes import cluster

IMAGE_FIELDS = IMAGES.fields

SQL_TYPES = {"int": int, "float": float, "bool": int, "text": str, "json": str, "url": str, "url_map": str}

FTS_TOKENIZER = "porter unicode61 remove_diacritics 2"

migrations = Migrations("booru-mirror")


def apply_migrations(db: Database) -> None:
    """Bring ``db`` up to the newest schema; safe to call on every open."""
    migrations.apply(db)


@cache
def known_migrations() -> frozenset[str]:
    """The names of this version's migrations: all of them are pending on an empty database."""
    return frozenset(m.name for m in migrations.pending(Database(memory=True)))


def check_schema(db: Database, path: Path) -> None:
    """Refuse, before anything is written, a database this version does not understand.

    Migrating a database that a newer version has migrated further, or another program's
    database that ``store.database`` points at by mistake, could damage it; both are left as they are.
    """
    unknown = sorted({m.name for m in migrations.applied(db)} - known_migrations())
    if unknown:
        raise StoreError(f"the database {path} was made by a newer version of booru mirror (its schema has "
                         f"{', '.join(unknown)}, which this version does not know); it was left untouched. "
                         "Upgrade booru mirror, or point store.database at another file.")
    if not migrations.applied(db):
        foreign = [t for t in db.table_names() if not t.startswith("sqlite_") and t != migrations.migrations_table]
        if foreign:
            raise StoreError(f"the database {path} is not a mirror: it holds tables of another program "
                             f"({', '.join(foreign[:5])}{', ...' if len(foreign) > 5 else ''}) and no record of "
                             "the mirror's schema; it was left untouched. Point store.database at a new file.")


@migrations(name="0001_images_tags_state")
def _images_tags_state(db: Database) -> None:
    _create_table(db, IMAGES)
    db["tags"].create({"id": int, "name": str, "raw": str, "mirrored_at": str}, pk="id", strict=True)
    db.execute("""
        CREATE TABLE image_tags (
            image_id INTEGER NOT NULL REFERENCES images(id),
            tag_id INTEGER NOT NULL REFERENCES tags(id),
            PRIMARY KEY (image_id, tag_id)
        ) STRICT, WITHOUT ROWID""")
    db.execute("CREATE INDEX image_tags_by_tag ON image_tags (tag_id, image_id)")
    db["tags"].create_index(["name"])
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


def _create_table(db: Database, spec: TableSpec) -> None:
    """The table for ``spec``: typed columns, ``raw``, bookkeeping, keys, indexes and search."""
    columns = {name: SQL_TYPES[kind] for name, kind in spec.columns().items()}
    columns.update({"raw": str, "mirrored_at": str})
    if spec.hideable:
        columns.update({"stub": str, "hidden_from_users": int})
    db[spec.table].create(columns, pk=spec.pk, not_null={"raw", "mirrored_at", *spec.pk_columns},
                          foreign_keys=list(spec.foreign_keys), strict=True)
    for column in spec.indexes:
        db[spec.table].create_index([column])
    if spec.fts:
        _searchable(db, spec.table, list(spec.fts))


def _add_missing_columns(db: Database, spec: TableSpec) -> None:
    existing = set(db[spec.table].columns_dict)
    for name, kind in spec.columns().items():
        if name not in existing:
            db[spec.table].add_column(name, SQL_TYPES[kind])


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


@migrations(name="0002_downloads")
def _downloads(db: Database) -> None:
    """One row per (image, representation) the downloader has planned, kept or given up on.

    ``status`` is ``pending``, ``done`` (``path``, ``bytes``, ``sha512`` and ``downloaded_at`` say
    what is kept) or ``failed`` (``reason``). ``attempts`` counts requests spent on the file.
    """
    db["downloads"].create({
        "image_id": int, "representation": str, "status": str, "url": str, "path": str, "bytes": int,
        "sha512": str, "downloaded_at": str, "attempts": int, "reason": str, "updated_at": str,
    }, pk=("image_id", "representation"), not_null={"image_id", "representation", "status", "attempts",
                                                    "updated_at"},
        defaults={"attempts": 0}, strict=True)
    db["downloads"].create_index(["status"])


@migrations(name="0003_resources")
def _resources(db: Database) -> None:
    """Tables for everything else the read API offers, and views for people who write SQL."""
    _add_missing_columns(db, TAGS)
    for column in TAGS.indexes:
        db["tags"].create_index([column], if_not_exists=True)
    db["tags"].disable_fts()
    _searchable(db, "tags", list(TAGS.fts))
    for spec in (USERS, FORUMS, TOPICS, POSTS, COMMENTS, GALLERIES, FILTERS):  # referenced tables first
        _create_table(db, spec)
    db.execute("""
        CREATE TABLE gallery_images (
            gallery_id INTEGER NOT NULL REFERENCES galleries(id),
            image_id INTEGER NOT NULL REFERENCES images(id),
            position INTEGER NOT NULL,
            PRIMARY KEY (gallery_id, image_id)
        ) STRICT, WITHOUT ROWID""")
    db.execute("CREATE INDEX gallery_images_by_image ON gallery_images (image_id, gallery_id)")
    db["featured_images"].create({"day": str, "image_id": int, "seen_at": str}, pk="day",
                                 foreign_keys=[("image_id", "images", "id")], strict=True)
    for sql in VIEWS:
        db.execute(sql)


RATINGS = ", ".join(f"'{rating}'" for rating in PHILOMENA_RATINGS)  # the same text as when written

VIEWS = (
    f"""CREATE VIEW image_details AS
    SELECT images.id, images.created_at, images.score, images.faves,
      (SELECT group_concat(substr(value, 8), ', ') FROM json_each(images.tags) WHERE value LIKE 'artist:%') AS artists,
      (SELECT group_concat(value, ', ') FROM json_each(images.tags) WHERE value IN ({RATINGS})) AS rating,
      images.source_url, images.source_urls, images.view_url,
      json_extract(images.representations, '$.thumb') AS thumb_url,
      images.format, images.width, images.height, images.description, images.uploader,
      images.hidden_from_users, images.duplicate_of
    FROM images""",
    """CREATE VIEW tag_usage AS
    SELECT tags.id, tags.name, tags.category, tags.namespace, count(image_tags.image_id) AS mirrored_images,
      tags.images AS site_images
    FROM tags LEFT JOIN image_tags ON image_tags.tag_id = tags.id
    GROUP BY tags.id""",
    """CREATE VIEW posts_by_user AS
    SELECT 'comment' AS kind, comments.id, comments.user_id, comments.author, comments.created_at,
      comments.image_id, NULL AS forum_short_name, NULL AS topic_slug, comments.body
    FROM comments
    UNION ALL
    SELECT 'post', posts.id, posts.user_id, posts.author, posts.created_at, NULL, posts.forum_short_name,
      posts.topic_slug, posts.body
    FROM posts""",
    """CREATE VIEW tag_implications AS
    SELECT tags.id AS tag_id, tags.slug, implied.value AS implied_slug, target.id AS implied_tag_id
    FROM tags JOIN json_each(tags.implied_tags) AS implied LEFT JOIN tags AS target ON target.slug = implied.value""",
    """CREATE VIEW tag_aliases AS
    SELECT tags.id AS tag_id, tags.slug, alias.value AS alias_slug, source.id AS alias_tag_id
    FROM tags JOIN json_each(tags.aliases) AS alias LEFT JOIN tags AS source ON source.slug = alias.value""",
    """CREATE VIEW dnp_entries AS
    SELECT tags.id AS tag_id, tags.name AS tag_name, json_extract(entry.value, '$.id') AS id,
      json_extract(entry.value, '$.dnp_type') AS dnp_type, json_extract(entry.value, '$.conditions') AS conditions,
      json_extract(entry.value, '$.reason') AS reason, json_extract(entry.value, '$.created_at') AS created_at
    FROM tags JOIN json_each(tags.dnp_entries) AS entry""",
    """CREATE VIEW user_links AS
    SELECT users.id AS user_id, users.name, json_extract(link.value, '$.tag_id') AS tag_id,
      json_extract(link.value, '$.state') AS state, json_extract(link.value, '$.created_at') AS created_at
    FROM users JOIN json_each(users.links) AS link""",
    """CREATE VIEW user_awards AS
    SELECT users.id AS user_id, users.name, json_extract(award.value, '$.id') AS badge_id,
      json_extract(award.value, '$.title') AS title, json_extract(award.value, '$.label') AS label,
      json_extract(award.value, '$.image_url') AS image_url, json_extract(award.value, '$.awarded_on') AS awarded_on
    FROM users JOIN json_each(users.awards) AS award""",
)


@migrations(name="0004_topic_progress")
def _topic_progress(db: Database) -> None:
    """How far each forum topic's posts are mirrored (see :mod:`mirror.store.topic_progress`)."""
    db["topic_progress"].create({
        "forum_short_name": str, "slug": str, "post_count": int, "last_replied_to_at": str, "next_page": int,
        "updated_at": str,
    }, pk=("forum_short_name", "slug"), not_null={"forum_short_name", "slug", "updated_at"}, strict=True)


@migrations(name="0006_gone_users")
def _gone_users(db: Database) -> None:
    """Users whose profile the site answered 404 for (deleted accounts), and when it was asked.

    The profiles crawler asks again only after ``profiles.refresh_days``, not every night; a
    ``users`` row kept from before the account went stays as it was.
    """
    db["gone_users"].create({"id": int, "checked_at": str}, pk="id", not_null={"checked_at"}, strict=True)


@migrations(name="0007_image_follow_ups")
def _image_follow_ups(db: Database) -> None:
    """Progress of the crawlers that follow the mirrored images (see :mod:`mirror.store.follow_ups`).

    ``image_progress``: which images each of them (comments, galleries) has covered.
    ``gallery_only_images``: images stored only because a mirrored gallery holds them, so that
    they do not widen what counts as mirrored. ``gallery_walks``: each gallery's last walk of its
    images, and whether one is due.
    """
    db.execute("""
        CREATE TABLE image_progress (
            resource TEXT NOT NULL,
            image_id INTEGER NOT NULL,
            done_at TEXT NOT NULL,
            PRIMARY KEY (resource, image_id)
        ) STRICT, WITHOUT ROWID""")
    db["gallery_only_images"].create({"image_id": int, "mirrored_at": str}, pk="image_id",
                                     not_null={"mirrored_at"}, strict=True)
    db["gallery_walks"].create({"gallery_id": int, "due": int, "walked_at": str, "images": int}, pk="gallery_id",
                               not_null={"due"}, strict=True)
    db["gallery_walks"].create_index(["due", "gallery_id"])


@migrations(name="0008_gone_galleries")
def _gone_galleries(db: Database) -> None:
    """Galleries the site no longer has (deleted), and when a sync found them gone.

    Their ``galleries`` row and ``gallery_images`` order stay as last seen; a gallery that comes
    back loses its row here when it is next stored.
    """
    db["gone_galleries"].create({"id": int, "found_gone_at": str}, pk="id", not_null={"found_gone_at"},
                                foreign_keys=[("id", "galleries", "id")], strict=True)


@migrations(name="0009_tags_by_age")
def _tags_by_age(db: Database) -> None:
    """The tags crawler's rolling refresh reads tags oldest first and stops after a few: an index
    in that order lets it stop early instead of sorting every tag of the board each run."""
    db["tags"].create_index(["mirrored_at", "id"], index_name="tags_by_age")


@migrations(name="0010_downloads_original")
def _downloads_original(db: Database) -> None:
    """Which kept file is the image's original (``original = 1``, checked against the record's
    ``sha512_hash``): ``full`` for most images, the ``svg`` file for an SVG image, whose ``full``
    and sized files are PNG renderings (checked as well-formed files of their format)."""
    db["downloads"].add_column("original", int, not_null_default=0)
    db.execute(f"UPDATE downloads SET original = 1 WHERE EXISTS (SELECT 1 FROM images i "
               f"WHERE i.id = downloads.image_id AND {ORIGINAL_REPRESENTATION.format(name='downloads.representation')})")


@migrations(name="0011_rejects_once")
def _rejects_once(db: Database) -> None:
    """Each distinct reject is kept once (see :mod:`mirror.store.rejects`): the duplicates a looping
    walk wrote are removed, the first of each kept."""
    db["rejects"].add_column("fingerprint", str)
    rows = db.execute("SELECT id, resource, reason, raw FROM rejects").fetchall()
    db.conn.executemany("UPDATE rejects SET fingerprint = ? WHERE id = ?",
                        [(fingerprint(resource, reason, raw), row_id) for row_id, resource, reason, raw in rows])
    db.execute("DELETE FROM rejects WHERE id NOT IN (SELECT min(id) FROM rejects GROUP BY fingerprint)")
    db.execute("CREATE UNIQUE INDEX rejects_by_fingerprint ON rejects (fingerprint)")


@migrations(name="0012_image_details_picture_first")
def _image_details_picture_first(db: Database) -> None:
    """``image_details`` leads with the thumbnail, the artists and the source, so a browser shows
    the picture and its attribution first."""
    db.execute("DROP VIEW image_details")
    db.execute(f"""CREATE VIEW image_details AS
    SELECT json_extract(images.representations, '$.thumb') AS thumb_url, images.id,
      (SELECT group_concat(substr(value, 8), ', ') FROM json_each(images.tags) WHERE value LIKE 'artist:%') AS artists,
      images.source_url,
      (SELECT group_concat(value, ', ') FROM json_each(images.tags) WHERE value IN ({RATINGS})) AS rating,
      images.score, images.faves, images.created_at, images.format, images.width, images.height,
      images.description, images.uploader, images.source_urls, images.view_url,
      images.hidden_from_users, images.duplicate_of
    FROM images""")


@migrations(name="0013_image_intensities")
def _image_intensities(db: Database) -> None:
    """Corner intensities computed from each image's kept file, for reverse search offline.

    The aspect ratio is copied from the record so the search needs no join; ``computed_from``
    names the representation read. The index on the four intensities and the aspect ratio lets
    the ±3×distance box be found by a range scan of ``nw`` with the rest checked in the index.
    """
    db.execute("""
        CREATE TABLE image_intensities (
            image_id INTEGER PRIMARY KEY REFERENCES images(id),
            nw REAL NOT NULL, ne REAL NOT NULL, sw REAL NOT NULL, se REAL NOT NULL,
            aspect_ratio REAL NOT NULL,
            computed_from TEXT NOT NULL,
            computed_at TEXT NOT NULL
        ) STRICT""")
    db.execute("CREATE INDEX image_intensities_box ON image_intensities (nw, ne, sw, se, aspect_ratio, image_id)")


@migrations(name="0014_search_indexes")
def _search_indexes(db: Database) -> None:
    """Indexes for ``mirror serve``'s image searches on large mirrors.

    ``images_search`` holds, per image, everything a search's total and its page order need
    besides the query's own terms: whether the image is hidden, and the sort fields. A search
    finds its candidate ids through other indexes (a tag's links, a date range), and then never
    reads the image rows themselves (several KiB each, the record kept whole) except for the one
    page it returns. ``first_seen_at`` (the default order) and ``wilson_score`` are indexed like
    ``score`` already is, so a search matching most images reads them in order and stops after
    one page.
    """
    db.execute("CREATE INDEX images_search ON images (id, hidden_from_users, first_seen_at, score, wilson_score)")
    db["images"].create_index(["first_seen_at"])
    db["images"].create_index(["wilson_score"])
    refresh_statistics(db)


@migrations(name="0015_description_search")
def _description_search(db: Database) -> None:
    """A trigram index of image descriptions, for ``description:`` searches on large mirrors.

    The query language matches a description by case-insensitive substring (``description:agic``
    finds "magic"), which a word index (``images_fts``: words, stemmed) cannot answer. A trigram
    index can: it finds every description holding the phrase's letters in a row, and the exact
    test then runs on those few rows instead of on every image.
    """
    substring_index(db, "images", "description")


@migrations(name="0016_filters_by_name")
def _filters_by_name(db: Database) -> None:
    """Every anonymous API request looks up the system filter named ``Default``: by index, not by
    reading every filter (thousands on a large board)."""
    db["filters"].create_index(["name"])


@migrations(name="0017_descriptions_with_long_s")
def _descriptions_with_long_s(db: Database) -> None:
    """The few images whose description holds a long s ``ſ``, which the trigram index of
    descriptions folds to ``s`` (and ``str.lower`` does not): a search for a phrase with an ``s``
    tests exactly only those of the rows the index finds, without reading every description found."""
    db.execute("CREATE INDEX images_long_s ON images (id) WHERE instr(description, 'ſ') > 0")


@migrations(name="0018_hidden_images")
def _hidden_images(db: Database) -> None:
    """The ids of the images hidden from users, by a partial index: every search by ``mirror serve``
    leaves them out, and reading them off ``images_search`` meant reading an entry per image."""
    db.execute("CREATE INDEX images_hidden ON images (id, hidden_from_users) WHERE hidden_from_users")


@migrations(name="0020_history")
def _history(db: Database) -> None:
    """Every change a sync sees (:mod:`mirror.store.history`). A mirror made before starts its
    history with the next sync: what it kept is each record's first version from then on."""
    db.execute("""CREATE TABLE history (
        id INTEGER PRIMARY KEY,
        resource TEXT NOT NULL,
        record_key TEXT NOT NULL,
        run_id INTEGER,
        seen_at TEXT NOT NULL,
        event TEXT NOT NULL,
        changes TEXT)""")
    db.execute("CREATE INDEX history_by_time ON history (seen_at)")
    db.execute("CREATE INDEX history_by_record ON history (resource, record_key, id)")
    db.execute("CREATE INDEX history_by_event ON history (event, seen_at)")
    db.execute("""CREATE TABLE image_tag_changes (
        id INTEGER PRIMARY KEY,
        history_id INTEGER NOT NULL REFERENCES history (id),
        image_id INTEGER NOT NULL,
        tag_id INTEGER NOT NULL,
        tag_name TEXT,
        change TEXT NOT NULL CHECK (change IN ('+', '-')),
        seen_at TEXT NOT NULL,
        run_id INTEGER)""")
    db.execute("CREATE INDEX image_tag_changes_by_tag ON image_tag_changes (tag_id, seen_at)")
    db.execute("CREATE INDEX image_tag_changes_by_image ON image_tag_changes (image_id, seen_at)")
    db.execute("CREATE INDEX image_tag_changes_by_history ON image_tag_changes (history_id)")


@migrations(name="0021_intensities_as_the_site_computes_them")
def _intensities_as_the_site_computes_them(db: Database) -> None:
    """Reverse search compares the site's own intensities: every image record carries them (the
    site's program computed them), so they are taken from the records kept, and an archive with no
    files can be searched. Values read from files by the earlier rule (the reference's, which the
    program departs from for even sides) are dropped: `mirror verify` reads them again by the
    program's rule, for the images whose records carry none."""
    db.execute("DELETE FROM image_intensities")
    corners = " AND ".join(f"json_type(intensities, '$.{k}') IN ('integer', 'real')" for k in ("nw", "ne", "sw", "se"))
    db.execute(f"""INSERT INTO image_intensities (image_id, nw, ne, sw, se, aspect_ratio, computed_from, computed_at)
                   SELECT id, json_extract(intensities, '$.nw'), json_extract(intensities, '$.ne'),
                          json_extract(intensities, '$.sw'), json_extract(intensities, '$.se'),
                          coalesce(aspect_ratio, 0.0), 'record', strftime('%Y-%m-%dT%H:%M:%SZ', 'now')
                   FROM images WHERE json_valid(intensities) AND {corners}""")


@migrations(name="0022_image_hashes")
def _image_hashes(db: Database) -> None:
    """Perceptual hashes of each image's kept picture, for finding its copies (``mirror.imaging.similar``):
    one row per hash ``kind``, the 64 bits stored as a signed integer, and the representation read."""
    db.execute("""
        CREATE TABLE image_hashes (
            image_id INTEGER NOT NULL REFERENCES images(id),
            kind TEXT NOT NULL,
            value INTEGER NOT NULL,
            source_representation TEXT NOT NULL,
            computed_at TEXT NOT NULL,
            PRIMARY KEY (image_id, kind)
        ) STRICT""")


@migrations(name="0023_browsing_at_scale")
def _browsing_at_scale(db: Database) -> None:
    """``tag_usage`` counts each tag's images with a subquery instead of a GROUP BY over every
    image's tags: the same rows, but a page of the view counts only the tags it shows, and its row
    count is the number of tags (SQLite can flatten it); at a million images the GROUP BY took
    seconds. A thread's posts are read in order from an index, as `mirror browse` pages them."""
    db.execute("DROP VIEW tag_usage")
    db.execute("""CREATE VIEW tag_usage AS
    SELECT tags.id, tags.name, tags.category, tags.namespace,
      (SELECT count(*) FROM image_tags WHERE image_tags.tag_id = tags.id) AS mirrored_images,
      tags.images AS site_images
    FROM tags""")
    db.execute("CREATE INDEX posts_by_topic ON posts (forum_short_name, topic_slug, created_at, id)")


@migrations(name="0024_posts_by_user_counted_from_indexes")
def _posts_by_user_counted_from_indexes(db: Database) -> None:
    """``posts_by_user`` reads each comment's and post's body only for the rows it shows: the UNION
    carries what indexes hold, the body comes by id. SQLite 3.40 reads every column of a UNION view
    even to count its rows, so counting it read every comment and post whole (300 ms at a million
    images, on every page of the view in `mirror browse`); from the two covering indexes it takes a
    fifth of that. They lead with ``user_id``, so ``WHERE user_id = ?`` still reads one user's rows
    only, and replace the single-column indexes on it."""
    db.execute("DROP VIEW posts_by_user")
    db.execute("""CREATE VIEW posts_by_user AS
    SELECT u.kind, u.id, u.user_id, u.author, u.created_at, u.image_id, u.forum_short_name, u.topic_slug,
      CASE u.kind WHEN 'comment' THEN (SELECT body FROM comments WHERE comments.id = u.id)
                  ELSE (SELECT body FROM posts WHERE posts.id = u.id) END AS body
    FROM (SELECT 'comment' AS kind, id, user_id, author, created_at, image_id, NULL AS forum_short_name,
            NULL AS topic_slug FROM comments
          UNION ALL
          SELECT 'post', id, user_id, author, created_at, NULL, forum_short_name, topic_slug FROM posts) AS u""")
    db.execute("CREATE INDEX comments_by_user ON comments (user_id, created_at, author, image_id)")
    db.execute("CREATE INDEX posts_by_user_and_time ON posts (user_id, created_at, author, forum_short_name, topic_slug)")
    db.execute("DROP INDEX IF EXISTS idx_comments_user_id")
    db.execute("DROP INDEX IF EXISTS idx_posts_user_id")


@migrations(name="0025_what_only_the_dump_holds")
def _what_only_the_dump_holds(db: Database) -> None:
    """What the site's public dump holds and the API never gives (:mod:`mirror.store.dump_tables`):
    who faved what, duplicate reports, badges and their awards, artist links. The site's own tag
    and source changes go to ``history`` (events ``site_tags`` and ``site_source``, at the time the
    site made them), with their user in ``user_id``: a sync's rows leave it null."""
    db.execute("""CREATE TABLE image_faves (
        image_id INTEGER NOT NULL, user_id INTEGER NOT NULL, created_at TEXT,
        PRIMARY KEY (image_id, user_id)) STRICT, WITHOUT ROWID""")
    db.execute("CREATE INDEX image_faves_by_user ON image_faves (user_id, image_id)")
    db.execute("""CREATE TABLE duplicate_reports (
        id INTEGER PRIMARY KEY, image_id INTEGER, duplicate_of_image_id INTEGER, created_at TEXT,
        updated_at TEXT, user_id INTEGER, state TEXT, reason TEXT) STRICT""")
    db.execute("CREATE INDEX duplicate_reports_by_image ON duplicate_reports (image_id)")
    db.execute("CREATE TABLE badges (id INTEGER PRIMARY KEY, title TEXT, description TEXT, image_url TEXT) STRICT")
    db.execute("""CREATE TABLE badge_awards (
        id INTEGER PRIMARY KEY, user_id INTEGER, badge_id INTEGER REFERENCES badges (id), created_at TEXT,
        label TEXT) STRICT""")
    db.execute("CREATE INDEX badge_awards_by_user ON badge_awards (user_id)")
    db.execute("CREATE TABLE artist_links (id INTEGER PRIMARY KEY, user_id INTEGER, tag_id INTEGER, url TEXT) STRICT")
    db.execute("CREATE INDEX artist_links_by_user ON artist_links (user_id)")
    db.execute("CREATE INDEX artist_links_by_tag ON artist_links (tag_id)")
    db["history"].add_column("user_id", int)


@migrations(name="0026_history_by_resource_and_event")
def _history_by_resource_and_event(db: Database) -> None:
    """The newest changes of one kind of record and one event, by time, from an index range
    (:func:`mirror.store.history_read.changes_page`): `mirror browse`'s "what changed" page reads one
    range per resource and event it shows, and counts a first sync's records per resource, without
    walking past a million "first seen" rows to reach a night's deletions."""
    db.execute("CREATE INDEX history_by_resource_event ON history (resource, event, seen_at)")


@migrations(name="0026_downloads_verified_at")
def _downloads_verified_at(db: Database) -> None:
    """When ``mirror verify`` last re-hashed each kept file (null: not since it was downloaded), so a
    nightly ``verify --sample auto/N`` can take the slice checked longest ago and ``mirror status``
    can say how fresh the checks are."""
    db["downloads"].add_column("verified_at", str)


@migrations(name="0027_first_sightings_counted")
def _first_sightings_counted(db: Database) -> None:
    """The records first seen, counted per resource as the history is written (a trigger), so
    `mirror browse`'s "what changed" page sums up a first sync without counting a million rows on
    every view (170 ms per million here; the history is only ever added to)."""
    db.execute("""CREATE TABLE history_first_seen (
        resource TEXT PRIMARY KEY, count INTEGER NOT NULL, first_at TEXT NOT NULL, last_at TEXT NOT NULL)""")
    db.execute("""INSERT INTO history_first_seen (resource, count, first_at, last_at)
                  SELECT resource, count(*), min(seen_at), max(seen_at) FROM history WHERE event = 'first_seen'
                  GROUP BY resource""")
    db.execute("""CREATE TRIGGER history_first_seen_counted AFTER INSERT ON history WHEN NEW.event = 'first_seen'
                  BEGIN
                    INSERT INTO history_first_seen (resource, count, first_at, last_at)
                    VALUES (NEW.resource, 1, NEW.seen_at, NEW.seen_at)
                    ON CONFLICT (resource) DO UPDATE SET count = count + 1,
                      first_at = min(first_at, excluded.first_at), last_at = max(last_at, excluded.last_at);
                  END""")


@migrations(name="0028_fingerprint_views")
def _fingerprint_views(db: Database) -> None:
    """A fingerprint may have several views (``mirror.imaging.similar``: a picture with
    transparency is seen on black and on white), and each carries the version of the finder that
    computed it: the rows kept so far are version 1, one view each, and are computed again from
    the kept files by the next ``mirror download`` or ``mirror verify``."""
    db.execute("""
        CREATE TABLE image_hashes_new (
            image_id INTEGER NOT NULL REFERENCES images(id),
            view INTEGER NOT NULL,
            kind TEXT NOT NULL,
            value INTEGER NOT NULL,
            source_representation TEXT NOT NULL,
            computed_at TEXT NOT NULL,
            version INTEGER NOT NULL,
            PRIMARY KEY (image_id, view, kind)
        ) STRICT""")
    db.execute("""INSERT INTO image_hashes_new (image_id, view, kind, value, source_representation, computed_at, version)
                  SELECT image_id, 0, kind, value, source_representation, computed_at, 1 FROM image_hashes""")
    db.execute("DROP TABLE image_hashes")
    db.execute("ALTER TABLE image_hashes_new RENAME TO image_hashes")


@migrations(name="0029_image_sketches")
def _image_sketches(db: Database) -> None:
    """Each view of a fingerprint has a sketch (``mirror.imaging.sketch.sketch_of``: 16x16 colour
    pixels, 768 bytes), read only for the few pictures a search or a group finds near, to tell an
    edit from a copy. Fingerprints kept so far have none and are computed again (version 3)."""
    db.execute("""
        CREATE TABLE image_sketches (
            image_id INTEGER NOT NULL REFERENCES images(id),
            view INTEGER NOT NULL,
            sketch BLOB NOT NULL,
            PRIMARY KEY (image_id, view)
        ) STRICT""")


@migrations(name="0030_export_state")
def _export_state(db: Database) -> None:
    """What `mirror export` last wrote of each record (:mod:`mirror.store.export_state`): a 64-bit
    digest of the version exported, so a record read again unchanged is not exported again. The
    records written since the last export are found by ``mirrored_at`` through an index, not by
    reading every row of a million-image table each night."""
    db.execute("""CREATE TABLE export_digests (
        tbl TEXT NOT NULL, record_key TEXT NOT NULL, digest INTEGER NOT NULL,
        PRIMARY KEY (tbl, record_key)) STRICT, WITHOUT ROWID""")
    for table in ("images", "comments", "posts", "users", "galleries", "topics"):  # tags_by_age serves tags
        db.execute(f'CREATE INDEX "{table}_by_mirrored_at" ON "{table}" (mirrored_at)')


@migrations(name="0031_image_crops")
def _image_crops(db: Database) -> None:
    """The words of each view's crops (``mirror.imaging.similar.CROPS``: its middle 90% and 95% at
    each corner), one row a crop: a copy cropped as people crop is near one of them. Read whole
    with the hashes by a search; fingerprints kept so far have none and are computed again
    (version 6)."""
    db.execute("""
        CREATE TABLE image_crops (
            image_id INTEGER NOT NULL REFERENCES images(id),
            view INTEGER NOT NULL,
            crop INTEGER NOT NULL,
            phash INTEGER NOT NULL,
            red INTEGER NOT NULL,
            green INTEGER NOT NULL,
            blue INTEGER NOT NULL,
            hue INTEGER NOT NULL,
            PRIMARY KEY (image_id, view, crop)
        ) STRICT, WITHOUT ROWID""")


@migrations(name="0032_history_by_record_and_time")
def _history_by_record_and_time(db: Database) -> None:
    """One record's history by time (with its event, so a filter on it reads no row): a record as
    of a moment undoes only the changes after it, its TimeMap and its history page read a page
    at a time, and a record hammered by bots (300,000 versions) is one index range, not a scan.
    An image's tag changes by tag: its tags as of a moment are one seek per tag it ever had
    changed (:mod:`mirror.asof.records`), not a sort of every change since."""
    db.execute("CREATE INDEX history_by_record_time ON history (resource, record_key, seen_at, event)")
    db.execute("CREATE INDEX image_tag_changes_by_image_tag ON image_tag_changes (image_id, tag_id, seen_at, id)")


@migrations(name="0033_export_state_per_dest")
def _export_state_per_dest(db: Database) -> None:
    """The export's state kept per DEST (:mod:`mirror.store.export_state`): each DEST's cursor in
    ``export_dests``, and the digests of what was exported there, by the DEST's number. Kept for
    one DEST at a time, a one-off export to another folder forgot the nightly DEST's, which then
    refused every night after. What was kept moves to the DEST the last export went to."""
    db.execute("""CREATE TABLE export_dests (
        id INTEGER PRIMARY KEY, url TEXT NOT NULL UNIQUE, cursor TEXT NOT NULL) STRICT""")
    row = db.execute("SELECT cursor FROM sync_state WHERE name = 'export'").fetchone()
    dest = json.loads(row[0]).get("dest") if row else None
    if dest:
        db.execute("INSERT INTO export_dests (id, url, cursor) VALUES (1, ?, ?)", [dest, row[0]])
    db.execute("""CREATE TABLE export_digests_by_dest (
        dest INTEGER NOT NULL, tbl TEXT NOT NULL, record_key TEXT NOT NULL, digest INTEGER NOT NULL,
        PRIMARY KEY (dest, tbl, record_key)) STRICT, WITHOUT ROWID""")
    if dest:
        db.execute("INSERT INTO export_digests_by_dest SELECT 1, tbl, record_key, digest FROM export_digests")
    db.execute("DROP TABLE export_digests")
    db.execute("ALTER TABLE export_digests_by_dest RENAME TO export_digests")


@migrations(name="0034_raw_rebuilt_from_columns")
def _raw_rebuilt_from_columns(db: Database) -> None:
    """Images, comments and posts keep ``raw`` as a column SQLite rebuilds from the typed columns
    and a small patch, not as a second copy of the record (:mod:`.raw_rebuilt`): half of a whole
    board's bytes. Existing tables are copied into the new layout, a line printed every tenth of a
    large one (:mod:`.relayout`)."""
    for spec in REBUILT.values():
        relayout(db, spec)


@migrations(name="0035_indexes_that_earn_their_size")
def _indexes_that_earn_their_size(db: Database) -> None:
    """Three history indexes whose work others do since 0032, together some 10% of a whole board's
    archive and three B-trees written for every change an import brings: ``history_by_event``
    (every reader names the resource too: ``history_by_resource_event``), ``history_by_record``
    (a record's history is ``history_by_record_time``'s range, in the order of time the readers
    want) and ``image_tag_changes_by_image`` (an image's tag changes by time are
    ``image_tag_changes_by_image_tag``'s range for the image, sorted: a few dozen rows, 75,000 for
    the most edited image on Derpibooru)."""
    for index in ("history_by_event", "history_by_record", "image_tag_changes_by_image"):
        db.execute(f"DROP INDEX IF EXISTS {index}")


@migrations(name="0036_images_by_first_seen")
def _images_by_first_seen(db: Database) -> None:
    """The default order's index: ``first_seen_at``, else ``created_at`` for a record from the
    public dump, which lacks it (:data:`mirror.search.sort.FIRST_SEEN`), so that a search matching
    most images still reads them in order and stops after one page."""
    db.execute("CREATE INDEX images_by_first_seen ON images (coalesce(first_seen_at, created_at))")


@migrations(name="0037_deferred_upkeep")
def _deferred_upkeep(db: Database) -> None:
    """The indexes and full-text triggers a first import leaves to its end (:mod:`.upkeep`), each
    with the SQL that builds it again and, for a trigger, the full-text index to rebuild."""
    db.execute("""CREATE TABLE deferred_upkeep (
        name TEXT PRIMARY KEY, kind TEXT NOT NULL CHECK (kind IN ('index', 'trigger')), sql TEXT NOT NULL,
        rebuild TEXT)""")


@migrations(name="0038_absent_fields_as_a_mask")
def _absent_fields_as_a_mask(db: Database) -> None:
    """The fields a record lacks are said by a bit mask, ``raw_absent``, not by a ``"name":null``
    each in the patch (:mod:`.raw_rebuilt`): a record from the site's dump lacks a dozen, some 120
    bytes an image. A generated column's SQL changes only with its table: images, comments and
    posts are copied again (:mod:`.relayout`), each record read back as it was."""
    for spec in REBUILT.values():
        relayout(db, spec)


@migrations(name="0039_images_counted_from_indexes")
def _images_counted_from_indexes(db: Database) -> None:
    """Narrow partial indexes for the counts of ``mirror status`` (and the end of a sync, download
    or verify run): the files to download and the images waiting for thumbnails are counted from
    them instead of from every image row, some 2 kB each (:data:`.downloads.COUNTING_INDEXES`); the
    files kept or failed by status and name, and the originals kept, from the index that replaces
    the one on status alone."""
    for name, body in COUNTING_INDEXES.items():
        db.execute(f"CREATE INDEX {name} {body}")
    db.execute("DROP INDEX IF EXISTS idx_downloads_status")
    db.execute(f"CREATE INDEX {DOWNLOADS_BY_STATUS}")


@migrations(name="0040_tag_checkpoints")
def _tag_checkpoints(db: Database) -> None:
    """A tag's images at a few past moments (:mod:`.checkpoints`), each held as the difference to
    the next, so the board as of a moment undoes a bounded number of a tag's changes. Each must
    stay what undoing every later change from today gives; a write that changes that at one of a
    tag's checkpoints deletes all of the tag's (each is read through the later ones), in the
    write's transaction, and the next build places them again:

    - a tag change that disagrees with what follows it (the image's next change of the tag, else
      its tags today) changes the undoing at the moments from the image's previous change of the
      tag to it. A nightly change agrees (it is written before the image's tags are: the writers'
      order); an old change a dump's import brings may not;
    - an image's tag linked or unlinked with no change written for it (an image first seen long
      after its upload) changes it from the image's last change of the tag on, at the moments
      the image was uploaded by (an image uploaded later is outside any search as of then).

    Tag changes are written only with the events :data:`.checkpoints.TAG_EVENTS` names. Beside
    them, every image's upload time in order (``upload_order``), complete to the ``mirrored_at``
    it names: a search as of a moment reads it whole, and only the rows written since."""
    db.execute("""CREATE TABLE tag_checkpoints (
        tag_id INTEGER NOT NULL, moment TEXT NOT NULL, bits BLOB NOT NULL,
        PRIMARY KEY (tag_id, moment))""")
    db.execute("""CREATE TABLE upload_order (
        id INTEGER PRIMARY KEY CHECK (id = 1), mirrored_at TEXT NOT NULL, seconds BLOB NOT NULL, ids BLOB NOT NULL)""")
    # Each asks first whether the tag has a checkpoint at all: a first import writes its millions of
    # rows with no index on image_tag_changes (store.upkeep), where the rest would read the table.
    db.execute("""CREATE TRIGGER tag_change_undoes_checkpoints AFTER INSERT ON image_tag_changes
        WHEN EXISTS (SELECT 1 FROM tag_checkpoints WHERE tag_id = NEW.tag_id)
        BEGIN
            DELETE FROM tag_checkpoints WHERE tag_id = NEW.tag_id
            AND (NEW.change = '-') IS NOT coalesce(
                (SELECT c.change = '-' FROM image_tag_changes c WHERE c.image_id = NEW.image_id
                 AND c.tag_id = NEW.tag_id AND c.seen_at > NEW.seen_at ORDER BY c.seen_at, c.id LIMIT 1),
                EXISTS (SELECT 1 FROM image_tags WHERE image_id = NEW.image_id AND tag_id = NEW.tag_id))
            AND EXISTS (SELECT 1 FROM tag_checkpoints k WHERE k.tag_id = NEW.tag_id AND k.moment < NEW.seen_at
                        AND k.moment >= coalesce((SELECT max(c.seen_at) FROM image_tag_changes c
                                                  WHERE c.image_id = NEW.image_id AND c.tag_id = NEW.tag_id
                                                  AND c.seen_at <= NEW.seen_at AND c.id < NEW.id), ''));
        END""")
    for verb, row in (("INSERT", "NEW"), ("DELETE", "OLD")):
        db.execute(f"""CREATE TRIGGER image_tag_{verb.lower()}_undoes_checkpoints AFTER {verb} ON image_tags
            WHEN EXISTS (SELECT 1 FROM tag_checkpoints WHERE tag_id = {row}.tag_id)
            BEGIN
                DELETE FROM tag_checkpoints WHERE tag_id = {row}.tag_id
                AND EXISTS (SELECT 1 FROM tag_checkpoints k WHERE k.tag_id = {row}.tag_id
                            AND k.moment >= coalesce((SELECT max(c.seen_at) FROM image_tag_changes c
                                                      WHERE c.image_id = {row}.image_id AND c.tag_id = {row}.tag_id), '')
                            AND substr(k.moment, 1, 19) >= coalesce((SELECT substr(created_at, 1, 19) FROM images
                                                                     WHERE id = {row}.image_id), ''));
            END""")


@migrations(name="0041_first_sightings_counted")
def _first_sightings_counted(db: Database) -> None:
    """The first sightings of a run that filled an empty table kept as one count per resource, not a
    history row per record (:mod:`.first_sightings`): some 2.8 GB of a whole board's archive that
    said only "first seen then". ``history_first_seen`` is kept per run; each resource's first run
    whose rows were the table's every record has them deleted and counted, a line said every tenth
    of a large one."""
    count_first_runs(db)


@migrations(name="0042_hashes_as_bytes")
def _hashes_as_bytes(db: Database) -> None:
    """An image's SHA-512 hashes are kept as their 64 bytes, not 128 hexadecimal digits, and
    ``sha512_hash`` and ``orig_sha512_hash`` are columns SQLite writes out from them (:mod:`.derived`):
    some 0.7 GB of a whole board's 3.5 million images, the index on the hash (now on the bytes)
    included. The images are copied into the new layout, a line printed every tenth of the way
    (:mod:`.relayout`); where a first import left the index to its end (:mod:`.upkeep`), so is the new one."""
    deferred = db.execute("DELETE FROM deferred_upkeep WHERE name = 'idx_images_sha512_hash'").rowcount
    db.execute("DROP INDEX IF EXISTS idx_images_sha512_hash")  # on the text: made again, it would hold the digits
    relayout(db, REBUILT["images"])
    index = "CREATE INDEX images_by_sha512_hash ON images (sha512_hash_bytes)"
    if deferred:
        db.execute("INSERT INTO deferred_upkeep (name, kind, sql) VALUES ('images_by_sha512_hash', 'index', ?)", [index])
    else:
        db.execute(index)


@migrations(name="0044_tag_changes_name_renamed_tags_only")
def _tag_changes_name_renamed_tags_only(db: Database) -> None:
    """A tag change keeps its tag's name only where it is not the tag's name today, and no run of
    its own (its history row's says it): 0.4 GB of a whole board's 36 million changes. A name not
    known, NULL until now, becomes ``''``; a tag renamed, or deleted, writes its old name into its
    changes first (:func:`.history.tag_name_sql` reads the name)."""
    keep_only_renamed_tag_names(db)
    db.execute("ALTER TABLE image_tag_changes DROP COLUMN run_id")
    for verb in ("UPDATE OF name", "DELETE"):
        db.execute(f"""CREATE TRIGGER tag_{verb.split()[0].lower()}_names_its_changes AFTER {verb} ON tags
            WHEN {"OLD.name IS NOT NEW.name" if verb != "DELETE" else "1"}
            BEGIN
                UPDATE image_tag_changes SET tag_name = coalesce(OLD.name, '') WHERE tag_id = OLD.id AND tag_name IS NULL;
            END""")


@migrations(name="0045_tag_changes_clustered_by_image")
def _tag_changes_clustered_by_image(db: Database) -> None:
    """The tag changes kept in a table clustered by image, its own index by image, with no row id
    (:mod:`.tag_changes`): on a board of Derpibooru's shape it and its three indexes took 134 bytes
    a change for some 40 bytes of values, 4.95 GB of a whole board's 26.38 GB, past the 25 GB it
    must fit in. Measured on the 100,000-image board (vacuumed), the table and the one index left
    take 0.60 of what they did, 76 bytes a change: some 2 GB less at the whole board's 37 million
    (``docs/performance.md``). The indexes by image and tag and by history row go; a change is
    known by (image, history row, tag, change), which orders the changes of one moment as its
    number did.

    Every cursor that held a change's number holds its history row's instead: the checkpoints'
    (``after_history``) and each export's (:mod:`mirror.export.run`), as the newest history row of
    the changes up to the one it named (a history row's changes are written with it, in one
    transaction, so none is skipped or read twice).
    The changes are copied sorted by the new key, a tenth at a time, a line said after each: 1.9 s
    of CPU for the 100,000-image board's 1.05 million, at a whole board's 37 million about 70 s of
    CPU and a few minutes of wall (``docs/performance.md``)."""
    _tag_change_cursors_by_history(db)
    for index in ("image_tag_changes_by_image_tag", "image_tag_changes_by_history", "image_tag_changes_by_image"):
        db.execute("DELETE FROM deferred_upkeep WHERE name = ?", [index])
    trigger = db.execute("SELECT sql FROM sqlite_master WHERE type = 'trigger' "
                         "AND name = 'tag_change_undoes_checkpoints'").fetchone()[0]
    by_history = trigger.replace("ORDER BY c.seen_at, c.id LIMIT 1", "ORDER BY c.seen_at, c.history_id LIMIT 1")
    by_history = by_history.replace("AND c.id < NEW.id", "AND c.history_id < NEW.history_id")
    if "c.id" in by_history or by_history == trigger:
        raise StoreError("migration 0045: the trigger tag_change_undoes_checkpoints is not as migration 0040 made it")
    db.execute("DROP TRIGGER tag_change_undoes_checkpoints")
    cluster(db)
    db.execute(by_history)
    # A first import sorts its tag changes into the table at its end (store.upkeep): a third kind.
    db.execute("""CREATE TABLE deferred_upkeep_kinds (
        name TEXT PRIMARY KEY, kind TEXT NOT NULL CHECK (kind IN ('index', 'trigger', 'table')), sql TEXT NOT NULL,
        rebuild TEXT)""")
    db.execute("INSERT INTO deferred_upkeep_kinds SELECT name, kind, sql, rebuild FROM deferred_upkeep")
    db.execute("DROP TABLE deferred_upkeep")
    db.execute("ALTER TABLE deferred_upkeep_kinds RENAME TO deferred_upkeep")


def _tag_change_cursors_by_history(db: Database) -> None:
    """The checkpoints' and the exports' cursors past a tag change's number, as past its history row's."""
    # The newest history row among the changes up to it: each transaction writes history rows with all
    # their changes, and a cursor is read between two, so those rows' changes all lie within it.
    def history_of(change: int) -> int:
        return db.execute("SELECT coalesce(max(history_id), 0) FROM image_tag_changes WHERE id <= ?",
                          [change]).fetchone()[0]

    row = db.execute("SELECT cursor FROM sync_state WHERE name = 'tag_checkpoints'").fetchone()
    if row:
        cursor = json.loads(row[0])
        cursor["after_history"] = history_of(cursor.pop("after_change", 0))
        db.execute("UPDATE sync_state SET cursor = ? WHERE name = 'tag_checkpoints'", [json.dumps(cursor)])
    exports = [("export_dests", "url", url, text) for url, text in db.execute("SELECT url, cursor FROM export_dests")]
    exports += [("sync_state", "name", "export", text) for (text,) in
                db.execute("SELECT cursor FROM sync_state WHERE name = 'export'")]
    for table, column, key, text in exports:
        cursor = json.loads(text)
        pending = cursor.get("pending") or {}
        for ids in (cursor.get("ids"), pending.get("after"), pending.get("upto")):
            if isinstance(ids, dict) and "image_tag_changes" in ids:
                ids["image_tag_changes"] = history_of(ids["image_tag_changes"])
        db.execute(f"UPDATE {table} SET cursor = ? WHERE {column} = ?", [json.dumps(cursor), key])
