"""A board of Derpibooru's shape, drawn with numpy: what each image has, chunk by chunk.

The whole board (``docs/dump.md``, board-scale facts) is 3.5 million images, 65 million taggings
and some 40 million tag-change rows: too many for records made one by one, as the test boards
are. So the board is drawn as arrays. :class:`Shape` holds what is decided per image up front
(its id, upload time, fate, how many tags, comments, favourites, tag-change batches and sources
it gets: some 100 MB at the whole board); the rows themselves (today's taggings, the tag history)
are drawn per fixed chunk of images from a generator seeded by ``(seed, what, chunk)``, so any
table can be written by any process, in any order, and the same chunk always comes out the
same. Every figure below is a choice, named with its reason; the facts they follow are Derpibooru's
(tags per image p50 16, p90 33, p99 58; ``safe`` on 64%; female, pony, solo and oc on about half
to a quarter of images; tag changes concentrated on few images).

Tag history is drawn backwards-consistent with today's tags: a batch picks a few tags among the
image's own (all but its rating) and some it no longer has, and whether each row adds or removes
is decided last, from the parity of the tag's changes on that image, so that a tag's history
alternates and ends added exactly when the image has it today.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import cached_property

import numpy as np

from ...philomena import RATINGS
from ...search.slugs import slug
from ..board.builders import (BODY_TYPES, CHARACTERS, ERRORS, FANMADE, GENERAL, OFFICIAL, SPECIES, SPOILERS,
                              SYLLABLES, WORDS)
from ..board.generate import ALIASES, IMPLICATIONS

__all__ = ["Shape", "Tags", "Taggings", "History", "CHUNK", "START", "DUMPED", "syllables", "unique_names"]

CHUNK = 32_768  # images per chunk: fixed, so a chunk's rows never depend on how the work is split
START = int(datetime(2012, 1, 2, tzinfo=timezone.utc).timestamp())  # Derpibooru's first uploads
DUMPED = int(datetime(2026, 8, 13, 4, 0, tzinfo=timezone.utc).timestamp())  # the site's dump of that day
_DAY = 86_400

# Kept image rows per id: ids run to about 3.7M for 3.5M images (deleted and merged rows gone).
_KEPT_IDS = 0.946
_HIDDEN, _MERGED = 0.02, 0.015  # rows listed in image_hides, and in image_duplicates
_UPLOAD_GROWTH = 1.0  # the upload rate grows e-fold over the 14 years
# Tags per image: log-normal, median 16 and sigma 0.55, 2% of images drawn with sigma 0.9 for the
# tail: p75 23, p90 33, p99 59, p99.9 96, 0.08% over 100, as on Derpibooru.
_TAGS_MEDIAN, _TAGS_SIGMA, _TAGS_WIDE, _WIDE_SIGMA, _MOST_TAGS = 16.0, 0.55, 0.02, 0.9, 400
_OVERDRAWN = 1.12  # long-tail tags drawn per tag wanted: repeats are dropped, then the extra ones
_PRIORITY_BITS = 20
_PRIORITIES = (1 << _PRIORITY_BITS) - 1
# One rating each: safe on 64% (2,240,831 of 3.5M), the others in Derpibooru's rough order.
RATING_SHARES = {"safe": 0.64, "suggestive": 0.15, "questionable": 0.07, "explicit": 0.11,
                 "semi-grimdark": 0.015, "grimdark": 0.01, "grotesque": 0.005}
# The most used tags, each on its share of images (female 1,733,555 / 3.5M; pony; solo; oc...).
HEAD_SHARES = {"female": 0.495, "pony": 0.415, "solo": 0.406, "oc": 0.27, "g4": 0.30, "simple background": 0.25,
               "smiling": 0.25, "clothes": 0.22, "mare": 0.20, "oc only": 0.20, "unicorn": 0.20, "pegasus": 0.19,
               "open mouth": 0.17, "solo female": 0.15, "blushing": 0.14, "looking at you": 0.14, "male": 0.14,
               "cute": 0.13, "earth pony": 0.13, "twilight sparkle": 0.11}
_ARTIST_SHARE, _SECOND_ARTIST = 0.90, 0.06  # images with an artist tag, and with a second one
_TAGS_PER_IMAGE = 0.10  # distinct tags per image: 350,000 at the whole board (10^5 order), at least 3,000
_ARTISTS = 0.2  # of the tags, artist:... ones
_ALIASES_PER_TAG = 0.005
_USERS_PER_IMAGE = 0.25
_ANONYMOUS = 0.15  # uploads with no uploader
# Tag changes: 60% of images none; the others a log-normal number of batches (median 4.4, sigma
# 1.3: a long tail), 1 + Poisson(1.7) tags each. At 3.5M images: some 14M batches, 37M rows.
_EDITED, _BATCH_MEDIAN, _BATCH_SIGMA, _MOST_BATCHES = 0.40, 4.4, 1.3, 2_000
_TAGS_PER_BATCH = 1.7
_OUTLIERS = (75_260, 14_351)  # the two images with the most tag-change rows at the whole board
_OUTLIERS_AT_LEAST = (300, 100)  # in proportion to the board, but never lost in a small one's tail
_WHOLE_BOARD = 3_500_000


def syllables(number: int) -> str:
    """A made-up word for ``number`` (bijective base-20 syllables)."""
    word = ""
    number += 1
    while number:
        number, digit = divmod(number - 1, len(SYLLABLES))
        word = SYLLABLES[digit] + word
    return word


def unique_names(names: list[str]) -> list[str]:
    """``names`` with any repeated one made unique by its place (syllables can spell alike)."""
    seen: set[str] = set()
    out = []
    for n, name in enumerate(names):
        if name in seen:
            name = f"{name} {n}"
        seen.add(name)
        out.append(name)
    return out


def _cdf(weights: np.ndarray) -> np.ndarray:
    cumulative = np.cumsum(weights)
    return cumulative / cumulative[-1]


@dataclass
class Tags:
    """The board's tags: ids 1..count, laid out as ratings, the most used, artists, the long tail,
    and aliases last (aliased tags have no taggings: the site rewrites them to their target)."""

    count: int
    names: list[str] = field(default_factory=list)
    categories: list[str | None] = field(default_factory=list)
    aliases: list[tuple[int, int]] = field(default_factory=list)
    implications: list[tuple[int, int]] = field(default_factory=list)

    @classmethod
    def made(cls, count: int) -> Tags:
        tags = cls(count)
        fixed = [n for n in (*CHARACTERS, *SPECIES, *GENERAL, *BODY_TYPES, *ERRORS, *SPOILERS, *FANMADE, *OFFICIAL)
                 if n not in HEAD_SHARES and n not in RATINGS]
        aliased = max(len(ALIASES), int(count * _ALIASES_PER_TAG))
        artists = int(count * _ARTISTS)
        tail = count - len(RATINGS) - len(HEAD_SHARES) - artists - aliased
        made_up = [f"oc:{syllables(k)}" if k % 7 == 0 else f"{WORDS[k % len(WORDS)]} {syllables(k)}"
                   for k in range(tail - len(fixed))]
        names = [*RATING_SHARES, *HEAD_SHARES, *(f"artist:{syllables(k)}" for k in range(artists)), *fixed, *made_up]
        by_name = {name: n + 1 for n, name in enumerate(names)}
        alias_names = [(name, by_name[target]) for name, target in ALIASES.items() if target in by_name]
        alias_names += [(f"{names[(k % 400) + 7]} (old {k})", (k % 400) + 8) for k in range(aliased - len(alias_names))]
        tags.names = unique_names(names + [name for name, _ in alias_names])
        tags.aliases = [(len(names) + n + 1, target) for n, (_, target) in enumerate(alias_names)]
        tags.implications = [(by_name[a], by_name[b]) for a, targets in IMPLICATIONS.items() for b in targets
                             if a in by_name and b in by_name]
        tags.categories = [_category(name) for name in tags.names]
        return tags

    @property
    def first_artist(self) -> int:
        return len(RATINGS) + len(HEAD_SHARES) + 1

    @property
    def artists(self) -> int:
        return int(self.count * _ARTISTS)

    @property
    def first_tail(self) -> int:
        return self.first_artist + self.artists

    @property
    def drawn(self) -> int:
        """The tags images are tagged with: all but the aliases."""
        return self.count - len(self.aliases)

    @cached_property
    def tail_cdf(self) -> np.ndarray:
        """The long tail: Zipf-like, the r-th most used in proportion to 1 / (r + 10)."""
        return _cdf(1.0 / (np.arange(self.drawn - self.first_tail + 1) + 11.0))

    @cached_property
    def artist_cdf(self) -> np.ndarray:
        return _cdf(1.0 / (np.arange(self.artists) + 4.0) ** 1.1)

    def slugs(self) -> list[str]:
        return [slug(name) for name in self.names]


def _category(name: str) -> str | None:
    if name in RATINGS:
        return "rating"
    if name.startswith("artist:"):
        return "origin"
    if name.startswith("oc:"):
        return "oc"
    for group, category in ((CHARACTERS, "character"), (SPECIES, "species"), (BODY_TYPES, "body-type"),
                            (ERRORS, "error"), (SPOILERS, "spoiler"), (FANMADE, "content-fanmade"),
                            (OFFICIAL, "content-official")):
        if name in group:
            return category
    return None


@dataclass(frozen=True)
class Taggings:
    """One chunk's taggings today: parallel arrays, sorted by image row then tag id."""

    rows: np.ndarray  # the image's row in the chunk
    tags: np.ndarray

    def keys(self, tag_count: int) -> np.ndarray:
        return self.rows * (tag_count + 1) + self.tags


@dataclass(frozen=True)
class History:
    """One chunk's tag changes: batches (sorted by image row, then time) and their tag rows."""

    batch_rows: np.ndarray  # each batch's image row in the chunk
    times: np.ndarray
    users: np.ndarray  # 0 for a change by no known user
    change: np.ndarray  # each tag row's batch, in the chunk
    tags: np.ndarray
    added: np.ndarray


class Shape:
    """What each image of a board of ``images`` rows (seed ``seed``) has, decided up front."""

    def __init__(self, images: int, seed: int) -> None:
        if images < 1:
            raise ValueError("a board has at least one image")
        self.images, self.seed = images, seed
        rng = np.random.default_rng([seed, 0])
        self._place(rng)
        self._count(rng)
        self.batches = self._batches(rng)
        self.tags = Tags.made(max(3_000, int(images * _TAGS_PER_IMAGE)))

    def _place(self, rng: np.random.Generator) -> None:
        """Ids with gaps, upload times increasing with them, and which rows are hidden or merged."""
        n = self.images
        id_space = max(n, round(n / _KEPT_IDS))
        dropped = np.zeros(id_space, bool)
        dropped[rng.choice(np.arange(1, id_space), id_space - n, replace=False)] = True
        self.ids = np.flatnonzero(~dropped).astype(np.int64) + 1
        share = (self.ids - 1 + rng.random(n)) / id_space  # increasing with id
        growth = np.log1p(share * np.expm1(_UPLOAD_GROWTH)) / _UPLOAD_GROWTH
        self.created = START + (growth * (DUMPED - _DAY - START)).astype(np.int64)
        fate = rng.random(n)
        self.fate = np.where(fate < _HIDDEN, 1, np.where(fate < _HIDDEN + _MERGED, 2, 0)).astype(np.int8)
        self.fate[0] = 0

    def _count(self, rng: np.random.Generator) -> None:
        """How many tags, comments, favourites and sources each image gets, and who uploaded it."""
        n = self.images
        sigma = np.where(rng.random(n) < _TAGS_WIDE, _WIDE_SIGMA, _TAGS_SIGMA)
        self.tag_counts = np.clip(np.rint(rng.lognormal(np.log(_TAGS_MEDIAN), sigma)), 2, _MOST_TAGS).astype(np.int16)
        self.comments = rng.negative_binomial(0.6, 0.6 / 3.6, n)  # mean 3, most a few, some hundreds
        faves = rng.negative_binomial(0.5, 0.5 / 5.5, n)  # mean 5: kept modest, a large table
        self.sources = rng.choice(4, n, p=[0.25, 0.63, 0.09, 0.03])
        self.users = max(50, int(n * _USERS_PER_IMAGE))
        self.faves = np.minimum(faves, self.users)  # by distinct users
        self.uploaders = np.where(rng.random(n) < _ANONYMOUS, 0,
                                  (self.users * rng.random(n) ** 2.5).astype(np.int64) + 1)

    def _batches(self, rng: np.random.Generator) -> np.ndarray:
        n = self.images
        drawn = np.rint(rng.lognormal(np.log(_BATCH_MEDIAN), _BATCH_SIGMA, n))
        batches = np.where(rng.random(n) < _EDITED, np.clip(drawn, 1, _MOST_BATCHES), 0).astype(np.int64)
        scale = n / _WHOLE_BOARD
        for row, rows, least in zip(rng.choice(n, min(n, 2), replace=False), _OUTLIERS, _OUTLIERS_AT_LEAST):
            batches[row] = int(np.ceil(max(rows * scale, least) / (1 + _TAGS_PER_BATCH)))
        return batches

    @property
    def chunks(self) -> int:
        return -(-self.images // CHUNK)

    def span(self, chunk: int) -> slice:
        return slice(chunk * CHUNK, min(self.images, (chunk + 1) * CHUNK))

    def rng(self, what: int, chunk: int) -> np.random.Generator:
        return np.random.default_rng([self.seed, what, chunk])

    @cached_property
    def batch_starts(self) -> np.ndarray:
        """How many tag-change batches come before each chunk's (their ids follow on)."""
        per_chunk = np.add.reduceat(self.batches, np.arange(0, self.images, CHUNK))
        return np.concatenate([[0], np.cumsum(per_chunk)]).astype(np.int64)

    @cached_property
    def merge_targets(self) -> np.ndarray:
        """For each merged row, the row of the earlier visible image it was merged into."""
        merged = np.flatnonzero(self.fate == 2)
        visible = np.flatnonzero(self.fate == 0)
        before = np.searchsorted(visible, merged)
        pick = (self.rng(3, 0).random(len(merged)) * before).astype(np.int64)
        return visible[pick]

    def taggings(self, chunk: int) -> Taggings:
        """Today's taggings of ``chunk``: one rating, the most used tags by their shares, an
        artist or two, and the rest of each image's count from the long tail (repeats dropped)."""
        rows = self.span(chunk)
        n, tags, rng = rows.stop - rows.start, self.tags, self.rng(1, chunk)
        ratings = np.searchsorted(_cdf(np.array(list(RATING_SHARES.values()))), rng.random(n), side="right") + 1
        head_rows, head = np.nonzero(rng.random((n, len(HEAD_SHARES))) < np.array(list(HEAD_SHARES.values())))
        artist_rows = np.concatenate([np.flatnonzero(rng.random(n) < _ARTIST_SHARE),
                                      np.flatnonzero(rng.random(n) < _SECOND_ARTIST)])
        artists = tags.first_artist + np.searchsorted(tags.artist_cdf, rng.random(len(artist_rows)), side="right")
        have = 1 + np.bincount(head_rows, minlength=n) + np.bincount(artist_rows, minlength=n)
        wanted = self.tag_counts[rows].astype(np.int64)
        tail_counts = np.ceil(np.maximum(wanted - have, 0) * _OVERDRAWN).astype(np.int64)
        tail_rows = np.repeat(np.arange(n), tail_counts)
        tail = tags.first_tail + np.searchsorted(tags.tail_cdf, rng.random(len(tail_rows)), side="right")
        every_row = np.concatenate([np.arange(n), head_rows, artist_rows, tail_rows])
        every_tag = np.concatenate([ratings, head + len(RATINGS) + 1, artists, np.minimum(tail, tags.drawn)])
        return _trimmed(every_row, every_tag, wanted, tags, chunk)

    def history(self, chunk: int, today: Taggings) -> History:
        """The tag changes of ``chunk`` whose images have ``today``'s taggings (see the module's
        docstring for how they stay consistent with them)."""
        rows = self.span(chunk)
        n, rng, count = rows.stop - rows.start, self.rng(2, chunk), self.tags.count
        per_image = self.batches[rows]
        batch_rows = np.repeat(np.arange(n), per_image)
        created = self.created[rows][batch_rows]
        # Most edits come soon after the upload: the cube of a uniform draw, over the time left.
        times = created + 60 + ((DUMPED - 60 - created) * rng.random(len(batch_rows)) ** 3).astype(np.int64)
        order = np.lexsort((times, batch_rows))
        times = times[order]
        users = np.where(rng.random(len(times)) < 0.1, 0, rng.integers(1, self.users + 1, len(times)))
        sizes = 1 + rng.poisson(_TAGS_PER_BATCH, len(times))
        change = np.repeat(np.arange(len(times)), sizes)
        tags = self._changed_tags(rng, today, batch_rows[change], n)
        keys = _distinct_sorted(np.sort(change * (count + 1) + tags))  # a tag at most once in a batch
        change, tags = keys // (count + 1), keys % (count + 1)
        image = batch_rows[change]
        now = today.keys(count)  # sorted
        place = np.minimum(np.searchsorted(now, image * (count + 1) + tags), len(now) - 1)
        present = now[place] == image * (count + 1) + tags
        return History(batch_rows, times, users, change, tags, _added(image, tags, change, present))

    def _changed_tags(self, rng: np.random.Generator, today: Taggings, image: np.ndarray, n: int) -> np.ndarray:
        """A tag for each change row: one of the image's own but its rating, or of a few it lost."""
        own = np.bincount(today.rows, minlength=n)
        first = np.concatenate([[0], np.cumsum(own)[:-1]])
        lost = 1 + rng.poisson(0.3 * own)
        lost_first = np.concatenate([[0], np.cumsum(lost)[:-1]])
        lost_tags = self.tags.first_tail + np.searchsorted(self.tags.tail_cdf, rng.random(int(lost.sum())),
                                                           side="right")
        lost_tags = np.minimum(lost_tags, self.tags.drawn)
        choices = (own - 1 + lost)[image]
        pick = (rng.random(len(image)) * choices).astype(np.int64)
        mine = pick < (own - 1)[image]
        return np.where(mine, today.tags[np.clip(first[image] + 1 + pick, 0, len(today.tags) - 1)],
                        lost_tags[np.clip(lost_first[image] + pick - (own - 1)[image], 0, len(lost_tags) - 1)])


def _trimmed(rows: np.ndarray, tags: np.ndarray, wanted: np.ndarray, vocabulary: Tags, salt: int) -> Taggings:
    """Each image's drawn tags, repeats dropped, cut to its wanted count by dropping long-tail
    tags at random (its rating, most used tags and artists always kept).

    Done with two sorts of packed integers (image row, a priority, the tag): the priority is a
    hash of the image and tag, so a repeated tag sorts next to itself and is dropped there, and
    each image's tags come in a random order after the kept ones, to be cut at its count."""
    tag_bits = (vocabulary.count + 1).bit_length()
    priority = (tags * 2_654_435_761 + rows * 40_503 + salt * 97) % _PRIORITIES + 1
    priority[tags < vocabulary.first_tail] = 0
    keys = np.sort((rows << (_PRIORITY_BITS + tag_bits)) | (priority << tag_bits) | tags)
    keys = _distinct_sorted(keys)
    rows, tags = keys >> (_PRIORITY_BITS + tag_bits), keys & ((1 << tag_bits) - 1)
    per_row = np.bincount(rows, minlength=len(wanted))
    rank = np.arange(len(rows)) - (np.cumsum(per_row) - per_row)[rows]
    kept = (rank < wanted[rows]) | (tags < vocabulary.first_tail)
    keys = np.sort((rows[kept] << tag_bits) | tags[kept])
    return Taggings(keys >> tag_bits, keys & ((1 << tag_bits) - 1))


def _distinct_sorted(keys: np.ndarray) -> np.ndarray:
    """Sorted ``keys`` without repeats (``np.unique`` hashes first, several times slower here)."""
    return keys[np.concatenate([[True], keys[1:] != keys[:-1]])] if len(keys) else keys


def _added(image: np.ndarray, tags: np.ndarray, change: np.ndarray, present: np.ndarray) -> np.ndarray:
    """Whether each change row adds its tag: a tag's changes on an image alternate, and the last
    one adds it exactly when the image has it today."""
    pair = image * (int(tags.max(initial=0)) + 1) + tags
    order = np.argsort((pair << np.int64(int(change.max(initial=0)).bit_length())) | change)
    pair = pair[order]
    starts = np.flatnonzero(np.concatenate([[True], pair[1:] != pair[:-1]]))
    sizes = np.diff(np.concatenate([starts, [len(order)]]))
    rank = np.arange(len(order)) - np.repeat(starts, sizes)
    from_last = np.repeat(sizes, sizes) - 1 - rank
    added = np.empty(len(order), bool)
    added[order] = (from_last % 2 == 0) == present[order]
    return added

