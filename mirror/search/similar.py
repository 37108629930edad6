"""Finding copies by perceptual hash: the nearest stored pictures to a query, and groups of
near-duplicates across the archive (:mod:`mirror.imaging.similar` says what the hashes are).

The hashes live in memory as one uint64 column a kind (:class:`HashIndex`, read once from
``image_hashes``); a search XORs the query into every column and counts the bits, which numpy
does over a million images in a few tens of milliseconds, with no index to keep up to date.

:func:`groups` cannot compare every pair (100,000 images are 5 billion pairs). It compares only
the pairs that share a 16-bit band of one of the two pHashes (multi-index hashing: two hashes
within 3 bits agree on at least one of four bands, and copies further apart usually still do),
found by sorting each band, and keeps those within ``max_distance``; the pairs found are joined
into groups. The work is the number of such pairs, not the square of the images.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from sqlite_utils import Database

from ..imaging.similar import KINDS, Fingerprint
from ..store.similar import load_hashes

__all__ = ["HashIndex", "Neighbour", "groups", "GROUP_DISTANCE", "BANDS"]

# Copies of the kinds bench/similar.py makes were 0-21 apart, unrelated pictures 27 or more.
GROUP_DISTANCE = 16
BANDS = 4  # 16-bit bands a pHash is cut into for groups
_PHASHES = (KINDS.index("whole"), KINDS.index("trimmed"))
_COLOURS = tuple(i for i, kind in enumerate(KINDS) if i not in _PHASHES)


@dataclass(frozen=True)
class Neighbour:
    image_id: int
    distance: int  # see mirror.imaging.similar.distance


class HashIndex:
    """Every stored image's hashes, one uint64 array a kind (in :data:`KINDS` order)."""

    def __init__(self, ids: np.ndarray, hashes: np.ndarray) -> None:
        """``ids`` (n) and ``hashes`` (n rows, one column a kind)."""
        self.ids = np.ascontiguousarray(ids, dtype=np.int64)
        self.columns = np.ascontiguousarray(np.asarray(hashes, dtype=np.uint64).reshape(-1, len(KINDS)).T)

    @classmethod
    def load(cls, db: Database) -> HashIndex:
        return cls(*load_hashes(db, KINDS))

    @classmethod
    def of(cls, fingerprints: Mapping[int, Fingerprint]) -> HashIndex:
        ids = sorted(fingerprints)
        return cls(np.array(ids, dtype=np.int64),
                   np.array([fingerprints[i].values for i in ids], dtype=np.uint64).reshape(-1, len(KINDS)))

    def __len__(self) -> int:
        return len(self.ids)

    def distances(self, fingerprint: Fingerprint) -> np.ndarray:
        """The distance from ``fingerprint`` to every stored image, in the order of :attr:`ids`."""
        query = np.array(fingerprint.values, dtype=np.uint64)[:, None]
        return _distances(np.bitwise_count(self.columns ^ query))

    def nearest(self, fingerprint: Fingerprint, limit: int = 50, max_distance: int | None = None) -> list[Neighbour]:
        """The ``limit`` stored images nearest ``fingerprint``, nearest first (ties by id), none
        further than ``max_distance`` when given."""
        found = self.distances(fingerprint)
        if limit < len(found):
            picked = np.argpartition(found, limit)[:limit]
            # argpartition may split a tie at the cut: take the whole tie, then the first by id.
            picked = np.flatnonzero(found <= found[picked].max())
        else:
            picked = np.arange(len(found))
        if max_distance is not None:
            picked = picked[found[picked] <= max_distance]
        picked = picked[np.lexsort((self.ids[picked], found[picked]))][:limit]
        return [Neighbour(int(self.ids[i]), int(found[i])) for i in picked]


def _distances(bits: np.ndarray) -> np.ndarray:
    """Per image, from the differing bits of each kind (one row a kind): the nearer pHash plus the colour words."""
    total = np.minimum(bits[_PHASHES[0]], bits[_PHASHES[1]]).astype(np.int16)
    for row in _COLOURS:
        total += bits[row]
    return total


def groups(index: HashIndex, max_distance: int = GROUP_DISTANCE) -> list[list[int]]:
    """Groups of near-duplicates: images joined when within ``max_distance`` of one another
    (through others too), each group's ids ascending, the groups by their first id."""
    left, right = _close_pairs(index, max_distance)
    parent: dict[int, int] = {}

    def root(node: int) -> int:
        parent.setdefault(node, node)
        while parent[node] != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    for a, b in zip(left.tolist(), right.tolist()):
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    members: dict[int, list[int]] = {}
    for node in parent:
        members.setdefault(root(node), []).append(node)
    return sorted(sorted(int(index.ids[i]) for i in group) for group in members.values())


def _close_pairs(index: HashIndex, max_distance: int) -> tuple[np.ndarray, np.ndarray]:
    """The positions of the pairs sharing a band of a pHash and within ``max_distance``."""
    found = []
    for column in _PHASHES:
        for band in range(BANDS):
            keys = (index.columns[column] >> np.uint64(16 * band)) & np.uint64(0xFFFF)
            order = np.argsort(keys, kind="stable")
            ordered = keys[order]
            # Positions p whose key equals the one k places on: with the keys sorted, a pair
            # of one bucket k apart, so each k step keeps only the positions that still pair.
            starts = np.arange(len(order))
            step = 1
            while len(starts):
                starts = starts[starts + step < len(order)]
                starts = starts[ordered[starts] == ordered[starts + step]]
                a, b = order[starts], order[starts + step]
                near = _distances(np.bitwise_count(index.columns[:, a] ^ index.columns[:, b])) <= max_distance
                found.append(np.stack([np.minimum(a, b)[near], np.maximum(a, b)[near]]))
                step += 1
    if not found:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    pairs = np.unique(np.concatenate(found, axis=1), axis=1)
    return pairs[0], pairs[1]
