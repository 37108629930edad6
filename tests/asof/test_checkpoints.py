"""A search as of a moment through the tags' checkpoints answers what undoing every change from
today answers, for any moment, and stays so as history is written after the checkpoints were built.

The histories are those of :mod:`.test_records_as_of` (nights of edits synced through the store's
writers), with a checkpoint after every change (``spacing=1``: as many as the history allows).
Then more nights are synced, and old tag changes are written at earlier times as a dump's import
writes the site's own (some agreeing with what followed them, some not): before and after the
next build, every tag's images and every tag search as of random moments must be the same
through the checkpoints as from today.
"""

from __future__ import annotations

import itertools
from datetime import timedelta

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyroaring import BitMap

from mirror.asof import Moment
from mirror.asof import search as as_of_search
from mirror.cli import cli
from mirror.dates import utc_text
from mirror.localsite.board.editor import BoardEditor
from mirror.localsite.http.server import SiteServer
from mirror.search import images
from mirror.search.bitmap_search import ImageScope
from mirror.search.postings import Postings
from mirror.store import checkpoints, open_database
from mirror.store.database import database_file
from mirror.store.history import SiteChange, save_site_changes
from mirror.store.images import ImageWriter
from mirror.store.specs import SPECS
from mirror.store.state import start_run
from mirror.store.writer import RecordWriter

from ..support.configs import site_config, sync, write_config
from .test_records_as_of import START, TAGS, fresh_mirror, nights, play

QUERIES = ["safe", "pony, -cat", "pony || red", "-solo", "blue, artist:a"]
# Old changes of the site's own history: (which image, which tag, added or removed, hours after START).
old_changes = st.lists(st.tuples(st.integers(0, 5), st.integers(1, len(TAGS)), st.sampled_from("+-"),
                                 st.integers(-24, 24 * 12)), max_size=8)
# Moments asked: seconds after the day before START, over the nights played.
moments = st.lists(st.integers(0, 14 * 86_400), min_size=3, max_size=8)


@pytest.fixture(scope="module")
def empty_mirror(tmp_path_factory):
    path = tmp_path_factory.mktemp("checkpoints") / "empty.db"
    open_database(path).conn.close()
    return path


def _save(db, records):
    """Through the store's writers; the even images without ``first_seen_at``, as a dump's are."""
    ImageWriter(db, "").save_page([{**r, "first_seen_at": None} if r["id"] % 2 == 0 else r for r in records])


class _None:
    def after(self, tag_id, moment):
        return None


def _answers(path, asked, monkeypatch, through_checkpoints):
    """Each tag's images and each query's total and page as of each moment asked."""
    with monkeypatch.context() as patched:
        if not through_checkpoints:  # nor the upload order's newest-first page: every page sorted whole
            patched.setattr(as_of_search, "checkpoints_of", lambda snapshot: _None())
            patched.setattr(as_of_search, "_newest_first", lambda *args: None)
        conn = images.open_reader(path)
        try:
            found = {}
            for moment in asked:
                today = Postings().snapshot(conn)
                lists = as_of_search.AsOfSnapshot(today, as_of_search.Changes(conn, moment))
                found[moment, "tags"] = [sorted(lists.tagged([tag["id"]]) & lists.images()) for tag in TAGS]
                conn.rollback()
                for q, (sf, limit, offset) in itertools.product(QUERIES, [("id", 50, 0), (None, 2, 0), (None, 2, 1)]):
                    page = images.search(conn, Postings(), images.image_query(q), ImageScope(), sf=sf, sd="desc",
                                         limit=limit, offset=offset, columns="i.id", seconds=30,
                                         reader=as_of_search.reader(moment))
                    found[moment, q, sf, offset] = (page.total, [row["id"] for row in page.rows])
            return found
        finally:
            conn.close()


def _same_either_way(db, seconds, monkeypatch, built):
    """The answers through the checkpoints and from today, at ``seconds`` and at every moment a
    checkpoint was ``built`` at (the trigger may have deleted it since)."""
    asked = [Moment(utc_text(START - timedelta(days=1) + timedelta(seconds=s))) for s in seconds]
    asked += [Moment(m) for m in sorted(built | _moments(db))]
    assert _answers(database_file(db), asked, monkeypatch, True) == _answers(database_file(db), asked, monkeypatch,
                                                                             False)
    _uploads_as_read_whole(db, asked)


def _uploads_as_read_whole(db, asked):
    """The images uploaded by each moment, from the upload order the build kept (with the rows
    written since), are every image less those uploaded after it by every upload time read now."""
    whole = as_of_search.Uploads.__new__(as_of_search.Uploads)
    whole.times, whole.ids = checkpoints.upload_times(db.conn)
    every = BitMap(row[0] for row in db.execute("SELECT id FROM images"))
    for moment in asked:
        changes = as_of_search.Changes(db.conn, moment)
        assert changes.uploaded_by(as_of_search.Uploads(db.conn)) == every - changes.uploaded_after(whole), moment


def _moments(db):
    return {m for (m,) in db.execute("SELECT DISTINCT moment FROM tag_checkpoints")}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(first=nights, later=nights, old=old_changes, seconds=moments)
def test_a_search_through_the_checkpoints_is_the_search_from_today(first, later, old, seconds, empty_mirror,
                                                                   tmp_path, monkeypatch):
    db = fresh_mirror(empty_mirror, tmp_path, first)
    RecordWriter(db, SPECS["tags"], "").save(TAGS)
    site, _ = play(first, "all", db, monkeypatch, _save)
    checkpoints.build(db, spacing=1)
    changed = db.execute("SELECT count(DISTINCT tag_id) FROM image_tag_changes c WHERE EXISTS "
                         "(SELECT 1 FROM image_tag_changes d WHERE d.tag_id = c.tag_id AND d.seen_at > c.seen_at)")
    assert db.execute("SELECT count(DISTINCT tag_id) FROM tag_checkpoints").fetchone() == changed.fetchone()
    built = _moments(db)
    _same_either_way(db, seconds, monkeypatch, built)

    play(later, "all", db, monkeypatch, _save, site=site, first_night=len(first))  # nights after the build
    _same_either_way(db, seconds, monkeypatch, built)

    run = start_run(db, "dump")  # the site's own old changes, written afterwards at their times
    with db.atomic():
        save_site_changes(db, run.id, [
            SiteChange(sorted(site.images)[which % len(site.images)], utc_text(START + timedelta(hours=hours)), None,
                       "site_tags", ((sign, tag_id, TAGS[tag_id - 1]["name"]),))
            for which, tag_id, sign, hours in old])
    run.finish(db, status="done")
    _same_either_way(db, seconds, monkeypatch, built)

    checkpoints.build(db, spacing=1)
    _same_either_way(db, seconds, monkeypatch, built)
    db.conn.close()


def test_a_tag_undoes_no_more_than_the_spacing_of_its_changes(tmp_path, monkeypatch):
    """Checkpoints are placed after every ``spacing`` changes of a tag, counted again after each;
    a night's changes leave them, and the next build places none until ``spacing`` more.
    ``mirror checkpoints`` writes them and says so."""
    db = open_database(tmp_path / "mirror.db")
    RecordWriter(db, SPECS["tags"], "").save(TAGS)
    nights_played = [[("upload", 0, 0)]] + [[("tag" if n % 2 == 0 else "untag", 0, 6)] for n in range(9)]
    site, _ = play(nights_played, "all", db, monkeypatch, _save)  # tag 7 (blue) added and removed: 9 changes
    db.conn.close()
    monkeypatch.setattr(checkpoints, "SPACING", 2)
    config = tmp_path / "mirror.toml"
    config.write_text(f'[store]\ndatabase = "{tmp_path / "mirror.db"}"\n')
    result = CliRunner().invoke(cli, ["-c", str(config), "checkpoints"])
    assert result.exit_code == 0, result.output
    assert "4 checkpoints of 1 tags' image lists written" in result.output
    db = open_database(tmp_path / "mirror.db")
    play([[("upload", 0, 0), ("tag", 1, 6), ("untag", 0, 6)]], "all", db, monkeypatch, _save, site=site, first_night=10)
    blue = [m for (m,) in db.execute("SELECT moment FROM tag_checkpoints WHERE tag_id = 7 ORDER BY moment")]
    times = [t for (t,) in db.execute("SELECT seen_at FROM image_tag_changes WHERE tag_id = 7 ORDER BY seen_at")]
    assert blue == times[1:-2:2]  # after the 2nd, 4th, 6th and 8th change, kept through a night of an upload
    assert checkpoints.build(db, spacing=2).checkpoints == 0  # two changes after the last: none due yet
    db.conn.close()


def test_an_old_change_that_disagrees_with_the_next_deletes_the_checkpoints_it_makes_wrong(tmp_path, monkeypatch):
    """Blue added, removed and added again (checkpoints at the first two), then the site's own
    changes written between the last two: an addition leaves the undoing from today as it was
    (blue was off before it, as before the next addition) and every checkpoint; a removal before
    it says blue was on until then, so the checkpoint at the removal before goes."""
    db = open_database(tmp_path / "mirror.db")
    RecordWriter(db, SPECS["tags"], "").save(TAGS)
    play([[("upload", 0, 0)], [("tag", 0, 6)], [("untag", 0, 6)], [("tag", 0, 6)]], "all", db, monkeypatch, _save)
    checkpoints.build(db, spacing=1)
    added, removed, again = (t for (t,) in db.execute("SELECT seen_at FROM image_tag_changes ORDER BY history_id"))
    assert _moments(db) == {added, removed}

    def site_change(sign, minutes):
        run = start_run(db, "dump")
        with db.atomic():
            at = utc_text(Moment(removed).datetime + timedelta(minutes=minutes))
            save_site_changes(db, run.id, [SiteChange(1, at, None, "site_tags", ((sign, 7, "blue"),))])
        run.finish(db, status="done")

    site_change("+", 60)
    assert _moments(db) == {added, removed}
    site_change("-", 30)
    assert _moments(db) == set()  # the tag's: each is read through the later ones
    _same_either_way(db, [86_400 * n for n in range(6)], monkeypatch, {added, removed, again})
    checkpoints.build(db, spacing=1)
    assert len(_moments(db)) == 4  # placed again, and at the two changes written (the last is today's)
    _same_either_way(db, [86_400 * n for n in range(6)], monkeypatch, {added, removed, again})
    db.conn.close()


def test_an_image_first_seen_long_after_its_upload_deletes_its_tags_checkpoints(tmp_path, monkeypatch):
    """An image the mirror first sees today, uploaded before the checkpoints of its tags (it was
    hidden, or a page was missed), carried its tags then as far as the history knows: the
    tag's checkpoint after its upload is wrong, and the tag's checkpoints go."""
    db = open_database(tmp_path / "mirror.db")
    RecordWriter(db, SPECS["tags"], "").save(TAGS)
    site, _ = play([[("upload", 0, 0)], [("tag", 0, 6)], [("untag", 0, 6)], [("tag", 0, 6)], [("untag", 0, 6)]],
                   "all", db, monkeypatch, _save)
    checkpoints.build(db, spacing=1)
    added, removed, again = sorted(_moments(db))
    run = start_run(db, "images")
    found = dict(site.answers()[1], id=99, created_at=utc_text(Moment(removed).datetime + timedelta(hours=1)))
    _save(db, [site._retagged(found, [1, 7])])
    run.finish(db, status="done")
    assert _moments(db) == set()
    assert db.execute("SELECT count(*) FROM upload_order").fetchone()[0] == 1  # kept, with image 99 read beside it
    _same_either_way(db, [86_400 * n for n in range(7)], monkeypatch, {added, removed, again})
    db.conn.close()


def test_sync_writes_the_checkpoints_a_night_calls_for_and_mirror_checkpoints_says_none_missing(tmp_path, monkeypatch):
    """Against the local site: three nights of retags, each synced by ``runs.sync``, which builds
    the checkpoints at its end (one after every change here); then ``mirror checkpoints`` finds
    none missing."""
    monkeypatch.setattr(checkpoints, "SPACING", 1)
    clock = {"now": START}
    for writes in ("mirror.store.history.utc_text", "mirror.store.writer.utc_text"):  # a night apart, as nights are
        monkeypatch.setattr(writes, lambda when=None: utc_text(when or clock["now"]))
    with SiteServer(BoardEditor.generate(seed=3, images=12)) as site:
        config = site_config(site, tmp_path)
        path = write_config(config, tmp_path / "mirror.toml")
        shown = [i for i, image in sorted(site.editor.images.items()) if not image["hidden_from_users"]]
        _, db = sync(config)
        for night in range(3):
            for image_id in shown[:3]:
                tags = site.editor.images[image_id]["tags"]
                site.editor.edit_image(image_id, tags=[*tags, "night tag"] if night % 2 == 0 else
                                       [t for t in tags if t != "night tag"])
            db.conn.close()
            clock["now"] += timedelta(days=1)
            _, db = sync(config)
        night_tag = db.execute("SELECT id FROM tags WHERE name = 'night tag'").fetchone()[0]
        assert len({m for (m,) in db.execute("SELECT moment FROM tag_checkpoints WHERE tag_id = ?", [night_tag])}) == 2
        db.conn.close()
        result = CliRunner().invoke(cli, ["-c", str(path), "checkpoints"])
        assert result.exit_code == 0, result.output
        assert result.output.strip().endswith("checkpoints: none missing")


def test_the_upload_order_is_kept_again_after_images_written_in_the_second_it_was_kept(tmp_path, monkeypatch):
    """Times are to the second: a sync that began within the second the order was kept wrote its
    images unseen by the count of those written since, and the order was never kept again (a fault
    test's two mirrors of one site differed by it)."""
    db = open_database(tmp_path / "mirror.db")
    RecordWriter(db, SPECS["tags"], "").save(TAGS)
    monkeypatch.setattr("mirror.store.writer.utc_text", lambda when=None: "2025-01-01T03:00:00Z")
    _save(db, [{"id": 1, "created_at": "2024-01-01T00:00:00Z", "tags": ["safe"], "tag_ids": [1]}])
    checkpoints.build(db)
    assert _ordered(db) == 1
    _save(db, [{"id": n, "created_at": "2024-01-02T00:00:00Z", "tags": ["safe"], "tag_ids": [1]} for n in range(2, 12)])
    checkpoints.build(db)
    assert _ordered(db) == 11
    db.conn.close()


def _ordered(db) -> int:
    """How many images the kept upload order holds (an id is 4 bytes)."""
    return len(db.execute("SELECT ids FROM upload_order").fetchone()[0]) // 4
