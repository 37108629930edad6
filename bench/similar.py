"""The perceptual finder (``mirror.imaging.similar``, ``mirror.search.similar``) on real drawn
artwork: how often copies are grouped with their original and found first, how often different
pictures are grouped, how near pictures never stored come; and how fast it searches.

1. Four corpora stand for archives: painted (``mirror/localsite/art``: 243 archived, 59 never
   stored), vector clip art (``tests/fixtures/clipart``: 150 and 50), emotes of 64-128 px
   (``tests/fixtures/emotes``: 110 and 40) and drawn stamps of 60-72 px on transparency
   (``tests/fixtures/stamps``: 149 and 49). Each archived picture's fingerprint is read from its
   ``thumb`` (250 px, transparency kept, as the site renders it), as ``mirror download`` does. Of
   each, the 17 kinds of copies in ``tests/support/art.py`` are made (scaled, re-encoded, cropped
   off one edge or more, 3-10% white and black borders, flattened, re-saved blind to alpha), each
   fingerprinted as ``reverse --similar`` reads a query and as the archive would keep it (at the
   thumbnail's size). Reported per kind: copies grouped with their original (``groups`` over
   originals and copies together, at ``GROUP_DISTANCE``), copies whose original comes first when
   the copy is searched (strictly nearer than every other archived picture); then the pairs of
   different pictures that share a group, the nearest distance of each unseen picture, and the
   kinds short of issue 39's targets (grouped 98%, found first 99%). A copy that shows nothing
   (black line art flattened on black), or too small to fingerprint (a quarter of a 60 px stamp,
   or of a 72 px one: a 4 px object on its ground),
   is left out, and counted.
2. 1,000,000 random fingerprints are searched for their nearest 50, without crops and with each
   view's five crops (version 6): p50 and p95.
3. ``groups`` over 1,000,000 random fingerprints (``--grouped N``) with 1% planted pairs of
   near-duplicates (a few bits apart; a tenth of them edits, told apart by their sketches), the
   way before issue 39 (:func:`before`), today's without crops (version 5) and with each image's
   five crops (version 6, a tenth of the pairs a copy near a crop of the other) on one thread and
   on two, side by side: wall and CPU time, peak memory (tracemalloc: what Python and numpy allocate), groups found.

Sketches come from a function, one image at a time, as from the database (``load_sketches``).

    .venv/bin/python bench/similar.py [--quick] [--only corpora|speed] [--misses] [--corpus WORD]
                                [--grouped N]

Last measured (2 shared cores), at GROUP_DISTANCE 12: see docs/duplicates.md.
Random fingerprints spread evenly over the bands; real pHashes do not, so the groups figure is a floor.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import os
import statistics
import sys
import time
import tracemalloc
import zlib
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the corpus's copies live beside the tests

from mirror.imaging.errors import MediaError
from mirror.imaging.fine import FINE_SIDE
from mirror.imaging.similar import (CROPS, KINDS, MIN_CONTENT, MIN_SIDE, Fingerprint, View, distance, edit_penalty,
                                   fingerprint_of, hamming, shows_nothing, views_of, word_distance)
from mirror.imaging.sketch import SKETCH_SIDE
from mirror.search import similar as finder
from mirror.search.similar import GROUP_DISTANCE, HashIndex, groups
from tests.support.art import Artwork, artworks, clipart, copies, decoded, emotes, png, stamps, thumbnail

COPY_BASE = 100_000  # copies' ids: COPY_BASE * (kind + 1) + the original's
THUMB = (250, 250)  # the thumbnail's box: what the archive fingerprints, and a query is read at
GROUPED_TARGET, FIRST_TARGET = 0.98, 0.99  # issue 39: for every copy kind, on each corpus


def corpus_figures(archived: tuple[Artwork, ...], unseen: tuple[Artwork, ...],
                   misses: bool = False) -> dict[str, tuple[float, float]]:
    """Print the figures of one corpus; return each copy kind's (grouped, found first) shares;
    with ``misses``, what each copy left out of its original's group is made of (:func:`parts`)."""
    originals = {number: fingerprint_of(thumbnail(art.picture())) for number, art in enumerate(archived, 1)}
    made: dict[str, dict[int, Fingerprint]] = {}
    blank, small = Counter(), Counter()
    for number, art in enumerate(archived, 1):
        for kind, data in copies(art).items():
            if all(shows_nothing(view) for view in views_of(decoded(data))):
                blank[kind] += 1  # black line art flattened on black: a black square, nobody's copy
                continue
            if min(decoded(data).size) < MIN_SIDE:
                small[kind] += 1  # a quarter of a 60 px stamp: no fingerprint, as the archive keeps none
                continue
            try:  # as the archive keeps an upload (its thumbnail) and as `reverse --similar` reads a query: alike
                made.setdefault(kind, {})[number] = fingerprint_of(data, scaled_into=THUMB)
            except MediaError:
                small[kind] += 1  # a quarter of a 72 px stamp: a 4 px object on a plain ground

    if blank:
        print(f"copies left out as showing nothing (one colour): {dict(blank)}")
    if small:
        print(f"copies left out as too small to fingerprint (under {MIN_SIDE} px a side, or showing under "
              f"{MIN_CONTENT} px across): {dict(small)}")
    made["its own file"] = {number: fingerprint_of(png(art.picture()), scaled_into=THUMB)
                            for number, art in enumerate(archived, 1)}
    index = HashIndex.of(originals)
    everything = dict(originals)
    for position, kind in enumerate(made):
        if kind != "its own file":
            everything.update({COPY_BASE * (position + 1) + n: f for n, f in made[kind].items()})
    found_groups = groups(HashIndex.of(everything))
    group_of = {image_id: k for k, group in enumerate(found_groups) for image_id in group}
    totals, shares = Counter(), {}
    for position, (kind, found) in enumerate(made.items()):
        first = sum(_first(index, fingerprint, number) for number, fingerprint in found.items())
        missed = [n for n in found if group_of.get(COPY_BASE * (position + 1) + n, -1) != group_of.get(n, -2)]
        together = len(found) - len(missed)
        grouped = f"grouped {together:3} of {len(found)}" if kind != "its own file" else " " * 17
        print(f"{kind:22} {grouped}   found first {first:3} of {len(found)}")
        if kind != "its own file":
            for n in missed if misses else ():
                print(f"    missed: {archived[n - 1].name}: {parts(originals[n], found[n])}")
            totals.update(copies=len(found), grouped=together, first=first)
            shares[kind] = (together / len(found), first / len(found))
    print(f"{'all copies':22} grouped {totals['grouped'] / totals['copies']:.1%}   "
          f"found first {totals['first'] / totals['copies']:.1%} (of {totals['copies']})")
    _false_pairs(found_groups, archived)
    found = [(index.nearest(fingerprint_of(thumbnail(art.picture())), limit=1)[0], art) for art in unseen]
    nearest = sorted(near.distance for near, _ in found)
    apart = sum(d > GROUP_DISTANCE for d in nearest)
    print(f"pictures never stored: {apart} of {len(nearest)} ({apart / len(nearest):.1%}) matched by nothing within "
          f"{GROUP_DISTANCE}; nearest distances, lowest first: {nearest[:12]}")
    for near, art in found:
        if near.distance <= GROUP_DISTANCE:
            print(f"  {art.name} matched {archived[near.image_id - 1].name} at {near.distance}")
    return shares


def parts(a: Fingerprint, b: Fingerprint) -> str:
    """What the distance of two pictures is made of, on their nearest views by their words: the
    bits of each pHash, the steps of the colour words and of the hues, and what the sketches add.
    A crop moves both pHashes; a frame trimmed unlike the original's moves the trimmed one, the
    colours and the sketch, the whole pHash staying near."""
    _, x, y = min(((word_distance(x, y), x, y) for x in a.views for y in b.views), key=lambda pair: pair[0])
    colours = hamming(x.red, y.red) + hamming(x.green, y.green) + hamming(x.blue, y.blue)
    return (f"distance {distance(a, b)}: whole {hamming(x.whole, y.whole)}, trimmed {hamming(x.trimmed, y.trimmed)}, "
            f"colours {colours}, hue steps {hamming(x.hue, y.hue)}, sketch +{edit_penalty(x.sketch, y.sketch)}")


def _first(index: HashIndex, fingerprint: Fingerprint, original: int) -> bool:
    nearest = index.nearest(fingerprint, limit=2)
    return nearest[0].image_id == original and (len(nearest) < 2 or nearest[1].distance > nearest[0].distance)


def _false_pairs(found: list[list[int]], archived: tuple) -> None:
    pairs = wrong = 0
    mixed = []
    for group in found:
        owners = [image_id % COPY_BASE for image_id in group]
        for a, b in itertools.combinations(owners, 2):
            pairs += 1
            wrong += a != b
        if len(set(owners)) > 1:
            mixed.append(", ".join(archived[n - 1].name for n in sorted(set(owners))))
    print(f"pairs sharing a group: {pairs}; of different pictures: {wrong} ({wrong / max(pairs, 1):.2%})")
    for names in mixed:
        print(f"  grouped together: {names}")


def random_index(n: int, rng: np.random.Generator, cropped: bool = True) -> HashIndex:
    hashes = rng.integers(0, 2**64, size=(n, len(KINDS)), dtype=np.uint64)
    return HashIndex(np.arange(1, n + 1), hashes, _sketches, random_crops(n, rng) if cropped else None)


def random_crops(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The words of each image's crops (:data:`CROPS`), random: each image's one view has them all."""
    words = rng.integers(0, 2**64, size=(n * len(CROPS), len(KINDS)), dtype=np.uint64)
    words[:, 1] = words[:, 0]  # a crop's pHash is its whole and its trimmed
    return np.repeat(np.arange(1, n + 1), len(CROPS)), np.zeros(n * len(CROPS), dtype=np.int64), words


def _sketches(image_id: int) -> list[bytes]:
    """A sketch and fine picture for each image, as the database would hand them over: of one
    level, the image's id over 2 (the two of a planted pair alike), except the second of every
    tenth pair: an edit."""
    pair = (image_id - 1) // 2
    edited = pair % 10 == 9 and image_id % 2 == 0
    return [_flat_sketch((pair * 37 + 120 * edited) % 256)]


@functools.cache
def _flat_sketch(level: int) -> bytes:
    return bytes([level]) * (SKETCH_SIDE * SKETCH_SIDE * 3) + zlib.compress(bytes([level]) * (FINE_SIDE**2 * 3))


def nearest_timings(n: int, searches: int = 200, cropped: bool = True) -> list[float]:
    rng = np.random.default_rng(1)
    index = random_index(n, rng, cropped)
    took = []
    for position in rng.integers(n, size=searches):
        stored = index.fingerprint(int(index.ids[position])).views[0]
        query = Fingerprint((View(*(v ^ 0b1011 for v in stored.values), sketch=stored.sketch,
                                  crops=tuple(tuple(v ^ 0b1011 for v in crop) for crop in stored.crops)),))
        start = time.perf_counter()
        index.nearest(query, limit=50)
        took.append(time.perf_counter() - start)
    return sorted(took)


def group_figures(n: int, planted: int, components: Callable | None = None,
                  cropped: bool = True, workers: int | None = None) -> tuple[float, float, float, int, int]:
    """Seconds, CPU seconds (on a shared machine the figure to compare), peak MB, how many planted
    pairs came out as a group of their own (every tenth is an edit, by its sketch, and must not),
    and groups in all; with ``components``, grouping by it (:func:`before`, side by side); with
    ``cropped``, each image with the words of its crops (version 6), else without (version 5);
    on ``workers`` threads (default: ``finder.WORKERS``; the CPU counted is every thread's). A tenth of the planted pairs are a copy near a crop of the other, not near its own words."""
    rng = np.random.default_rng(2)
    hashes = rng.integers(0, 2**64, size=(n, len(KINDS)), dtype=np.uint64)
    crops = random_crops(n, rng) if cropped else None
    flips = np.array([0b1, 0b100000000, 0b1 << 40, 0, 0b11, 0], dtype=np.uint64)  # 5 bits apart
    hashes[1:2 * planted:2] = hashes[0:2 * planted:2] ^ flips
    if crops is not None:  # every tenth pair, the fifth of each ten: the second near the first's middle crop
        near_crop = np.arange(4, planted, 10)
        hashes[2 * near_crop + 1] = crops[2][2 * near_crop * len(CROPS)] ^ flips
    index = HashIndex(np.arange(1, n + 1), hashes, _sketches, crops)
    kept = finder._components
    finder._components = components or kept
    tracemalloc.start()
    start, cpu = time.perf_counter(), time.process_time()
    try:
        found = groups(index, workers=workers)
    finally:
        finder._components = kept
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    pairs = {(2 * k + 1, 2 * k + 2) for k in range(planted)}
    return seconds, cpu, peak, sum(tuple(group) in pairs for group in found), len(found)


def before(columns: np.ndarray, max_distance: int, joined: tuple[np.ndarray, np.ndarray],
           close: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray], crops: object = None,
           workers: object = None) -> np.ndarray:
    """Grouping as it was before issue 39, for the figures side by side: only the pairs sharing a
    16-bit band of a pHash, each compared with the next 64 in its bucket (pairs within the
    distance that share no band are missed)."""
    count = columns.shape[1]
    parent = np.arange(count)
    finder._join(parent, *joined)
    for column in finder._PHASHES:
        for band in range(4):
            keys = (columns[column] >> np.uint64(16 * band)) & np.uint64(0xFFFF)
            order = np.lexsort((columns[column], keys))
            ordered = keys[order]
            starts = np.arange(count)
            for step in range(1, 65):
                starts = starts[starts + step < count]
                starts = starts[ordered[starts] == ordered[starts + step]]
                if not len(starts):
                    break
                a, b = order[starts], order[starts + step]
                words = finder._apart(columns[:, a], columns[:, b])
                near = words <= max_distance
                a, b, words = a[near], b[near], words[near]
                apart = finder._roots(parent, a) != finder._roots(parent, b)
                a, b, words = a[apart], b[apart], words[apart]
                if len(a):
                    kept = close(a, b, words)
                    finder._join(parent, a[kept], b[kept])
    return finder._roots(parent, np.arange(count))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes: a check that everything runs")
    parser.add_argument("--only", choices=("corpora", "speed"), help="only the corpora's figures, or only the timings")
    parser.add_argument("--misses", action="store_true",
                        help="print what each copy left out of its original's group is made of")
    parser.add_argument("--corpus", help="only the corpus whose title holds this word (painted, clip, emotes, stamps)")
    parser.add_argument("--grouped", type=int, help="fingerprints grouped (default 1,000,000; 10,000 with --quick)")
    options = parser.parse_args()
    stored, grouped = (100_000, 10_000) if options.quick else (1_000_000, 1_000_000)
    grouped = options.grouped or grouped
    limit = 40 if options.quick else None
    if options.only != "speed":
        _corpora(limit, options.misses, options.corpus)
    if options.only != "corpora":
        _speed(stored, grouped)


def _corpora(limit: int | None, misses: bool = False, corpus: str | None = None) -> None:
    below = []
    for title, archived, unseen in (
            ("Painted (mirror/localsite/art)", artworks("archived"), artworks("unseen")),
            ("Vector clip art (tests/fixtures/clipart)", clipart("archived"), clipart("unseen")),
            ("Emotes, 64-128 px (tests/fixtures/emotes)", emotes("archived"), emotes("unseen")),
            ("Stamps, 72 px (tests/fixtures/stamps)", stamps("archived"), stamps("unseen"))):
        if corpus and corpus.lower() not in title.lower():
            continue
        print(f"\n{title}")
        shares = corpus_figures(archived[:limit], unseen[:limit], misses)
        below += [f"{title.split(' (')[0]}: {kind} grouped {grouped:.0%}, first {first:.0%}"
                  for kind, (grouped, first) in shares.items() if grouped < GROUPED_TARGET or first < FIRST_TARGET]
    print(f"\nkinds below the targets (grouped {GROUPED_TARGET:.0%}, found first {FIRST_TARGET:.0%}): "
          + ("none" if not below else "; ".join(below)))


def _speed(stored: int, grouped: int) -> None:
    for cropped in (False, True):
        took = nearest_timings(stored, cropped=cropped)
        print(f"nearest 50 over {stored:,} stored fingerprints, {'with' if cropped else 'without'} crops: "
              f"p50 {statistics.median(took) * 1000:.1f} ms, p95 {took[int(len(took) * 0.95)] * 1000:.1f} ms "
              f"({len(took)} searches, load {os.getloadavg()[0]:.1f})")
    for name, components, cropped, workers in (
            ("before (16-bit bands, a window of 64)", before, False, 1),
            ("exact (bands from the distance), no crops (version 5)", None, False, None),
            ("exact, with each image's crops (version 6), one thread", None, True, 1),
            (f"exact, with each image's crops (version 6), {finder.WORKERS} threads", None, True, None)):
        seconds, cpu, peak, found, total = group_figures(grouped, grouped // 100, components, cropped, workers)
        print(f"groups over {grouped:,} fingerprints, {name}: {seconds:.2f} s ({cpu:.2f} s of CPU, "
              f"load {os.getloadavg()[0]:.1f}), "
              f"peak {peak:.0f} MiB allocated; "
              f"{found} of {grouped // 100} planted pairs found as their own group (a tenth are edits), "
              f"{total} groups in all")


if __name__ == "__main__":
    main()
