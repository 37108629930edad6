"""A record as of a moment equals what the site answered at that moment, over random histories.

Each history is a run of nights. Each night the site edits some images (descriptions, sources,
votes, tags added and removed), hides, merges or shows them again, and uploads new ones; a sync
then receives every image (a full record, or the stub of a hidden one) through the store's
writers, which keep the history. The site's answer for each image is noted after every night.
Then, for every night and every image, the record as of that night's moment must be that answer,
field for field, and an image not uploaded yet must not exist.
"""

from __future__ import annotations

import copy
import shutil
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mirror.asof import Moment, parse_moment, record_as_of
from mirror.asof.moments import moment_of_http_date
from mirror.dates import utc_text
from mirror.store import open_database
from mirror.store.history import keep_counters
from mirror.store.specs import SPECS
from mirror.store.state import start_run
from mirror.store.writer import RecordWriter

START = datetime(2025, 1, 1, tzinfo=timezone.utc)
TAGS = [{"id": n, "name": name, "slug": name, "category": category} for n, (name, category) in enumerate(
    [("safe", "rating"), ("suggestive", "rating"), ("pony", "species"), ("cat", "species"), ("artist:a", "origin"),
     ("artist:b", "origin"), ("blue", None), ("red", None), ("solo", None)], start=1)]
WORDS = ["a pony", "two cats", "", "edited", "ünïcode ✓"]

# One step of a night: (kind, which image, a value). Kinds act on the image if they can.
steps = st.tuples(st.sampled_from(["describe", "source", "vote", "tag", "untag", "hide", "merge", "show", "upload"]),
                  st.integers(0, 5), st.integers(0, 8))
nights = st.lists(st.lists(steps, min_size=1, max_size=6), min_size=1, max_size=6)


class Site:
    """The images of a small board, edited night by night, and what the API answers for each."""

    def __init__(self) -> None:
        self.images: dict[int, dict] = {}
        self.hidden: dict[int, dict] = {}  # id -> its stub's reason fields

    def upload(self, at: str) -> None:
        image_id = len(self.images) + 1
        self.images[image_id] = self._retagged({"id": image_id, "created_at": at, "updated_at": at,
                                                "first_seen_at": at, "description": "", "source_url": "",
                                                "source_urls": [], "score": 0, "upvotes": 0, "faves": 0,
                                                "hidden_from_users": False, "deletion_reason": None,
                                                "duplicate_of": None}, [1, 3])

    @staticmethod
    def _retagged(record: dict, tag_ids: list[int]) -> dict:
        ordered = [TAGS[t - 1] for t in sorted(set(tag_ids))]  # by id, as the API lists them
        return {**record, "tag_ids": [t["id"] for t in ordered], "tags": [t["name"] for t in ordered],
                "tag_count": len(ordered)}

    def act(self, kind: str, which: int, value: int, at: str) -> None:
        if kind == "upload" or not self.images:
            self.upload(at)
            return
        image_id = sorted(self.images)[which % len(self.images)]
        image = self.images[image_id]
        target = sorted(self.images)[(which + 1) % len(self.images)]
        if kind == "hide" and image_id not in self.hidden:
            self.hidden[image_id] = {"deletion_reason": f"Rule #{value}", "duplicate_of": None}
        elif kind == "merge" and target != image_id and self.hidden.get(image_id, {}).get("duplicate_of") is None:
            self.hidden[image_id] = {"deletion_reason": None, "duplicate_of": target}
        elif kind == "show" and image_id in self.hidden:
            self.hidden.pop(image_id)
        elif kind in ("hide", "merge", "show") or image_id in self.hidden:
            return  # nothing to do, or a hidden image: not edited
        elif kind == "describe":
            image["description"] = WORDS[value % len(WORDS)]
        elif kind == "source":
            image["source_url"] = f"https://example.com/{value}"
            image["source_urls"] = [image["source_url"]]
        elif kind == "vote":
            image["score"] += value - 4
            image["upvotes"] += value
        elif kind in ("tag", "untag"):
            ids = set(image["tag_ids"]) | {value + 1} if kind == "tag" else set(image["tag_ids"]) - {value + 1}
            self.images[image_id] = self._retagged(image, sorted(ids))
        else:
            return
        self.images[image_id]["updated_at"] = at

    def answers(self) -> dict[int, dict]:
        """What the API answers for each image now: its record, or the stub of a hidden one."""
        out = {}
        for image_id, image in self.images.items():
            if image_id in self.hidden:
                out[image_id] = {"id": image_id, "created_at": image["created_at"], "updated_at": image["updated_at"],
                                 "first_seen_at": image["first_seen_at"], **self.hidden[image_id],
                                 "hidden_from_users": True}
            else:
                out[image_id] = copy.deepcopy(image)
        return out


@pytest.fixture(scope="module")
def empty_mirror(tmp_path_factory):
    path = tmp_path_factory.mktemp("asof") / "empty.db"
    db = open_database(path)
    db.conn.close()
    return path


def fresh_mirror(empty_mirror, tmp_path, nights: list):
    """A copy of the empty mirror for one example of ``nights`` (hypothesis runs many in one test)."""
    path = tmp_path / f"mirror-{id(nights)}.db"
    shutil.copy(empty_mirror, path)
    return open_database(path)


def play(nights: list, counters: str, db, monkeypatch, save, *, site: Site | None = None,
         first_night: int = 0) -> tuple[Site, list[tuple[Moment, dict[int, dict]]]]:
    """The nights played on a :class:`Site` (a new one, or ``site`` from its ``first_night`` on),
    each synced into ``db`` through ``save(db, records)`` with the history kept (its counters as
    ``counters`` says): the site, and what it answered after each night, with that night's moment."""
    keep_counters(db, counters)
    clock = {"now": START}
    for writes in ("mirror.store.history.utc_text", "mirror.store.writer.utc_text"):  # one clock, as a sync has
        monkeypatch.setattr(writes, lambda when=None: utc_text(when or clock["now"]))
    site, answered = site or Site(), []
    for night, night_steps in enumerate(nights, start=first_night):
        clock["now"] = START + timedelta(days=night, hours=3)
        at = utc_text(clock["now"] - timedelta(hours=1))
        for kind, which, value in night_steps:
            site.act(kind, which, value, at)
        run = start_run(db, "images")
        save(db, list(site.answers().values()))
        run.finish(db, status="done")
        answered.append((Moment(utc_text(clock["now"])), site.answers()))
    return site, answered


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(nights=nights, counters=st.sampled_from(["all", "daily"]))
def test_each_image_as_of_each_night_is_what_the_site_answered(nights, counters, empty_mirror, tmp_path, monkeypatch):
    db = fresh_mirror(empty_mirror, tmp_path, nights)
    RecordWriter(db, SPECS["tags"], "").save(TAGS)
    site, answered = play(nights, counters, db, monkeypatch,
                          lambda db, records: RecordWriter(db, SPECS["images"], "").save(records))
    for moment, answers in answered:
        for image_id in site.images:
            row = db.execute("SELECT raw, stub, hidden_from_users FROM images WHERE id = ?", [image_id]).fetchone()
            found = record_as_of(db.conn, "images", str(image_id), dict(zip(("raw", "stub", "hidden_from_users"), row)),
                                 moment)
            if image_id not in answers:
                assert found is None, (moment, image_id)
                continue
            assert found is not None, (moment, image_id)
            expected, got = answers[image_id], found.record
            if counters == "daily":  # votes of later nights that day are not kept: leave them out
                expected = {k: v for k, v in expected.items() if k not in ("score", "upvotes", "updated_at")}
                got = {k: v for k, v in got.items() if k not in ("score", "upvotes", "updated_at")}
            assert got == expected, (moment, image_id)
    db.conn.close()


@pytest.mark.parametrize("text, stored", [
    ("2025-01-05", "2025-01-05T23:59:59Z"),
    ("2025-01-05T12:00:00Z", "2025-01-05T12:00:00Z"),
    ("2025-01-05T13:00:00+01:00", "2025-01-05T12:00:00Z"),
    ("20250105120000", "2025-01-05T12:00:00Z"),
])
def test_a_moment_is_read_in_every_spelling(text, stored):
    moment = parse_moment(text)
    assert moment.text == stored
    assert parse_moment(moment.digits) == moment
    assert moment_of_http_date(moment.http_date) == moment


@pytest.mark.parametrize("text", ["2025-13-01", "yesterday", "2025010512", "2025-01-05 12:00", ""])
def test_a_moment_that_is_none_says_what_to_give(text):
    with pytest.raises(ValueError, match="give a day"):
        parse_moment(text)
