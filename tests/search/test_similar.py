"""The nearest stored fingerprints and groups of near-duplicates (mirror.search.similar), and the
``image_hashes`` table they are read from."""

from __future__ import annotations

import io
import json
import sys
import textwrap
import threading

import numpy as np
import pytest
from PIL import Image

from mirror.imaging.similar import (
    CROP_RANGE,
    CROPS,
    EDIT_RANGE,
    KINDS,
    HUE_SLACK,
    HUE_WEIGHT,
    LOW_HUES,
    VERSION,
    Fingerprint,
    View,
    distance,
    fingerprint_of,
    words_apart,
)
from mirror.imaging.sketch import EDIT_SLACK, SKETCH_SIDE
from mirror.localsite.files.pictures import picture
from mirror.search import similar as similar_search
from mirror.search.similar import HashIndex, Neighbour, groups
from mirror.store import open_database
from mirror.store.similar import delete_hashes, load_hashes, load_sketches, save_hashes

from ..support.memory import run_measured


def jpeg_copy(data: bytes, scale: float = 0.5) -> bytes:
    image = Image.open(io.BytesIO(data)).convert("RGB")
    out = io.BytesIO()
    image.resize((round(image.width * scale), round(image.height * scale))).save(out, "JPEG", quality=80)
    return out.getvalue()


PICTURES = {n: picture(f"search-{n}", "png", 320, 240, f"#{n}") for n in range(1, 31)}


def test_the_nearest_come_first_with_their_distance():
    fingerprints = {n: fingerprint_of(data) for n, data in PICTURES.items()}
    index = HashIndex.of(fingerprints)
    query = fingerprint_of(jpeg_copy(PICTURES[7]))
    found = index.nearest(query, limit=5)
    assert found[0].image_id == 7
    assert [f.distance for f in found] == sorted(f.distance for f in found)
    assert all(f.distance == distance(query, fingerprints[f.image_id]) for f in found)
    assert len(index.nearest(query, limit=100)) == 30
    assert [f.image_id for f in index.nearest(query, max_distance=found[0].distance)] == [7]


def test_ties_are_broken_by_id_and_a_cut_never_splits_a_tie_wrongly():
    same = Fingerprint((View(1, 2, 3, 4, 5),))
    index = HashIndex(np.array([9, 4, 6]), np.array([same.views[0].values] * 3, dtype=np.uint64))
    assert [(f.image_id, f.distance) for f in index.nearest(same, limit=2)] == [(4, 0), (6, 0)]


def test_groups_hold_the_planted_duplicates_and_no_unrelated_picture():
    fingerprints = {n: fingerprint_of(data) for n, data in PICTURES.items()}
    fingerprints[101] = fingerprint_of(jpeg_copy(PICTURES[3]))
    fingerprints[102] = fingerprint_of(jpeg_copy(PICTURES[3], 0.8))
    fingerprints[103] = fingerprint_of(jpeg_copy(PICTURES[12]))
    assert groups(HashIndex.of(fingerprints)) == [[3, 101, 102], [12, 103]]


def test_groups_of_many_random_hashes_find_only_the_planted_pairs():
    rng = np.random.default_rng(4)
    hashes = rng.integers(0, 2**64, size=(20_000, len(KINDS)), dtype=np.uint64)
    hashes[1] = hashes[0] ^ np.array([1, 1 << 63, 0, 2, 0, 0], dtype=np.uint64)
    hashes[501] = hashes[500] ^ np.array([0, 0, 1 << 20, 0, 1, 0], dtype=np.uint64)
    assert groups(HashIndex(np.arange(1, 20_001), hashes)) == [[1, 2], [501, 502]]


CLUSTERS = textwrap.dedent("""
    import json, resource, sys, time
    import numpy as np
    from mirror.search.similar import HashIndex, groups
    resource.setrlimit(resource.RLIMIT_AS, (3 * 2**30, 3 * 2**30))  # the old pairs listing died at 23.6 GB
    rng = np.random.default_rng(5)
    n = 20_000
    others = rng.integers(0, 2**64, size=(n, 6), dtype=np.uint64)
    same = np.repeat(others[:1], n, axis=0)  # one fingerprint 20,000 times: re-uploads, blank pictures
    near = np.repeat(others[1:2], n, axis=0)  # 20,000 fingerprints a bit or two from one another
    near[:, 0] ^= np.uint64(1) << rng.integers(0, 64, n).astype(np.uint64)
    near[:, 1] ^= np.uint64(1) << rng.integers(0, 64, n).astype(np.uint64)
    near[:, 2] ^= np.uint64(1) << rng.integers(0, 60, n).astype(np.uint64)
    hashes = np.concatenate([same, near, others[2:]])
    # each with five crops whose words are its own, as a flat picture's are: a cluster's crops
    # fall in its own bucket, 100,000 of them
    crops = np.repeat(hashes, 5, axis=0)
    crops[:, 1] = crops[:, 0]
    ids = np.arange(1, len(hashes) + 1)
    started = time.monotonic()
    found = groups(HashIndex(ids, hashes, crops=(np.repeat(ids, 5), np.zeros(len(crops), dtype=np.int64), crops)))
    print(json.dumps({"seconds": time.monotonic() - started, "sizes": [len(g) for g in found],
                      "distinct_near": len(np.unique(near, axis=0)),
                      "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}))
""")


def test_clusters_of_twenty_thousand_group_in_seconds_and_bounded_memory():
    """2,000 identical fingerprints took 20 s and 1.1 GB: every pair in a cluster was listed.
    Each view's crops too: those of a cluster's members are measured against no view of it."""
    done, peak_mb = run_measured([sys.executable, "-c", CLUSTERS], timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    measured = {**json.loads(done.stdout), "peak_mb": peak_mb}
    assert measured["distinct_near"] > 15_000
    assert measured["sizes"] == [20_000, 20_000]  # each cluster whole, nothing else joined
    assert measured["seconds"] < 10 and measured["peak_mb"] < 500, measured


def test_the_table_round_trips_every_bit(tmp_path):
    db = open_database(tmp_path / "mirror.db")
    top = View(2**64 - 1, 2**63, 0, 1, 2**63 - 1)
    other = fingerprint_of(PICTURES[1])
    save_hashes(db, 5, top.hashes(), "thumb", VERSION)
    save_hashes(db, 2, [view.hashes() for view in other.views], "full", VERSION)
    save_hashes(db, 9, {"whole": 1}, "thumb", VERSION)  # incomplete: not searched
    ids, hashes = load_hashes(db, KINDS)
    assert ids.tolist() == [2, 5]
    assert [int(v) for v in hashes[1]] == list(top.values)
    assert [int(v) for v in hashes[0]] == list(other.views[0].values)
    save_hashes(db, 5, [view.hashes() for view in other.views], "full", VERSION)  # replaced, not added
    assert HashIndex.load(db).nearest(other, limit=3)[1].distance == 0
    delete_hashes(db, 5)
    assert load_hashes(db, KINDS)[0].tolist() == [2]
    assert db["image_hashes"].count == len(KINDS) + 1  # image 2 whole, and the incomplete one


def _sketch(level: int) -> bytes:
    return bytes([level]) * (SKETCH_SIDE * SKETCH_SIDE * 3)


def test_sketches_decide_between_pictures_their_words_find_near():
    """The nearest by the words is an edit (its sketch far off): it comes after a copy a few bits
    further, in a search and in groups, and a search measures as many as it takes to be sure."""
    words = (0b1011, 2**40, 7, 7, 7, 0)
    query = Fingerprint((View(*words, sketch=_sketch(100)),))
    edit = Fingerprint((View(*words[:2], 7 ^ 1, *words[3:], sketch=_sketch(100 + EDIT_SLACK + 40)),))
    copy = Fingerprint((View(words[0] ^ 0b111, words[1] ^ 0b111, *words[2:], sketch=_sketch(102)),))
    fingerprints = {1: edit, 2: copy, 3: query}
    assert distance(query, edit) == EDIT_RANGE + 1 and distance(query, copy) == 3
    index = HashIndex.of({1: edit, 2: copy})
    assert [(n.image_id, n.distance) for n in index.nearest(query, limit=1)] == [(2, 3)]
    assert [(n.image_id, n.distance) for n in index.nearest(query, limit=5)] == [(2, 3), (1, EDIT_RANGE + 1)]
    assert groups(HashIndex.of(fingerprints)) == [[2, 3]]
    no_sketches = {n: Fingerprint(tuple(View(*v.values) for v in f.views)) for n, f in fingerprints.items()}
    assert groups(HashIndex.of(no_sketches)) == [[1, 2, 3]]  # fingerprints from before: words alone


def test_sketches_and_crops_are_kept_by_view_and_read_back_whole(tmp_path):
    db = open_database(tmp_path / "mirror.db")
    views = fingerprint_of(PICTURES[2]).views
    save_hashes(db, 2, [view.hashes() for view in views], "thumb", VERSION, [view.sketch for view in views],
                [view.crops for view in views])
    save_hashes(db, 3, [view.hashes() for view in views], "thumb", VERSION)  # an older finder's: none
    assert load_sketches(db, 2) == [view.sketch for view in views]
    assert len(views[0].sketch) > SKETCH_SIDE**2 * 3  # the sketch, then the fine picture
    assert all(len(view.crops) == len(CROPS) for view in views)
    assert load_sketches(db, 3) == []
    index = HashIndex.load(db)
    assert index.fingerprint(2) == Fingerprint(views)  # every bit of every crop, unsigned again
    assert index.fingerprint(3) == Fingerprint(tuple(View(*view.values, sketch=b"") for view in views))
    delete_hashes(db, 2)
    assert load_sketches(db, 2) == [] and db["image_sketches"].count == 0
    assert db["image_crops"].count == 0


def test_a_search_reads_the_sketches_of_near_pictures_only():
    """Sketches live in the database and are read one image at a time: a search over many
    pictures reads those its words find within EDIT_RANGE, not every one it returns."""
    rng = np.random.default_rng(5)
    hashes = rng.integers(0, 2**64, size=(5_000, len(KINDS)), dtype=np.uint64)
    read = []

    def sketches(image_id: int) -> list[bytes]:
        read.append(image_id)
        return [_sketch(image_id % 256)]

    index = HashIndex(np.arange(1, 5_001), hashes, sketches)
    query = Fingerprint((View(*(int(v) for v in hashes[41]), sketch=_sketch(42)),))
    found = index.nearest(query, limit=50)
    assert found[0].image_id == 42 and found[0].distance == 0 and len(found) == 50
    assert read == [42]


def _view(whole: int, trimmed: int, colours: tuple[int, int, int] = (0x0FFF, 0x0FFF, 0x0FFF)) -> View:
    return View(whole, trimmed, *colours, hue=0xFF)


def test_groups_join_a_pair_within_the_distance_that_shares_no_16_bit_band():
    """Eight bits apart, two in each 16-bit band of both pHashes: within 12, so `reverse --similar`
    reports the pair at 8; grouping by shared 16-bit bands never compared it."""
    base = 0x9A3C_57E1_0F6B_C284
    spread = sum(1 << (16 * band + bit) for band in range(4) for bit in (3, 11))
    first, second = Fingerprint((_view(base, base),)), Fingerprint((_view(base ^ spread, base ^ spread),))
    assert distance(first, second) == 8
    rng = np.random.default_rng(3)
    others = {n: Fingerprint((View(*(int(v) for v in rng.integers(0, 2**64, 6, dtype=np.uint64))),))
              for n in range(3, 200)}
    index = HashIndex.of({1: first, 2: second, **others})
    assert [1, 2] in groups(index, 12)
    assert groups(index, 7) == [] or [1, 2] not in groups(index, 7)
    assert [near.image_id for near in index.nearest(first, limit=2)] == [1, 2]


@pytest.mark.parametrize("small_bucket", [similar_search.SMALL_BUCKET, 0])
def test_groups_find_every_pair_within_the_distance_as_a_search_does(monkeypatch, small_bucket):
    """Groups are exact: on fingerprints with a few near copies each (1-8 bits off either pHash,
    colour words of few levels, as real ones are), the components equal those of every pair
    measured one by one, at several distances; the buckets walked neighbour by neighbour first,
    or at once by their groups (as a bucket larger than a few is)."""
    monkeypatch.setattr(similar_search, "SMALL_BUCKET", small_bucket)
    rng = np.random.default_rng(7)
    base = rng.integers(0, 2**64, size=(150, len(KINDS)), dtype=np.uint64)
    for row in base:
        for column in (2, 3, 4):  # thermometer codes of four quarters' levels
            row[column] = sum(((1 << int(level)) - 1) << (15 * quarter)
                              for quarter, level in enumerate(rng.integers(5, 11, 4)))
        row[5] = 0
    copies = []
    for _ in range(2):
        copy = base.copy()
        for row in copy:
            for _ in range(rng.integers(0, 9)):
                row[rng.integers(0, 2)] ^= np.uint64(1) << np.uint64(rng.integers(0, 64))
        copies.append(copy)
    hashes = np.concatenate([base, *copies])
    prints = {n + 1: Fingerprint((View(*(int(v) for v in row)),)) for n, row in enumerate(hashes)}
    index = HashIndex.of(prints)
    for within in (6, 12, 16):
        assert groups(index, within) == _pair_by_pair(prints, within), within


def _pair_by_pair(prints: dict[int, Fingerprint], within: int) -> list[list[int]]:
    """The groups every pair measured one by one makes: what :func:`groups` must find."""
    parent = {n: n for n in prints}

    def root(n: int) -> int:
        while parent[n] != n:
            n = parent[n]
        return n

    for a in prints:
        for b in prints:
            if a < b and distance(prints[a], prints[b]) <= within:
                parent[max(root(a), root(b))] = min(root(a), root(b))
    found: dict[int, list[int]] = {}
    for n in prints:
        found.setdefault(root(n), []).append(n)
    return sorted(group for group in found.values() if len(group) > 1)


def _thermometer_words(rng: np.random.Generator) -> list[int]:
    """A pHash pair, colour words of four quarters' levels (thermometer codes, as real ones are), no hue."""
    phash = int(rng.integers(0, 2**64, dtype=np.uint64))
    colours = [sum(((1 << int(level)) - 1) << (15 * quarter) for quarter, level in enumerate(rng.integers(5, 11, 4)))
               for _ in range(3)]
    return [phash, phash, *colours, 0]


def _flipped(words: list[int], rng: np.random.Generator, most: int) -> list[int]:
    copy = list(words)
    for _ in range(rng.integers(0, most + 1)):
        bit = 1 << int(rng.integers(0, 64))
        copy[0] ^= bit
        copy[1] ^= bit
    return copy


def test_groups_find_the_copies_near_a_crop_as_a_search_does():
    """A copy whose words are near only a crop's of its original (a drawing cropped 5% off every
    edge) is grouped with it and found by a search at the same distance, whichever is the query;
    two pictures whose crops alone are alike are not: crops are compared with views, never with
    crops. The groups equal those of every pair measured one by one."""
    rng = np.random.default_rng(11)
    originals = {}
    for n in range(1, 121):
        crops = tuple(tuple(_thermometer_words(rng)) for _ in CROPS)
        originals[n] = Fingerprint((View(*_thermometer_words(rng), crops=crops),))
    prints = dict(originals)
    for n in range(1, 41):  # a copy near a crop of its original, and far from its own words
        crop = list(originals[n].views[0].crops[n % len(CROPS)])
        its_crops = tuple(tuple(_thermometer_words(rng)) for _ in CROPS)
        prints[1000 + n] = Fingerprint((View(*_flipped(crop, rng, 8), crops=its_crops),))
    shared = tuple(tuple(_thermometer_words(rng)) for _ in CROPS)  # two pictures whose crops are alike
    prints[2001] = Fingerprint((View(*_thermometer_words(rng), crops=shared),))
    prints[2002] = Fingerprint((View(*_thermometer_words(rng), crops=shared),))
    index = HashIndex.of(prints)
    for n in range(1, 41):
        apart = distance(originals[n], prints[1000 + n])
        assert apart <= 8 and apart == distance(prints[1000 + n], originals[n])
        assert Neighbour(n, apart) in index.nearest(prints[1000 + n], limit=2)  # itself, and its original
        assert Neighbour(1000 + n, apart) in index.nearest(originals[n], limit=2)
    expected = sorted([n, 1000 + n] for n in range(1, 41))
    assert groups(index, 12) == expected
    assert distance(prints[2001], prints[2002]) > 12


def test_crops_count_only_between_views_that_both_have_theirs():
    """A view without crops (too small for a fine picture, or an older finder's) is measured by
    its own words alone, by a search as by groups, though its words are a crop's of another."""
    rng = np.random.default_rng(5)
    crops = tuple(tuple(_thermometer_words(rng)) for _ in CROPS)
    original = Fingerprint((View(*_thermometer_words(rng), crops=crops),))
    small = Fingerprint((View(*crops[0]),))  # its words are the original's middle crop's: 0 with crops of its own
    with_its_own = Fingerprint((View(*crops[0], crops=crops),))
    assert distance(small, original) > 12 and distance(with_its_own, original) == 0
    index = HashIndex.of({1: original, 2: small})
    assert groups(index, 12) == []
    assert index.nearest(small, limit=1) == [Neighbour(2, 0)] and index.nearest(small, limit=2)[1].distance > 12
    assert groups(HashIndex.of({1: original, 3: with_its_own}), 12) == [[1, 3]]


@pytest.mark.parametrize("crops_at_once", [similar_search.CROPS_AT_ONCE, 7])
@pytest.mark.parametrize("hue_keys_from", [0, 10**9])
def test_groups_find_crop_pairs_around_a_cluster_as_pairs_measured_one_by_one(monkeypatch, crops_at_once,
                                                                              hue_keys_from):
    """A cluster of near copies fills a bucket of each band (past the few a crop is measured
    against whole): the crops of images outside it, and copies of its members' crops, are still
    joined exactly as every pair measured one by one joins them, the crops looked up all at once
    or a few at a time (as millions are), the keys with the hue's bits (as a large board's) or without."""
    monkeypatch.setattr(similar_search, "CROPS_AT_ONCE", crops_at_once)
    monkeypatch.setattr(similar_search, "HUE_KEYS_FROM", hue_keys_from)
    rng = np.random.default_rng(13)
    base = _thermometer_words(rng)
    prints = {}
    for n in range(1, 31):  # the cluster: one picture's words a bit or two apart, each with crops of its own
        crops = tuple(tuple(_thermometer_words(rng)) for _ in CROPS)
        prints[n] = Fingerprint((View(*_flipped(base, rng, 2), crops=crops),))
    for n in range(31, 61):  # pictures of their own, some a copy of a member's crop, some with a crop near the cluster
        crops = tuple(tuple(_thermometer_words(rng)) for _ in CROPS)
        if n % 3 == 0:
            crops = (tuple(_flipped(base, rng, 4)), *crops[1:])
        words = _flipped(list(prints[n - 30].views[0].crops[n % len(CROPS)]), rng, 6) if n % 3 == 1 \
            else _thermometer_words(rng)
        prints[n] = Fingerprint((View(*words, crops=crops),))
    index = HashIndex.of(prints)
    found = groups(index, 12)
    assert found == _pair_by_pair(prints, 12)
    assert len(found) == 1 and len(found[0]) == 50  # the cluster, its crops' copies, the crops near it
    assert groups(index, 6) == _pair_by_pair(prints, 6)  # fewer, longer bands: keys past the lookup table's


def test_a_search_read_a_block_at_a_time_measures_every_image_as_one_by_one(monkeypatch):
    """A search reads the index a block of views at a time, and the crops' hue words a block at a
    time: across the blocks' edges (an image's two views in two blocks, blocks with and without
    crops), each image's distance is the one its fingerprint measured alone gives, for queries
    with and without crops."""
    monkeypatch.setattr(similar_search, "SEARCH_BLOCK", 5)
    monkeypatch.setattr(similar_search, "HUE_BLOCK", 7)  # the crops' hue words too
    rng = np.random.default_rng(17)
    prints = {}
    for n in range(1, 41):
        views = []
        for _ in range(1 + n % 2):  # every other image on two backgrounds
            crops = tuple(tuple(_thermometer_words(rng)) for _ in CROPS) if n % 7 not in (3, 4) else ()
            views.append(View(*_thermometer_words(rng), crops=crops))
        prints[n] = Fingerprint(tuple(views))
    for n in range(41, 61):  # copies near an earlier image's own words or one of its crops
        original = prints[n - 40].views[0]
        words = original.crops[n % len(CROPS)] if original.crops and n % 2 else original.values
        crops = tuple(tuple(_thermometer_words(rng)) for _ in CROPS) if n % 5 else ()
        prints[n] = Fingerprint((View(*_flipped(list(words), rng, 6), crops=crops),))
    index = HashIndex.of(prints)
    assert len(index.view_ids) > 10 * similar_search.SEARCH_BLOCK  # more than ten blocks
    for query in (1, 2, 3, 10, 44, 45, 50, 55):
        assert index.distances(prints[query]).tolist() == [distance(prints[query], prints[n]) for n in index.ids]


def test_a_crop_counts_only_within_its_range_for_a_search_as_for_a_pair():
    """A crop brings two pictures nearer only within CROP_RANGE: past it they are as far as their
    own words say, so a search need not measure the crops of pictures their hues already set
    past it. A search's nearest and distances say what each pair measured alone says, on both
    sides of the range."""
    rng = np.random.default_rng(23)
    base = _thermometer_words(rng)

    def far() -> tuple[int, ...]:  # words whose pHash is the query's inverted: past the range from its own and crops'
        return tuple(_flipped_exactly(base, rng, 64)[:2] + _thermometer_words(rng)[2:])

    prints = {}
    for n, flips in enumerate((EDIT_RANGE - 4, CROP_RANGE, CROP_RANGE + 1, CROP_RANGE + 6), 1):
        crops = (tuple(_flipped_exactly(base, rng, flips)), *(far() for _ in CROPS[1:]))  # its middle crop `flips` away
        prints[n] = Fingerprint((View(*far(), crops=crops),))
    query = Fingerprint((View(*base, crops=tuple(tuple(_flipped_exactly(base, rng, 2)) for _ in CROPS)),))
    own = [distance(Fingerprint((View(*p.views[0].values),)), Fingerprint((View(*base),))) for p in prints.values()]
    assert min(own) > CROP_RANGE + 6
    apart = [distance(query, p) for p in prints.values()]
    assert apart[:2] == [EDIT_RANGE - 4, CROP_RANGE] and apart[2:] == own[2:]
    index = HashIndex.of(prints)
    assert index.distances(query).tolist() == apart
    assert index.nearest(query, limit=4) == sorted((Neighbour(n, d) for n, d in zip(prints, apart)),
                                                   key=lambda near: (near.distance, near.image_id))


def _flipped_exactly(words: list[int], rng: np.random.Generator, count: int) -> list[int]:
    """``words`` with ``count`` bits of its pHash flipped, each once."""
    bits = rng.choice(64, size=count, replace=False)
    flip = sum(1 << int(bit) for bit in bits)
    return [words[0] ^ flip, words[1] ^ flip, *words[2:]]


@pytest.mark.parametrize("workers", [1, 2])
def test_a_pair_refused_through_one_crop_is_still_asked_through_a_nearer_one(workers):
    """A pair of views may be near through several crops, each at its own distance, and the
    sketches add the same to each. Two threads kept one set of refused pairs, so the pair refused
    through a crop 8 words away (8 + 5 of sketches) was refused unasked when a crop 6 away came
    (11): a clip-art penguin's 10% white border and its quarter-size copy, 11 apart, were grouped
    by one thread and not by two. A pair is now refused unasked only at the distance it was
    refused at, or further."""
    from ..support.art import clipart, copies

    penguin = next(art for art in clipart() if art.name.endswith("-baby-tux-alex-kuehne-01.webp"))
    made = copies(penguin)
    bordered = fingerprint_of(made["10% white border"], scaled_into=(250, 250))
    small = fingerprint_of(made["quarter size"], scaled_into=(250, 250))
    through = sorted(words_apart(crop, own.values, hues_known=True) for view in bordered.views for crop in view.crops
                     for own in small.views if words_apart(crop, own.values, hues_known=True) <= 12)
    assert len(set(through)) > 1  # near through crops at more than one distance
    assert distance(bordered, small) <= 12
    for ids in ((1, 2), (2, 1)):
        index = HashIndex.of(dict(zip(ids, (bordered, small))))
        assert groups(index, 12, workers=workers) == [[1, 2]], ids


def test_groups_walk_the_bands_on_two_threads_and_ask_the_sketches_on_the_callers(monkeypatch):
    """The bands are shared among threads (each band's keys, sorts and words are numpy's, done
    with the GIL released): two threads walk them, the sketches (read from the caller's database
    connection) are read on the calling thread only, and the groups are those one thread finds,
    which are those of every pair measured one by one."""
    rng = np.random.default_rng(29)
    prints = {}
    for n in range(1, 81):
        crops = tuple(tuple(_thermometer_words(rng)) for _ in CROPS)
        prints[n] = Fingerprint((View(*_thermometer_words(rng), crops=crops),))
    for n in range(81, 121):  # copies of the first forty: of their own words, or of a crop
        original = prints[n - 80].views[0]
        words = original.crops[n % len(CROPS)] if n % 2 else original.values
        prints[n] = Fingerprint((View(*_flipped(list(words), rng, 6), crops=original.crops),))
    walked, asked = set(), set()
    keys = similar_search.band_key

    def recorded_key(*args):
        walked.add(threading.current_thread().name)
        return keys(*args)

    monkeypatch.setattr(similar_search, "band_key", recorded_key)
    index = HashIndex.of(prints)
    sketch = index.view_sketch
    monkeypatch.setattr(index, "view_sketch", lambda row: asked.add(threading.current_thread().name) or sketch(row))
    found = groups(index, 12, workers=2)
    assert len([name for name in walked if name.startswith("groups")]) == 2
    assert asked == {threading.current_thread().name}
    assert found == groups(index, 12, workers=1) == _pair_by_pair(prints, 12)
    assert len(found) == 40


def _bands_of_bits(bands: int, hue: bool) -> dict[tuple[int, int], int]:
    """The band each keyed bit falls in, (row of KINDS, bit) -> band: one view a bit, its pHash's in both rows."""
    rows = [0, 2, 3, 4, *([5] if hue else [])]
    bits = [(row, bit) for row in rows for bit in range(64)]
    columns = np.zeros((len(KINDS), len(bits)), dtype=np.uint64)
    for view, (row, bit) in enumerate(bits):
        for kind in ((0, 1) if row == 0 else (row,)):
            columns[kind, view] = np.uint64(1) << np.uint64(bit)
    band_of = {}
    for band in range(bands):
        for view in np.flatnonzero(similar_search.band_key(columns, 0, band, bands, hue)).tolist():
            band_of[bits[view]] = band
    assert len(band_of) == len(bits)  # every keyed bit in one band
    return band_of


def _hit_bands(words: list[int], rng: np.random.Generator, band_of: dict[tuple[int, int], int], hits: int) -> list[int]:
    """``words`` with one bit of their hue flipped (a free step) and ``hits`` bits of their pHash
    and colour words, each in a band of its own, none in the band of the hue's bit (when keyed)."""
    copy = list(words)
    hue_bit = int(rng.integers(0, 64))
    copy[5] ^= 1 << hue_bit
    hit = {band_of[(5, hue_bit)]} if (5, hue_bit) in band_of else set()
    for band in rng.permutation(max(band_of.values()) + 1).tolist():
        if band in hit or len(hit) - ((5, hue_bit) in band_of) == hits:
            continue
        choices = [key for key, owner in band_of.items() if owner == band and key[0] != 5]
        row, bit = choices[int(rng.integers(0, len(choices)))]
        for kind in ((0, 1) if row == 0 else (row,)):
            copy[kind] ^= 1 << bit
        hit.add(band)
    return copy


@pytest.mark.parametrize("hue_keys_from", [0, 10**9])
@pytest.mark.parametrize("small_bucket", [similar_search.SMALL_BUCKET, 0])
def test_groups_find_a_pair_whose_differences_hit_every_band_but_one(monkeypatch, hue_keys_from, small_bucket):
    """Pairs at the distance (12) whose differing bits hit every band of the keys but one: a step
    of hue (free) and twelve bits of their pHash and colour words, each in a band of its own,
    between two views' own words or a view's and a crop's. Each is grouped, whether the keys take
    the hue's bits (one band more, for its free step) or not, the buckets walked either way;
    pairs a bit further (13) are not."""
    monkeypatch.setattr(similar_search, "HUE_KEYS_FROM", hue_keys_from)
    monkeypatch.setattr(similar_search, "SMALL_BUCKET", small_bucket)
    hue = hue_keys_from == 0
    bands = similar_search.band_count(12, hue)
    band_of = _bands_of_bits(bands, hue)
    rng = np.random.default_rng(31)

    def words() -> list[int]:
        found = [int(word) for word in rng.integers(0, 2**64, size=len(KINDS), dtype=np.uint64)]
        return [found[0], found[0], *found[2:]]

    prints = {}
    for pair in range(60):
        crops = tuple(tuple(words()) for _ in CROPS)
        first = View(*words(), crops=crops)
        near = crops[pair % len(CROPS)] if pair % 2 else first.values  # a crop's words or its own
        second = _hit_bands(list(near), rng, band_of, 12)
        if pair % 3 == 2:  # a bit of pHash more
            bit = 1 << int(rng.choice(np.flatnonzero([not (second[0] ^ near[0]) >> bit & 1 for bit in range(64)])))
            second[0] ^= bit
            second[1] ^= bit
        prints[2 * pair + 1] = Fingerprint((first,))
        prints[2 * pair + 2] = Fingerprint((View(*second, crops=tuple(tuple(words()) for _ in CROPS)),))
    apart = [distance(prints[2 * pair + 1], prints[2 * pair + 2]) for pair in range(60)]
    assert apart == [12 + (pair % 3 == 2) for pair in range(60)]
    expected = [[2 * pair + 1, 2 * pair + 2] for pair in range(60) if pair % 3 != 2]
    assert groups(HashIndex.of(prints), 12) == expected == _pair_by_pair(prints, 12)


@pytest.mark.parametrize("hue_keys_from", [0, 10**9])
def test_an_emptied_hue_word_counts_for_nothing_where_all_else_is_within_four(monkeypatch, hue_keys_from):
    """A small picture's JPEG can lose its few colours, its hue word empty, and keep all the rest:
    a stamp's half-size JPEG was 60 from its original by the hue alone. Where the rest of two
    views' words is within UNKNOWN_HUE_REST (4), an empty hue word counts for nothing: such a pair
    is as near for a search as measured alone, and grouped, whether the band keys take the hue's
    bits or not (taking them, the 16 bits between an empty word and a full one hit every band, and
    a pass keyed without them finds the pair). Five apart, the hue counts again; and a
    low-resolution view's hue never meets an ordinary view's, empty or not."""
    monkeypatch.setattr(similar_search, "HUE_KEYS_FROM", hue_keys_from)
    rng = np.random.default_rng(37)
    prints = {}
    for pair in range(40):
        coloured = _thermometer_words(rng)
        first, second = rng.choice(8, size=2, replace=False)
        coloured[5] = (0xFF << 8 * int(first)) | (0xFF << 8 * int(second))  # two hues, half the colour each
        grey = _flipped_exactly(coloured, rng, 4 if pair % 2 == 0 else 5)
        grey[5] = 0
        prints[2 * pair + 1], prints[2 * pair + 2] = Fingerprint((View(*coloured),)), Fingerprint((View(*grey),))
    index = HashIndex.of(prints)
    for pair in range(40):
        apart = distance(prints[2 * pair + 1], prints[2 * pair + 2])
        assert apart == (4 if pair % 2 == 0 else 5 + HUE_WEIGHT * (16 - HUE_SLACK))
        if pair % 2 == 0:
            assert Neighbour(2 * pair + 1, 4) in index.nearest(prints[2 * pair + 2], limit=2)
    assert groups(index, 12) == [[2 * pair + 1, 2 * pair + 2] for pair in range(0, 40, 2)] == _pair_by_pair(prints, 12)
    ordinary = prints[1].views[0].values
    for low, other in ((LOW_HUES, ordinary[5]), (LOW_HUES ^ ordinary[5], 0)):
        assert words_apart((*ordinary[:5], low), (*ordinary[:5], other)) > CROP_RANGE


@pytest.mark.parametrize("hue_keys_from", [0, 10**9])
def test_between_a_crop_and_a_view_an_empty_hue_word_still_counts(monkeypatch, hue_keys_from):
    """A crop is a part of a picture, a weaker match than the whole: the corner of a quarter-size
    painting whose colours were gone came within 4 of the painting's recolour (a scorpion and its
    elder). Between a crop's words and a view's an empty hue word counts as any other, for a
    search as for groups."""
    monkeypatch.setattr(similar_search, "HUE_KEYS_FROM", hue_keys_from)
    rng = np.random.default_rng(41)
    prints = {}
    for pair in range(20):
        coloured = _thermometer_words(rng)
        coloured[5] = 0xFF << 8 * int(rng.integers(8)) | 0xFF  # two hues
        corner = _flipped_exactly(coloured, rng, 4)
        corner[5] = 0  # a crop whose colours were gone, all else within 4 of the other picture
        crops = [tuple(_thermometer_words(rng)) for _ in CROPS]
        crops[pair % len(CROPS)] = tuple(corner)
        prints[2 * pair + 1] = Fingerprint((View(*_thermometer_words(rng), crops=tuple(crops)),))
        its_crops = tuple(tuple(_thermometer_words(rng)) for _ in CROPS)
        prints[2 * pair + 2] = Fingerprint((View(*coloured, crops=its_crops),))
    index = HashIndex.of(prints)
    for pair in range(20):
        assert distance(prints[2 * pair + 1], prints[2 * pair + 2]) > 12
        found = index.nearest(prints[2 * pair + 1], limit=3)
        assert all(near.distance > 12 for near in found if near.image_id != 2 * pair + 1)
    assert groups(index, 12) == []


@pytest.mark.parametrize("bands", [5, 8, 9, 13, 14, 17])
@pytest.mark.parametrize("hue", [False, True])
@pytest.mark.parametrize("key_block", [similar_search.KEY_BLOCK, 7])
def test_a_band_key_holds_the_bits_dealt_to_its_band_in_turn(monkeypatch, bands, hue, key_block):
    """A band's key is the bits of its words dealt in turn into the bands (the pHash's, the colour
    words', the hue's when keyed: 64 of each), kept in that order, whatever the count of bands,
    the keys made all at once or a few views at a time (as millions are)."""
    monkeypatch.setattr(similar_search, "KEY_BLOCK", key_block)
    rng = np.random.default_rng(37)
    columns = rng.integers(0, 2**64, size=(len(KINDS), 300), dtype=np.uint64)
    rows = [1, 2, 3, 4, *([5] if hue else [])]
    positions = [(row, bit) for row in rows for bit in range(64)]
    for band in range(bands):
        expected = [sum(((int(columns[row, view]) >> bit) & 1) << place
                        for place, (row, bit) in enumerate(positions[band::bands])) for view in range(300)]
        assert similar_search.band_key(columns, 1, band, bands, hue).tolist() == expected


def test_a_cluster_sharing_a_key_with_a_far_picture_is_walked_by_its_groups(monkeypatch):
    """A cluster of near copies whose bucket of one band also holds a picture far from it (on a
    large board, many a cluster's key is some stranger's too): the bucket is walked neighbour by
    neighbour a few steps, then by its groups, where step by step it took as many steps as the
    cluster has copies, each over the whole bucket. The groups are every pair's."""
    rng = np.random.default_rng(41)
    band_of = _bands_of_bits(13, False)
    base = _thermometer_words(rng)
    prints = {n: Fingerprint((View(*_flipped(base, rng, 2)),)) for n in range(1, 2001)}
    stranger = _thermometer_words(rng)
    for (row, bit), band in band_of.items():  # the cluster's bits of band 0, its own elsewhere
        if band == 0:
            for kind in ((0, 1) if row == 0 else (row,)):
                stranger[kind] = stranger[kind] & ~(1 << bit) | base[kind] & (1 << bit)
    prints[2001] = Fingerprint((View(*stranger),))
    assert distance(prints[1], prints[2001]) > 12
    steps = []
    split = similar_search._split_buckets

    def recorded(parent, order, firsts, ends, step):
        steps.append(step)
        return split(parent, order, firsts, ends, step)

    monkeypatch.setattr(similar_search, "_split_buckets", recorded)
    assert groups(HashIndex.of(prints), 12, workers=1) == [list(range(1, 2001))]
    assert max(steps) <= similar_search.SMALL_BUCKET + 1
