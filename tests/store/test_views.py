"""The schema's views read as cheaply as their rows allow: a page of ``tag_usage`` counts only the
tags it shows, and its row count reads no image's tags (at a million images the GROUP BY it
replaced took seconds a page in `mirror browse`)."""

from __future__ import annotations

from mirror.localsite.board.generate import generate_board
from mirror.store import open_database
from mirror.store.schema import VIEWS


def test_tag_usage_counts_each_tags_mirrored_images(tmp_path):
    path = tmp_path / "board.db"
    generate_board(path, 300, seed=4)
    db = open_database(path)
    db.execute("DELETE FROM image_tags WHERE image_id % 3 = 0")  # mirrored counts now differ from the site's
    grouped = db.execute("""SELECT tags.id, tags.name, tags.category, tags.namespace, count(image_tags.image_id),
                            tags.images FROM tags LEFT JOIN image_tags ON image_tags.tag_id = tags.id
                            GROUP BY tags.id ORDER BY tags.id""").fetchall()
    assert db.execute("SELECT * FROM tag_usage ORDER BY id").fetchall() == grouped
    assert any(row[4] != row[5] for row in grouped) and any(row[4] == 0 for row in grouped)


def test_counting_tag_usage_reads_no_image_tags(tmp_path):
    db = open_database(tmp_path / "mirror.db")
    plan = " ".join(row[3] for row in db.execute("EXPLAIN QUERY PLAN SELECT count(*) FROM tag_usage"))
    assert "image_tags" not in plan and "tags" in plan


def test_a_threads_posts_are_read_in_order_from_an_index(tmp_path):
    db = open_database(tmp_path / "mirror.db")
    plan = " ".join(row[3] for row in db.execute(
        "EXPLAIN QUERY PLAN SELECT body FROM posts WHERE forum_short_name = 'art' AND topic_slug = 'x' "
        "ORDER BY created_at, id LIMIT 25 OFFSET 50"))
    assert "posts_by_topic" in plan and "TEMP B-TREE" not in plan


# The view as the schema first made it: its rows are what posts_by_user must still give.
POSTS_BY_USER_BEFORE = next(sql for sql in VIEWS if "VIEW posts_by_user" in sql).split(" AS", 1)[1]


def test_posts_by_user_has_every_comment_and_post_and_counts_them_from_indexes(tmp_path):
    path = tmp_path / "board.db"
    generate_board(path, 300, seed=4)
    db = open_database(path)
    rows = db.execute("SELECT * FROM posts_by_user ORDER BY kind, id").fetchall()
    assert rows == db.execute(f"SELECT * FROM ({POSTS_BY_USER_BEFORE}) ORDER BY kind, id").fetchall()
    assert {row[0] for row in rows} == {"comment", "post"} and all(row[8] is not None for row in rows[:5])
    plan = " ".join(row[3] for row in db.execute("EXPLAIN QUERY PLAN SELECT count(*) FROM posts_by_user"))
    assert "SCAN comments USING COVERING INDEX" in plan and "SCAN posts USING COVERING INDEX" in plan
    user, = db.execute("SELECT user_id FROM comments WHERE user_id IS NOT NULL LIMIT 1").fetchone()
    plan = " ".join(row[3] for row in db.execute(
        "EXPLAIN QUERY PLAN SELECT kind, created_at, body FROM posts_by_user WHERE user_id = ?", [user]))
    assert "SEARCH comments USING COVERING INDEX comments_by_user (user_id=?)" in plan and "SCAN comments" not in plan
