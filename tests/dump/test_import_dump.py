"""`mirror import-dump` end to end: the local site -> a real dump -> the import -> a sync.

The site's board is dumped as the site dumps it (a real PostgreSQL and ``pg_dump -Fc``), imported,
and synced; the archive is held against a mirror of the same board made by the API alone, table by
table and record by record.
"""

from __future__ import annotations

import asyncio
import dataclasses
import io
import json
import re
from collections import Counter

import pytest

from mirror.store.history import tag_name_sql
from mirror.commands.import_dump import run_import
from mirror.localsite.board.editor import BoardEditor
from mirror.localsite.http.server import SiteServer
from mirror.progress import Reporter
from mirror.store import open_database
from mirror.store.state import load_cursor

from ..support.configs import RESOURCES, mirror_config, sync
from ..support.dumps import make_dump, needs_postgres

pytestmark = needs_postgres

# Fields a public dump does not carry: an imported record lacks them until the API sends it again.
UNKNOWN = {
    "images": {"first_seen_at", "orig_size", "duration", "animated", "processed", "thumbnails_generated", "spoilered"},
    "comments": {"avatar", "edited_at", "edit_reason"},
    "posts": {"avatar", "edited_at", "edit_reason"},
    "topics": {"user_id", "author"},
    "tags": {"spoiler_image_uri", "dnp_entries"},
}
# Derpibooru answered with a gallery's user/user_id in 2024 (the mirror keeps them as creator/creator_id).
ALIASES = {"galleries": {"user": "creator", "user_id": "creator_id"}}
# An anonymous author's name needs the site's secret salt.
ANONYMOUS_AUTHOR = {"comments", "posts"}


def import_into(config, dump):
    db = open_database(config.database)
    report = asyncio.run(run_import(config, db, str(dump)))
    return report, db


def change_the_site(editor: BoardEditor) -> dict:
    """Changes made after the dump: the sync after the import must fetch them."""
    image = sorted(editor.images)[10]
    editor.edit_image(image, tags=[*editor.images[image]["tags"], "after the dump"])
    new_image, _ = editor.add_images(2)
    editor.add_comments(new_image, 1)
    return {"edited": image, "new": new_image}


@pytest.fixture(scope="module")
def board_and_mirrors(tmp_path_factory):
    """A board, a mirror of it made by the API, and one made from its dump and then synced, after
    the site changed a little since the dump."""
    tmp = tmp_path_factory.mktemp("import")
    editor = BoardEditor.generate(seed=8, images=400)
    first = sorted(editor.images)[3]
    editor.edit_image(first, tags=[*editor.images[first]["tags"], "retagged on the site"])
    with SiteServer(editor) as site:
        everything = editor.everything_filter_id
        by_api = mirror_config(site, tmp / "api", everything)
        _, api_db = sync(by_api, RESOURCES)
        dump = make_dump(editor, tmp)
        changed = change_the_site(editor)
        by_dump = mirror_config(site, tmp / "dump", everything)
        report, dump_db = import_into(by_dump, dump)
        # Each mirror syncs twice: what changed since the dump (or the last sync), then nothing.
        after_import, incremental, second, nightly = (
            synced_asking(site, config) for config in (by_dump, by_api, by_dump, by_api))
        yield {"site": site, "api": api_db, "dump": dump_db, "report": report, "after_import": after_import,
               "incremental": incremental, "second": second, "nightly": nightly, "retagged": first,
               "changed": changed, "dump_config": by_dump, "api_config": by_api, "file": dump}


def synced_asking(site, config) -> list[str]:
    """Sync every resource; the API requests it made, their times made alike (the files a dump
    lacks are downloaded as well, from /img: not counted)."""
    site.clear_requests()
    sync(config, RESOURCES)
    return [re.sub(r"\d{4}-\d\d-\d\dT[\d%A]+Z", "TIME", f"{r.path}?{r.query}") for r in site.requests
            if r.path.startswith("/api/")]


def raws(db, table: str) -> dict:
    keys = {"forums": "short_name", "topics": "forum_short_name || '/' || slug"}.get(table, "id")
    return {key: json.loads(raw) for key, raw in db.execute(f"SELECT {keys}, raw FROM [{table}]")}


@pytest.mark.parametrize("table", ["images", "tags", "comments", "posts", "topics", "forums", "galleries", "users"])
def test_every_field_the_api_gives_is_what_the_dump_gave(board_and_mirrors, table):
    by_api, by_dump = raws(board_and_mirrors["api"], table), raws(board_and_mirrors["dump"], table)
    missing = set(by_api) - set(by_dump)
    if table in ("comments", "posts"):  # the public dump leaves out what the public cannot see
        assert all(by_api[key].get("body") is None for key in missing), table
    else:
        assert not missing, table
    compared = 0
    for key, theirs in by_api.items():
        if key in missing:
            continue
        ours = by_dump[key]
        for field, value in theirs.items():
            field = ALIASES.get(table, {}).get(field, field)
            if field in UNKNOWN.get(table, ()) and field not in ours:
                continue
            if table == "users" and field not in ("id", "name"):
                continue  # the dump has a user's id and name; the profiles crawler adds the rest
            if field == "author" and table in ANONYMOUS_AUTHOR and theirs.get("user_id") is None:
                continue
            if field in ("tags", "tag_ids", "source_urls"):
                assert sorted(ours[field], key=str) == sorted(value, key=str), (table, key, field)
            else:
                assert ours.get(field, "absent") == value, (table, key, field)
            compared += 1
    assert compared > len(by_api)


def test_links_and_gallery_order_are_the_same(board_and_mirrors):
    """The same links; the import also keeps the tags of hidden images (the API gives only stubs)."""
    visible = "image_id IN (SELECT id FROM images WHERE NOT hidden_from_users)"
    for sql in (f"SELECT image_id, tag_id FROM image_tags WHERE {visible} ORDER BY 1, 2",
                "SELECT gallery_id, image_id, position FROM gallery_images ORDER BY 1, 3",
                f"SELECT image_id, nw, ne, sw, se FROM image_intensities WHERE {visible} ORDER BY 1"):
        assert board_and_mirrors["dump"].execute(sql).fetchall() == board_and_mirrors["api"].execute(sql).fetchall()


def test_hidden_images_keep_their_full_record_and_the_api_stub(board_and_mirrors):
    db = board_and_mirrors["dump"]
    rows = db.execute("SELECT id, raw, stub, deletion_reason, duplicate_of FROM images WHERE hidden_from_users").fetchall()
    assert rows
    for image_id, raw, stub, reason, duplicate_of in rows:
        record, stub = json.loads(raw), json.loads(stub)
        assert record["tags"] and record["hidden_from_users"] is True
        assert stub["hidden_from_users"] is True and "tags" not in stub
        assert (reason is None) != (duplicate_of is None)


def test_the_sync_after_the_import_asks_for_what_changed_since_the_dump(board_and_mirrors):
    """It asks what the API's mirror asks for the same changes, plus the featured image of the day
    (the API's mirror asked for it today already) and, once, what the public dump leaves out: the
    rolling audit finds the hidden comments and posts the mirror lacks, and reads them as a sync
    that saw them hidden would, and the profiles of the users the dump names by name only."""
    after_import, incremental = board_and_mirrors["after_import"], board_and_mirrors["incremental"]
    extra = sorted((Counter(after_import) - Counter(incremental)).elements())
    print(f"after the import: {len(after_import)} API requests; the API's mirror for the same changes: "
          f"{len(incremental)}; more:", *extra, sep="\n")
    assert all(re.search(r"/images/featured|/comments/\d+|/search/comments\?q=image_id|/topics/[^/]+/posts"
                         r"|/profiles/\d+", path) for path in extra)
    dump_db, changed = board_and_mirrors["dump"], board_and_mirrors["changed"]
    assert dump_db.execute("SELECT count(*) FROM images WHERE id = ?", [changed["new"]]).fetchone()[0] == 1
    assert "after the dump" in dump_db.execute("SELECT tags FROM images WHERE id = ?", [changed["edited"]]).fetchone()[0]


def test_the_next_sync_costs_what_a_nightly_sync_costs(board_and_mirrors):
    second, nightly = board_and_mirrors["second"], board_and_mirrors["nightly"]
    print(f"the second sync after the import: {len(second)} API requests; nightly: {len(nightly)}",
          *sorted((Counter(second) - Counter(nightly)).elements()), sep="\n")
    assert len(second) == len(nightly)


def test_the_sites_tag_history_is_in_the_images_history(board_and_mirrors):
    db, image_id = board_and_mirrors["dump"], board_and_mirrors["retagged"]
    events = db.execute("SELECT h.seen_at, h.event, h.user_id, "
                        f"group_concat(c.change || {tag_name_sql('c')}) FROM history h "
                        "JOIN image_tag_changes c ON c.history_id = h.id WHERE h.record_key = ? AND h.event = 'site_tags' "
                        "GROUP BY h.id ORDER BY h.seen_at", [str(image_id)]).fetchall()
    assert len(events) >= 2
    assert "+retagged on the site" in events[-1][3]
    uploaded = db.execute("SELECT created_at FROM images WHERE id = ?", [image_id]).fetchone()[0]
    assert events[0][0] == uploaded  # the tags the image was uploaded with, at its upload


def test_what_only_the_dump_holds_is_kept(board_and_mirrors):
    db = board_and_mirrors["dump"]
    for table in ("image_faves", "duplicate_reports", "badges", "badge_awards", "artist_links", "featured_images"):
        assert db.execute(f"SELECT count(*) FROM {table}").fetchone()[0] > 0, table
    merged = db.execute("SELECT image_id, duplicate_of_image_id FROM duplicate_reports").fetchall()
    for image_id, target in merged:
        assert db.execute("SELECT duplicate_of FROM images WHERE id = ?", [image_id]).fetchone()[0] == target


def test_an_import_finished_is_not_repeated_and_a_second_import_changes_nothing(board_and_mirrors):
    config, db = board_and_mirrors["dump_config"], board_and_mirrors["dump"]
    assert load_cursor(db, "import-dump")["finished"] is True
    before = {t: db.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("images", "history", "image_tag_changes")}
    asyncio.run(run_import(config, db, str(board_and_mirrors["file"])))
    after = {t: db.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("images", "history", "image_tag_changes")}
    assert after["images"] == before["images"]
    assert after["image_tag_changes"] == before["image_tag_changes"]  # the site's changes are kept once


def test_a_dump_given_by_url_is_fetched_checked_and_imported(tmp_path):
    import hashlib

    editor = BoardEditor.generate(seed=9, images=40)
    served = tmp_path / "served"
    served.mkdir()
    dump = make_dump(editor, served, name="board_public_dump.pgdump")
    digest = hashlib.sha256(dump.read_bytes()).hexdigest()
    kept = tmp_path / "mirror" / dump.name
    with SiteServer(editor, dumps_dir=served) as site:
        config = mirror_config(site, tmp_path / "mirror", editor.everything_filter_id)
        db = open_database(config.database)
        url = f"{site.url}/dumps/{dump.name}"
        said = io.StringIO()
        asyncio.run(run_import(config, db, url, Reporter(interactive=False, out=said), sha256=digest, keep=True))
        assert kept.read_bytes() == dump.read_bytes()  # --keep: kept beside the database
        # Without --keep, removed once imported (here found already downloaded: not fetched again).
        asyncio.run(run_import(config, db, url, Reporter(interactive=False, out=said), sha256=digest))
        fetched = [r for r in site.requests if r.path.startswith("/dumps/")]
    assert len(fetched) == 1 and not kept.exists()
    assert db.execute("SELECT count(*) FROM images").fetchone()[0] == len(editor.images)
    lines = said.getvalue()
    assert re.search(rf"Z downloaded {dump.name}: [0-9.]+ [KM]B in [0-9.]+ s, [0-9.]+ [KMG]?B/s, SHA-256 matches\n",
                     lines), lines
    assert f"Z the dump stays at {kept} (--keep)\n" in lines
    assert f"Z {kept} is already downloaded: not fetched again, SHA-256 matches\n" in lines
    assert lines.endswith(f"Z removed the downloaded dump {kept}, no longer needed (--keep keeps it)\n")


def test_the_kept_original_says_whether_an_imported_image_is_animated(board_and_mirrors):
    """The dump drops is_animated and image_duration; the original file, once kept, says them."""
    dump_db, api_db = board_and_mirrors["dump"], board_and_mirrors["api"]
    filled = dump_db.execute("SELECT i.id, i.animated, i.duration FROM images i JOIN downloads d ON d.image_id = i.id "
                             "AND d.original AND d.status = 'done' WHERE json_type(i.raw, '$.animated') IS NULL "
                             "ORDER BY i.id").fetchall()
    assert len(filled) > 100
    theirs = dict(api_db.execute("SELECT id, animated FROM images").fetchall())
    assert [(i, a) for i, a, _ in filled if a != theirs[i]] == []
    assert {animated for _, animated, _ in filled} == {0, 1}


def test_a_dump_imported_into_a_mirror_made_by_the_api_keeps_what_only_the_api_gave(board_and_mirrors, tmp_path):
    """The newer record wins by updated_at (the image changed after the dump keeps the API's), and
    the fields the dump lacks stay as the API gave them."""
    api_config = board_and_mirrors["api_config"]
    config = dataclasses.replace(api_config, store=dataclasses.replace(api_config.store,
                                                                       database=str(tmp_path / "copy.db")))
    db = open_database(config.database)
    board_and_mirrors["api"].conn.backup(db.conn)
    before = raws(db, "images")
    asyncio.run(run_import(config, db, str(board_and_mirrors["file"])))
    after = raws(db, "images")
    assert after.keys() == before.keys()
    edited = board_and_mirrors["changed"]["edited"]
    assert after[edited] == before[edited] and "after the dump" in after[edited]["tags"]
    for image_id, record in after.items():
        for field in ("first_seen_at", "orig_size", "thumbnails_generated"):
            assert record.get(field) == before[image_id].get(field), (image_id, field)
    site_events = "SELECT count(*) FROM history WHERE event = 'site_tags'"
    assert db.execute(site_events).fetchone()[0] == board_and_mirrors["dump"].execute(site_events).fetchone()[0] > 0
