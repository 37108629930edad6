"""A large generated board (a million images and more), streamed into a mirror database.

The local site's :func:`~mirror.site.generate.populate` holds its whole world in a ``Dataset``
so that tests can change it; that does not scale to benchmark sizes. Here the same vocabulary,
distributions and record builders (:mod:`.generate`, :mod:`.render`) make the board batch by
batch, and each batch goes through the store's writers in one transaction (:mod:`.publish`'s
helpers, as the local site publishes), so the database is what a mirror would keep. Only the
vocabulary (tags, accounts, filters) and per-tag and per-user counters stay in memory, and their
size is capped: memory does not grow with the number of images.

The board is a plain mirror (no ``site_*`` tables), as ``mirror serve`` serves. Everything is
drawn from one ``random.Random(seed)`` in a fixed order, so a seed always gives the same records
(``mirrored_at`` is the time of writing, as in any mirror).

Loading defers the full-text indexes: the FTS triggers are dropped, and once every row is in,
each index is filled with FTS5's ``rebuild`` command and the triggers are put back as they were.
The index then holds exactly what the triggers would have written (it is derived from the rows
alone), at a fraction of the cost of one trigger call per row.
"""

from __future__ import annotations

import random
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from ..store import ImageWriter, open_database
from ..store.schema import refresh_statistics
from ..store.specs import SPECS
from .dataset import Dataset
from .generate import (
    active_users,
    comment_on,
    count_activity,
    dated_image,
    forum_of,
    make_filters,
    make_forums,
    make_gallery,
    make_topic,
    make_vocabulary,
    mark_processing,
    next_image_id,
    set_fate,
    zero_counts,
)
from .publish import (
    FILE_ROOT,
    reachable_forums,
    save,
    save_comments,
    save_features,
    save_filters_and_users,
    save_galleries,
    save_images,
    save_tags,
    save_topic,
)
from .records import iso, parse_iso
from .render import Urls, render_forum

__all__ = ["BulkSizes", "BulkReport", "generate_board"]

Record = dict[str, Any]
# Pages of SQLite's cache while loading (negative: KiB): the secondary indexes' pages stay in
# memory, so rows arriving in id order do not make their inserts seek all over the file.
_CACHE_KIB = 256 * 1024


@dataclass(frozen=True)
class BulkSizes:
    """How big each part of the board is, for ``images`` images.

    Artists and accounts grow with the board up to a cap (a real board's vocabulary grows far
    more slowly than its images); comments, topics and galleries are proportional.
    """

    images: int
    comments_per_image: float = 0.5
    images_per_topic: int = 200
    images_per_gallery: int = 100
    max_artists: int = 20_000
    max_users: int = 20_000

    @property
    def artists(self) -> int:
        return min(max(5, self.images // 8), self.max_artists)

    @property
    def users(self) -> int:
        return min(max(12, self.images // 8), self.max_users)

    @property
    def topics(self) -> int:
        return max(8, self.images // self.images_per_topic)

    @property
    def galleries(self) -> int:
        return max(3, self.images // self.images_per_gallery)


@dataclass
class BulkReport:
    """What was written, and how long it took."""

    counts: Counter = field(default_factory=Counter)
    seconds: float = 0.0

    @property
    def records(self) -> int:
        return sum(self.counts.values())

    def describe(self) -> str:
        parts = ", ".join(f"{n:,} {kind}" for kind, n in sorted(self.counts.items()))
        rate = self.records / self.seconds if self.seconds else 0.0
        return f"{parts} in {self.seconds:.1f} s ({rate:,.0f} records/s)"


def generate_board(path: str | Path, images: int, *, seed: int = 1, batch: int = 5_000,
                   sizes: BulkSizes | None = None, defer_fts: bool = True,
                   progress: Callable[[BulkReport], None] | None = None) -> BulkReport:
    """Write a generated board of ``images`` images into a new mirror database at ``path``."""
    started = time.perf_counter()
    db = open_database(path)
    board = _Board(db, seed, sizes or BulkSizes(images))
    with _loading(db), (deferred_fts(db) if defer_fts else _nothing()):
        board.write(batch, progress)
    refresh_statistics(db)  # as a sync ends
    db.close()
    board.report.seconds = time.perf_counter() - started
    return board.report


class _Board:
    """The streaming generation: the state carried from one batch to the next, all of it bounded."""

    def __init__(self, db: Database, seed: int, sizes: BulkSizes) -> None:
        self.db, self.sizes, self.urls = db, sizes, Urls(FILE_ROOT)
        self.ds = Dataset(seed)
        self.rng = random.Random(seed)
        self.vocab = make_vocabulary(self.ds, self.rng, artists=sizes.artists, users=sizes.users)
        make_filters(self.ds, self.rng)
        zero_counts(self.ds.users)
        self.all_users = sorted(self.ds.users)
        self.active = active_users(self.ds)
        self.key_user = next(iter(self.ds.api_keys.values()))
        self.writer = ImageWriter(db, FILE_ROOT)
        self.tag_counts: Counter[int] = Counter()
        self.recent: deque[int] = deque(maxlen=1_000)  # earlier visible images, what a duplicate merges into
        self.features: list[Record] = []
        self.report = BulkReport()
        self.image_id, self.comment_id, self.gallery_id = 0, 1, 1
        self.previous: Record | None = None

    def write(self, batch: int, progress: Callable[[BulkReport], None] | None) -> None:
        for start in range(0, self.sizes.images, batch):
            self._image_batch(range(start, min(start + batch, self.sizes.images)))
            if progress:
                progress(self.report)
        self._forums(max(1, batch // 25))
        with self.db.atomic():
            save_features(self.db, self.features)
            save_tags(self.db, self.ds, self.tag_counts, self.urls)
            save_filters_and_users(self.db, self.ds, self.urls)
        self.report.counts.update(tags=len(self.ds.tags), users=len(self.active), filters=len(self.ds.filters))

    # -- images, with their comments and galleries -------------------------------------------------

    def _image_batch(self, indexes: range) -> None:
        images = [self._image(i) for i in indexes]
        comments = [c for image in images for c in self._comments(image)]
        visible = [image["id"] for image in images if not image["hidden_from_users"]]
        galleries = self._galleries(visible, indexes.stop)
        self._count(images, comments, visible)
        self._feature(images)
        with self.db.atomic():
            save_images(self.writer, images, self.urls, self.ds.tags)
            save_comments(self.db, comments, self.ds.users, self.urls)
            save_galleries(self.db, galleries, self.ds.users)
        self.report.counts.update(images=len(images), comments=len(comments), galleries=len(galleries))

    def _image(self, index: int) -> Record:
        rng, count = self.rng, self.sizes.images
        image = dated_image(self.ds, rng, self.image_id, index, count, self.vocab, self.all_users, self.previous)
        if index == count - 1:
            mark_processing(image)
        elif index:
            set_fate(rng, image, lambda: self.recent)
        if not image["hidden_from_users"]:
            self.recent.append(image["id"])
        self.previous = image
        self.image_id = next_image_id(rng, self.image_id)
        return image

    def _comments(self, image: Record) -> list[Record]:
        """A geometric number of comments, ``comments_per_image`` on average."""
        more = self.sizes.comments_per_image / (1 + self.sizes.comments_per_image)
        comments = []
        while self.rng.random() < more:
            comments.append(comment_on(self.ds, self.rng, self.comment_id, image, self.active))
            self.comment_id += 1
        return comments

    def _galleries(self, visible: list[int], done: int) -> list[Record]:
        """The galleries due by the ``done``-th image, each of images of this batch."""
        due = self.sizes.galleries * done // self.sizes.images
        galleries = []
        while visible and self.gallery_id <= due:
            user_id = self.key_user if self.gallery_id == 1 else self.rng.choice(self.active)
            galleries.append(make_gallery(self.rng, self.gallery_id, user_id, visible))
            self.gallery_id += 1
        return galleries

    def _feature(self, images: list[Record]) -> None:
        """The first visible image of each of the first batches is featured the day after its upload."""
        shown = next((image for image in images if not image["hidden_from_users"]), None)
        if len(self.features) < 8 and shown is not None:
            day_after = parse_iso(shown["created_at"]) + timedelta(days=1)
            self.features.append({"image_id": shown["id"], "created_at": iso(day_after)})

    def _count(self, images: list[Record], comments: list[Record], visible: list[int]) -> None:
        """Tags' ``images`` (visible images only) and the accounts' activity counters."""
        shown = set(visible)
        for image in images:
            if image["id"] in shown:
                self.tag_counts.update(image["tag_ids"])
        count_activity(self.ds.users, "uploads_count", images)
        count_activity(self.ds.users, "comments_count", comments)

    # -- forums ---------------------------------------------------------------------------------------

    def _forums(self, batch: int) -> None:
        """Topics and their posts, ``batch`` topics per transaction; the forums last, with their counts."""
        forums = make_forums()
        readable = reachable_forums(forums)
        used_slugs: set[tuple[str, str]] = set()
        post_id = 1
        for start in range(1, self.sizes.topics + 1, batch):
            with self.db.atomic():
                for topic_id in range(start, min(start + batch, self.sizes.topics + 1)):
                    forum = forum_of(forums, topic_id)
                    topic, posts = make_topic(self.ds, self.rng, topic_id, forum, used_slugs, self.active, post_id)
                    post_id += len(posts)
                    count_activity(self.ds.users, "topics_count", [topic])
                    count_activity(self.ds.users, "posts_count", posts)
                    if forum["short_name"] in readable:
                        save_topic(self.db, forum["short_name"], topic, posts, self.ds.users, self.urls)
                    self.report.counts.update(topics=1, posts=len(posts))
        save(self.db, SPECS["forums"], [render_forum(forums[short]) for short in sorted(readable)])


@contextmanager
def _loading(db: Database) -> Iterator[None]:
    """A big page cache and no fsync while the board is written: it is made, not kept safe; a
    board cut short is generated again."""
    db.execute(f"PRAGMA cache_size=-{_CACHE_KIB}")
    db.execute("PRAGMA synchronous=OFF")
    try:
        yield
    finally:
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("PRAGMA cache_size=-2000")


@contextmanager
def _nothing() -> Iterator[None]:
    yield


@contextmanager
def deferred_fts(db: Database) -> Iterator[None]:
    """Write without the FTS triggers, then rebuild each full-text index and restore the triggers.

    The triggers come back from their own SQL as ``sqlite_master`` held it, so the schema is
    unchanged; ``rebuild`` reads every row of the content table, so each index is what the
    triggers would have made, whatever was written meanwhile.
    """
    indexes = [name for (name,) in db.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL TABLE%USING fts5%'")]
    triggers = [(name, sql) for name, sql in db.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'")
                if any(f'"{index}"' in sql for index in indexes)]
    with db.atomic():
        for name, _ in triggers:
            db.execute(f'DROP TRIGGER "{name}"')
    try:
        yield
    finally:
        with db.atomic():
            for index in indexes:
                db.execute(f"INSERT INTO \"{index}\" (\"{index}\") VALUES ('rebuild')")
            for _, sql in triggers:
                db.execute(sql)
