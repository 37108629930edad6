"""A catch-up's page against the rows events stored meanwhile (mirror.follow.apply.not_older).

The site's clock has whole seconds, so an edit's event and a page read just before the edit can
carry the same ``updated_at``: the page's older version must not be stored over the event's newer
one (which of two such versions is last, the follower asks the site: tests/follow/test_follow.py)."""

from __future__ import annotations

from mirror.follow.apply import not_older
from mirror.store import open_database
from mirror.store.specs import SPECS
from mirror.store.writer import RecordWriter

T = "2026-11-29T01:00:00Z"


def archive(tmp_path, written_at: str):
    db = open_database(tmp_path / "mirror.db")
    RecordWriter(db, SPECS["images"], "https://example.org").save([{"id": 1, "updated_at": T, "description": "the event's"}])
    db.execute("UPDATE images SET mirrored_at = ? WHERE id = 1", [written_at])
    db.conn.commit()
    return db


def page(updated_at: str) -> list[dict]:
    return [{"id": 1, "updated_at": updated_at, "description": "the page's"}, {"id": 2, "updated_at": T}]


def test_a_page_asked_for_before_an_event_stored_a_version_of_the_same_second_leaves_it(tmp_path):
    db = archive(tmp_path, written_at="2026-11-29T01:00:01Z")
    assert [r["id"] for r in not_older(db, "images", page(T), asked="2026-11-29T01:00:00Z")] == [2]
    assert [r["id"] for r in not_older(db, "images", page(T), asked="2026-11-29T01:00:01Z")] == [2]  # the same second


def test_a_page_asked_for_after_the_row_was_written_is_stored_and_older_or_newer_ones_as_before(tmp_path):
    db = archive(tmp_path, written_at="2026-11-29T01:00:01Z")
    assert [r["id"] for r in not_older(db, "images", page(T), asked="2026-11-29T01:00:02Z")] == [1, 2]
    assert [r["id"] for r in not_older(db, "images", page(T))] == [1, 2]  # an event's record: no page asked for
    assert [r["id"] for r in not_older(db, "images", page("2026-11-29T00:59:59Z"), asked="2026-11-29T01:00:09Z")] == [2]
    assert [r["id"] for r in not_older(db, "images", page("2026-11-29T01:00:01Z"), asked="2026-11-29T00:00:00Z")] == [1, 2]
