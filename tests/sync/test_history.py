"""Every change a sync sees is kept: edits of every kind on the local site between two syncs come
out of the history tables and `mirror changes` exactly, and a sync that sees nothing new writes none."""

from __future__ import annotations

import asyncio
import json

import pytest
from click.testing import CliRunner

from mirror.cli import cli
from mirror.commands.changes import changes, parse_since
from mirror.store import open_database
from mirror.store.history import HistoryRecorder, Seen, tag_name_sql

from ..support.browsing import browse_client
from ..support.configs import RESOURCES, site_config, sync, write_config

# Every resource, walked whole, with every audit and refresh on, so one sync sees every edit.
EVERYTHING = dict(
    comments={"enabled": True, "scope": "all", "audit_per_run": 50},
    galleries={"enabled": True, "scope": "all", "rewalk_after_days": 0, "rewalk_per_run": 500},
    tags={"enabled": True, "scope": "all", "refresh_per_run": 5000},
    forums={"enabled": True, "audit_pages_per_run": 500},
    posts={"enabled": True}, filters={"enabled": True}, profiles={"enabled": True})


def history(db, after: int = 0) -> list[dict]:
    return [dict(row) for row in db.query("SELECT * FROM history WHERE id > ? ORDER BY id", [after])]


def last_id(db) -> int:
    return db.execute("SELECT coalesce(max(id), 0) FROM history").fetchone()[0]


@pytest.fixture
def mirrored(site, tmp_path):
    config = site_config(site, tmp_path, **EVERYTHING)
    _, db = sync(config, RESOURCES)
    return config, db


def test_a_first_sync_keeps_each_records_first_version_and_a_second_with_no_change_writes_nothing(site, mirrored):
    config, db = mirrored
    first = history(db)
    # Each run filled an empty table: its first sightings are one count per resource, not a row each.
    assert first == []
    counted = {resource: (count, run_id) for resource, count, run_id in db.execute(
        "SELECT resource, count, run_id FROM history_first_seen WHERE counted = 1")}
    for table in ("images", "comments", "posts", "galleries", "tags", "forums", "topics", "filters", "users"):
        kept = db.execute(f"SELECT count(*) FROM {table} WHERE raw IS NOT NULL").fetchone()[0]
        assert counted[table][0] == kept, table
    runs = {run_id for _, run_id in counted.values()}
    assert runs <= {r[0] for r in db.execute("SELECT id FROM sync_runs")}
    before = last_id(db)
    sync(config, RESOURCES)
    assert history(db, before) == []


def test_edits_of_every_kind_come_out_exactly(site, mirrored):
    config, db = mirrored
    editor = site.editor
    a, b, c, d, e, f = sorted(editor.images)[10:16]
    old_tags = editor.images[a]["tags"]
    kept_tags = [t for t in old_tags if t not in ("solo", "duo")] or old_tags[1:]
    removed = [t for t in old_tags if t not in kept_tags]
    editor.edit_image(a, tags=kept_tags + ["brand new tag"])
    old_description = editor.images[b]["description"]
    editor.edit_image(b, description="a new description")
    editor.edit_image(c, source_urls=["https://example.com/new"], source_url="https://example.com/new")
    old_score = editor.images[d]["score"]
    editor.edit_image(d, score=old_score + 5)
    editor.hide_image(e, "Rule #2")
    editor.merge_image(f, a)
    comment_edited, comment_hidden, comment_destroyed = sorted(editor.comments)[:3]
    editor.edit_comment(comment_edited, body="an edited comment")
    editor.edit_comment(comment_hidden, hidden=True)
    editor.edit_comment(comment_destroyed, destroyed=True)
    post = sorted(editor.posts)[0]
    editor.edit_post(post, body="an edited post")
    reordered, shrunk, deleted = sorted(editor.galleries)[:3]
    editor.edit_gallery(reordered, order=list(reversed(editor.galleries[reordered]["image_ids"])))
    dropped = editor.galleries[shrunk]["image_ids"][0]
    editor.edit_gallery(shrunk, remove=[dropped])
    editor.delete_gallery(deleted)
    alias = editor.alias_tag("ponie", "pony")
    counts_before = dict(db.execute("SELECT id, images FROM tags").fetchall())
    before = last_id(db)

    sync(config, RESOURCES)
    rows = history(db, before)
    events = {(row["resource"], row["record_key"], row["event"]) for row in rows}
    new_tag = db.execute("SELECT id FROM tags WHERE name = 'brand new tag'").fetchone()[0]
    pony = db.execute("SELECT id FROM tags WHERE name = 'pony'").fetchone()[0]
    counts_after = dict(db.execute("SELECT id, images FROM tags").fetchall())
    recounted = {str(t) for t in counts_before if counts_before[t] != counts_after.get(t)} - {str(pony)}
    assert events == {
        ("images", str(a), "changed"), ("images", str(b), "changed"), ("images", str(c), "changed"),
        ("images", str(d), "counters"), ("images", str(e), "deleted"), ("images", str(f), "merged"),
        ("comments", str(comment_edited), "changed"), ("comments", str(comment_hidden), "hidden"),
        ("comments", str(comment_destroyed), "destroyed"), ("posts", str(post), "changed"),
        ("galleries", str(reordered), "gallery_images"), ("galleries", str(shrunk), "gallery_images"),
        ("galleries", str(deleted), "gone"),
        ("tags", str(new_tag), "first_seen"), ("tags", str(alias["id"]), "first_seen"), ("tags", str(pony), "changed"),
        *{("tags", t, "counters") for t in recounted},
        # the comments of the hidden and the merged image: the site refuses them now, so hidden with them
        *{("comments", str(c), "hidden") for c, comment in editor.comments.items()
          if comment["image_id"] in (e, f) and c not in (comment_edited, comment_hidden, comment_destroyed)}}
    by_key = {(row["resource"], row["record_key"]): json.loads(row["changes"] or "null") for row in rows}
    assert by_key[("images", str(b))]["description"] == [old_description, "a new description"]
    assert by_key[("images", str(c))]["source_urls"][1] == ["https://example.com/new"]
    assert by_key[("images", str(d))]["score"] == [old_score, old_score + 5]
    # A hide keeps the stub's reason and its time (what the site answered as of then: mirror.asof).
    hid, merged = by_key[("images", str(e))], by_key[("images", str(f))]
    assert hid == {"deletion_reason": [None, "Rule #2"], "updated_at": [None, hid["updated_at"][1]]}
    assert merged == {"duplicate_of": [None, a], "updated_at": [None, merged["updated_at"][1]]}
    assert editor.images[e]["updated_at"] == hid["updated_at"][1]
    assert by_key[("comments", str(comment_edited))]["body"][1] == "an edited comment"
    assert by_key[("posts", str(post))]["body"][1] == "an edited post"
    assert by_key[("galleries", str(reordered))] == {"added": [], "removed": [], "reordered": True}
    assert by_key[("galleries", str(shrunk))] == {"added": [], "removed": [dropped], "reordered": False}
    assert "ponie" in by_key[("tags", str(pony))]["aliases"][1]
    tag_rows = db.execute(f"SELECT change, {tag_name_sql('c')} FROM image_tag_changes c WHERE image_id = ?", [a]).fetchall()
    assert sorted(tag_rows) == sorted([("+", "brand new tag")] + [("-", name) for name in removed])

    found = {(ch.resource, ch.key): ch for ch in reversed(list(changes(db, since=parse_since("1h"))))}
    assert found[("images", str(a))].tags_added == ["brand new tag"]
    assert sorted(found[("images", str(a))].tags_removed) == sorted(removed)
    path = write_config(config, config.database.parent / "mirror.toml")
    shown = CliRunner().invoke(cli, ["-c", str(path), "changes", "--since", "1h", "--resource", "images"])
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    assert any(line.endswith(f"image {e} deleted: Rule #2") for line in lines)
    assert any(line.endswith(f"image {f} merged into {a}") for line in lines)
    assert any(f"image {a}: tags " in line and "+brand new tag" in line for line in lines)
    assert any(f"image {b}: description" in line for line in lines)
    assert len([line for line in lines if "first seen" not in line]) == 6  # images only
    assert [line for line in lines if "first seen" in line][-1].endswith("images first seen")  # counted: none to list
    one = CliRunner().invoke(cli, ["-c", str(path), "changes", "--since", "1h", "--id", f"image:{d}", "--json"])
    newest, first = json.loads(one.output)  # the score change, then the first version
    assert newest["id"] == d and newest["event"] == "counters" and newest["changes"]["score"][1] == old_score + 5
    assert first["event"] == "first_seen" and first["changes"] is None


@pytest.mark.parametrize("mode, expected", [("daily", 1), ("all", 2), ("off", 0)])
def test_counters_are_kept_at_the_grain_asked(site, tmp_path, mode, expected):
    from mirror.store.history import recording

    config = site_config(site, tmp_path)
    _, db = sync(config)
    image = sorted(site.editor.images)[3]
    from mirror.store import ImageWriter

    writer = ImageWriter(db, site.url)
    for score in (50, 60):
        record = json.loads(db.execute("SELECT raw FROM images WHERE id = ?", [image]).fetchone()[0])
        record.update(score=score, upvotes=score)
        with recording(db, None, mode):
            writer.save_page([record])
    points = db.execute("SELECT count(*) FROM history WHERE record_key = ? AND event = 'counters'", [str(image)])
    assert points.fetchone()[0] == expected


def test_since_reads_times_ago_and_dates():
    assert parse_since("2026-11-01") == "2026-11-01T00:00:00Z"
    with pytest.raises(ValueError, match="7d, 12h"):
        parse_since("last tuesday")


def test_the_feed_and_an_images_history_in_browse(site, mirrored):

    config, db = mirrored
    image = sorted(site.editor.images)[20]
    site.editor.edit_image(image, description="first edit")
    sync(config, RESOURCES)
    site.editor.edit_image(image, description="second edit")
    sync(config, RESOURCES)

    async def pages() -> tuple[list, list]:
        client = await browse_client(config)
        history = await client.get("/mirror/image_history.json", params={"image": image, "_shape": "array"})
        feed = await client.get("/mirror/recent_changes.json", params={"since": "2000-01-01",
                                                                                 "_shape": "array"})
        return history.json(), feed.json()

    rows, feed = asyncio.run(pages())
    assert [row["event"] for row in rows] == ["changed", "changed", "first_seen"]
    assert json.loads(rows[0]["changes"])["description"] == ["first edit", "second edit"]
    assert {(row["resource"], row["id"], row["event"]) for row in feed} >= {("images", str(image), "changed")}
    assert all(row["event"] != "first_seen" for row in feed)


def test_a_lone_surrogate_in_a_changed_field_is_kept_as_u_fffd(site, tmp_path):
    """JSON may carry "\\ud800", which UTF-8 cannot: first sight stores U+FFFD in text columns, and so
    must the history of a change (it failed every later run with UnicodeEncodeError)."""
    config = site_config(site, tmp_path)
    path = write_config(config, tmp_path / "mirror.toml")
    assert CliRunner().invoke(cli, ["-c", str(path), "sync"]).exit_code == 0
    image = sorted(site.editor.images)[5]
    site.editor.edit_image(image, description="broken \ud800 text", name="file \udfff.png")

    for _ in range(2):  # and every later run
        result = CliRunner().invoke(cli, ["-c", str(path), "sync"])
        assert result.exit_code == 0, result.output
    db = open_database(config.database)
    changes = json.loads(db.execute("SELECT changes FROM history WHERE record_key = ? AND event = 'changed'",
                                    [str(image)]).fetchone()[0])
    assert changes["description"][1] == "broken \ufffd text"
    assert changes["name"][1] == "file \ufffd.png"
    assert json.loads(db["images"].get(image)["raw"])["description"] == "broken \ud800 text"  # raw: as sent
    for args, shown in ((["changes", "--since", "1d"], '"file \ufffd.png"'),
                        (["changes", "--since", "1d", "--json"], "broken \ufffd text")):
        said = CliRunner().invoke(cli, ["-c", str(path), *args])
        assert said.exit_code == 0 and shown in said.output, said.output


def _kept_changes(path, old: dict, new: dict) -> list:
    """The changes the history keeps when a record kept as ``old`` is received as ``new``."""
    db = open_database(path)
    HistoryRecorder(db, None).saw("images", [Seen(key=old["id"], record=new, old_raw=json.dumps(old), known=True)])
    return [json.loads(changes) for (changes,) in db.execute("SELECT changes FROM history")]


def test_a_time_written_another_way_naming_the_same_instant_is_no_change(tmp_path):
    old = {"id": 1, "created_at": "2024-01-02T03:04:38", "first_seen_at": "2024-01-02T03:04:38.000Z",
           "description": "2024-01-02T03:04:38Z"}
    same = {"id": 1, "created_at": "2024-01-02T03:04:38Z", "first_seen_at": "2024-01-02T04:04:38+01:00",
            "description": "2024-01-02T03:04:38Z"}
    assert _kept_changes(tmp_path / "same.db", old, same) == []
    later = {**same, "created_at": "2024-01-02T03:04:39Z"}
    assert _kept_changes(tmp_path / "later.db", old, later) == [{"created_at": ["2024-01-02T03:04:38", "2024-01-02T03:04:39Z"]}]


def test_an_images_files_moved_to_another_host_are_no_change_but_a_renamed_file_is(tmp_path):
    def image(root: str, name: str) -> dict:
        return {"id": 7, "view_url": f"{root}/view/2024/1/2/7__{name}.png",
                "representations": {"full": f"{root}/view/2024/1/2/7.png", "thumb": f"{root}/2024/1/2/7/thumb.png"}}

    assert _kept_changes(tmp_path / "moved.db", image("https://derpicdn.net/img", "safe"),
                         image("http://127.0.0.1:8809/img", "safe")) == []
    renamed = _kept_changes(tmp_path / "renamed.db", image("https://derpicdn.net/img", "safe"),
                            image("http://127.0.0.1:8809/img", "safe_pony"))
    assert renamed == [{"view_url": ["https://derpicdn.net/img/view/2024/1/2/7__safe.png",
                                     "http://127.0.0.1:8809/img/view/2024/1/2/7__safe_pony.png"]}]


def test_a_change_is_dated_as_the_row_that_holds_it_even_when_the_clock_turns_between(tmp_path, monkeypatch):
    import itertools
    from datetime import UTC, datetime, timedelta

    import mirror.store.history as history_module
    import mirror.store.writer as writer_module
    from mirror.store import ImageWriter
    from mirror.store.history import recording

    db = open_database(tmp_path / "m.db")
    writer = ImageWriter(db, "https://derpicdn.net/img")
    seconds = itertools.count()

    def tick() -> str:  # every reading of the clock a second after the last
        return (datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=next(seconds))).strftime("%Y-%m-%dT%H:%M:%SZ")

    monkeypatch.setattr(writer_module, "utc_text", tick)
    monkeypatch.setattr(history_module, "utc_text", tick)
    for description in ("first", "edited"):
        with recording(db, None):
            writer.save_page([{"id": 5, "description": description, "tags": [], "tag_ids": []}])
    mirrored_at = db.execute("SELECT mirrored_at FROM images WHERE id = 5").fetchone()[0]
    changed = db.execute("SELECT seen_at FROM history WHERE record_key = '5' AND event = 'changed'").fetchone()[0]
    assert changed == mirrored_at
