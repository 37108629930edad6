"""Each firehose event stored as a sync would store what it names: the same writers, the same history.

=========================  ====================================================================
``image:create``,          the record, stored as received (``ImageWriter``); history
``image:update``           ``first_seen`` or ``changed``, with tag changes, dated by arrival
``image:merge``            the merged image's stub (marked ``merged``) and the image it went into
``image:process``          the image fetched (one paced request): it now names its files, and
                           ``thumbnails_generated`` puts them in the download plan
``image:tag_update``,      an image the mirror lacks is fetched; one it has is stored by the
``..source_update``,       ``image:update`` the site sends next, whose diff is the history's
``..description_update``   change
``image:batch_tag_update`` the images it names fetched by search (no ``image:update`` follows it)
``comment:create``,        the comment, on an image the mirror has (or fetches), when
``comment:update``         ``[comments]`` is enabled
``post:create``            its forum, topic and post, when ``[forums]`` is enabled
=========================  ====================================================================

Images are stored from events only when ``[images] query`` is ``*``: whether another query
matches an image is the site's search to say, so such a mirror takes its new images from the
catch-up walk and the nightly sync, and from events only the images it already holds.

An event of a shape it should not have (not an object, an id that is not one, an unknown name) is
kept in ``rejects`` with the reason, raw, and counted; nothing raises out of :meth:`Applier.apply`
but the client's own failures (the site unreachable while fetching a record).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from sqlite_utils import Database

from ..api import NotFound, PhilomenaClient
from ..store import ImageWriter
from ..store.history import recorder_for
from ..store.records import to_json, valid_id
from ..store.rejects import reject
from ..store.specs import COMMENTS, FORUMS, POSTS, TOPICS
from ..store.writer import RecordWriter

__all__ = ["Applier", "FollowScope", "REJECTS_RESOURCE", "not_older"]

REJECTS_RESOURCE = "firehose"  # the resource firehose frames are kept under in ``rejects``
Write = Callable[[], Any]  # one store of what an event named, run inside the event's transaction
IMAGE_EDITS = ("image:tag_update", "image:source_update", "image:description_update")


@dataclass(frozen=True)
class FollowScope:
    """What the follower stores: every image (``query`` ``*``), comments, forums."""

    all_images: bool = True
    comments: bool = True
    forums: bool = True


class Unappliable(ValueError):
    """An event that cannot be stored: its message is the reason kept in ``rejects``."""


@dataclass
class Applier:
    """Stores events in ``db``; ``fetched`` counts the records it asked the site for."""

    db: Database
    client: PhilomenaClient
    scope: FollowScope = field(default_factory=FollowScope)
    fetched: int = 0

    def __post_init__(self) -> None:
        base = self.client.base_url
        # The images a catch-up page stored, with the updated_at stored: an event of the same
        # image and second may be the older edit, late (:meth:`_image` asks the site which is last).
        self.paged: dict[int, str] = {}
        self.images = ImageWriter(self.db, base)
        self.comments = RecordWriter(self.db, COMMENTS, base)
        self.forums = RecordWriter(self.db, FORUMS, base)
        self.topics = RecordWriter(self.db, TOPICS, base)
        self.posts = RecordWriter(self.db, POSTS, base)
        self._handlers: dict[str, Callable[[Mapping[str, Any]], Awaitable[list[Write]]]] = {
            "image:create": self._image, "image:update": self._image, "image:merge": self._merge,
            "image:process": self._process, "image:batch_tag_update": self._batch,
            "comment:create": self._comment, "comment:update": self._comment, "post:create": self._post,
            **{name: self._image_edit for name in IMAGE_EDITS},
        }

    async def apply(self, event: str, payload: Any, seen_at: str, also: Callable[[], None]) -> str | None:
        """Store ``event``, with its history dated ``seen_at``, and call ``also`` in the same
        transaction (the follower's cursor); None when done, else why it cannot be stored."""
        handler = self._handlers.get(event)
        try:
            if handler is None:
                raise Unappliable(f"an event the firehose is not known to send: {event[:60]!r}")
            if not isinstance(payload, Mapping):
                raise Unappliable(f"{event}: the payload is not an object")
            writes = await handler(payload)  # the requests first: no transaction waits on the site
            recorder = recorder_for(self.db)
            with self.db.atomic():
                if recorder is not None:
                    recorder.seen_at = seen_at
                try:
                    for write in writes:
                        write()
                    also()
                finally:
                    if recorder is not None:
                        recorder.seen_at = None
        except Unappliable as e:
            return str(e)  # nothing written: the caller keeps the event aside (:meth:`keep_aside`)
        return None

    def keep_aside(self, frame: Any, reason: str, also: Callable[[], None]) -> None:
        """Keep ``frame`` in ``rejects`` with ``reason``, and call ``also`` in the same transaction."""
        with self.db.atomic():
            reject(self.db, REJECTS_RESOURCE, frame, reason)
            also()

    # -- images ---------------------------------------------------------------------------------

    def holds(self, image_id: Any) -> bool:
        """Whether the mirror holds the image ``image_id`` names (False for what is not an id)."""
        return valid_id(image_id) and self.db.execute("SELECT 1 FROM images WHERE id = ?", [image_id]).fetchone() is not None

    def _wanted(self, image_id: int) -> bool:
        return self.scope.all_images or self.holds(image_id)

    async def _image(self, payload: Mapping[str, Any]) -> list[Write]:
        image = _image_record(payload, "image")
        if not self._wanted(image["id"]):
            return []
        if self.paged.pop(image["id"], None) == image.get("updated_at"):
            # A page stored a version of the same second: two edits in one second, and this event's
            # may be the earlier one, arriving late. The site says which is last.
            image = await self._fetch_image(image["id"])
        return [partial(self._save_images, [image])]

    async def _merge(self, payload: Mapping[str, Any]) -> list[Write]:
        merged, into = _image_record(payload, "image"), _image_record(payload, "duplicate_of_image")
        return [partial(self._save_images, [r for r in (into, merged) if self._wanted(r["id"])])]

    async def _process(self, payload: Mapping[str, Any]) -> list[Write]:
        image_id = _id(payload, "image_id")
        return [partial(self._save_images, [await self._fetch_image(image_id)])] if self._wanted(image_id) else []

    async def _image_edit(self, payload: Mapping[str, Any]) -> list[Write]:
        image_id = _id(payload, "image_id")
        if self.holds(image_id) or not self.scope.all_images:
            return []  # the image:update that follows carries the record
        return [partial(self._save_images, [await self._fetch_image(image_id)])]

    async def _batch(self, payload: Mapping[str, Any]) -> list[Write]:
        ids = payload.get("image_ids")
        if not isinstance(ids, list) or not all(valid_id(i) for i in ids):
            raise Unappliable("image:batch_tag_update: image_ids is not a list of ids")
        wanted = [i for i in ids if self._wanted(i)]
        records = []
        for start in range(0, len(wanted), 50):
            chunk = wanted[start:start + 50]
            page = await self.client.search_images(" OR ".join(f"id:{i}" for i in chunk), per_page=50)
            self.fetched += 1
            records += page.records
        return [partial(self._save_images, records)] if records else []

    async def _fetch_image(self, image_id: int) -> dict[str, Any]:
        self.fetched += 1
        try:
            return await self.client.image(image_id)
        except NotFound:
            raise Unappliable(f"the site no longer has image {image_id}") from None

    def _save_images(self, records: list[Any]) -> None:
        records = not_older(self.db, "images", records)
        if records:
            self.images.save_page(records)

    # -- comments and posts ---------------------------------------------------------------------

    async def _comment(self, payload: Mapping[str, Any]) -> list[Write]:
        comment = _record(payload, "comment")
        image_id = comment.get("image_id")
        if not self.scope.comments or not valid_id(image_id):
            return []
        stores: list[Write] = []
        if not self.holds(image_id):
            if not self.scope.all_images:
                return []
            stores.append(partial(self._save_images, [await self._fetch_image(image_id)]))
        return [*stores, partial(self.comments.save, [comment])]

    async def _post(self, payload: Mapping[str, Any]) -> list[Write]:
        post, topic, forum = (_record(payload, key) for key in ("post", "topic", "forum"))
        if not self.scope.forums:
            return []
        short_name, slug = forum.get("short_name"), topic.get("slug")
        if not isinstance(short_name, str) or not isinstance(slug, str):
            raise Unappliable("post:create: the forum has no short_name or the topic no slug")
        return [partial(self.forums.save, [forum]),
                partial(self.topics.save, [topic], {"forum_short_name": short_name}),
                partial(self.posts.save, [post], {"forum_short_name": short_name, "topic_slug": slug})]


def _record(payload: Mapping[str, Any], key: str) -> dict[str, Any]:
    record = payload.get(key)
    if not isinstance(record, dict):
        raise Unappliable(f"the payload's {key!r} is not a record: {to_json(record)[:80]}")
    return record


def _image_record(payload: Mapping[str, Any], key: str) -> dict[str, Any]:
    record = _record(payload, key)
    _id(record, "id")
    return record


def _id(payload: Mapping[str, Any], key: str) -> int:
    value = payload.get(key)
    if not valid_id(value):
        raise Unappliable(f"the payload's {key!r} is not an id: {to_json(value)[:80]}")
    return value


def not_older(db: Database, table: str, records: list[Any], asked: str | None = None) -> list[Any]:
    """``records`` less those older than the row kept (:func:`sorted_out`)."""
    return sorted_out(db, table, records, asked)[0]


def sorted_out(db: Database, table: str, records: list[Any], asked: str | None = None) -> tuple[list[Any], list[Any]]:
    """``records`` less those older than the row kept (``updated_at``, the site's clock): a catch-up's
    page must not undo a later version an event stored while the page was on its way, nor a late
    event one a catch-up's page stored (the event of the later version may never come: the
    connection dropped after the earlier one).

    The site's clock has whole seconds: two edits in one second share ``updated_at``. So a page
    ``asked`` for at a moment also leaves out a record whose kept row has the same ``updated_at``
    and was written at or after that moment (by an event, while the page was on its way): the row
    may be the later edit, or the earlier: which is last, only the site can say. Those records
    come second (``tied``), and the follower asks the site for each: the page's copy may be the
    later edit, its event lost with the connection, and the mirror's clock has whole seconds too,
    so a row written in the second the page was asked may be older than the question."""
    ids = [r["id"] for r in records if isinstance(r, dict) and type(r.get("id")) is int]
    kept = {key: (updated, written) for key, updated, written in db.execute(
        f"SELECT id, updated_at, mirrored_at FROM {table} WHERE id IN (SELECT value FROM json_each(?))",
        [json.dumps(ids)])}
    to_store, tied = [], []
    for record in records:
        row = kept.get(record.get("id")) if isinstance(record, dict) else None
        updated = record.get("updated_at") if isinstance(record, dict) else None
        if row is None or not isinstance(updated, str) or not isinstance(row[0], str) or row[0] < updated:
            to_store.append(record)  # nothing kept to compare, or the page's is newer
        elif row[0] == updated:
            written_since = asked is not None and isinstance(row[1], str) and row[1] >= asked
            (tied if written_since else to_store).append(record)
    return to_store, tied
