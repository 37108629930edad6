"""Deterministic generation of a realistic Philomena board, streamed into a board database.

One generator makes every board, from a test's few hundred images to a benchmark's million: the
records are made batch by batch and each batch goes through the store's writers in one
transaction (:mod:`.board_rows`), so the database is what a mirror would keep, plus the test
site's own tables. Only the vocabulary (tags, accounts, filters) and per-user counters stay in
memory, and their size is capped: memory does not grow with the number of images.

Everything is drawn from one `random.Random(seed)` in a fixed order, and no set or dict of strings
is ever iterated for choices, so a seed always yields the same records (``mirrored_at`` aside).
Dates come from fixed ranges (2012..2025), never from the wall clock; only later edits
(:mod:`.editor`, which uses the record builders of :mod:`.builders`) use "now".

Loading defers the full-text indexes: the FTS triggers are dropped, and once every row is in,
each index is filled with FTS5's ``rebuild`` command and the triggers are put back as they were.
The index then holds exactly what the triggers would have written (it is derived from the rows
alone), at a fraction of the cost of one trigger call per row.
"""

from __future__ import annotations

import random
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

from sqlite_utils import Database

from ...dates import parse_utc, utc_text
from ...philomena import RATINGS
from ...search.slugs import slug
from ...store import ImageWriter, open_database
from ...store.specs import COMMENTS, FILTERS, TAGS, USERS
from ...store.specs import FORUMS as FORUM_RECORDS
from ...store.statistics import refresh_statistics
from .builders import (
    BODY_TYPES,
    CHARACTERS,
    ERRORS,
    FANMADE,
    GENERAL,
    OFFICIAL,
    SPECIES,
    SPOILERS,
    UNICODE_SNIPPETS,
    Maker,
    Record,
    made_up_name,
    make_comment,
    make_filter,
    make_post,
    make_topic_record,
    message_text,
    new_image,
    sentence,
)
from .records import background_pony, slug_of_title
from .render import render_filter, render_forum, render_tag, render_user
from .rows import (
    FILE_ROOT,
    URLS,
    create_site_tables,
    reachable_forums,
    save,
    save_features,
    save_galleries,
    save_history,
    save_images,
    save_messages,
    save_topic,
)
from .vocabulary import Vocabulary

__all__ = ["BoardSizes", "BoardReport", "generate_board"]

# Pages of SQLite's cache while loading (negative: KiB): the secondary indexes' pages stay in
# memory, so rows arriving in id order do not make their inserts seek all over the file.
_CACHE_KIB = 256 * 1024

START = datetime(2012, 1, 2, 3, 10, 59, tzinfo=timezone.utc)
END = datetime(2025, 6, 30, 23, 0, 0, tzinfo=timezone.utc)

ALIASES = {
    "twilight": "twilight sparkle", "ts": "twilight sparkle", "dashie": "rainbow dash",
    "rd": "rainbow dash", "pinkamena": "pinkie pie", "flutters": "fluttershy", "aj": "applejack",
    "celly": "princess celestia", "tia": "princess celestia", "muffins": "derpy hooves",
    "pegasi": "pegasus", "sfw": "safe", "earth ponies": "earth pony",
}
IMPLICATIONS = {
    "twilight sparkle": ["alicorn"], "rainbow dash": ["pegasus"], "fluttershy": ["pegasus"],
    "derpy hooves": ["pegasus"], "rarity": ["unicorn"], "trixie": ["unicorn"], "starlight glimmer": ["unicorn"],
    "applejack": ["earth pony"], "pinkie pie": ["earth pony"], "princess celestia": ["alicorn"],
    "princess luna": ["alicorn"], "mare": ["female"], "stallion": ["male"], "alicorn": ["pony"],
    "pegasus": ["pony", "wings"], "unicorn": ["pony", "horn"], "earth pony": ["pony"],
    "sunny starscout": ["earth pony", "g5"], "izzy moonbow": ["unicorn", "g5"],
}
CATEGORIES = (
    [(n, "character") for n in CHARACTERS]
    + [(n, "species") for n in SPECIES]
    + [(n, "body-type") for n in BODY_TYPES]
    + [(n, "error") for n in ERRORS]
    + [(n, "content-official") for n in OFFICIAL]
)
DNP_TYPES = ["No Edits", "Artist Tag Change", "Uploader Credit Change", "Certain Type/Location Only",
             "With Permission Only", "Artist Upload Only", "Other"]
DELETION_REASONS = ["Rule #0", "Rule #2: Duplicate", "Artist request (DNP)", "Low quality (Rule #7)",
                    "Rule #1: Content not allowed"]
BADGES = [(1, "Artist", "artist.svg"), (2, "Donor", "donor.svg"), (3, "Happy Derpy!", "derpy.svg"),
          (4, "The End wasn't The End", "end.svg"), (5, "Best Artist", "best.svg")]
FORUMS = [
    ("dis", "General Discussion", "Talk about anything", "normal"),
    ("art", "Art Chat", "Discuss art of any form, and share techniques", "normal"),
    ("meta", "Site and Policy", "For site discussion and policy discussion", "normal"),
    ("pony", "Pony Discussion", "Discuss the show, comics, merchandise and more", "normal"),
    ("rp", "Roleplaying", "Roleplaying forums", "normal"),
    ("mod", "Moderation Discussion", "Staff only", "staff"),
]


def _date_between(rng: random.Random, start: datetime, end: datetime) -> datetime:
    seconds = int((end - start).total_seconds())
    return start + timedelta(seconds=rng.randint(0, max(seconds, 0)))


def _make_tags(vocab: Vocabulary, rng: random.Random, n_artists: int) -> dict[str, list[str]]:
    """Create the vocabulary; returns tag names grouped for image tagging."""
    next_id = 1

    def add(name: str, category: str | None = None) -> Record:
        nonlocal next_id
        tag = vocab.ensure(name, tag_id=next_id)
        next_id += rng.choice((1, 1, 1, 2, 7))
        if category:
            tag["category"] = category
        if rng.random() < 0.3:
            tag["description"] = sentence(rng, rng.randint(5, 30))
            tag["short_description"] = sentence(rng, 4)
        elif rng.random() < 0.2:
            tag["short_description"] = None
        return tag

    for rating in RATINGS:
        add(rating, "rating")
    for name, category in CATEGORIES:
        add(name, category)
    for name in GENERAL + SPOILERS + FANMADE:
        tag = add(name)
        if tag["namespace"] == "spoiler":
            tag["spoiler_image"] = f"{tag['slug']}.png"
    artists = []
    for i in range(n_artists):
        tag = add(f"artist:{made_up_name(rng)}{'' if i % 5 else '_' + made_up_name(rng, 1)}")
        if rng.random() < 0.3:
            tag["dnp_entries"].append({
                "id": len(artists) + 1,
                "dnp_type": rng.choice(DNP_TYPES),
                "conditions": rng.choice(["", "No reposts without credit", "Edits allowed with permission"]),
                "reason": None if rng.random() < 0.3 else sentence(rng, 6),
                "created_at": utc_text(_date_between(rng, START, END)),
            })
        artists.append(tag["name"])
    ocs = [add(f"oc:{made_up_name(rng)}")["name"] for _ in range(max(3, n_artists // 3))]
    for alias, target in ALIASES.items():
        add(alias)["aliased_tag_id"] = vocab.by_name(target)["id"]
    for name, implied in IMPLICATIONS.items():
        vocab.by_name(name)["implied_tag_ids"] = [vocab.by_name(n)["id"] for n in implied]
    return {"artists": artists, "ocs": ocs}


def _users(vocab: Vocabulary, rng: random.Random, n: int, artists: list[str]) -> dict[int, Record]:
    fancy = ["Joey", "Ponyfan ☆", "ユーザー", "Мария", "Background Artist", "Carcer", "user with spaces",
             "Ça va", "dot.name", "Le-Dash"]
    used: set[str] = set()
    users: dict[int, Record] = {}
    user_id = 1
    for i in range(n):
        name = fancy[i] if i < len(fancy) else made_up_name(rng).capitalize() + str(rng.randint(1, 999))
        while name in used:
            name += "_"
        used.add(name)
        created = _date_between(rng, START - timedelta(days=300), END - timedelta(days=30))
        role = {0: "admin", 1: "moderator", 2: "assistant"}.get(i, "user")
        user = {
            "id": user_id, "name": name, "slug": slug(name), "role": role,
            "description": None if rng.random() < 0.3 else message_text(rng, []),
            "avatar": f"{created.year}/{created.month}/{created.day}/{user_id}.png" if rng.random() < 0.6 else None,
            "created_at": utc_text(created), "links": [], "awards": [], "deleted": i > 5 and rng.random() < 0.05,
        }
        if artists and rng.random() < 0.25:
            user["links"].append({"user_id": user_id, "created_at": utc_text(created + timedelta(days=3)),
                                  "state": "verified", "tag_id": vocab.by_name(rng.choice(artists))["id"]})
        for badge_id, title, image in rng.sample(BADGES, rng.randint(0, 3)):
            user["awards"].append({
                "id": badge_id, "title": title, "image": image,
                "label": rng.choice(["", "Thanks for your support", "Best Artist 2016"]),
                "awarded_on": utc_text(_date_between(rng, created, END)),
            })
        users[user_id] = user
        user_id += rng.choice((1, 1, 1, 3))
    return users


def _date_image(rng: random.Random, image: Record, created: datetime, previous: Record | None) -> None:
    """Some images were imported earlier or tie with the one before; updates come later."""
    roll = rng.random()
    if roll < 0.04 and previous is not None:
        image["first_seen_at"] = utc_text(created - timedelta(days=rng.randint(1, 400)))  # imported earlier
    elif roll < 0.08 and previous is not None:
        image["first_seen_at"] = previous["first_seen_at"]  # a tie
    image["updated_at"] = utc_text(min(created + timedelta(seconds=rng.randint(0, 86400 * 700)), END))


def _set_fate(rng: random.Random, image: Record, merge_targets: Sequence[int]) -> None:
    """Delete, merge (into one of ``merge_targets``, earlier visible images) or leave unprocessed a few images."""
    roll = rng.random()
    if roll < 0.02:
        image.update(hidden_from_users=True, deletion_reason=rng.choice(DELETION_REASONS))
    elif roll < 0.03:
        image.update(hidden_from_users=True, duplicate_of=rng.choice(merge_targets))
    elif roll < 0.05:
        image.update(thumbnails_generated=False, processed=rng.random() < 0.3)


def _upload_time(index: int, count: int, rng: random.Random) -> datetime:
    """When the ``index``-th of ``count`` images was uploaded: evenly spread over the board's years."""
    step = (END - START) / max(count, 1)
    return START + step * index + timedelta(seconds=rng.randint(0, max(int(step.total_seconds()) - 1, 0)))


def _comment_on(g: Maker, rng: random.Random, comment_id: int, image: Record, users: Sequence[int]) -> Record:
    """A comment on ``image`` by one of ``users`` (or anonymous); a few hidden, destroyed or edited.

    The image's ``comment_count`` counts it unless it is destroyed.
    """
    user_id = None if rng.random() < 0.15 else rng.choice(users)
    created = _date_between(rng, parse_utc(image["created_at"]), END)
    comment = make_comment(g, rng, comment_id, image["id"], user_id, utc_text(created))
    roll = rng.random()
    if roll < 0.05:
        comment.update(hidden_from_users=True, deletion_reason="Rule #1")
    elif roll < 0.07:
        comment.update(destroyed_content=True, hidden_from_users=True)
    elif roll < 0.15:
        edited = created + timedelta(minutes=rng.randint(1, 600))
        comment.update(edited_at=utc_text(edited), updated_at=utc_text(edited),
                       edit_reason=rng.choice([None, "typo", "fixed link"]))
    if not comment["destroyed_content"]:
        image["comment_count"] += 1
    return comment


def _make_forums() -> dict[str, Record]:
    """The board's forums, by short name, with no topics yet."""
    return {short: {"id": i, "short_name": short, "name": name, "description": description, "access_level": access,
                    "topic_count": 0, "post_count": 0}
            for i, (short, name, description, access) in enumerate(FORUMS, start=1)}


def _make_topic(g: Maker, rng: random.Random, topic_id: int, forum: Record, used_slugs: set[tuple[str, str]],
                users: Sequence[int], first_post_id: int) -> tuple[Record, list[Record]]:
    """A topic of ``forum`` and its posts (ids from ``first_post_id``); the forum's counters count it."""
    title = sentence(rng, rng.randint(2, 7)).rstrip(".")
    if topic_id % 7 == 3:
        title += " " + rng.choice(UNICODE_SNIPPETS)
    topic_slug = slug_of_title(title, topic_id)
    while (forum["short_name"], topic_slug) in used_slugs:
        topic_slug += "-"
    used_slugs.add((forum["short_name"], topic_slug))
    created = _date_between(rng, START, END - timedelta(days=5))
    user_id = None if rng.random() < 0.1 else rng.choice(users)
    topic = make_topic_record(
        topic_id, forum["short_name"], topic_slug, title, user_id,
        background_pony(topic_id, "op") if user_id is None else g.user_name(user_id), utc_text(created),
        view_count=rng.randint(0, 100000), sticky=topic_id % 9 == 1, locked=topic_id % 11 == 5,
        hidden=topic_id % 13 == 7)
    count = 80 if topic_id == 2 else rng.randint(1, 30)  # topic 2 spans several pages
    when = created
    posts = []
    for position in range(count):
        when = min(when + timedelta(minutes=rng.randint(1, 3000)), END)
        posts.append(_reply(g, rng, first_post_id + position, topic, position, users, when))
    topic["post_count"] = count
    topic["last_replied_to_at"] = utc_text(when)
    if not topic["hidden"]:
        forum["topic_count"] += 1
        forum["post_count"] += count
    return topic, posts


def _reply(g: Maker, rng: random.Random, post_id: int, topic: Record, position: int, users: Sequence[int],
           when: datetime) -> Record:
    author = None if rng.random() < 0.1 else rng.choice(users)
    post = make_post(g, rng, post_id, topic, position, author, utc_text(when))
    roll = rng.random()
    if roll < 0.04 and position:
        post.update(hidden_from_users=True, deletion_reason="Off topic")
    elif roll < 0.06 and position:
        post.update(destroyed_content=True, hidden_from_users=True)
    elif roll < 0.12:
        edited = when + timedelta(minutes=5)
        post.update(edited_at=utc_text(edited), updated_at=utc_text(edited), edit_reason=None)
    return post


def _make_gallery(rng: random.Random, gallery_id: int, user_id: int, visible: Sequence[int]) -> Record:
    """A gallery of 1 to 40 of the ``visible`` images, made by ``user_id``."""
    images = rng.sample(visible, min(len(visible), rng.randint(1, 40)))
    created = _date_between(rng, START, END)
    return {
        "id": gallery_id,
        "title": (sentence(rng, rng.randint(1, 4)).rstrip(".") + ("" if gallery_id % 6 else " 🎨"))[:100],
        "description": "" if rng.random() < 0.3 else message_text(rng, visible),
        "spoiler_warning": rng.choice(["", "", "", "grimdark", "contains spoilers"]),
        "thumbnail_id": images[0] if images else None,
        "user_id": user_id,
        "image_ids": images,
        "subscriber_count": rng.randint(0, 40),
        "created_at": utc_text(created),
        "updated_at": utc_text(min(created + timedelta(days=rng.randint(0, 300)), END)),
    }


def _make_filters(vocab: Vocabulary, users: dict[int, Record], key_user: int, rng: random.Random) -> list[Record]:
    """The system filters (``Default`` among them) and some users' own, public or not."""
    def ids(*names: str) -> list[int]:
        return [vocab.by_name(n)["id"] for n in names]

    system = [
        ("Default", "The site's default filter: hides explicit and grotesque content.",
         ids("explicit", "grotesque"), ids("questionable", "semi-grimdark", "grimdark"), "", "score.lt:-5"),
        ("Everything", "This filter won't filter anything out at all - that means NSFW content!",
         [], [], None, None),
        ("18+ Dark", "Shows everything, spoilers grotesque", [], ids("grotesque"), "", ""),
        ("Maximum Spoilers", "Spoilers everything that is not safe", [], ids("suggestive", "questionable",
                                                                            "explicit", "grimdark"),
         "", "score.lt:0"),
    ]
    filters = []
    for name, description, hidden, spoilered, hidden_complex, spoilered_complex in system:
        filters.append(make_filter(len(filters) + 1, name, None, utc_text(START), description=description,
                                   user_count=rng.randint(1000, 90000), hidden_tag_ids=hidden,
                                   spoilered_tag_ids=spoilered, hidden_complex=hidden_complex,
                                   spoilered_complex=spoilered_complex))
    owners = [key_user, key_user] + sorted(users)[: max(2, len(users) // 3)]
    for i, owner in enumerate(owners):
        hidden = rng.sample(sorted(vocab.tags), rng.randint(0, 4))
        filters.append(make_filter(
            len(filters) + 1, f"{users[owner]['name']}'s filter {i}", owner, utc_text(_date_between(rng, START, END)),
            description=sentence(rng, 5), public=i % 2 == 1, user_count=rng.randint(0, 30),
            hidden_tag_ids=sorted(hidden), hidden_complex=rng.choice(["", None, "score.lt:0", "rarity, explicit"]),
            spoilered_complex=rng.choice(["", None])))
    return filters


ACTIVITY = {"uploads_count": "uploader_id", "comments_count": "user_id", "posts_count": "user_id",
            "topics_count": "user_id"}


def _count_activity(users: dict[int, Record], kind: str, records: Iterable[Record]) -> None:
    """Add ``records`` (uploads, comments, posts or topics) to their authors' ``kind`` counter."""
    field = ACTIVITY[kind]
    for record in records:
        if record.get(field) in users:
            users[record[field]][kind] += 1


# ---------------------------------------------------------------------------- the streaming generator


@dataclass(frozen=True)
class BoardSizes:
    """How big each part of the board is, for ``images`` images.

    Artists and accounts grow with the board up to a cap (a real board's vocabulary grows far
    more slowly than its images); comments, topics and galleries are proportional. The defaults
    make the dense boards tests use; a benchmark's large board asks for fewer of each.
    """

    images: int
    comments_per_image: float = 1.5
    images_per_topic: int = 12
    images_per_gallery: int = 20
    max_artists: int = 20_000
    max_users: int = 20_000

    @property
    def artists(self) -> int:
        return min(max(5, self.images // 8), self.max_artists)

    @property
    def users(self) -> int:
        return min(max(12, self.images // 8), self.max_users)

    @property
    def comments(self) -> int:
        return round(self.images * self.comments_per_image)

    @property
    def topics(self) -> int:
        return max(8, self.images // self.images_per_topic)

    @property
    def galleries(self) -> int:
        return max(3, self.images // self.images_per_gallery)


@dataclass
class BoardReport:
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
                   sizes: BoardSizes | None = None, defer_fts: bool = True, pictures: bool = False,
                   progress: Callable[[BoardReport], None] | None = None) -> BoardReport:
    """Write a generated board of ``images`` images into a new board database at ``path``.

    ``pictures`` gives it files someone can look at (:mod:`.pictures`), at the cost of drawing
    them; otherwise its files are tiny stand-ins, which is all syncing needs.
    """
    started = time.perf_counter()
    db = open_database(path)
    create_site_tables(db)
    board = _Generation(db, seed, sizes or BoardSizes(images), pictures)
    with _loading(db), (deferred_fts(db) if defer_fts else nullcontext()):
        board.write(batch, progress)
    refresh_statistics(db)  # as a sync ends
    db.close()
    board.report.seconds = time.perf_counter() - started
    return board.report


class _Generation:
    """The streaming generation: the state carried from one batch to the next, all of it bounded."""

    def __init__(self, db: Database, seed: int, sizes: BoardSizes, pictures: bool) -> None:
        self.db, self.sizes, self.seed, self.pictures = db, sizes, seed, pictures
        self.rng = random.Random(seed)
        self.vocab = Vocabulary()
        self.groups = _make_tags(self.vocab, self.rng, n_artists=sizes.artists)
        self.users = _users(self.vocab, self.rng, sizes.users, self.groups["artists"])
        self.key_user = sorted(u["id"] for u in self.users.values() if u["role"] == "user" and not u["deleted"])[0]
        self.filters = _make_filters(self.vocab, self.users, self.key_user, self.rng)
        for user in self.users.values():
            user.update(dict.fromkeys(ACTIVITY, 0))
        self.all_users = sorted(self.users)
        self.active = sorted(u for u, rec in self.users.items() if not rec["deleted"])
        self.writer = ImageWriter(db, FILE_ROOT)
        self.tag_counts: Counter[int] = Counter()
        self.recent: deque[int] = deque(maxlen=1_000)  # earlier visible images, what a duplicate merges into
        self.features: list[Record] = []
        self.report = BoardReport()
        self.image_id, self.comment_id, self.gallery_id = 0, 1, 1
        self.previous: Record | None = None

    def user_name(self, user_id: int | None) -> str | None:
        user = self.users.get(user_id) if user_id is not None else None
        return user["name"] if user else None

    def link_targets(self) -> Sequence[int]:
        return list(self.recent)[-50:]

    def write(self, batch: int, progress: Callable[[BoardReport], None] | None) -> None:
        for start in range(0, self.sizes.images, batch):
            self._image_batch(range(start, min(start + batch, self.sizes.images)))
            if progress:
                progress(self.report)
        self._forums(max(1, batch // 25))
        with self.db.atomic():
            save_features(self.db, self.features)
            aliases, implied_by = self.vocab.alias_names(), self.vocab.implied_by()
            save(self.db, TAGS, [render_tag(t, self.vocab.tags, self.tag_counts, aliases, implied_by, URLS)
                                 for _, t in sorted(self.vocab.tags.items())])
            save(self.db, FILTERS, [render_filter(f) for f in self.filters])
            save(self.db, USERS, [render_user(u, URLS) for _, u in sorted(self.users.items()) if not u["deleted"]])
            self.db["gone_users"].insert_all([{"id": u["id"], "checked_at": u["created_at"]}
                                              for u in self.users.values() if u["deleted"]], pk="id")
            self.db["site_keys"].insert({"key": f"testkey-{self.seed}", "user_id": self.key_user})
            self.db["site_board"].insert_all([{"key": "seed", "value": str(self.seed)},
                                              {"key": "pictures", "value": str(int(self.pictures))}], pk="key")
        self.report.counts.update(tags=len(self.vocab.tags), users=len(self.active), filters=len(self.filters))

    # -- images, with their comments and galleries -------------------------------------------------

    def _image_batch(self, indexes: range) -> None:
        images = [self._image(i) for i in indexes]
        comments = self._comments(images, indexes)
        visible = [image["id"] for image in images if not image["hidden_from_users"]]
        galleries = self._galleries(visible, indexes.stop)
        self._count(images, comments, visible)
        if indexes.start == 0:
            self._interactions(visible)
        with self.db.atomic():
            save_images(self.writer, images, self.vocab.tags)
            save_history(self.db, [(image, None) for image in images])
            save_messages(self.db, COMMENTS, comments, self.users)
            save_galleries(self.db, galleries, self.users)
        self.report.counts.update(images=len(images), comments=len(comments), galleries=len(galleries))

    def _image(self, index: int) -> Record:
        rng, count = self.rng, self.sizes.images
        created = _upload_time(index, count, rng)
        image = new_image(self, rng, self.image_id, utc_text(created), self.groups, self.all_users)
        _date_image(rng, image, created, self.previous)
        if index == count - 1:  # the newest image is always still processing, like a fresh upload
            image.update(thumbnails_generated=False, processed=False)
        elif index:
            _set_fate(rng, image, self.recent)
        if not image["hidden_from_users"]:
            self.recent.append(image["id"])
            if index % max(1, count // 8) == 0 and len(self.features) < 8:  # featured the day after
                self.features.append({"image_id": image["id"], "created_at": utc_text(created + timedelta(days=1))})
        self.previous = image
        self.image_id += 1 if rng.random() > 0.02 else rng.randint(2, 5)  # a few uploads never finished
        return image

    def _comments(self, images: list[Record], indexes: range) -> list[Record]:
        """This batch's share of the board's comments, each on one of its images."""
        total, count = self.sizes.comments, self.sizes.images
        comments = []
        for _ in range(total * indexes.stop // count - total * indexes.start // count):
            comments.append(_comment_on(self, self.rng, self.comment_id, self.rng.choice(images), self.active))
            self.comment_id += 1
        return comments

    def _galleries(self, visible: list[int], done: int) -> list[Record]:
        """The galleries due by the ``done``-th image, each of images of this batch."""
        due = self.sizes.galleries * done // self.sizes.images
        galleries = []
        while visible and self.gallery_id <= due:
            user_id = self.key_user if self.gallery_id == 1 else self.rng.choice(self.active)
            galleries.append(_make_gallery(self.rng, self.gallery_id, user_id, visible))
            self.gallery_id += 1
        return galleries

    def _interactions(self, visible: list[int]) -> None:
        """The key owner's votes, favourites and hides, on images of the first batch."""
        rows = []
        for image_id in self.rng.sample(visible, min(len(visible), 12)):
            kind = self.rng.choice(["faved", "voted", "voted", "hidden"])
            value = self.rng.choice(["up", "down"]) if kind == "voted" else ""
            rows.append({"image_id": image_id, "user_id": self.key_user, "interaction_type": kind, "value": value})
        self.db["site_interactions"].insert_all(rows)

    def _count(self, images: list[Record], comments: list[Record], visible: list[int]) -> None:
        """Tags' ``images`` (visible images only) and the accounts' activity counters."""
        shown = set(visible)
        for image in images:
            if image["id"] in shown:
                self.tag_counts.update(image["tag_ids"])
        _count_activity(self.users, "uploads_count", images)
        _count_activity(self.users, "comments_count", comments)

    # -- forums ---------------------------------------------------------------------------------------

    def _forums(self, batch: int) -> None:
        """Topics and their posts, ``batch`` topics per transaction; the forums last, with their counts."""
        forums = _make_forums()
        readable = reachable_forums(forums)
        used_slugs: set[tuple[str, str]] = set()
        post_id = 1
        shorts = [f[0] for f in FORUMS]
        for start in range(1, self.sizes.topics + 1, batch):
            with self.db.atomic():
                for topic_id in range(start, min(start + batch, self.sizes.topics + 1)):
                    forum = forums[shorts[(topic_id - 1) % len(shorts)]]  # topics go round the forums
                    topic, posts = _make_topic(self, self.rng, topic_id, forum, used_slugs, self.active, post_id)
                    post_id += len(posts)
                    _count_activity(self.users, "topics_count", [topic])
                    _count_activity(self.users, "posts_count", posts)
                    save_topic(self.db, topic, posts, self.users, readable=forum["short_name"] in readable)
                    self.report.counts.update(topics=1, posts=len(posts))
        save(self.db, FORUM_RECORDS, [render_forum(forums[short]) for short in sorted(readable)])


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
