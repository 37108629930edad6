"""Each table of the 2026 public dump, as COPY text drawn from a :class:`~.board_shape.Shape`.

One function per table yields its COPY text in pieces of some megabytes (a chunk of images, or
a slice of ids), never the whole table: the whole board's taggings alone are 65 million rows.
The big tables are rendered column by column with :mod:`.copy_text`; the small ones (tags,
users, forums: at most some hundred thousand rows) by plain Python formatting.

The tables agree with each other as the site's do: ``images.comment_count`` and ``favorites``
count the comments and favourites written, ``tags.image_count`` the taggings, a source change
sets a source the image has, every merged image has an accepted duplicate report. Proportions per
image at the whole board (chosen, where nobody publishes the site's counts): 3 comments, 5
favourites, 0.9 sources, a user per 4 images, a gallery per 40 images of 20 images each, a topic
per 100 images of 20 posts each, 97% with intensities.

A table also counts what the board's summary prints (:class:`Tally`): tags per image, ``safe``,
tag-change rows per image.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from math import gcd

import numpy as np

from ..board.builders import FORMATS, SYLLABLES, UNICODE_SNIPPETS, message_text, sentence
from ..board.generate import BADGES, DELETION_REASONS, FORUMS
from ..board.records import slug_of_title
from .board_shape import CHUNK, DUMPED, Shape, syllables, unique_names
from .copy_text import (Pool, bools, civil, constant, decimals, escape, hex_digests, ints, lines, signed_ints, strings,
                        timestamps, with_nulls)

__all__ = ["Tally", "Board", "TABLES", "AWKWARD"]

AWKWARD = "a\ttab, a\nnew line, a \\ backslash, \\N, \\.\nand a\r\nCRLF ✨"
_SLICE = 200_000  # rows of a table drawn by id slices per piece
_POOL = 4_096  # texts per pool: far more than zlib's 32 KB window sees at once


@dataclass
class Tally:
    """What the summary of a board says, counted while its tables are written."""

    rows: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)  # each table's drawing, rendering and deflating
    tags_per_image: list[np.ndarray] = field(default_factory=list)
    safe: int = 0
    change_rows_per_image: list[np.ndarray] = field(default_factory=list)


def _body(rng: random.Random) -> str:
    if rng.random() < 0.1:
        return message_text(rng, [1, 2, 3])
    sentences = 1 + min(int(rng.expovariate(0.8)), 12)
    return " ".join(sentence(rng, max(2, int(rng.lognormvariate(2.3, 0.6)))) for _ in range(sentences))


def _text(what: Callable[[random.Random], str], seed: int, count: int = _POOL) -> list[str]:
    rng = random.Random(seed)
    return [what(rng) for _ in range(count)]


class Board:
    """The shape, and the pools of texts its tables pick from."""

    def __init__(self, shape: Shape, tally: Tally) -> None:
        self.shape, self.tally = shape, tally

    @cached_property
    def messages(self) -> Pool:
        """Comment and post bodies: a sentence or a few (some 200 bytes on average), and one in ten
        the test boards' texts (unicode, links to images, CRLF, and now and then several kilobytes)."""
        return Pool.of(_text(_body, self.shape.seed))

    @cached_property
    def descriptions(self) -> Pool:
        """Most images have no description ("" or, on a few old ones, NULL), a third one; a few
        hold every character COPY text escapes."""
        texts = _text(lambda rng: message_text(rng, [1, 2, 3]), self.shape.seed + 1)
        return Pool.of([None] * 200 + [""] * 2400 + [AWKWARD] * 8 + texts[:1488])

    @cached_property
    def file_names(self) -> Pool:
        return Pool.of(_text(lambda rng: "_".join(rng.choice(SYLLABLES) + rng.choice(SYLLABLES)
                                                  for _ in range(rng.randint(1, 3))), self.shape.seed + 2))

    def ids(self, chunk: int) -> np.ndarray:
        return self.shape.ids[self.shape.span(chunk)]


def _tab(n: int) -> np.ndarray:
    return constant(b"\t", n)


def _row(*columns: np.ndarray | Pool.Picked | list) -> bytes:
    """A batch of rows from its columns: tab-separated, newline-ended (a column given as a list is
    made of those pieces)."""
    n = len(columns[0]) if isinstance(columns[0], np.ndarray) else len(columns[0].indexes)
    pieces: list[np.ndarray | Pool.Picked] = []
    for column in columns:
        pieces += [*(column if isinstance(column, list) else [column]), _tab(n)]
    pieces[-1] = constant(b"\n", n)
    return lines(pieces) if n else b""


def _user(users: np.ndarray) -> np.ndarray:
    """User ids, 0 written as NULL (no known user)."""
    return with_nulls(ints(users), users == 0)


def _after(rng: np.random.Generator, start: np.ndarray, power: float) -> np.ndarray:
    """Moments between ``start`` and the dump, most of them soon after ``start``."""
    return start + 60 + ((DUMPED - 60 - start) * rng.random(len(start)) ** power).astype(np.int64)


# --- images and what hangs on each one ---

_FORMAT_NAMES = [f for f, _, _ in FORMATS]
_FORMAT_CDF = np.cumsum([w for _, _, w in FORMATS]) / sum(w for _, _, w in FORMATS)
_FORMATS, _MIMES = strings(_FORMAT_NAMES), strings([m for _, m, _ in FORMATS])
_BYTES_PER_PIXEL = np.array([{"png": 1.2, "jpg": 0.35, "gif": 0.6, "webm": 2.0, "svg": 0.05}[f] for f in _FORMAT_NAMES])


def images(board: Board) -> Iterator[bytes]:
    shape = board.shape
    for chunk in range(shape.chunks):
        rows, rng = shape.span(chunk), shape.rng(10, chunk)
        n, ids, created = rows.stop - rows.start, board.ids(chunk), shape.created[rows]
        kind, width, height, size = _files(rng, n)
        up, down = _votes(rng, shape.faves[rows])
        digest = rng.integers(0, 256, (n, 64), dtype=np.uint8)
        original = np.where(rng.random(n)[:, None] < 0.7, digest, rng.integers(0, 256, (n, 64), dtype=np.uint8))
        name = board.file_names.pick(rng.integers(0, len(board.file_names), n))
        updated, hides = created + rng.integers(60, 30 * 86_400, n), rng.poisson(0.3, n)
        description = board.descriptions.pick(rng.integers(0, len(board.descriptions), n))
        fmt = _FORMATS[kind]
        yield _row(ints(ids), timestamps(created), timestamps(updated), ints(width), ints(height), ints(size),
                   ints(shape.comments[rows]), signed_ints(up - down), ints(shape.faves[rows]), ints(up), ints(down),
                   ints(hides), decimals(width / height, 10), _user(shape.uploaders[rows]),
                   bools(shape.fate[rows] != 0), _MIMES[kind], fmt, [name, constant(b".", n), fmt],
                   _view_path(ids, created, fmt), hex_digests(digest), hex_digests(original), description)


def _files(rng: np.random.Generator, n: int) -> tuple[np.ndarray, ...]:
    """Each file's format (an index into FORMATS), width, height and size in bytes."""
    kind = np.searchsorted(_FORMAT_CDF, rng.random(n), side="right")
    width = np.clip(rng.lognormal(np.log(1400), 0.6, n), 5, 20_000).astype(np.int64)
    height = np.clip(width / rng.lognormal(0, 0.35, n), 5, 20_000).astype(np.int64)
    size = np.clip(width * height * _BYTES_PER_PIXEL[kind] * rng.lognormal(0, 0.5, n), 89, 101_331_051)
    return kind, width, height, size.astype(np.int64)


def _votes(rng: np.random.Generator, faves: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Up and down votes: every favourite an upvote, and some more."""
    up = faves + rng.negative_binomial(1, 0.2, len(faves))
    return up, rng.poisson(0.05 * up + 0.2)


def _view_path(ids: np.ndarray, created: np.ndarray, fmt: np.ndarray) -> np.ndarray:
    """``/img/view/Y/M/D/ID.FORMAT``, the path of the file's view (month and day not zero-padded)."""
    year, month, day, *_ = civil(created)
    n = len(ids)
    slash = constant(b"/", n)
    return np.hstack([constant(b"/img/view/", n), ints(year), slash, ints(month), slash, ints(day), slash, ints(ids),
                      constant(b".", n), fmt])


def image_taggings(board: Board) -> Iterator[bytes]:
    shape, tally = board.shape, board.tally
    for chunk in range(shape.chunks):
        today = shape.taggings(chunk)
        ids = board.ids(chunk)
        tally.tags_per_image.append(np.bincount(today.rows, minlength=len(ids)))
        tally.safe += int((today.tags == 1).sum())
        yield _row(ints(ids[today.rows]), ints(today.tags))


def tags(board: Board) -> Iterator[bytes]:
    shape = board.shape
    counts = np.zeros(shape.tags.count + 1, np.int64)
    for chunk in range(shape.chunks):
        counts += np.bincount(shape.taggings(chunk).tags, minlength=len(counts))
    described = set(range(1, len(shape.tags.names) + 1, 97))
    out = []
    for tag_id, (name, tag_slug, category) in enumerate(zip(shape.tags.names, shape.tags.slugs(),
                                                             shape.tags.categories), start=1):
        about = f"All about {name}." if tag_id in described else ""
        out.append(f"{tag_id}\t{counts[tag_id]}\t{escape(name)}\t{escape(tag_slug)}\t{category or chr(92) + 'N'}\t"
                   f"{escape(about)}\t{escape(about[:40])}\n")
    yield from _joined(out)


def _joined(out: list[str], every: int = 50_000) -> Iterator[bytes]:
    for start in range(0, len(out), every):
        yield "".join(out[start:start + every]).encode()


def tag_aliases(board: Board) -> Iterator[bytes]:
    yield from _joined([f"{a}\t{b}\n" for a, b in board.shape.tags.aliases])


def tag_implications(board: Board) -> Iterator[bytes]:
    yield from _joined([f"{a}\t{b}\n" for a, b in board.shape.tags.implications])


def tag_changes(board: Board) -> Iterator[bytes]:
    shape = board.shape
    for chunk in range(shape.chunks):
        history = shape.history(chunk, shape.taggings(chunk))
        first = shape.batch_starts[chunk] + 1
        yield _row(ints(first + np.arange(len(history.times))), ints(board.ids(chunk)[history.batch_rows]),
                   timestamps(history.times), _user(history.users))


def tag_change_tags(board: Board) -> Iterator[bytes]:
    shape, tally = board.shape, board.tally
    for chunk in range(shape.chunks):
        history = shape.history(chunk, shape.taggings(chunk))
        tally.change_rows_per_image.append(np.bincount(history.batch_rows[history.change],
                                                       minlength=len(board.ids(chunk))))
        tag_bits = (shape.tags.count + 1).bit_length()  # by change, the added tags first, by tag
        keys = np.sort((history.change << (tag_bits + 1)) | (~history.added << tag_bits) | history.tags)
        first = shape.batch_starts[chunk] + 1
        yield _row(ints(first + (keys >> (tag_bits + 1))), ints(keys & ((1 << tag_bits) - 1)),
                   bools(~(keys >> tag_bits) & 1))


def image_intensities(board: Board) -> Iterator[bytes]:
    shape = board.shape
    for chunk in range(shape.chunks):
        rng = shape.rng(12, chunk)
        ids = board.ids(chunk)
        ids = ids[rng.random(len(ids)) < 0.97]
        corners = np.clip(rng.normal(128, 45, (len(ids), 4)), 0, 255)
        yield _row(ints(ids), *(decimals(corners[:, k]) for k in range(4)))


_HOSTS = ["https://www.deviantart.com/art/", "https://twitter.com/i/status/", "https://www.furaffinity.net/view/",
          "https://www.pixiv.net/en/artworks/", "https://www.tumblr.com/post/"]


def _sources(board: Board, chunk: int) -> tuple[np.ndarray, list[np.ndarray]]:
    """The chunk's sources: each one's image row and its URL's pieces (a few are blank)."""
    shape = board.shape
    rows, rng = shape.span(chunk), shape.rng(11, chunk)
    image = np.repeat(np.arange(rows.stop - rows.start), shape.sources[rows])
    host = strings(_HOSTS)[rng.integers(0, len(_HOSTS), len(image))]
    number = ints(rng.integers(10**6, 10**12, len(image)))
    blank = rng.random(len(image)) < 0.02
    host[blank], number[blank] = 0, 0
    return image, [host, number]


def image_sources(board: Board) -> Iterator[bytes]:
    for chunk in range(board.shape.chunks):
        image, url = _sources(board, chunk)
        yield _row(ints(board.ids(chunk)[image]), url)


def source_changes(board: Board) -> Iterator[bytes]:
    shape = board.shape
    per_chunk = np.add.reduceat(shape.sources, np.arange(0, shape.images, CHUNK))
    first = 1 + np.concatenate([[0], np.cumsum(per_chunk)])
    for chunk in range(shape.chunks):
        image, url = _sources(board, chunk)
        n = len(image)
        if not n:
            continue
        rng = shape.rng(13, chunk)
        when = timestamps(_after(rng, shape.created[shape.span(chunk)][image], 4))
        users = np.where(rng.random(n) < 0.2, 0, rng.integers(1, shape.users + 1, n))
        yield _row(ints(first[chunk] + np.arange(n)), ints(board.ids(chunk)[image]), when, when, _user(users), url)


def image_faves(board: Board) -> Iterator[bytes]:
    """Each image's favourites, by distinct users (:func:`_distinct`), ordered by user."""
    shape = board.shape
    for chunk in range(shape.chunks):
        rows, rng = shape.span(chunk), shape.rng(14, chunk)
        counts = shape.faves[rows]
        image = np.repeat(np.arange(len(counts)), counts)
        users = _distinct(rng, counts, shape.users) + 1
        order = np.lexsort((users, image))
        image, users = image[order], users[order]
        yield _row(timestamps(_after(rng, shape.created[rows][image], 3)), ints(board.ids(chunk)[image]), ints(users))


def image_hides(board: Board) -> Iterator[bytes]:
    shape = board.shape
    rows = np.flatnonzero(shape.fate == 1)
    reasons = Pool.of(DELETION_REASONS)
    yield _row(ints(shape.ids[rows]), reasons.pick(rows % len(reasons)))


def image_duplicates(board: Board) -> Iterator[bytes]:
    shape = board.shape
    rows = np.flatnonzero(shape.fate == 2)
    yield _row(ints(shape.ids[rows]), ints(shape.ids[shape.merge_targets]))


def duplicate_reports(board: Board) -> Iterator[bytes]:
    """An accepted report for each merged image (at its merge, by someone or no one), then a few
    rejected or open ones between unrelated images."""
    shape = board.shape
    rng = shape.rng(15, 0)
    merged = np.flatnonzero(shape.fate == 2)
    others = rng.choice(shape.images, max(1, shape.images // 300), replace=True)
    image = np.concatenate([merged, others])
    target = np.concatenate([shape.merge_targets, rng.integers(0, shape.images, len(others))])
    state = np.concatenate([np.zeros(len(merged), np.int64), rng.integers(1, 3, len(others))])
    when = _after(rng, np.maximum(shape.created[image], shape.created[target]), 4)
    users = np.where(rng.random(len(image)) < 0.3, 0, rng.integers(1, shape.users + 1, len(image)))
    reasons = Pool.of([None, "", "Same image, lower resolution", "Edited version", "Exact duplicate"])
    yield _row(ints(np.arange(1, len(image) + 1)), ints(shape.ids[image]), ints(shape.ids[target]), timestamps(when),
               timestamps(when + 3600), _user(users), strings(["accepted", "rejected", "open"])[state],
               reasons.pick(rng.integers(0, len(reasons), len(image))))


def image_features(board: Board) -> Iterator[bytes]:
    """A featured image a day, as many days as the board's size allows (every day at the whole board)."""
    shape = board.shape
    days = max(5, int((DUMPED - shape.created[0]) / 86_400 * min(1.0, shape.images / 3_500_000)))
    rng = shape.rng(16, 0)
    when = np.sort(rng.integers(shape.created[0] + 86_400, DUMPED, days))
    row = (rng.random(days) * np.searchsorted(shape.created, when)).astype(np.int64)
    yield _row(ints(shape.ids[row]), timestamps(when))


# --- comments and the forums: messages ordered by time, their ids following it ---

def _messages(board: Board, parents: np.ndarray, counts: np.ndarray, start: np.ndarray, what: int,
              ids_of_parents: np.ndarray) -> Iterator[bytes]:
    """Messages on ``parents`` (``counts`` each, after each one's ``start``), numbered in time order."""
    shape = board.shape
    rng = shape.rng(what, 0)
    owner = np.repeat(parents, counts)
    when = _after(rng, np.repeat(start, counts), 4)
    order = np.argsort(when, kind="stable")
    owner, when = owner[order], when[order]
    for first in range(0, len(owner), _SLICE):
        part = slice(first, first + _SLICE)
        n, rng = len(owner[part]), shape.rng(what, 1 + first // _SLICE)
        users = np.where(rng.random(n) < 0.1, 0, (shape.users * rng.random(n) ** 2).astype(np.int64) + 1)
        edited = when[part] + np.where(rng.random(n) < 0.05, rng.integers(60, 86_400, n), 0)
        yield _row(ints(np.arange(first + 1, first + n + 1)), ints(ids_of_parents[owner[part]]),
                   timestamps(when[part]), timestamps(edited), _user(users),
                   board.messages.pick(rng.integers(0, len(board.messages), n)))


def comments(board: Board) -> Iterator[bytes]:
    shape = board.shape
    yield from _messages(board, np.arange(shape.images), shape.comments, shape.created, 20, shape.ids)


class _Forums:
    """Forums, topics and the post counts in them (small: a topic per 100 images)."""

    def __init__(self, shape: Shape) -> None:
        rng = shape.rng(21, 0)
        self.forums = sorted((short, name, about) for short, name, about, access in FORUMS if access == "normal")
        self.count = max(10, shape.images // 100)
        self.forum = rng.integers(0, len(self.forums), self.count)
        self.posts = 1 + rng.negative_binomial(0.8, 0.8 / 19.8, self.count)
        self.created = np.sort(rng.integers(shape.created[0], DUMPED - 86_400, self.count))
        self.views = self.posts * rng.integers(5, 60, self.count)
        self.flags = rng.random((self.count, 2)) < [0.01, 0.03]
        self.titles = _text(lambda r: sentence(r, r.randint(2, 9)).rstrip(".") + (
            " " + r.choice(UNICODE_SNIPPETS) if r.random() < 0.05 else ""), shape.seed + 3, self.count)


def forums(board: Board) -> Iterator[bytes]:
    f = _Forums(board.shape)
    topics_in = np.bincount(f.forum, minlength=len(f.forums))
    posts_in = np.bincount(f.forum, weights=f.posts, minlength=len(f.forums)).astype(np.int64)
    out = []
    for n, (short, name, about) in enumerate(f.forums):
        mine = f.created[f.forum == n]
        first, last = (mine.min(), mine.max()) if len(mine) else (f.created[0], f.created[0])
        out.append(f"{n + 1}\t{topics_in[n]}\t{posts_in[n]}\t{_when(first)}\t{_when(last)}\t{escape(name)}\t"
                   f"{short}\t{escape(about)}\n")
    yield from _joined(out)


def _when(seconds: int) -> str:
    return timestamps(np.array([seconds])).tobytes().decode()


def topics(board: Board) -> Iterator[bytes]:
    f = _Forums(board.shape)
    n = f.count
    titles = Pool.of(f.titles)
    slugs = Pool.of([slug_of_title(t, i + 1) for i, t in enumerate(f.titles)])
    yield _row(ints(np.arange(1, n + 1)), ints(f.forum + 1), ints(f.posts), ints(f.views), timestamps(f.created),
               timestamps(_after(board.shape.rng(22, 0), f.created, 2)), bools(f.flags[:, 0]), bools(f.flags[:, 1]),
               titles.pick(np.arange(n)), slugs.pick(np.arange(n)))


def posts(board: Board) -> Iterator[bytes]:
    f = _Forums(board.shape)
    yield from _messages(board, np.arange(f.count), f.posts, f.created, 23, np.arange(1, f.count + 1))


# --- users, galleries, badges, artist links ---

def users(board: Board) -> Iterator[bytes]:
    count = board.shape.users
    names = unique_names([" ".join(filter(None, (syllables(k).title(), _WORDS[k % len(_WORDS)])))
                          for k in range(count)])
    yield from _joined([f"{k}\t{escape(name)}\n" for k, name in enumerate(names, start=1)])


_WORDS = ["", "Pony", "", "Artist", "", "", "✨"]


def _galleries(shape: Shape) -> tuple[np.random.Generator, np.ndarray]:
    rng = shape.rng(24, 0)
    sizes = 1 + rng.negative_binomial(0.7, 0.7 / 19.7, max(5, shape.images // 40))
    return rng, np.minimum(sizes, shape.images)


def galleries(board: Board) -> Iterator[bytes]:
    shape = board.shape
    rng, sizes = _galleries(shape)
    n = len(sizes)
    first_image = _gallery_images(shape, sizes)[np.cumsum(sizes) - sizes]
    created = shape.created[np.searchsorted(shape.ids, first_image)]
    titles = Pool.of(_text(lambda r: sentence(r, r.randint(1, 5)).rstrip("."), shape.seed + 4, 512))
    spoilers = Pool.of([""] * 9 + ["spoilers for the finale"])
    yield _row(ints(np.arange(1, n + 1)), ints(first_image), ints(rng.integers(1, shape.users + 1, n)), ints(sizes),
               timestamps(created), timestamps(_after(rng, created, 2)), titles.pick(np.arange(n) % len(titles)),
               spoilers.pick(np.arange(n) % len(spoilers)), board.messages.pick(np.arange(n) % len(board.messages)))


def _gallery_images(shape: Shape, sizes: np.ndarray) -> np.ndarray:
    """Each gallery's images, distinct within it (a random start, a stride prime to the count)."""
    return shape.ids[_distinct(shape.rng(25, 0), sizes, shape.images)]


def _distinct(rng: np.random.Generator, counts: np.ndarray, among: int) -> np.ndarray:
    """``counts[k]`` distinct numbers below ``among`` for each k, end to end: a random start and a
    stride prime to ``among``, so there are no repeats to drop and each count is exact."""
    stride = next(s for s in range(1_000_003, 3_000_000, 2) if gcd(s, among) == 1)
    owner = np.repeat(np.arange(len(counts)), counts)
    step = np.arange(len(owner)) - np.repeat(np.cumsum(counts) - counts, counts)
    return (rng.integers(0, among, len(counts))[owner] + step * stride) % among


def gallery_interactions(board: Board) -> Iterator[bytes]:
    shape = board.shape
    _, sizes = _galleries(shape)
    image = _gallery_images(shape, sizes)
    gallery = np.repeat(np.arange(1, len(sizes) + 1), sizes)
    position = np.arange(len(image)) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    for first in range(0, len(image), _SLICE):
        part = slice(first, first + _SLICE)
        yield _row(ints(image[part]), ints(gallery[part]), ints(position[part]))


def badges(board: Board) -> Iterator[bytes]:
    yield from _joined([f"{i}\t{escape(title)}\t{escape(title)} badge\thttps://derpicdn.net/media/{image}\n"
                        for i, title, image in BADGES])


def badge_awards(board: Board) -> Iterator[bytes]:
    shape = board.shape
    rng = shape.rng(26, 0)
    n = max(5, shape.users // 20)
    labels = Pool.of([None] * 6 + ["Thanks for the art!", "Winner of the contest"])
    yield _row(ints(np.arange(1, n + 1)), ints(np.sort(rng.integers(1, shape.users + 1, n))),
               ints(rng.integers(1, len(BADGES) + 1, n)), timestamps(rng.integers(shape.created[0], DUMPED, n)),
               labels.pick(rng.integers(0, len(labels), n)))


def artist_links(board: Board) -> Iterator[bytes]:
    shape = board.shape
    rng = shape.rng(27, 0)
    n = max(5, shape.tags.artists // 4)
    tag = shape.tags.first_artist + rng.choice(shape.tags.artists, n, replace=False)
    host = strings(["https://www.deviantart.com/", "https://twitter.com/", "https://www.furaffinity.net/user/"])
    yield _row(ints(np.arange(1, n + 1)), ints(np.sort(rng.integers(1, shape.users + 1, n))),
               with_nulls(ints(tag), rng.random(n) < 0.02),
               np.hstack([host[rng.integers(0, 3, n)], ints(tag)]))


TABLES: dict[str, Callable[[Board], Iterator[bytes]]] = {
    "artist_links": artist_links, "badge_awards": badge_awards, "badges": badges, "comments": comments,
    "duplicate_reports": duplicate_reports, "forums": forums, "galleries": galleries,
    "gallery_interactions": gallery_interactions, "image_duplicates": image_duplicates, "image_faves": image_faves,
    "image_features": image_features, "image_hides": image_hides, "image_intensities": image_intensities,
    "image_sources": image_sources, "image_taggings": image_taggings, "images": images, "posts": posts,
    "source_changes": source_changes, "tag_aliases": tag_aliases, "tag_change_tags": tag_change_tags,
    "tag_changes": tag_changes, "tag_implications": tag_implications, "tags": tags, "topics": topics, "users": users,
}
