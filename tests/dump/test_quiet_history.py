"""After an import, the history holds what changed on the site, not what the API filled in.

A public dump lacks fields the API sends (an image's ``animated``, a comment's ``avatar``, an
anonymous author's name, a tag's ``dnp_entries`` ...). When the syncs after the import fetch the
records again, those fields go from unknown to known: not a change. The board here is dumped,
imported and synced as the whole-board route of docs/dump.md does, with one retag, one hide and one merge
made on the site after the dump; those, and the records new since the dump, are all the history may
show. Then every record is sent again as the audits and refreshes of the nights to come would send
it: nothing more may be kept.
"""

from __future__ import annotations

import asyncio
import json
import re
import tomllib
from datetime import datetime, timedelta, timezone

import pytest

from mirror.asof import Moment, record_as_of
from mirror.asof import search as as_of_search
from mirror.commands.changes import lines
from mirror.commands.import_dump import run_import
from mirror.config import make_config
from mirror.search import images
from mirror.search.bitmap_search import ImageScope
from mirror.search.postings import Postings
from mirror.localsite.board.editor import BoardEditor
from mirror.localsite.http.server import SiteServer
from mirror.store import open_database
from mirror.store.specs import SPECS
from mirror.store.state import start_run
from mirror.store.writer import RecordWriter

from ..support.configs import FAST, RESOURCES, mirror_config, sync
from ..support.docs import page
from ..support.dumps import make_dump, needs_postgres

pytestmark = needs_postgres

EPOCH = "2000-01-01T00:00:00Z"


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    """A board dumped, then edited on the site, imported and synced twice; and a mirror of the same
    board made by the API alone, whose records are the ones the API sends."""
    tmp = tmp_path_factory.mktemp("quiet")
    editor = BoardEditor.generate(seed=11, images=300)
    with SiteServer(editor) as site:
        everything = editor.everything_filter_id
        for image_id in sorted(editor.images)[100:112]:  # the site's own retags, in its dump's tag history
            editor.edit_image(image_id, tags=[*editor.images[image_id]["tags"][1:], "retagged on the site"])
        dump = make_dump(editor, tmp)
        visible = [i for i in sorted(editor.images) if not editor.images[i].get("hidden_from_users")]
        retagged, hidden, merged, target = visible[20], visible[30], visible[40], visible[41]
        tag_count = editor.images[retagged]["tag_count"]
        editor.edit_image(retagged, tags=[*editor.images[retagged]["tags"], "after the dump"])
        editor.hide_image(hidden, "Rule #2")
        editor.merge_image(merged, target)
        config = documented_config(site, tmp / "dump")
        db = open_database(config.database)
        asyncio.run(run_import(config, db, str(dump)))
        imported_history = db.execute("SELECT max(id) FROM history").fetchone()[0]
        sync(config, RESOURCES)
        first_sync = db.execute("SELECT max(id) FROM history").fetchone()[0]
        sync(config, RESOURCES)
        second_sync = db.execute("SELECT max(id) FROM history").fetchone()[0]
        _, api_db = sync(mirror_config(site, tmp / "api", everything), RESOURCES)
        yield {"db": db, "config": config, "api": api_db, "imported": imported_history, "first": first_sync, "second": second_sync,
               "retagged": retagged, "tag_count": tag_count, "hidden": hidden, "merged": merged, "target": target}


def documented_config(site, folder):
    """The whole-board config of docs/dump.md's route, for this site and folder."""
    block = re.search(r"```toml\n(# mirror.toml: a whole board\n.*?)```", page("dump.md"), re.DOTALL).group(1)
    values = tomllib.loads(block)
    assert values["site"]["base_url"].startswith("http://127.0.0.1:")
    values["site"] = {**values["site"], "base_url": site.url, "filter_id": site.editor.everything_filter_id}
    values["polite"] = FAST
    values["store"] = {"database": str(folder / "mirror.db"), "files": str(folder / "files")}
    return make_config(values)


def test_the_documented_route_mirrors_the_whole_board(imported):
    """Every resource, so the filter the images are synced through is kept, and browse spoilers as
    the site does (with images alone it read "filter 2 (not mirrored)")."""
    db = imported["db"]
    seen = {name for (name,) in db.execute(
        "SELECT resource FROM history UNION SELECT resource FROM history_first_seen")}
    assert set(RESOURCES) <= seen | {"profiles"}  # a first sync's sightings are counts (mirror.store.first_sightings)
    synced = imported["config"].site.filter_id
    assert db.execute("SELECT name FROM filters WHERE id = ?", [synced]).fetchone() == ("Everything",)
    assert db.execute("SELECT count(*) FROM users WHERE raw IS NOT NULL").fetchone()[0] > 0


def events_after(db, history_id: int) -> list[tuple[str, str, str, str | None]]:
    """The history written after ``history_id``, less the records first seen."""
    return db.execute("SELECT resource, record_key, event, changes FROM history WHERE id > ? "
                      "AND event != 'first_seen' ORDER BY id", [history_id]).fetchall()


def test_the_first_sync_after_the_import_keeps_only_what_changed_on_the_site(imported):
    kept = events_after(imported["db"], imported["imported"])
    images = {(key, event) for resource, key, event, _ in kept if resource == "images"}
    assert images == {(str(imported["retagged"]), "changed"), (str(imported["hidden"]), "deleted"),
                      (str(imported["merged"]), "merged")}, kept
    # The comments of the hidden and the merged image, hidden with them (the site refuses them now).
    hidden_with = {key for resource, key, event, _ in kept if (resource, event) == ("comments", "hidden")}
    assert hidden_with and {row[0] for row in imported["db"].execute(
        f"SELECT image_id FROM comments WHERE id IN ({','.join(hidden_with)})")} <= {imported["hidden"], imported["merged"]}
    others = [row for row in kept if row[0] != "images" and row[1] not in hidden_with]
    # The tag the retag used for the first time, and the counts the three edits moved.
    assert all(event in ("used", "counters") for _, _, event, _ in others), others
    retag = next(json.loads(c) if c else None for r, k, e, c in kept if (r, k) == ("images", str(imported["retagged"])))
    # The tags are in image_tag_changes; what moves with them is the count, the file's name, the time.
    assert set(retag) == {"tag_count", "view_url", "updated_at"}, retag


def test_mirror_changes_shows_the_real_edits_first(imported):
    """The three edits, and the comments of the hidden and the merged image, hidden with them."""
    db = imported["db"]
    shown = [line.split("  ", 1)[1] for line in lines(db, since=EPOCH)]
    hidden_with = [f"comment {row[0]} hidden" for row in db.execute(
        "SELECT id FROM comments WHERE image_id IN (?, ?)", [imported["hidden"], imported["merged"]])]
    edits = [f"image {imported['merged']} merged into {imported['target']}",
             f"image {imported['hidden']} deleted: Rule #2",
             f"image {imported['retagged']}: tags +after the dump; tag_count {imported['tag_count']} -> "
             f"{imported['tag_count'] + 1}; view_url edited"]
    assert sorted(shown[:3 + len(hidden_with)]) == sorted(edits + hidden_with), shown[:20]


def test_a_second_sync_on_an_unchanged_site_keeps_nothing(imported):
    assert events_after(imported["db"], imported["first"]) == []


def test_every_record_sent_again_as_the_api_sends_it_keeps_nothing(imported):
    """The audits and refreshes of the following nights reach every record the dump wrote."""
    db, api = imported["db"], imported["api"]
    run = start_run(db, "audit")
    try:
        for table, spec in SPECS.items():
            writer = RecordWriter(db, spec, "")
            context_columns = list(spec.context)
            select = ", ".join(["raw", *context_columns])
            for raw, *context in api.execute(f"SELECT {select} FROM [{table}] WHERE raw IS NOT NULL"):
                writer.save([json.loads(raw)], dict(zip(context_columns, context)))
    finally:
        run.finish(db, status="done")
    kept = events_after(db, imported["second"])
    assert [row for row in kept if row[2] not in ("counters",)] == [], kept[:20]


def test_an_imported_image_as_of_any_moment_has_the_tags_the_sites_own_history_gives(imported):
    """Before the mirror's first sync, what is known is the site's tag history from its dump: the
    record as of a moment (today's, undone back) has the tags the site's changes, replayed forward
    from the upload, give at that moment; before its upload, the image did not exist."""
    db = imported["db"]
    later = {int(k) for (k,) in db.execute("SELECT DISTINCT record_key FROM history WHERE resource = 'images' "
                                           "AND event NOT IN ('first_seen', 'site_tags', 'site_source')")}
    rows = db.execute("SELECT h.record_key, h.seen_at, c.change, c.tag_id FROM history h JOIN image_tag_changes c "
                      "ON c.history_id = h.id WHERE h.event = 'site_tags' ORDER BY h.seen_at, h.id, c.tag_id").fetchall()
    by_image: dict[int, list] = {}
    for key, at, change, tag_id in rows:
        by_image.setdefault(int(key), []).append((at, change, tag_id))
    checked = 0
    for image_id, changes in sorted(by_image.items()):
        if image_id in later or len({at for at, _, _ in changes}) < 2:
            continue  # images the syncs saw change, or the site never retagged
        row = dict(zip(("raw", "stub", "hidden_from_users"), db.execute(
            "SELECT raw, stub, hidden_from_users FROM images WHERE id = ?", [image_id]).fetchone()))
        upload = changes[0][0]
        before = datetime.strptime(upload, "%Y-%m-%dT%H:%M:%SZ") - timedelta(seconds=1)
        assert record_as_of(db.conn, "images", str(image_id), row, Moment(before.strftime("%Y-%m-%dT%H:%M:%SZ"))) is None
        for moment in sorted({at for at, _, _ in changes}):
            tags: set[int] = set()
            for at, change, tag_id in changes:
                if at <= moment:
                    (tags.add if change == "+" else tags.discard)(tag_id)
            found = record_as_of(db.conn, "images", str(image_id), row, Moment(moment))
            assert found.record["tag_ids"] == sorted(tags), (image_id, moment)
            assert found.began == moment
            checked += 1
    assert checked >= 10, (len(by_image), len(later), sum(len({a for a, _, _ in c}) >= 2 for c in by_image.values()))


def _search_as_of(db, q: str, moment: str, deleted: bool = False) -> set[int]:
    path = next(row[2] for row in db.execute("PRAGMA database_list") if row[1] == "main")
    conn = images.open_reader(path)
    try:
        page = images.search(conn, Postings(), images.image_query(q), ImageScope(deleted=deleted), sf="id", sd="asc",
                             limit=50, offset=0, columns="i.id", seconds=30, reader=as_of_search.reader(Moment(moment)))
        return {row["id"] for row in page.rows}
    finally:
        conn.close()


def test_a_search_as_of_a_moment_before_or_after_the_import_finds_what_the_board_held(imported):
    """Before the first sync, a tag's images are those the site's own tag history gives at that
    moment; after it, the edits the syncs saw: a tag added after the dump, a hide, a merge."""
    db = imported["db"]
    tag_id = db.execute("SELECT id FROM tags WHERE name = 'retagged on the site'").fetchone()[0]
    rows = db.execute("SELECT h.seen_at, c.change, c.image_id FROM history h JOIN image_tag_changes c "
                      "ON c.history_id = h.id WHERE h.event = 'site_tags' AND c.tag_id = ? ORDER BY h.seen_at, h.id",
                      [tag_id]).fetchall()
    assert rows
    first = datetime.strptime(rows[0][0], "%Y-%m-%dT%H:%M:%SZ") - timedelta(seconds=1)
    for moment in [first.strftime("%Y-%m-%dT%H:%M:%SZ"), *sorted({at for at, _, _ in rows})]:
        expected: set[int] = set()
        for at, change, image_id in rows:
            if at <= moment:
                (expected.add if change == "+" else expected.discard)(image_id)
        assert _search_as_of(db, '"retagged on the site"', moment, deleted=True) == expected, moment
        assert expected or moment < rows[0][0]
    synced = db.execute("SELECT min(seen_at) FROM history WHERE id > ? AND event != 'first_seen'",
                        [imported["imported"]]).fetchone()[0]
    before = (datetime.strptime(synced, "%Y-%m-%dT%H:%M:%SZ") - timedelta(seconds=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert _search_as_of(db, '"after the dump"', before) == set()
    assert _search_as_of(db, '"after the dump"', now) == {imported["retagged"]}
    for image_id in (imported["hidden"], imported["merged"]):
        assert _search_as_of(db, f"id:{image_id}", before) == {image_id}
        assert _search_as_of(db, f"id:{image_id}", now) == set()


def _newest(db, limit: int = 50) -> list[int]:
    """The first page of the board's default order (no ``sf``), as serve and browse search it."""
    path = next(row[2] for row in db.execute("PRAGMA database_list") if row[1] == "main")
    conn = images.open_reader(path)
    try:
        page = images.search(conn, Postings(), images.image_query("*"), ImageScope(), sf=None, sd=None,
                             limit=limit, offset=0, columns="i.id", seconds=30)
        return [row["id"] for row in page.rows]
    finally:
        conn.close()


def test_the_default_order_after_the_import_is_the_sites_by_upload_not_the_images_sent_again_first(imported):
    """The dump holds no ``first_seen_at``; the images the syncs received again have it. The
    board's default order still puts them where their upload does, as a mirror made by the API
    alone (every record with its ``first_seen_at``) orders them."""
    db = imported["db"]
    sent_again = {row[0] for row in db.execute("SELECT id FROM images WHERE json_type(raw, '$.first_seen_at') "
                                               "IS NOT NULL")}
    assert imported["retagged"] in sent_again
    # Where the site first saw an image before its upload (imported from elsewhere) or at another's
    # time, the dump cannot say so; until a sync sends that image again (another test of this
    # module sends every one), only the images first seen at their upload have a place it knows.
    known = {row[0] for row in imported["api"].execute("SELECT id FROM images WHERE first_seen_at = created_at")}
    assert imported["retagged"] in known and len(known) > 250
    assert [i for i in _newest(db, 300) if i in known] == [i for i in _newest(imported["api"], 300) if i in known]
