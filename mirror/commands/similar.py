"""`mirror reverse --similar` and `mirror duplicates`: copies the site's rule misses, found by
perceptual fingerprints of the files the archive keeps (:mod:`mirror.search.similar`).

The site's reverse search compares four corner intensities within a box: a copy re-encoded,
resized, lightly cropped or given a border can fall outside it, and the site never looks for
near-duplicates inside the archive at all. These compare fingerprints instead, nearest first.
"""

from __future__ import annotations

import itertools
import json
import sqlite3
from dataclasses import dataclass
from typing import Any

from sqlite_utils import Database

from ..imaging import MediaError
from ..download.fingerprints import SOURCES
from ..imaging.similar import distance, fingerprint_of
from ..philomena import SIZE_BOXES
from ..search.similar import GROUP_DISTANCE, HashIndex, groups
from .reverse import SourceError, record_line

__all__ = ["Group", "similar_to", "duplicate_groups", "describe_similar", "describe_groups", "NEAREST",
           "GROUP_DISTANCE"]

NEAREST = 20
PAIRS_LISTED = 30  # images of a group whose every pair is measured; a larger one: from its first only


def _index(db: Database) -> HashIndex:
    try:
        index = HashIndex.load(db)
    except sqlite3.OperationalError:  # a mirror from before fingerprints: no table yet
        index = None
    if index is None or not len(index):
        raise SourceError("the archive has no fingerprints to compare with: they are read from the files "
                          "`mirror download` keeps (thumbnails are enough), and `mirror verify` reads them "
                          "for files kept before")
    return index


def similar_to(db: Database, data: bytes, limit: int = NEAREST) -> list[tuple[dict[str, Any], int]]:
    """The ``limit`` archived images nearest the picture in ``data``: (record as kept, distance).
    The picture is fingerprinted as the archive's files are, from its thumbnail's size."""
    index = _index(db)
    try:
        fingerprint = fingerprint_of(data, scaled_into=SIZE_BOXES[SOURCES[0]])
    except MediaError as e:
        raise SourceError(f"cannot search with this file: {e}") from None
    return [(_record(db, near.image_id), near.distance) for near in index.nearest(fingerprint, limit)]


@dataclass(frozen=True)
class Group:
    """Near-duplicates: their ids, ascending, and the pairs of them within the distance, each with
    its distance (nearest first); a group of more than :data:`PAIRS_LISTED` images lists each
    image's distance from its first instead, as measuring every pair would take long."""

    ids: list[int]
    pairs: list[tuple[int, int, int]]
    from_first: list[int]  # each image's distance from the first (0 for the first)

    def as_json(self) -> dict[str, Any]:
        return {"ids": self.ids, "pairs": [{"a": a, "b": b, "distance": d} for a, b, d in self.pairs]}


def duplicate_groups(db: Database, max_distance: int = GROUP_DISTANCE) -> list[Group]:
    """Groups of near-duplicate images in the archive, each with its pairs and their distances."""
    index = _index(db)
    found = []
    for ids in groups(index, max_distance):
        from_first = index.distances_within(ids)
        found.append(Group(ids, _pairs(index, ids, from_first, max_distance), from_first))
    return found


def _pairs(index: HashIndex, ids: list[int], from_first: list[int], max_distance: int) -> list[tuple[int, int, int]]:
    if len(ids) > PAIRS_LISTED:
        return [(ids[0], other, d) for other, d in zip(ids[1:], from_first[1:])]
    prints = {image_id: index.fingerprint(image_id) for image_id in ids}
    found = [(a, b, distance(prints[a], prints[b])) for a, b in itertools.combinations(ids, 2)]
    return sorted((pair for pair in found if pair[2] <= max_distance), key=lambda pair: (pair[2], pair[:2]))


def describe_similar(found: list[tuple[dict[str, Any], int]], max_distance: int = GROUP_DISTANCE) -> str:
    """One line per image, nearest first, with its distance (0: the same picture), and a line
    before the first further than ``max_distance``: past it, different pictures (or edits)."""
    lines = [f"{record_line(record)} (distance {apart})" for record, apart in found]
    cut = _cut([apart for _, apart in found], max_distance)
    if cut is not None:
        lines.insert(cut, f"  -- {'no copy: ' if cut == 0 else ''}past this line, further than {max_distance}: "
                          "not copies (other pictures, or edits of this one) --")
    return "\n".join(lines)


def _cut(distances: list[int], max_distance: int) -> int | None:
    """Where the line past which matches are further than ``max_distance`` goes (distances ascending)."""
    return next((position for position, apart in enumerate(distances) if apart > max_distance), None)


def describe_groups(db: Database, found: list[Group], max_distance: int = GROUP_DISTANCE,
                    as_json: bool = False) -> str:
    """Each group, its first image and then the others with their distance from it, for a curator
    to review; an image grouped only through the others (further than ``max_distance`` from the
    first) comes after a line that says so. ``as_json``: the groups with their pairs."""
    if as_json:
        return json.dumps({"distance": max_distance, "groups": [group.as_json() for group in found]})
    if not found:
        return f"no near-duplicates found within distance {max_distance}"
    lines = [f"{len(found)} group{'s' * (len(found) != 1)} of near-duplicates (within distance {max_distance}; "
             "0: the same picture)"]
    for group in found:
        first, rest = group.ids[0], _from_first(group)
        members = [f"    {image_id} ({_size(db, image_id)}) at distance {apart} from {first}"
                   for image_id, apart in rest]
        cut = _cut([apart for _, apart in rest], max_distance)
        if cut is not None:
            members.insert(cut, f"      -- past this line, further than {max_distance} from {first}: "
                                "grouped through the others --")
        lines += [f"  {first} ({_size(db, first)})", *members]
    return "\n".join(lines)


def _from_first(group: Group) -> list[tuple[int, int]]:
    """The group's other images with their distances from its first, nearest first."""
    return sorted(zip(group.ids[1:], group.from_first[1:]), key=lambda item: (item[1], item[0]))


def _record(db: Database, image_id: int) -> dict[str, Any]:
    row = db.execute("SELECT coalesce(stub, raw) FROM images WHERE id = ?", [image_id]).fetchone()
    return json.loads(row[0]) if row and row[0] else {"id": image_id}


def _size(db: Database, image_id: int) -> str:
    row = db.execute("SELECT width, height, format FROM images WHERE id = ?", [image_id]).fetchone()
    return f"{row[0]}x{row[1]} {row[2]}" if row and row[0] else "not kept"
