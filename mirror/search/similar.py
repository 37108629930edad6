"""Finding copies by perceptual hash: the nearest stored pictures to a query, and groups of
near-duplicates across the archive (:mod:`mirror.imaging.similar` says what the hashes are).

The hashes live in memory as one uint64 column a kind (:class:`HashIndex`, read once from
``image_hashes``); a search XORs the query into every column and counts the bits, which numpy
does over a million images in a few tens of milliseconds (some 30 with their crops, below),
with no index to keep up to date.

:func:`groups` cannot compare every pair (100,000 images are 5 billion pairs), yet finds every
pair within its distance, as a search would report it: a pair that near differs by at most that
many bits in one pHash and the colour words together, so cut into one band more than the
distance, it agrees whole on a band (:func:`band_key`); only the pairs sharing a band's key are
measured, found by sorting each band. The pairs found are joined into groups as they are found
(:func:`_components`): identical fingerprints count once, and a bucket of one key is left as soon
as its views are all one group, or walked by its groups, so a cluster of thousands costs its size,
not its square. On a large board the keys take the hue word's bits too, one band more: buckets
of a few views each, the time linear in the board's size (some 70 s of CPU at 3.5 million);
where some hue word is empty, a few bands more keyed without them, for an empty hue word counts
for nothing where all else is near (:data:`mirror.imaging.similar.UNKNOWN_HUE_REST`).

A view's crops (:data:`mirror.imaging.similar.CROPS`, ``image_crops``) are searched beside the
views: a query's words against every crop, a query's crops against every view, never a crop
against a crop, each pair read whole only where its hues keep it within the crops' range
(:data:`mirror.imaging.similar.CROP_RANGE`). :func:`groups` finds those pairs by the same bands, each crop looked up among
the views of its key (:func:`_join_crops`). The bands are shared among two threads.

The words are what is searched; a view's sketch (``image_sketches``, read one image at a time) is
consulted only for the pictures the words find near: a search's nearest and a group's joins, to
tell an edit from a copy (:func:`mirror.imaging.similar.edit_penalty`).
"""

from __future__ import annotations

import functools
import os
import queue
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from sqlite_utils import Database

from ..imaging.similar import (CROP_RANGE, EDIT_RANGE, EMPTY_HUES, HUE_KINDS_APART, HUE_SLACK, HUE_WEIGHT,
                                KINDS, UNKNOWN_HUE_REST, Fingerprint, View, distance, with_sketches)
from ..store.similar import load_crops, load_hashes, load_sketches

__all__ = ["band_count", "band_key", "GROUP_DISTANCE", "HashIndex", "Neighbour", "groups"]

# At 12, 98.8% of the copies of real drawings (bench/similar.py: ten kinds) were grouped with their
# original and no two different pictures were; unrelated pictures are mostly 20 or more apart.
GROUP_DISTANCE = 12
MIN_BANDS = 5  # bands a fingerprint's keys are cut into for groups, at least: 52 bits a key at most
HUE_KEYS_FROM = 250_000  # views from which band keys take the hue word's bits too (see keyed_by_hue)
LOOKUP_KEYS = 1 << 24  # band keys below this are found in a table (see _place_finder)
SMALL_BUCKET = 8  # a bucket's steps walked neighbour by neighbour; past so many views, a crop's own group is skipped
SEARCH_BLOCK = 16_384  # views a search reads at once: their words, some 1 MB
HUE_BLOCK = 65_536  # hue words of crops or views a search reads at once, some 0.5 MB
KEY_BLOCK = 65_536  # views or crops whose band keys are made at once (some 0.5 MB a word)
CROP_PAIRS_AT_ONCE = 2_000_000  # pairs of a view and a crop measured at once (some 100 MB)
CROPS_AT_ONCE = 1_000_000  # crops whose buckets are looked up at once (some 60 MB a thread)
# Threads the bands of groups are shared among: two cores' worth (each thread keeps its own copy
# of the groups and one band's keys and sorts at a time, some 100 MB a million views more).
WORKERS = min(2, os.cpu_count() or 1)
SKETCHES_KEPT = 16_384  # images whose sketches a search keeps at hand: some 40 MB, 150 with fine pictures
CROP_HUES = CROP_RANGE // HUE_WEIGHT + HUE_SLACK  # steps of hue past which a crop is further than CROP_RANGE
_PHASHES = (KINDS.index("whole"), KINDS.index("trimmed"))
_HUE = KINDS.index("hue")
_COLOURS = tuple(i for i, kind in enumerate(KINDS) if i not in _PHASHES and i != _HUE)


@dataclass(frozen=True)
class Neighbour:
    image_id: int
    distance: int  # see mirror.imaging.similar.distance


class HashIndex:
    """Every stored image's hashes, one uint64 array a kind (in :data:`KINDS` order), one entry a
    view: an image seen on two backgrounds has two, side by side."""

    def __init__(self, ids: np.ndarray, hashes: np.ndarray,
                 sketches: Callable[[int], Sequence[bytes]] | None = None,
                 crops: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None) -> None:
        """``ids`` (n, an image's id once for each of its views, its views in order), ``hashes``
        (n rows, one column a kind), where the images' sketches are read from, view by view
        (none: no sketches), and the words of the views' crops: each crop's image id, view and
        words (rows, one column a kind), as :func:`~mirror.store.similar.load_crops` reads them."""
        ids = np.asarray(ids, dtype=np.int64)
        order = np.argsort(ids, kind="stable")
        self.view_ids = np.ascontiguousarray(ids[order])
        self.columns = np.ascontiguousarray(np.asarray(hashes, dtype=np.uint64).reshape(-1, len(KINDS))[order].T)
        self.ids, self.first_views = np.unique(self.view_ids, return_index=True)
        self.crop_views, self.crop_columns = self._crops(crops)
        self._read_sketches = sketches
        self._sketches: OrderedDict[int, Sequence[bytes]] = OrderedDict()  # the images read last

    def _crops(self, crops: tuple[np.ndarray, np.ndarray, np.ndarray] | None) -> tuple[np.ndarray, np.ndarray]:
        """Each crop's view (its row, ascending) and the crops' words (one row a kind), those of
        views not stored left out."""
        if crops is None or not len(crops[0]):
            return np.zeros(0, dtype=np.int64), np.zeros((len(KINDS), 0), dtype=np.uint64)
        image_ids, views, words = (np.asarray(part) for part in crops)
        first = np.searchsorted(self.view_ids, image_ids)
        rows = first + views
        known = (first < len(self.view_ids)) & (rows < len(self.view_ids))
        known[known] = self.view_ids[rows[known]] == image_ids[known]
        order = np.argsort(rows[known], kind="stable")
        return rows[known][order], np.ascontiguousarray(words.reshape(-1, len(KINDS))[known][order].T)

    @classmethod
    def load(cls, db: Database) -> HashIndex:
        return cls(*load_hashes(db, KINDS), sketches=lambda image_id: load_sketches(db, image_id),
                   crops=load_crops(db))

    @classmethod
    def of(cls, fingerprints: Mapping[int, Fingerprint]) -> HashIndex:
        ids = sorted(fingerprints)
        rows = [(image_id, view.values) for image_id in ids for view in fingerprints[image_id].views]
        crops = [(image_id, number, words) for image_id in ids
                 for number, view in enumerate(fingerprints[image_id].views) for words in view.crops]
        return cls(np.array([image_id for image_id, _ in rows], dtype=np.int64),
                   np.array([values for _, values in rows], dtype=np.uint64).reshape(-1, len(KINDS)),
                   sketches=lambda image_id: [view.sketch for view in fingerprints[image_id].views],
                   crops=(np.array([c[0] for c in crops], dtype=np.int64), np.array([c[1] for c in crops], dtype=np.int64),
                          np.array([c[2] for c in crops], dtype=np.uint64).reshape(-1, len(KINDS))))

    def __len__(self) -> int:
        return len(self.ids)

    def fingerprint(self, image_id: int) -> Fingerprint:
        """The stored fingerprint of ``image_id``, sketches included (KeyError when it has none)."""
        rows = self._rows(image_id)
        if not len(rows):
            raise KeyError(image_id)
        return Fingerprint(tuple(self._view(row) for row in rows))

    def _rows(self, image_id: int) -> range:
        return range(*np.searchsorted(self.view_ids, [image_id, image_id + 1]).tolist())

    def _view(self, row: int) -> View:
        crops = range(*np.searchsorted(self.crop_views, [row, row + 1]).tolist())
        return View(*(int(v) for v in self.columns[:, row]), sketch=self.view_sketch(row),
                    crops=tuple(tuple(int(v) for v in self.crop_columns[:, crop]) for crop in crops))

    def view_sketch(self, row: int) -> bytes:
        """The sketch of the view in ``row`` (b"" when it has none)."""
        image_id = int(self.view_ids[row])
        if self._read_sketches is None:
            return b""
        if image_id in self._sketches:
            self._sketches.move_to_end(image_id)
        else:
            self._sketches[image_id] = self._read_sketches(image_id)
            if len(self._sketches) > SKETCHES_KEPT:
                self._sketches.popitem(last=False)
        sketches, position = self._sketches[image_id], row - self._rows(image_id).start
        return sketches[position] if position < len(sketches) else b""

    def distances_within(self, image_ids: list[int]) -> list[int]:
        """How far each of ``image_ids`` is from the first of them (0 for the first)."""
        first = self.fingerprint(image_ids[0])
        return [distance(first, self.fingerprint(image_id)) for image_id in image_ids]

    def distances(self, fingerprint: Fingerprint) -> np.ndarray:
        """The distance by their words from ``fingerprint`` to every stored image (their nearest
        views, sketches left out: never nearer than :func:`~mirror.imaging.similar.distance`),
        in the order of :attr:`ids`.

        The views are read a block at a time (:data:`SEARCH_BLOCK`), each block's words against
        every view of the query: the arrays of differing bits then stay in the cache
        rather than going through memory, whole, once a word (half the time at 1,000,000)."""
        if not len(self.view_ids):
            return np.zeros(0, dtype=np.int16)
        by_view = self._by_own_words(fingerprint)
        self._nearer_by_crops(fingerprint, by_view)
        return np.minimum.reduceat(by_view, self.first_views)

    def _by_own_words(self, fingerprint: Fingerprint) -> np.ndarray:
        """The distance from ``fingerprint``'s views' own words to each view's own words."""
        by_view = np.full(len(self.view_ids), np.iinfo(np.int16).max, dtype=np.int16)
        queries = [_column(view.values) for view in fingerprint.views]
        for first, last in self._blocks:
            columns, nearest = self.columns[:, first:last], by_view[first:last]
            for own in queries:
                np.minimum(nearest, _apart(columns, own), out=nearest)
        return by_view

    def _nearer_by_crops(self, fingerprint: Fingerprint, by_view: np.ndarray) -> None:
        """Bring ``by_view`` down to the distances, where within :data:`CROP_RANGE` (crops count
        no further, :func:`~mirror.imaging.similar.word_distance`), of the views' crops from
        ``fingerprint``'s own words and of its crops from the own words of the views with crops.
        A pair is measured whole only where its hues alone keep it within (a step of hue costs
        :data:`HUE_WEIGHT`): five crops a view are five times the words, and read whole, a search
        over a million took five times as long as by the views' own words."""
        if not len(self.crop_views):
            return
        for view in fingerprint.views:
            if not view.crops:
                continue  # crops count between views that both have theirs
            own = _column(view.values)
            near = _within_hues(self.crop_columns[_HUE], [own[_HUE]])
            _lower(by_view, self.crop_views[near], _apart(self.crop_columns[:, near], own, hues_known=True))
            crops = [_column(words) for words in view.crops]
            rows, hues = self._cropped
            near = rows[_within_hues(hues, [crop[_HUE] for crop in crops])]
            columns = self.columns[:, near]
            _lower(by_view, near, functools.reduce(np.minimum, (_apart(columns, crop, hues_known=True)
                                                                for crop in crops)))

    @functools.cached_property
    def _cropped(self) -> tuple[np.ndarray, np.ndarray]:
        """The rows of the views with crops, and their hue words."""
        rows = self.crop_views[np.r_[True, self.crop_views[1:] != self.crop_views[:-1]]]  # ascending already
        return rows, self.columns[_HUE, rows]

    @functools.cached_property
    def _blocks(self) -> list[tuple[int, int]]:
        """The views a block at a time (:data:`SEARCH_BLOCK`): its first and last row."""
        count = len(self.view_ids)
        return [(first, min(first + SEARCH_BLOCK, count)) for first in range(0, count, SEARCH_BLOCK)]

    def nearest(self, fingerprint: Fingerprint, limit: int = 50, max_distance: int | None = None) -> list[Neighbour]:
        """The ``limit`` stored images nearest ``fingerprint``, nearest first (ties by id), none
        further than ``max_distance`` when given.

        The nearest by their words are measured whole, sketches included, more of them as long
        as one further by its words could still come nearer than the last kept."""
        words = self.distances(fingerprint)
        measured: dict[int, int] = {}
        wanted = limit
        while True:
            picked = _nearest_positions(words, wanted)
            for position in picked.tolist():
                if position not in measured:
                    measured[position] = self._measure(fingerprint, position, int(words[position]))
            best = sorted(measured, key=lambda position: (measured[position], self.ids[position]))[:limit]
            if len(picked) == len(words) or (len(best) == limit and measured[best[-1]] <= words[picked].max()):
                break
            wanted *= 2
        if max_distance is not None:
            best = [position for position in best if measured[position] <= max_distance]
        return [Neighbour(int(self.ids[position]), measured[position]) for position in best]

    def _measure(self, fingerprint: Fingerprint, position: int, words: int) -> int:
        """The distance to the image at ``position`` whose words are ``words`` away: the words
        alone past :data:`EDIT_RANGE`, where no sketch is read."""
        return words if words > EDIT_RANGE else distance(fingerprint, self.fingerprint(int(self.ids[position])))


def _within_hues(hues: np.ndarray, queries: list[np.ndarray]) -> np.ndarray:
    """The positions of ``hues`` (hue words) within :data:`CROP_HUES` steps of one of ``queries``,
    read :data:`HUE_BLOCK` at a time: the arrays of differing bits then stay in the cache (whole,
    through memory, they took twice as long). Between a crop and a view the hues always count."""
    found = [np.zeros(0, dtype=np.int64)]
    for first in range(0, len(hues), HUE_BLOCK):
        block = hues[first:first + HUE_BLOCK]
        fewest = functools.reduce(np.minimum, (np.bitwise_count(block ^ query) for query in queries))
        found.append(first + np.flatnonzero(fewest <= CROP_HUES))
    return np.concatenate(found)


def _lower(by_view: np.ndarray, rows: np.ndarray, found: np.ndarray) -> None:
    """Bring each of ``rows`` of ``by_view`` down to its distance in ``found``, where that is
    within :data:`CROP_RANGE` (a row may come more than once)."""
    kept = found <= CROP_RANGE
    np.minimum.at(by_view, rows[kept], found[kept])


def _nearest_positions(found: np.ndarray, limit: int) -> np.ndarray:
    """The positions of the ``limit`` lowest of ``found`` (small integers), and of any tied with the
    highest of them: the distances counted, as an argpartition among so many ties took longer
    than the whole search by the views' own words."""
    if limit >= len(found):
        return np.arange(len(found))
    highest = int(np.searchsorted(np.cumsum(np.bincount(found)), limit))  # the lowest level `limit` reach
    return np.flatnonzero(found <= highest)


def _column(words: Sequence[int]) -> np.ndarray:
    """A view's or a crop's words as a column, to XOR into a block of the index."""
    return np.array(words, dtype=np.uint64)[:, None]


def _apart(a: np.ndarray, b: np.ndarray, hues_known: bool = False) -> np.ndarray:
    """The words' distance (:func:`~mirror.imaging.similar.words_apart`) of each pair of columns of
    ``a`` and ``b`` (one row a kind; either may be a single column): the nearer pHash, plus the
    colour words, plus the hues where they count (:func:`_hues_unknown`; always with ``hues_known``,
    for a crop's words against a view's)."""
    bits = np.bitwise_count(a ^ b)
    total = np.minimum(bits[_PHASHES[0]], bits[_PHASHES[1]]).astype(np.int16)
    for row in _COLOURS:
        total += bits[row]
    hues = HUE_WEIGHT * np.maximum(bits[_HUE].astype(np.int16) - HUE_SLACK, 0)
    near = np.flatnonzero(total <= UNKNOWN_HUE_REST) if not hues_known else ()
    if len(near):  # few of a search's million: the hue words are read there only
        shape = bits[_HUE].shape
        a_hues, b_hues = np.broadcast_to(a[_HUE], shape)[near], np.broadcast_to(b[_HUE], shape)[near]
        hues[near[_hues_unknown(a_hues, b_hues, bits[_HUE][near])]] = 0
    return total + hues


def _hues_unknown(a: np.ndarray, b: np.ndarray, apart: np.ndarray) -> np.ndarray:
    """:func:`~mirror.imaging.similar.hue_unknown` of each pair of hue words, ``apart`` bits apart."""
    return (_empty_hues(a) | _empty_hues(b)) & (apart <= HUE_KINDS_APART)


def _empty_hues(hues: np.ndarray) -> np.ndarray:
    """Which hue words are empty (:data:`~mirror.imaging.similar.EMPTY_HUES`)."""
    return functools.reduce(np.logical_or, (hues == empty for empty in EMPTY_HUES))


def groups(index: HashIndex, max_distance: int = GROUP_DISTANCE, workers: int | None = None) -> list[list[int]]:
    """Groups of near-duplicates: images joined when within ``max_distance`` of one another
    (through others too), each group's ids ascending, the groups by their first id.

    Images with the same words are one node (a board has clusters of thousands: re-uploads,
    blank pictures), the first one's sketch standing for all, and the pairs found are joined as
    they are found, never listed: the time and memory are linear in the images, whatever the size
    of a cluster. The bands are walked on ``workers`` threads (:func:`_components`).
    """
    if not len(index):
        return []
    unique, first_row, node_of = np.unique(index.columns.T, axis=0, return_index=True, return_inverse=True)
    nodes = np.ascontiguousarray(unique.T)  # one column a node, as the index's
    del unique  # not held twice while grouping (170 MB at 3.5 million)
    node_of = node_of.reshape(-1)
    same_image = np.flatnonzero(index.view_ids[1:] == index.view_ids[:-1])  # an image's views are one

    def close(a: np.ndarray, b: np.ndarray, words: np.ndarray) -> np.ndarray:
        """Which pairs of nodes near by their words stay within ``max_distance`` with their sketches."""
        return np.array([with_sketches(word, index.view_sketch(first_row[x]), index.view_sketch(first_row[y]))
                         <= max_distance for x, y, word in zip(a.tolist(), b.tolist(), words.tolist())], dtype=bool)

    label = _components(nodes, max_distance,
                        (node_of[same_image], node_of[same_image + 1]), close,
                        (node_of[index.crop_views], index.crop_columns), workers)[node_of[index.first_views]]
    shared = np.bincount(label, minlength=nodes.shape[1])[label] > 1  # a million alone are not split one by one
    order = np.lexsort((index.ids[shared], label[shared]))
    ids, label = index.ids[shared][order], label[shared][order]
    cuts = np.flatnonzero(np.diff(label)) + 1
    return sorted(group.tolist() for group in np.split(ids, cuts) if len(group) > 1)


def _components(columns: np.ndarray, max_distance: int, joined: tuple[np.ndarray, np.ndarray],
                close: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray],
                crops: tuple[np.ndarray, np.ndarray] | None = None, workers: int | None = None) -> np.ndarray:
    """For each view (a column of ``columns``, one row a kind), the smallest position it is
    joined to: through the ``joined`` pairs (views of one image), and every pair within
    ``max_distance`` by its words and found ``close`` (given the pairs and their words'
    distances), asked only of pairs not yet joined.

    Every pair within the distance is found (:func:`band_key`): its words' distance is at least
    the bits that differ in one pHash and the three colour words together, so cut into
    ``max_distance + 1`` bands, those agree whole on at least one band. The pairs sharing a band
    are read off the band's keys sorted, neighbours one step apart, then two, up to
    :data:`SMALL_BUCKET`, as long as a bucket of one key holds views not yet joined (a cluster of
    20,000 near copies is one group after the first step, and its bucket is left); a bucket still
    mixed then by its groups (:func:`_join_mixed_buckets`). Past :data:`HUE_KEYS_FROM` views the
    keys take the hue word's bits too (:func:`keyed_by_hue`): some 23 bits a key rather than 20,
    so the buckets of a large board stay a few views each.

    The bands are shared among ``workers`` threads (:data:`WORKERS` when not given), each joining
    its own copy of the groups, joined together at the end: a band's keys, sorts and words are
    numpy's work, done with the GIL released, so two threads use two cores. ``close`` is always
    asked on the calling thread (it reads sketches from a database connection that belongs to it).
    """
    count = columns.shape[1]
    hue = keyed_by_hue(count)
    walks = _band_walks(max_distance, hue, hue and bool(_empty_hues(columns[_HUE]).any()))
    workers = max(1, min(len(walks), WORKERS if workers is None else workers))
    has_crops = np.zeros(count, dtype=bool)
    if crops is not None:
        has_crops[crops[0]] = True

    def walk(share: list[_Walk], ask: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]) -> np.ndarray:
        parent = np.arange(count)
        _join(parent, *joined)
        refused = _Refused()  # pairs near by their words that their sketches set apart
        for band, bands, keyed_hue, with_crops in share:
            def crop_keys(words: np.ndarray, band: int = band, bands: int = bands,
                          keyed_hue: bool = keyed_hue) -> np.ndarray:  # a crop's pHash is its whole and its trimmed
                return band_key(words, _PHASHES[0], band, bands, keyed_hue)

            for column in _PHASHES:  # a crop's pHash is in both: its keys are the same for each
                keys = band_key(columns, column, band, bands, keyed_hue)
                order = np.argsort(keys)  # any order within a key: a bucket is walked until it is one group
                ordered = keys[order]
                firsts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])  # where each key's bucket starts
                _join_buckets(parent, columns, order, firsts, max_distance, ask, refused)
                if with_crops and crops is not None and len(crops[0]):
                    _join_crops(parent, columns, order, ordered[firsts], np.r_[firsts, count], *crops, crop_keys,
                                has_crops, max_distance, ask)
        return parent

    if workers == 1:
        parent = walk(walks, close)
    else:
        parents = _in_threads(walk, [walks[first::workers] for first in range(workers)], close, count)
        parent = parents[0]
        for other in parents[1:]:
            _join(parent, np.arange(count), _roots(other, np.arange(count)))
    return _roots(parent, np.arange(count))


class _Walk(NamedTuple):
    """A band walked by :func:`_components`: the ``band`` of ``bands``, keyed by the hue word's bits
    too or not, its crops looked up or not."""

    band: int
    bands: int
    hue: bool
    crops: bool


def _band_walks(max_distance: int, hue: bool, some_empty: bool) -> list[_Walk]:
    """The bands walked for pairs within ``max_distance``: :func:`band_count`'s; with keys that
    take the hue word's bits and ``some_empty`` (some view's hue word is empty),
    :data:`UNKNOWN_HUE_REST` + 1 more, keyed without them, for the pairs of views whose hues do not
    count (an empty hue word and a full one are up to 20 bits apart, and such a pair need share no
    band keyed by them; the rest of their words is within UNKNOWN_HUE_REST bits, so they agree
    whole on one of these). Those need no crops: between a crop and a view the hues count."""
    bands = band_count(max_distance, hue)
    walks = [_Walk(band, bands, hue, True) for band in range(bands)]
    if hue and some_empty:
        unknown = band_count(min(max_distance, UNKNOWN_HUE_REST))
        walks += [_Walk(band, unknown, False, False) for band in range(unknown)]
    return walks


def _in_threads(walk: Callable[[list, Callable], np.ndarray], shares: list[list[_Walk]],
                close: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray], count: int) -> list[np.ndarray]:
    """``walk`` each of ``shares`` on a thread of its own, its questions to ``close`` answered
    on this thread, one at a time, as they come; what each returned, in order.

    Two threads find many of the same pairs (a copy shares several bands with its original): a
    pair already joined here, through the answers so far, is close (joined in the end anyway),
    and one refused is refused again at its distance or further (:class:`_Refused`), neither
    asked twice."""
    questions: queue.SimpleQueue = queue.SimpleQueue()
    joined = np.arange(count)  # the groups of the pairs found close so far, by any thread
    refused = _Refused()

    def ask(a: np.ndarray, b: np.ndarray, words: np.ndarray) -> np.ndarray:
        answer: Future = Future()
        questions.put((a, b, words, answer))
        return answer.result()

    def walked(share: list[_Walk]) -> np.ndarray:
        try:
            return walk(share, ask)
        finally:
            questions.put(None)  # this thread asks no more

    def answer(a: np.ndarray, b: np.ndarray, words: np.ndarray) -> np.ndarray:
        pair = np.minimum(a, b) * count + np.maximum(a, b)
        kept = _roots(joined, a) == _roots(joined, b)
        fresh = ~kept & refused.fresh(pair, words)
        if fresh.any():
            kept[fresh] = close(a[fresh], b[fresh], words[fresh])
            _join(joined, a[fresh][kept[fresh]], b[fresh][kept[fresh]])
            refused.add(pair[fresh][~kept[fresh]], words[fresh][~kept[fresh]])
        return kept

    with ThreadPoolExecutor(len(shares), thread_name_prefix="groups") as pool:
        running = [pool.submit(walked, share) for share in shares]
        ended = 0
        try:
            while ended < len(shares):
                question = questions.get()
                if question is None:
                    ended += 1
                    continue
                *pairs, future = question
                try:
                    future.set_result(answer(*pairs))
                except Exception as error:  # the thread that asked raises it, and ends
                    future.set_exception(error)
        except BaseException as error:  # interrupted here: every thread still asking is told so, and ends
            while ended < len(shares):
                question = questions.get()
                ended += question is None
                if question is not None:
                    question[-1].set_exception(error)
            raise
        return [future.result() for future in running]


def _join_buckets(parent: np.ndarray, columns: np.ndarray, order: np.ndarray, firsts: np.ndarray,
                  max_distance: int, close: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray],
                  refused: _Refused) -> None:
    """Join the views sharing a key (the views in ``order`` of their keys, each key's first at
    ``firsts``) within the distance: neighbours one apart, then two, up to :data:`SMALL_BUCKET`;
    the buckets still holding views of more than one group then by their groups
    (:func:`_join_mixed_buckets`)."""
    count = columns.shape[1]
    ends = np.r_[firsts[1:], count]
    shared = ends - firsts > 1
    firsts, ends = firsts[shared], ends[shared]  # the buckets of two views or more
    step = 1
    while len(firsts) and step <= SMALL_BUCKET:
        members = _ranges(firsts, ends - step)  # the positions a pair `step` apart starts at
        a, b = order[members], order[members + step]
        apart = _roots(parent, a) != _roots(parent, b)
        a, b = a[apart], b[apart]
        words = _apart(columns[:, a], columns[:, b])
        near = words <= max_distance
        _ask(parent, a[near], b[near], words[near], close, refused)
        step += 1
        firsts, ends = _split_buckets(parent, order, firsts, ends, step)
    if len(firsts):
        _join_mixed_buckets(parent, columns, order, firsts, ends, max_distance, close, refused)


class _Refused:
    """The pairs of views their sketches set apart, each with the least words' distance it was
    asked at: asked again at that distance or further, a pair is refused unasked (an edit shares
    many bands with its original); nearer, it is asked again. One pair can come at several
    distances, through each of its crops, and the sketches add the same to each: kept by the pair
    alone, a refusal through a crop 8 words away refused the pair through one 6 away unasked (8 and
    6, plus 5 of sketches: 13 and 11)."""

    def __init__(self) -> None:
        self._least: dict[int, int] = {}

    def fresh(self, pair: np.ndarray, words: np.ndarray) -> np.ndarray:
        """Which of the pairs (keys: the lesser view times the count plus the other), at ``words``, to ask."""
        if not self._least:
            return np.ones(len(pair), dtype=bool)
        least = self._least.get
        return np.fromiter((word < least(key, word + 1) for key, word in zip(pair.tolist(), words.tolist())),
                           dtype=bool, count=len(pair))

    def add(self, pair: np.ndarray, words: np.ndarray) -> None:
        """Keep the pairs refused at ``words``."""
        least = self._least
        for key, word in zip(pair.tolist(), words.tolist()):
            if word < least.get(key, word + 1):
                least[key] = word


def _ask(parent: np.ndarray, a: np.ndarray, b: np.ndarray, words: np.ndarray,
         close: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray], refused: _Refused) -> None:
    """Join the pairs (a[i], b[i]), near by their ``words``, that ``close`` keeps; those it sets
    apart are ``refused`` (an edit shares many bands with its original: asked once)."""
    pair = np.minimum(a, b) * len(parent) + np.maximum(a, b)
    if len(a):
        fresh = refused.fresh(pair, words)
        a, b, words, pair = a[fresh], b[fresh], words[fresh], pair[fresh]
    if len(a):
        kept = close(a, b, words)
        _join(parent, a[kept], b[kept])
        refused.add(pair[~kept], words[~kept])


def _join_mixed_buckets(parent: np.ndarray, columns: np.ndarray, order: np.ndarray, firsts: np.ndarray,
                        ends: np.ndarray, max_distance: int,
                        close: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray], refused: _Refused) -> None:
    """Join the views of the buckets from ``firsts`` up to ``ends`` (in ``order``) within the
    distance, measuring each view outside its bucket's largest group against every view of the
    bucket outside its own group: a pair of two groups has one view outside the largest. Walked
    step by step, a cluster of 16,900 near copies sharing a key with one picture far from them
    took 16,900 steps over the whole bucket (five times the time of all the rest of the test's
    two clusters); now as many pairs as the bucket has views."""
    count = len(parent)
    lengths = ends - firsts
    views = order[_ranges(firsts, ends)]
    bucket = np.repeat(np.arange(len(firsts)), lengths)
    roots = _roots(parent, views)
    by_group = np.lexsort((roots, bucket))
    group_key = bucket[by_group] * count + roots[by_group]
    starts = np.flatnonzero(np.r_[True, group_key[1:] != group_key[:-1]])  # each group of each bucket
    sizes = np.diff(np.r_[starts, len(group_key)])
    group_bucket, group_root = bucket[by_group][starts], roots[by_group][starts]
    biggest = np.lexsort((-sizes, group_bucket))  # each bucket's groups, the largest first
    largest = np.empty(len(firsts), dtype=roots.dtype)
    largest[group_bucket[biggest][::-1]] = group_root[biggest][::-1]  # the last written of each bucket: its largest
    is_outside = roots != largest[bucket]
    outside = np.flatnonzero(is_outside)
    offsets = np.r_[0, np.cumsum(lengths)[:-1]]
    pairs = np.cumsum(lengths[bucket[outside]])
    cuts = np.searchsorted(pairs, np.arange(CROP_PAIRS_AT_ONCE, pairs[-1] if len(pairs) else 0, CROP_PAIRS_AT_ONCE))
    for chunk in np.split(outside, cuts):  # so many pairs at a time
        others = _ranges(offsets[bucket[chunk]], offsets[bucket[chunk]] + lengths[bucket[chunk]])
        one = np.repeat(chunk, lengths[bucket[chunk]])
        wanted = (roots[one] != roots[others]) & (~is_outside[others] | (one < others))  # two outside: once
        a, b = views[one[wanted]], views[others[wanted]]
        words = _apart(columns[:, a], columns[:, b])
        near = words <= max_distance
        _ask_nearest_first(parent, a[near], b[near], words[near], close, refused)


def _ask_nearest_first(parent: np.ndarray, a: np.ndarray, b: np.ndarray, words: np.ndarray,
                       close: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray], refused: _Refused) -> None:
    """:func:`_ask` the pairs (a[i], b[i]) near by their ``words``, each two groups' nearest first,
    the next only where it was refused: an outsider near a thousand copies of a cluster is
    asked once, not a thousand times (some 1 ms of sketches each)."""
    while True:
        first, second = _roots(parent, a), _roots(parent, b)
        apart = first != second
        a, b, words, first, second = a[apart], b[apart], words[apart], first[apart], second[apart]
        if not len(a):
            return
        groups_pair = np.minimum(first, second) * len(parent) + np.maximum(first, second)
        nearest = np.lexsort((words, groups_pair))
        nearest = nearest[np.r_[True, groups_pair[nearest][1:] != groups_pair[nearest][:-1]]]
        _ask(parent, a[nearest], b[nearest], words[nearest], close, refused)
        rest = np.ones(len(a), dtype=bool)
        rest[nearest] = False
        a, b, words = a[rest], b[rest], words[rest]


def _join_crops(parent: np.ndarray, columns: np.ndarray, order: np.ndarray, distinct: np.ndarray,
                bucket_starts: np.ndarray, crop_node: np.ndarray, crop_columns: np.ndarray,
                crop_keys: Callable[[np.ndarray], np.ndarray], has_crops: np.ndarray, max_distance: int,
                close: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]) -> None:
    """Join the views near a crop of another (``crop_columns``, each crop of the view in
    ``crop_node``; ``crop_keys`` makes their keys of this band) within the distance, of the views that
    have crops of their own (``has_crops``): such a pair agrees on a band as two views do
    (:func:`band_key`). Each crop is measured against the views of its key (the views in
    ``order`` of their keys, the keys ``distinct``, each one's bucket from ``bucket_starts``);
    in a large bucket (a cluster), only those outside its own view's group, so a cluster
    already one group costs nothing more. The crops are taken :data:`CROPS_AT_ONCE` at a time:
    all at once, their buckets' bounds took more memory than everything else grouping 3.5 million
    images (seven arrays of 17.5 million), and each of two threads had its own; so are their keys
    made (all at once, 140 MB a thread at 3.5 million; made again for the second pHash, some 3%
    of the time)."""
    place_of = _place_finder(distinct)
    for first in range(0, len(crop_node), CROPS_AT_ONCE):
        last = min(first + CROPS_AT_ONCE, len(crop_node))
        _join_crops_of(parent, columns, order, place_of, bucket_starts, crop_node, crop_columns,
                       crop_keys(crop_columns[:, first:last]), has_crops, max_distance, close, first, last)


def _join_crops_of(parent: np.ndarray, columns: np.ndarray, order: np.ndarray,
                   place_of: Callable[[np.ndarray], np.ndarray], bucket_starts: np.ndarray, crop_node: np.ndarray,
                   crop_columns: np.ndarray, crop_keys: np.ndarray, has_crops: np.ndarray, max_distance: int,
                   close: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray], first: int, last: int) -> None:
    """:func:`_join_crops` for the crops from ``first`` up to ``last``, whose keys are ``crop_keys``."""
    place = place_of(crop_keys)
    crops = first + np.flatnonzero(place >= 0)  # the crops whose key some view has
    place = place[crops - first]
    starts, ends = bucket_starts[place], bucket_starts[place + 1]
    own_starts, own_ends = ends.copy(), ends.copy()  # its own group's views in its bucket: none looked for in a small one
    large = np.flatnonzero(ends - starts > SMALL_BUCKET)
    if len(large):
        own_starts[large], own_ends[large] = _own_group_ranges(parent, order, bucket_starts, place[large],
                                                               parent[crop_node[crops[large]]])
    pairs = np.cumsum((own_starts - starts) + (ends - own_ends))
    cuts = np.searchsorted(pairs, np.arange(CROP_PAIRS_AT_ONCE, pairs[-1] if len(pairs) else 0, CROP_PAIRS_AT_ONCE))
    for chunk in np.split(np.arange(len(crops)), cuts):  # so many pairs at a time
        lows = np.concatenate([starts[chunk], own_ends[chunk]])
        highs = np.concatenate([own_starts[chunk], ends[chunk]])
        a = order[_ranges(lows, highs)]
        crop = crops[np.repeat(np.concatenate([chunk, chunk]), highs - lows)]
        with_crops = has_crops[a]
        a, crop = a[with_crops], crop[with_crops]  # crops count between views that both have theirs
        # the hues first: a step of hue costs four, and most pairs sharing a key are apart by them
        hues = np.bitwise_count(columns[_HUE, a] ^ crop_columns[_HUE, crop]).astype(np.int16)
        hued = HUE_WEIGHT * np.maximum(hues - HUE_SLACK, 0) <= max_distance
        a, crop = a[hued], crop[hued]
        b = crop_node[crop]
        words = _apart(columns[:, a], crop_columns[:, crop], hues_known=True)
        near = words <= min(max_distance, CROP_RANGE)  # crops count no further
        a, b, words = a[near], b[near], words[near]
        apart = _roots(parent, a) != _roots(parent, b)
        a, b, words = a[apart], b[apart], words[apart]
        if len(a):  # each pair of views once, at its nearest: a cluster's identical crops are one
            pair = a * len(parent) + b
            once = np.lexsort((words, pair))
            once = once[np.r_[True, pair[once][1:] != pair[once][:-1]]]
            a, b, words = a[once], b[once], words[once]
            kept = close(a, b, words)
            _join(parent, a[kept], b[kept])


def _own_group_ranges(parent: np.ndarray, order: np.ndarray, bucket_starts: np.ndarray, buckets: np.ndarray,
                      groups: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where the views of each of ``groups`` lie in its bucket (of ``buckets``, by rank), once the
    views of those buckets are put in order of group (``order`` rearranged in place)."""
    distinct = np.unique(buckets)
    firsts, ends = bucket_starts[distinct], bucket_starts[distinct + 1]
    positions = _ranges(firsts, ends)  # every view of those buckets, bucket by bucket
    bucket_of = np.repeat(np.arange(len(distinct)), ends - firsts)
    in_groups = parent[order[positions]]
    by_group = np.lexsort((in_groups, bucket_of))
    order[positions] = order[positions][by_group]
    composite = bucket_of * len(parent) + in_groups[by_group]  # ascending
    which = np.searchsorted(distinct, buckets)
    wanted = which * len(parent) + groups
    offset = firsts[which] - np.r_[0, np.cumsum(ends - firsts)[:-1]][which]  # a position in `positions` to the view's
    return offset + np.searchsorted(composite, wanted), offset + np.searchsorted(composite, wanted, "right")


def _place_finder(distinct: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """A function telling where each of some keys is in the sorted ``distinct`` (-1 where it is
    not): looked up in a table when the keys are short (a band of the usual distances: 20-23
    bits), which a million keys' binary searches in random order took five times as long as.
    The table is made once a pass: made for each million crops, it took as long as their lookups."""
    if distinct[-1] < LOOKUP_KEYS:
        table = np.full(int(distinct[-1]) + 2, -1, dtype=np.int32)  # up to one past the last key: none there
        table[distinct.astype(np.int64)] = np.arange(len(distinct), dtype=np.int32)
        past = distinct[-1] + np.uint64(1)
        return lambda keys: table[np.minimum(keys, past).astype(np.int64)]

    def searched(keys: np.ndarray) -> np.ndarray:
        place = np.minimum(np.searchsorted(distinct, keys), len(distinct) - 1)
        return np.where(distinct[place] == keys, place, -1)

    return searched


def _ranges(firsts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """The positions from each of ``firsts`` up to its end in ``ends``, one array (ends past firsts)."""
    lengths = ends - firsts
    return np.repeat(firsts - np.r_[0, np.cumsum(lengths)[:-1]], lengths) + np.arange(lengths.sum())


def _split_buckets(parent: np.ndarray, order: np.ndarray, firsts: np.ndarray, ends: np.ndarray,
                   step: int) -> tuple[np.ndarray, np.ndarray]:
    """The buckets still to walk ``step`` apart: longer than the step, and holding views of more than one group."""
    longer = ends - firsts > step
    firsts, ends = firsts[longer], ends[longer]
    if not len(firsts):
        return firsts, ends
    roots = _roots(parent, order[_ranges(firsts, ends)])
    starts = np.r_[0, np.cumsum(ends - firsts)[:-1]]
    mixed = np.minimum.reduceat(roots, starts) != np.maximum.reduceat(roots, starts)
    return firsts[mixed], ends[mixed]


def band_count(max_distance: int, hue: bool = False) -> int:
    """How many bands keys are cut into for pairs within ``max_distance``: one more than the bits
    such a pair can differ by in the words keyed (at least :data:`MIN_BANDS`). With the hue word's
    (``hue``), :data:`HUE_SLACK` more: a step of hue costs :data:`HUE_WEIGHT` past the free ones,
    so the pHash, colour and hue bits of such a pair differ by at most ``max_distance + HUE_SLACK``."""
    return max(MIN_BANDS, max_distance + 1 + (HUE_SLACK if hue else 0))


def keyed_by_hue(count: int) -> bool:
    """Whether the keys of ``count`` views take the hue word's bits too (one band more, some 23
    bits a key against 20): past :data:`HUE_KEYS_FROM`, where the narrower keys' buckets fill
    (random words: a view shared its key with one other a band at 1,000,000, three at 3,500,000)."""
    return count >= HUE_KEYS_FROM


def band_key(columns: np.ndarray, column: int, band: int, bands: int, hue: bool = False) -> np.ndarray:
    """The key of ``band`` of ``bands`` for each view: the bits of the pHash in row ``column``
    and of the three colour words (and of the hue word, with ``hue``), dealt in turn into the
    bands, so each band takes some bits of each word (a colour word alone, a thermometer code,
    tells few pictures apart). A pair within the distance :func:`band_count` gave ``bands`` for
    differs by fewer of these bits than there are bands, so agrees whole on some band."""
    words = [columns[column], *(columns[row] for row in _COLOURS), *((columns[_HUE],) if hue else ())]
    moves, place = [], 0  # (word, its first bit, how many, their place in the key): at most bands - 1 at once
    for number in range(len(words)):
        bits = range((band - 64 * number) % bands, 64, bands)  # its bits of the band: each word's 64 dealt in turn
        for first in range(0, len(bits), bands - 1):
            count = len(bits[first:first + bands - 1])
            moves.append((number, bits[first], count, place))
            place += count
    key = np.zeros(columns.shape[1], dtype=np.uint64)
    part = np.empty(min(len(key), KEY_BLOCK), dtype=np.uint64)
    for start in range(0, len(key), KEY_BLOCK):  # a block at a time: the work stays in the cache
        block = key[start:start + KEY_BLOCK]
        for number, first, count, at in moves:
            _add_bits(block, part[:len(block)], words[number][start:start + KEY_BLOCK], first, bands, count, at)
    return key


def _add_bits(key: np.ndarray, part: np.ndarray, word: np.ndarray, first: int, step: int, count: int,
              place: int) -> None:
    """Set in ``key``, from bit ``place`` on, the ``count`` bits of ``word`` from bit ``first``,
    ``step`` apart, in order (``part``: room for the work). One multiplication moves them side by
    side: it adds the word shifted by ``top - (step - 1) * j`` for each j, which brings its k-th
    bit to ``top + k`` for j = k; as fewer than ``step`` bits are moved, no two of the shifted
    bits meet (none carries) and none of the others falls among those kept. Bit by bit, four
    passes a bit over the views, the keys took some 40% of the grouping's time."""
    top = (step - 1) * (count - 1)
    comb = sum(1 << (step * k) for k in range(count))
    spread = sum(1 << (top - (step - 1) * j) for j in range(count))
    np.right_shift(word, np.uint64(first), out=part)
    part &= np.uint64(comb)
    part *= np.uint64(spread)
    part >>= np.uint64(top)
    part &= np.uint64((1 << count) - 1)
    part <<= np.uint64(place)
    key |= part


def _roots(parent: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    found = parent[nodes]
    while True:
        above = parent[found]
        if np.array_equal(above, found):
            return found
        found = above


def _join(parent: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
    """Union the pairs (a[i], b[i]); each set's root is its smallest position."""
    first, second = _roots(parent, a), _roots(parent, b)
    apart = first != second
    if not apart.any():
        return
    for x, y in zip(first[apart].tolist(), second[apart].tolist()):
        while parent[x] != x:
            x = parent[x]
        while parent[y] != y:
            y = parent[y]
        if x != y:
            parent[max(x, y)] = min(x, y)
    parent[:] = _roots(parent, np.arange(len(parent)))  # flat again: later lookups are one step
