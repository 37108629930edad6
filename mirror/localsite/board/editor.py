"""The local site's board, changed in place: the edits tests, the control API and uploads make.

A board is a database in the mirror's schema (made by :mod:`.generate`, or loaded from recorded
responses by :mod:`.fixtures`) that the API answers from directly. Each edit reads the records
it changes from that database, changes them as the real site would, and writes them back
through the store's writers (:mod:`.board_rows`), in one transaction: there is no second copy
of the board to drift from what is served, and a board of any size is changed as cheaply as a
small one. What depends on the changed records moves with them: tags' image counts, an image's
comment count, a topic's and its forum's post counts.

Reads for tests (``editor.images[5]``, ``editor.comments.values()``) are views over the same
tables: the record as served (in full, for hidden ones) with its hidden state.
"""

from __future__ import annotations

import functools
import json
import random
import shutil
import sqlite3
import tempfile
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import Any

from ...dates import parse_utc, utc_now, utc_text
from ...search.slugs import slug
from ...store import ImageWriter, open_database
from ...store.database import MirrorDatabase
from ...store.specs import COMMENTS, FILTERS, FORUMS, POSTS, TAGS, USERS, TableSpec
from ...workers import worker_pool
from ..files.img import FileSource, file_key, finish_image_file
from .builders import (
    make_comment,
    make_filter,
    make_post,
    make_topic_record,
    new_image,
    set_image_tags,
    tag_groups,
)
from .generate import BoardSizes, generate_board
from .records import background_pony, slug_of_title
from .render import render_filter, render_tag, render_user
from .rows import (
    FILE_ROOT,
    SITE_TABLES,
    URLS,
    create_site_tables,
    save,
    save_features,
    save_galleries,
    save_history,
    save_images,
    save_messages,
    save_topic,
)
from .vocabulary import Vocabulary

__all__ = ["BoardEditor"]

Record = dict[str, Any]


class BoardEditor:
    """A board database and the edits the site makes to it, safe to call from any thread."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        open_database(self.path).close()  # brought up to this version's schema
        # Autocommit: every edit commits in its own explicit transaction, and nothing else stays open.
        self.db = MirrorDatabase(sqlite3.connect(self.path, check_same_thread=False, isolation_level=None))
        self.db.execute("PRAGMA busy_timeout=30000")
        create_site_tables(self.db)
        self.lock = threading.RLock()
        settings = dict(self.db.execute("SELECT key, value FROM site_board").fetchall())
        self.seed = int(settings.get("seed", 0))
        self.pictures = settings.get("pictures") == "1"
        self.recorded = settings.get("recorded") == "1"  # served exactly as recorded, file URLs included
        self.clock: Callable[[], datetime] = utc_now
        # Uploads (mirror/localsite/http/uploads.py): the seconds before the site has "processed" one
        # (thumbnails_generated turns true), and the tags the site forbids.
        self.processing_delay = 0.5
        self.tag_blacklist: tuple[str, ...] = ()
        # Told of each edit the site announces on its firehose, after it commits: (event, facts),
        # facts naming the records by id (mirror/localsite/http/firehose.py makes the payloads).
        self.listeners: list[Callable[[str, Record], None]] = []
        self._removal: weakref.finalize | None = None

    @classmethod
    def generate(cls, seed: int = 1, images: int = 200, *, with_pictures: bool = False,
                 folder: str | Path | None = None, apart: bool = False) -> BoardEditor:
        """A new generated board of ``images`` images (see :func:`.generate.generate_board`).

        ``apart`` generates it in a process of its own, so that what generating holds (a large
        page cache, the vocabulary) is not kept by a server that then runs for hours.
        """
        def make(path: Path) -> None:
            write = functools.partial(generate_board, path, images, seed=seed, sizes=BoardSizes(images),
                                      pictures=with_pictures)
            if apart:
                with worker_pool(1) as pool:
                    pool.submit(write).result()
            else:
                write()

        return cls._made(folder, f"board-{seed}-{images}.db", make)

    @classmethod
    def for_site(cls, seed: int = 1, images: int = 500, *, fixtures: str | Path | None = None,
                 pictures: bool = True) -> BoardEditor:
        """The board ``mirror site`` serves and ``mirror site --dump`` writes, made once here so
        that a dump states the sizes, hashes and intensities of the very files the site serves:
        the recorded responses in ``fixtures``, else a generated board whose files are pictures
        (``mirror site --stand-ins``: a few bytes each, unless ``pictures``)."""
        if fixtures:
            return cls.from_fixtures(fixtures)
        return cls.generate(seed=seed, images=images, apart=True, with_pictures=pictures)

    @classmethod
    def from_fixtures(cls, path: str | Path, folder: str | Path | None = None) -> BoardEditor:
        """A board of every recorded response under ``path``, served unchanged."""
        from .fixtures import load_fixtures

        return cls._made(folder, "recorded.db", lambda board: load_fixtures(board, Path(path)))

    @classmethod
    def _made(cls, folder: str | Path | None, name: str, make: Callable[[Path], None]) -> BoardEditor:
        """The board ``make`` writes as ``name`` in ``folder``; with no folder, in a temporary one
        that goes with the editor (:meth:`close`, or when it is collected or Python exits), so
        that test runs and demos do not leave a board behind each."""
        temporary = None if folder else Path(tempfile.mkdtemp(prefix="mirror-site-"))
        path = Path(folder or temporary) / name
        try:
            make(path)
            editor = cls(path)
        except BaseException:
            if temporary:
                shutil.rmtree(temporary, ignore_errors=True)
            raise
        if temporary:
            editor._removal = weakref.finalize(editor, _remove_board, editor.db.conn, temporary)
        return editor

    def close(self) -> None:
        """Close the board's database, and remove it if it was made in a temporary folder."""
        self.db.conn.close()
        if self._removal is not None:
            self._removal()

    # ------------------------------------------------------------------ reading

    def rows(self, sql: str, params: Iterable[Any] = ()) -> list[Record]:
        with self.lock:
            cursor = self.db.conn.execute(sql, tuple(params))
            names = [d[0] for d in cursor.description]
            return [dict(zip(names, row)) for row in cursor.fetchall()]

    def value(self, sql: str, params: Iterable[Any] = ()) -> Any:
        found = self.rows(sql, params)
        return next(iter(found[0].values())) if found else None

    def now(self) -> str:
        return utc_text(self.clock())

    @staticmethod
    def date(value: str) -> datetime:
        return parse_utc(value)

    def _next_id(self, *columns: str) -> int:
        """One above the largest id in any of ``columns`` (``table`` for its ``id``, or ``table.column``)."""
        sources = [c.partition(".") for c in columns]
        return max(self.value(f"SELECT max({column or 'id'}) FROM {table}") or 0 for table, _, column in sources) + 1

    @cached_property
    def vocab(self) -> Vocabulary:
        return Vocabulary.from_rows(self.rows(
            "SELECT id, name, slug, category, aliased_tag, implied_tags FROM tags ORDER BY id"))

    def user_name(self, user_id: int | None) -> str | None:
        return self.value("SELECT name FROM users WHERE id = ?", [user_id]) if user_id is not None else None

    def link_targets(self) -> Sequence[int]:
        return [row["id"] for row in self.rows("SELECT id FROM images ORDER BY id DESC LIMIT 50")][::-1]

    def _people(self) -> dict[int, Record]:
        """What renders need of the accounts: names, and avatars (as paths below /avatars/)."""
        return {row["id"]: {"name": row["name"], "avatar": (row["avatar_url"] or "").partition("/avatars/")[2] or None}
                for row in self.rows("SELECT id, name, avatar_url FROM users")}

    @property
    def default_filter_id(self) -> int | None:
        """Id of the system filter named exactly "Default" (the anonymous filter), if any."""
        return self.value("SELECT id FROM filters WHERE system = 1 AND name = 'Default' ORDER BY id")

    @property
    def everything_filter_id(self) -> int | None:
        return self.value("SELECT id FROM filters WHERE system = 1 AND name = 'Everything' ORDER BY id")

    @property
    def api_keys(self) -> dict[str, int]:
        return {row["key"]: row["user_id"] for row in self.rows("SELECT key, user_id FROM site_keys")}

    @property
    def interactions(self) -> list[Record]:
        return self.rows("SELECT image_id, user_id, interaction_type, value FROM site_interactions ORDER BY rowid")

    @property
    def features(self) -> list[Record]:
        return self.rows("SELECT image_id, seen_at AS created_at FROM featured_images ORDER BY day")

    def tag_by_name(self, name: str) -> Record | None:
        return self.tags.get(self.value("SELECT id FROM tags WHERE name = ?", [name]))

    # Views: each resource as tests see it, the served record (in full) with its hidden state.

    @cached_property
    def images(self) -> Rows:
        return Rows(self, "SELECT id FROM images WHERE raw IS NOT NULL ORDER BY id", self._image)

    def _image(self, image_id: int) -> Record | None:
        found = self.rows("SELECT raw, stub, hidden_from_users FROM images WHERE id = ?", [image_id])
        if not found or found[0]["raw"] is None:
            return None
        record, stub = json.loads(found[0]["raw"]), json.loads(found[0]["stub"] or "{}")
        hidden = bool(found[0]["hidden_from_users"])
        record.update(hidden_from_users=hidden, deletion_reason=stub.get("deletion_reason") if hidden else None,
                      duplicate_of=stub.get("duplicate_of") if hidden else None)
        return record

    @cached_property
    def tags(self) -> Rows:
        return Rows(self, "SELECT id FROM tags WHERE raw IS NOT NULL ORDER BY id", self._raw_of(TAGS))

    @cached_property
    def filters(self) -> Rows:
        return Rows(self, "SELECT id FROM filters ORDER BY id", self._raw_of(FILTERS))

    @cached_property
    def forums(self) -> Rows:
        return Rows(self, "SELECT short_name FROM forums ORDER BY short_name",
                    lambda short: self._raw("SELECT raw FROM forums WHERE short_name = ?", short))

    @cached_property
    def users(self) -> Rows:
        def user(user_id: int) -> Record | None:
            if self.value("SELECT 1 FROM gone_users WHERE id = ?", [user_id]):
                return {"id": user_id, "deleted": True, "links": [], "awards": []}
            record = self._raw("SELECT raw FROM users WHERE id = ?", user_id)
            return {**record, "deleted": False} if record else None

        return Rows(self, "SELECT id FROM users UNION SELECT id FROM gone_users ORDER BY id", user)

    @cached_property
    def comments(self) -> Rows:
        return Rows(self, "SELECT id FROM comments ORDER BY id", lambda i: self._message(COMMENTS, i))

    @cached_property
    def posts(self) -> Rows:
        def post(post_id: int) -> Record | None:
            record = self._message(POSTS, post_id)
            place = self.rows("SELECT topic_id, position FROM site_post_positions WHERE post_id = ?", [post_id])
            return record and {**record, "topic_id": place[0]["topic_id"] if place else None,
                               "topic_position": place[0]["position"] if place else None}

        return Rows(self, "SELECT id FROM posts ORDER BY id", post)

    @cached_property
    def topics(self) -> Rows:
        return Rows(self, "SELECT id FROM site_topics ORDER BY id", self._topic)

    def _topic(self, topic_id: int | str) -> Record | None:
        column = "id" if isinstance(topic_id, int) else "slug"
        found = self.rows(f"SELECT id, forum, slug, hidden FROM site_topics WHERE {column} = ?", [topic_id])
        if not found:
            return None
        site = found[0]
        record = self._raw("SELECT raw FROM topics WHERE forum_short_name = ? AND slug = ?", site["forum"],
                           site["slug"]) or {}
        return {**record, "id": site["id"], "forum": site["forum"], "slug": site["slug"],
                "hidden": bool(site["hidden"]), "anonymous": record.get("user_id") is None}

    def topic_posts(self, topic_id: int) -> list[Record]:
        """A topic's posts in order of their place in it (destroyed ones included)."""
        return [self.posts[row["post_id"]] for row in self.rows(
            "SELECT s.post_id FROM site_post_positions s JOIN posts p ON p.id = s.post_id "
            "WHERE s.topic_id = ? ORDER BY s.position", [topic_id])]

    @cached_property
    def galleries(self) -> Rows:
        def gallery(gallery_id: int) -> Record | None:
            record = self._raw("SELECT raw FROM galleries WHERE id = ?", gallery_id)
            if record is None:
                return None
            dates = self.rows("SELECT created_at, updated_at FROM site_gallery_dates WHERE gallery_id = ?",
                              [gallery_id])
            members = self.rows("SELECT image_id FROM gallery_images WHERE gallery_id = ? ORDER BY position",
                                [gallery_id])
            return {**record, **(dates[0] if dates else {}), "image_ids": [m["image_id"] for m in members]}

        return Rows(self, "SELECT id FROM galleries ORDER BY id", gallery)

    def _raw(self, sql: str, *params: Any) -> Record | None:
        found = self.value(sql, params)
        return json.loads(found) if found is not None else None

    def _raw_of(self, spec: TableSpec) -> Callable[[Any], Record | None]:
        return lambda key: self._raw(f"SELECT raw FROM {spec.table} WHERE {spec.pk} = ?", key)

    def _message(self, spec: TableSpec, message_id: int) -> Record | None:
        found = self.rows(f"SELECT raw, stub, hidden_from_users FROM {spec.table} WHERE id = ?", [message_id])
        if not found or found[0]["raw"] is None:
            return None
        record = json.loads(found[0]["raw"])
        return {**record, "hidden_from_users": bool(found[0]["hidden_from_users"]),
                "destroyed_content": found[0]["stub"] == "null", "anonymous": record.get("user_id") is None}

    def to_json(self) -> str:
        """Canonical JSON of every record the board holds (when they were written left out)."""
        state = {table: [{k: v for k, v in row.items() if k not in ("mirrored_at", "checked_at", "computed_at")}
                         for row in self.rows(f"SELECT * FROM {table} ORDER BY 1, 2")] for table in _CONTENT}
        return json.dumps(state, sort_keys=True, ensure_ascii=False, default=str)

    # ------------------------------------------------------------------ files

    def file_source(self, image_id: int) -> FileSource | None:
        """What the image's files are made from (None on a recorded board: it serves no files)."""
        if self.recorded:
            return None
        found = self.rows("SELECT file_key, padding, upload FROM site_files WHERE image_id = ?", [image_id])
        if not found:
            return FileSource(file_key(self.seed, image_id), self.pictures)
        return FileSource(found[0]["file_key"], self.pictures, found[0]["upload"], found[0]["padding"] or 0)

    def image_file(self, image: Record, variant: str, ext: str) -> bytes:
        return self.file_source(image["id"]).data(image, variant, ext)

    def replace_file(self, image_id: int, key: str, *, padding: int = 0) -> Record:
        """The site regenerates an image's files from ``key`` (``padding`` zero bytes after the full
        file): new bytes at the same URLs, new hashes; bumps ``updated_at``."""
        with self.lock, self.db.atomic():
            image = self._existing(image_id)
            self.db["site_files"].upsert({"image_id": image_id, "file_key": key, "padding": padding}, pk="image_id")
            finish_image_file(image, self.file_source(image_id))
            image["updated_at"] = self.now()
            return self._save_images([image])[0]

    # ------------------------------------------------------------------ images

    def _existing(self, image_id: int) -> Record:
        image = self._image(image_id)
        if image is None:
            raise KeyError(f"no image {image_id}")
        return image

    def _save_images(self, images: list[Record], retagged: Iterable[int] = ()) -> list[Record]:
        """Write images, and the image counts of their tags (and of ``retagged``, tags they lost)."""
        with self.lock, self.db.atomic():
            save_images(ImageWriter(self.db, FILE_ROOT), images, self.vocab.tags)
            self._count_tags({t for image in images for t in image["tag_ids"]} | set(retagged))
            return [self._image(image["id"]) for image in images]  # as written, derived fields included

    def _count_tags(self, tag_ids: set[int]) -> None:
        """Tags' ``images``: the visible images carrying them; a tag new to the board in full."""
        marks = json.dumps(sorted(tag_ids))
        counts = dict(self.db.execute(
            "SELECT it.tag_id, count(*) FROM image_tags it JOIN images i ON i.id = it.image_id "
            "WHERE it.tag_id IN (SELECT value FROM json_each(?)) AND coalesce(i.hidden_from_users, 0) = 0 "
            "GROUP BY it.tag_id", [marks]).fetchall())
        raws = dict(self.db.execute("SELECT id, raw FROM tags WHERE id IN (SELECT value FROM json_each(?))",
                                    [marks]).fetchall())
        aliases, implied_by = self.vocab.alias_names(), self.vocab.implied_by()
        records = []
        for tag_id in sorted(tag_ids):
            if raws.get(tag_id) is not None:
                records.append({**json.loads(raws[tag_id]), "images": counts.get(tag_id, 0)})
            elif tag_id in self.vocab.tags:
                records.append(render_tag(self.vocab.tags[tag_id], self.vocab.tags, counts, aliases, implied_by, URLS))
        save(self.db, TAGS, records)

    def add_images(self, n: int) -> list[int]:
        """Upload `n` new images, dated now, with ids above the current maximum."""
        with self.lock:
            groups, users = tag_groups(self.vocab), self._active_users()
            first, now = self._next_id("images"), self.now()
            images = [new_image(self, random.Random(f"{self.seed}-image-{i}"), i, now, groups, users)
                      for i in range(first, first + n)]
            with self.db.atomic():
                save_history(self.db, [(image, None) for image in images])
                ids = [image["id"] for image in self._save_images(images)]
        for image_id in ids:
            self._tell("image:create", image_id=image_id)
        return ids

    def _tell(self, event: str, **facts: Any) -> None:
        """Announce an edit that has committed to every listener, as the site's broadcasts do."""
        for listener in list(self.listeners):
            listener(event, facts)

    def _active_users(self) -> list[int]:
        return [row["id"] for row in self.rows("SELECT id FROM users ORDER BY id")]

    def edit_image(self, image_id: int, *, tags: list[str] | None = None, score: int | None = None,
                   description: str | None = None, thumbnails_generated: bool | None = None,
                   **other_fields: Any) -> Record:
        """Change an image as a user or the site would; bumps `updated_at`.

        `tags` are names (aliases followed, implications added, unknown tags created). `score`
        adjusts upvotes/downvotes so that score = upvotes - downvotes. Other keyword arguments
        set fields directly (for example `processed=True`, `faves=3`, `source_urls=[]`). Changed tags
        and sources go to the board's history as the uploader's.
        """
        with self.lock, self.db.atomic():
            image = self._existing(image_id)
            _check_editable(other_fields, ("id", "raw"))  # before anything changes
            before = {"tag_ids": image["tag_ids"], "source_urls": list(image.get("source_urls") or [])}
            old_description = image.get("description") if description is not None else None
            if tags is not None:
                set_image_tags(image, self.vocab.resolve(tags))
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
            save_history(self.db, [(image, before)], image["updated_at"])
            saved = self._save_images([image], before["tag_ids"])[0]
        self._announce_edit(saved, before, old_description, thumbnails_generated)
        return saved

    def _announce_edit(self, image: Record, before: Record, old_description: str | None,
                       processed: bool | None) -> None:
        """The events the site sends for an edit: each kind of change, then the image as it is."""
        names = {t: self.vocab.tags[t]["name"] for t in {*image["tag_ids"], *before["tag_ids"]} if t in self.vocab.tags}
        added = [names[t] for t in image["tag_ids"] if t not in before["tag_ids"] and t in names]
        removed = [names[t] for t in before["tag_ids"] if t not in image["tag_ids"] and t in names]
        sources = list(image.get("source_urls") or [])
        edits = []
        if added or removed:
            edits.append(("image:tag_update", {"added": added, "removed": removed}))
        if sources != before["source_urls"]:
            # The site sends each list wrapped in one more list (source_controller.ex: `[added_sources]`).
            edits.append(("image:source_update", {"added": [[u for u in sources if u not in before["source_urls"]]],
                                                  "removed": [[u for u in before["source_urls"] if u not in sources]]}))
        if old_description is not None and image.get("description") != old_description:
            edits.append(("image:description_update", {"added": image.get("description"), "removed": old_description}))
        for event, facts in edits:
            self._tell(event, image_id=image["id"], **facts)
            self._tell("image:update", image_id=image["id"])
        if processed:
            self._tell("image:process", image_id=image["id"])

    def add_upload(self, data: bytes, *, name: str, fmt: str, mime_type: str, width: int, height: int,
                   duration: float, animated: bool, tags: list[str], description: str, source_urls: list[str],
                   user_id: int | None, anonymous: bool) -> Record:
        """Take an upload that passed the site's checks: a new image, not processed yet.

        Like the site, it answers at once with ``processed`` and ``thumbnails_generated`` false,
        and finishes ``processing_delay`` seconds later (``updated_at`` moves, so a sync sees it).
        """
        with self.lock, self.db.atomic():
            image_id = self._next_id("images")
            image = new_image(self, random.Random(f"{self.seed}-upload-{image_id}"), image_id, self.now(),
                              tag_groups(self.vocab), [])
            image.update(name=name, format=fmt, mime_type=mime_type, width=width, height=height, duration=duration,
                         animated=animated, description=description, source_urls=source_urls,
                         uploader_id=None if anonymous else user_id,
                         uploader=None if anonymous else self.user_name(user_id),
                         upvotes=0, downvotes=0, score=0, faves=0, hides=0,
                         thumbnails_generated=False, processed=False)
            set_image_tags(image, self.vocab.resolve(tags))
            self.db["site_files"].upsert({"image_id": image_id, "file_key": file_key(self.seed, image_id),
                                          "padding": 0, "upload": data}, pk="image_id")
            finish_image_file(image, self.file_source(image_id))
            save_history(self.db, [(image, None)])
            self._save_images([image])
        self._tell("image:create", image_id=image_id)
        timer = threading.Timer(self.processing_delay, self._processed, (image_id,))
        timer.daemon = True
        timer.start()
        return image

    def _processed(self, image_id: int) -> None:
        try:
            self.edit_image(image_id, thumbnails_generated=True)
        except (KeyError, sqlite3.ProgrammingError):  # gone, or the board closed meanwhile
            pass

    def image_by_orig_hash(self, sha512: str) -> Record | None:
        """The image uploaded with these bytes (the site's duplicate check), if any."""
        return self._image(self.value("SELECT id FROM images WHERE orig_sha512_hash = ? ORDER BY id", [sha512]))

    def hide_image(self, image_id: int, reason: str = "Rule #0") -> Record:
        """Delete an image: it becomes a stub carrying `deletion_reason`."""
        return self._set_hidden(image_id, deletion_reason=reason, duplicate_of=None)

    def merge_image(self, image_id: int, into: int) -> Record:
        """Merge an image into another: it becomes a stub carrying `duplicate_of`."""
        if into == image_id or self._image(into) is None:
            raise ValueError(f"cannot merge {image_id} into {into}")
        merged = self._set_hidden(image_id, deletion_reason=None, duplicate_of=into)
        self._tell("image:merge", image_id=image_id, duplicate_of=into)
        return merged

    def unhide_image(self, image_id: int) -> Record:
        return self._set_hidden(image_id, deletion_reason=None, duplicate_of=None, hidden=False)

    def _set_hidden(self, image_id: int, *, deletion_reason: str | None, duplicate_of: int | None,
                    hidden: bool = True) -> Record:
        with self.lock:
            image = self._existing(image_id)
            image.update(hidden_from_users=hidden, deletion_reason=deletion_reason, duplicate_of=duplicate_of,
                         updated_at=self.now())
            return self._save_images([image])[0]

    # ------------------------------------------------------------------ comments and forums

    def add_comments(self, image_id: int, n: int = 1, *, body: str | None = None,
                     user_id: int | None = None) -> list[int]:
        """Post `n` comments on an image (anonymous when `user_id` is None).

        Like the real site, this bumps the image's `comment_count` but not its `updated_at`
        (Philomena increments the counter with `update_all`, which leaves timestamps alone).
        """
        with self.lock, self.db.atomic():
            image = self._existing(image_id)
            first, now = self._next_id("comments"), self.now()
            comments = [make_comment(self, random.Random(f"{self.seed}-comment-{i}"), i, image_id, user_id, now,
                                     body=body) for i in range(first, first + n)]
            save_messages(self.db, COMMENTS, comments, self._people())
            image["comment_count"] += n
            self._save_images([image])
        for comment in comments:
            self._tell("comment:create", comment_id=comment["id"])
        return [c["id"] for c in comments]

    def edit_comment(self, comment_id: int, *, body: str | None = None, hidden: bool | None = None,
                     destroyed: bool | None = None, edit_reason: str | None = None) -> Record:
        """Edit, hide or destroy a comment; bumps `updated_at` (and `edited_at` for body edits)."""
        with self.lock, self.db.atomic():
            comment = self._edited(self.comments[comment_id], body, hidden, destroyed, edit_reason)
            save_messages(self.db, COMMENTS, [comment], self._people())
        if body is not None:  # the site announces a comment's edits, never its hiding or deletion
            self._tell("comment:update", comment_id=comment_id)
        return comment

    def edit_post(self, post_id: int, *, body: str | None = None, hidden: bool | None = None,
                  destroyed: bool | None = None, edit_reason: str | None = None) -> Record:
        """Edit, hide or destroy a forum post; bumps `updated_at` (and `edited_at` for body edits).

        Like Philomena, this leaves the topic's `post_count` and `last_replied_to_at` alone.
        """
        with self.lock, self.db.atomic():
            post = self._edited(self.posts[post_id], body, hidden, destroyed, edit_reason)
            save_messages(self.db, POSTS, [post], self._people(), self.topics[post["topic_id"]])
            return post

    def _edited(self, message: Record, body: str | None, hidden: bool | None, destroyed: bool | None,
                edit_reason: str | None) -> Record:
        now = self.now()
        if body is not None:
            message.update(body=body, edited_at=now, edit_reason=edit_reason)
        if hidden is not None:
            message["hidden_from_users"] = hidden
        if destroyed is not None:
            message["destroyed_content"] = destroyed
        message["updated_at"] = now
        return message

    def add_posts(self, topic: int | str, n: int = 1, *, body: str | None = None,
                  user_id: int | None = None) -> list[int]:
        """Reply `n` times to a topic (given by id or slug); bumps the topic's and forum's counters."""
        with self.lock, self.db.atomic():
            record = self._topic(topic)
            if record is None or "post_count" not in record:
                raise KeyError(f"no topic {topic!r}")
            first, now = self._next_id("posts", "site_post_positions.post_id"), self.now()
            posts = [make_post(self, random.Random(f"{self.seed}-post-{post_id}"), post_id, record,
                               record["post_count"] + i, user_id, now, body=body)
                     for i, post_id in enumerate(range(first, first + n))]
            record.update(post_count=record["post_count"] + n, last_replied_to_at=now)
            save_topic(self.db, record, posts, self._people())
            self._count_forum(record["forum"], post_count=n)
        for post in posts:
            self._tell("post:create", post_id=post["id"], topic_id=record["id"])
        return [p["id"] for p in posts]

    def _count_forum(self, short_name: str, **added: int) -> None:
        forum = self.forums[short_name]
        for kind, n in added.items():
            forum[kind] += n
        save(self.db, FORUMS, [forum])

    def add_topic(self, forum: str, title: str, posts: int = 1, *, sticky: bool = False,
                  user_id: int | None = None) -> Record:
        """Open a topic in `forum` with `posts` posts (the first is the opening post); bumps the forum's counters."""
        with self.lock, self.db.atomic():
            topic_id = self._next_id("site_topics")
            topic_slug = slug_of_title(title, topic_id)
            if self.value("SELECT 1 FROM site_topics WHERE forum = ? AND slug = ?", [forum, topic_slug]):
                raise ValueError(f"forum {forum!r} already has a topic {topic_slug!r}")
            author = self.user_name(user_id) if user_id is not None else background_pony(topic_id, "op")
            topic = make_topic_record(topic_id, forum, topic_slug, title, user_id, author, self.now(), sticky=sticky)
            self._count_forum(forum, topic_count=1)
            save_topic(self.db, topic, [], self._people())
            self.add_posts(topic_id, posts, user_id=user_id)
            return self.topics[topic_id]

    # ------------------------------------------------------------------ tags, users, filters, features, galleries

    def _edit_raw(self, spec: TableSpec, key: Any, fields: Mapping[str, Any], fixed: tuple[str, ...] = ("id",)) -> Record:
        """Change fields of a record as served (refusing fields that cannot change), and write it."""
        _check_editable(fields, fixed)
        with self.lock, self.db.atomic():
            record = self._raw_of(spec)(key)
            if record is None:
                raise KeyError(f"no {spec.table} {key!r}")
            record.update(fields)
            save(self.db, spec, [record])
            return record

    def ensure_tag(self, name: str) -> Record:
        """The tag called `name`, created (with namespace and category rules) if missing."""
        with self.lock:
            tag = self.vocab.ensure(name)
            if self.tags.get(tag["id"]) is None:
                with self.db.atomic():
                    self._count_tags({tag["id"]})
            return self.tags[tag["id"]]

    def edit_tag(self, name: str, **fields: Any) -> Record:
        """Edit a tag's own fields (`description`, `short_description`, `dnp_entries`, ...).

        Like Philomena, this touches no image: a tag carries no `updated_at` and its images stay
        as they were.
        """
        tag = self.vocab.by_name(name)
        if tag is None:
            raise KeyError(f"no tag {name!r}")
        return self._edit_raw(TAGS, tag["id"], fields, fixed=("id", "name", "slug"))

    def alias_tag(self, alias: str, target: str) -> Record:
        """Make `alias` (created if missing) an alias of `target`: the target's `aliases` grow."""
        with self.lock, self.db.atomic():
            aliased, into = self.ensure_tag(alias), self.ensure_tag(target)
            self.vocab.tags[aliased["id"]]["aliased_tag_id"] = into["id"]
            self._edit_raw(TAGS, into["id"], {"aliases": [*into["aliases"], aliased["slug"]]})
            return self._edit_raw(TAGS, aliased["id"], {"aliased_tag": into["slug"]})

    def add_user(self, name: str, **fields: Any) -> Record:
        """Register a user with an id above the current maximum (no links, awards or activity)."""
        with self.lock:
            user = {"id": self._next_id("users", "gone_users"), "name": name, "slug": slug(name), "role": "user",
                    "description": None, "avatar": None, "created_at": self.now(), "links": [], "awards": [],
                    "uploads_count": 0, "comments_count": 0, "posts_count": 0, "topics_count": 0, **fields}
            save(self.db, USERS, [render_user(user, URLS)])
            return self.users[user["id"]]

    def edit_user(self, user_id: int, **fields: Any) -> Record:
        """Change a user's profile fields (description, role, links, awards, ...)."""
        return self._edit_raw(USERS, user_id, fields)

    def delete_user(self, user_id: int) -> None:
        """Deactivate an account: its profile answers 404 from now on; its records stay."""
        with self.lock, self.db.atomic():
            self.db.execute("DELETE FROM users WHERE id = ?", [user_id])
            self.db["gone_users"].upsert({"id": user_id, "checked_at": self.now()}, pk="id")

    def add_filter(self, user_id: int | None, name: str, **fields: Any) -> Record:
        """Create a filter owned by `user_id` (a system filter when None), hiding nothing."""
        with self.lock:
            flt = render_filter(make_filter(self._next_id("filters"), name, user_id, self.now(), **fields))
            save(self.db, FILTERS, [flt])
            return flt

    def edit_filter(self, filter_id: int, **fields: Any) -> Record:
        """Change a filter's fields (rename it, make it public, ...)."""
        return self._edit_raw(FILTERS, filter_id, fields)

    def clear_features(self) -> None:
        """Forget every featured image (a site that features nothing)."""
        with self.lock, self.db.atomic():
            self.db.execute("DELETE FROM featured_images")

    def feature_image(self, image_id: int) -> None:
        """Feature an image now: /images/featured answers with it."""
        with self.lock, self.db.atomic():
            self._existing(image_id)
            save_features(self.db, [{"image_id": image_id, "created_at": self.now()}])

    def add_gallery(self, image_ids: list[int], *, title: str = "A new gallery", user_id: int | None = None,
                    description: str = "") -> int:
        """Create a gallery holding `image_ids` in that order (position 0 first), dated now."""
        with self.lock, self.db.atomic():
            for image_id in image_ids:
                self._existing(image_id)
            now, people = self.now(), self._people()
            gallery = {"id": self._next_id("galleries"), "title": title, "description": description,
                       "spoiler_warning": "", "thumbnail_id": image_ids[0] if image_ids else None,
                       "user_id": user_id if user_id is not None else min(people), "image_ids": list(image_ids),
                       "created_at": now, "updated_at": now}
            save_galleries(self.db, [gallery], people)
            return gallery["id"]

    def edit_gallery(self, gallery_id: int, *, add: Iterable[int] = (), remove: Iterable[int] = (),
                     order: list[int] | None = None, **fields: Any) -> Record:
        """Add images (at the end), remove images, reorder, or set fields such as `title`.

        Like the real site, adding, removing and field edits bump `updated_at` (an Ecto update of
        the gallery row); a reorder alone does not (it rewrites the positions only).
        """
        with self.lock, self.db.atomic():
            gallery = self.galleries[gallery_id]
            _check_editable(fields, ("id", "image_ids"))  # before anything changes
            added, removed = [i for i in add if self._existing(i)], set(remove)
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
            save_galleries(self.db, [gallery], self._people())
            return gallery

    def delete_gallery(self, gallery_id: int) -> None:
        """Delete a gallery: search no longer finds it, nor its images by ``gallery_id:``."""
        with self.lock, self.db.atomic():
            for table, column in (("galleries", "id"), ("gallery_images", "gallery_id"),
                                  ("site_gallery_dates", "gallery_id")):
                self.db.execute(f"DELETE FROM {table} WHERE {column} = ?", [gallery_id])


_CONTENT = ("images", "image_tags", "image_intensities", "tags", "comments", "galleries", "gallery_images", "topics",
            "posts", "forums", "users", "gone_users", "filters", "featured_images", *SITE_TABLES)


class Rows(Mapping):
    """A read-only mapping over one resource of the board: keys from ``keys_sql``, records from ``get``."""

    def __init__(self, board: BoardEditor, keys_sql: str, get: Callable[[Any], Record | None]) -> None:
        self._board, self._keys_sql, self._get = board, keys_sql, get

    def __getitem__(self, key: Any) -> Record:
        record = self._get(key)
        if record is None:
            raise KeyError(key)
        return record

    def __iter__(self) -> Iterator[Any]:
        return iter([next(iter(row.values())) for row in self._board.rows(self._keys_sql)])

    def __len__(self) -> int:
        return len(self._board.rows(self._keys_sql))


def _check_editable(fields: Mapping[str, Any], fixed: tuple[str, ...]) -> None:
    """Refuse an edit of a field that cannot change, before anything is changed."""
    for key in fields:
        if key in fixed:
            raise ValueError(f"cannot edit {key}")


def _remove_board(conn: sqlite3.Connection, folder: Path) -> None:
    try:
        conn.close()
    finally:  # a connection busy in another thread at exit must not keep the folder
        shutil.rmtree(folder, ignore_errors=True)
