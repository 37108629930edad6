"""Load recorded real responses (a folder such as tests/fixtures/real) into a board database.

Every record is written as recorded, through the store's writers, and served unchanged; images
keep their own representation URLs (they point at the real CDN; the site serves no files for
them). When one id occurs in several files, the newest recording wins (folders sort by year).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ...store import ImageWriter, open_database
from ...store.specs import COMMENTS, FILTERS, FORUMS, GALLERIES, POSTS, TAGS, TOPICS, USERS
from .rows import FILE_ROOT, create_site_tables, save

__all__ = ["load_fixtures"]

Record = dict[str, Any]
WRAPPERS = ("images", "image", "tags", "tag", "comments", "comment", "posts", "post", "topics", "topic",
            "forums", "forum", "galleries", "filters", "filter", "users", "user")
SPECS = {"tags": TAGS, "comments": COMMENTS, "users": USERS, "filters": FILTERS, "galleries": GALLERIES,
         "forums": FORUMS}


def _records(path: Path) -> tuple[list[tuple[str, Record]], int | None]:
    """(kind, record) pairs of one file (a wrapped response, or a bare array named by the file),
    and the response's `total` if it has one."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if isinstance(data, list):
        return [(path.stem, r) for r in data if isinstance(r, dict)], None
    out = []
    for key in WRAPPERS:
        value = data.get(key)
        kind = key if key.endswith("s") else key + "s"
        if isinstance(value, list):
            out += [(kind, r) for r in value if isinstance(r, dict)]
        elif isinstance(value, dict):
            out.append((kind, value))
    return out, data.get("total")


def load_fixtures(board: Path, root: Path) -> None:
    """Write every record found in the JSON files below `root` into a new board at `board`."""
    grouped: dict[str, list[Record]] = {}
    posts_total = None
    for path in sorted(root.rglob("*.json")):
        records, total = _records(path)
        for kind, raw in records:
            grouped.setdefault(kind, []).append(raw)
            if kind == "posts":
                posts_total = total
    db = open_database(board)
    create_site_tables(db)
    with db.atomic():
        db["site_board"].insert_all([{"key": "seed", "value": "0"}, {"key": "recorded", "value": "1"}], pk="key")
        ImageWriter(db, FILE_ROOT).save_page(grouped.get("images", []))
        for kind, spec in SPECS.items():
            save(db, spec, grouped.get(kind, []))
        _topics_and_posts(db, grouped.get("forums", []), grouped.get("topics", []), grouped.get("posts", []),
                          posts_total)
    db.close()


def _topics_and_posts(db: Any, forums: list[Record], topics: list[Record], posts: list[Record],
                      posts_total: int | None) -> None:
    """Recorded topics carry no forum, and posts no topic: file them where they plausibly belong.

    Topics go to the `art` forum if there is one (the recorded ones are artists' threads), else
    the first forum; posts go to the topic whose `post_count` equals the recorded posts total, else
    the first topic, in recorded order.
    """
    shorts = [f["short_name"] for f in forums]
    if topics and not shorts:
        save(db, FORUMS, [{"short_name": "general", "name": "General", "description": "",
                           "topic_count": len(topics), "post_count": 0}])
        shorts = ["general"]
    forum = "art" if "art" in shorts else next(iter(shorts), None)
    save(db, TOPICS, topics, {"forum_short_name": forum})
    db["site_topics"].insert_all([{"id": i, "forum": forum, "slug": t["slug"], "hidden": 0}
                                  for i, t in enumerate(topics, start=1)], pk="id")
    if not posts or not topics:
        return
    topic_id, topic = next(((i, t) for i, t in enumerate(topics, start=1) if t.get("post_count") == posts_total),
                           (1, topics[0]))
    save(db, POSTS, posts, {"forum_short_name": forum, "topic_slug": topic["slug"]})
    db["site_post_positions"].insert_all([{"post_id": p["id"], "topic_id": topic_id, "position": position}
                                          for position, p in enumerate(posts)], pk="post_id", replace=True)
