"""A record first seen hidden (a stub) fills every column it carries; a row kept whole stays."""

from __future__ import annotations

import json

import httpx
import pytest

from mirror.localsite.board.editor import BoardEditor
from mirror.localsite.http.server import SiteServer
from mirror.store import open_database
from mirror.store.specs import COMMENTS, SPECS
from mirror.store.writer import RecordWriter
from mirror.urls import https_url

from ..support.configs import site_config, sync
from ..support.mirrored import expected_column, stored_column

EVERY_RESOURCE = ("images", "tags", "comments", "galleries", "forums", "posts", "filters", "profiles")
ENABLED = {name: {"enabled": True, **({"scope": "all"} if name in ("comments", "galleries", "tags") else {})}
           for name in EVERY_RESOURCE}


@pytest.fixture
def site():
    board = BoardEditor.generate(seed=11, images=120)
    with SiteServer(board) as server:
        yield server


def first_seen_hidden(db, table: str) -> list[dict]:
    """The rows whose record is their stub (its fields in the table's order)."""
    return [row for row in db.query(f"SELECT * FROM {table} WHERE stub IS NOT NULL")
            if json.loads(row["raw"]) == json.loads(row["stub"])]


def assert_carried(row: dict, table: str, base_url: str) -> None:
    """Every field of the stub the row was made from is in its typed column."""
    spec, stub = SPECS[table], json.loads(row["stub"])
    assert row["hidden_from_users"] == 1
    for field, value in stub.items():
        if field in spec.fields:
            kind = spec.fields[field]
            expected = https_url(value, base_url) if kind == "url" else expected_column(kind, value)
            assert stored_column(kind, row[field]) == expected, (table, field)


def test_images_and_posts_first_seen_hidden_fill_every_column_they_carry(site, tmp_path):
    editor = site.editor
    post = next(p for p in editor.posts.values() if not p["hidden_from_users"] and not p["destroyed_content"]
                and not editor.topics[p["topic_id"]]["hidden"])
    editor.edit_post(post["id"], hidden=True)  # before the mirror ever saw it
    _, db = sync(site_config(site, tmp_path, **ENABLED), EVERY_RESOURCE)
    for table in ("images", "posts"):
        rows = first_seen_hidden(db, table)
        assert rows, table
        for row in rows:
            assert_carried(row, table, site.url)
    row = db["posts"].get(post["id"])
    assert row["body"] is None and row["author"] and row["user_id"] == post["user_id"]
    assert row["avatar"] and row["created_at"] and row["updated_at"]
    # Rows of every other resource never arrive as stubs: each is stored whole.
    for table in ("tags", "topics", "galleries", "users", "filters"):
        assert db[table].count and "stub" not in db[table].columns_dict


def test_a_comment_first_seen_hidden_keeps_its_author_avatar_and_dates(site, tmp_path):
    """Search leaves hidden comments out; one is met by id (the audit's look-up)."""
    editor = site.editor
    comment = next(c for c in editor.comments.values() if not c["hidden_from_users"] and c["user_id"]
                   and not editor.images[c["image_id"]]["hidden_from_users"])
    editor.edit_comment(comment["id"], hidden=True)
    stub = httpx.get(f"{site.api_url}/comments/{comment['id']}").json()["comment"]
    assert stub["body"] is None and stub["author"]
    db = open_database(tmp_path / "mirror.db")
    RecordWriter(db, COMMENTS, site.url).save([stub])
    row = db["comments"].get(comment["id"])
    assert_carried(row, "comments", site.url)
    assert row["user_id"] == comment["user_id"] and row["author"] and row["avatar"] and row["created_at"]
