"""A generated board, served: what the local site knows that a mirror cannot.

The site has accounts (API keys, votes, favourites, hides), knows when each gallery was made,
and windows a topic's posts by their place in it. A mirror learns none of this from the API, so
:class:`~mirror.serve.board.Board` answers as for an anonymous caller; this subclass fills those
extension points from the board's own ``site_*`` tables, so the local site answers as the real
one does.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ...search.compile import Scalar, Sql
from ...search.indexes import GALLERIES, Index
from ...serve.board import Board

__all__ = ["GeneratedBoard", "GALLERIES_DATED"]

# The generated board knows when each gallery was made and changed; a gallery record does not say.
GALLERIES_DATED = replace(GALLERIES, fields={
    **GALLERIES.fields,
    "created_at": Scalar("(SELECT created_at FROM site_gallery_dates WHERE gallery_id = {t}.id)", "date"),
    "updated_at": Scalar("(SELECT updated_at FROM site_gallery_dates WHERE gallery_id = {t}.id)", "date"),
})
_GALLERIES_NEWEST = "(SELECT created_at FROM site_gallery_dates WHERE gallery_id = {t}.id) DESC, {t}.id DESC"


class GeneratedBoard(Board):
    """A board the local site generated (or loaded from fixtures), with its accounts."""

    def user_for_key(self, key: str) -> int | None:
        if not key:
            return None
        row = self.one("SELECT user_id FROM site_keys WHERE key = ?", [key])
        return row[0] if row else None

    def interactions(self, user_id: int, image_ids: Sequence[int]) -> list[dict[str, Any]]:
        if not image_ids:
            return []
        return [dict(row) for row in self.all(
            "SELECT image_id, user_id, interaction_type, value FROM site_interactions "
            "WHERE user_id = ? AND image_id IN (SELECT value FROM json_each(?))", (user_id, json.dumps(list(image_ids))))]

    def my_images(self, user_id: int, kind: str, value: str) -> Sql:
        return Sql("i.id IN (SELECT image_id FROM site_interactions WHERE user_id = ? "
                   "AND interaction_type = ? AND value = ?)", (user_id, kind, value))

    def hidden_by(self, user_id: int) -> Sql | None:
        return Sql("SELECT image_id FROM site_interactions WHERE user_id = ? AND interaction_type = 'hidden'",
                   (user_id,))

    def gallery_search(self) -> tuple[Index, str]:
        return GALLERIES_DATED, _GALLERIES_NEWEST

    def topic_posts(self, short_name: str, topic_slug: str, offset: int, size: int) -> list[sqlite3.Row]:
        return self.all("SELECT p.id, p.raw, p.stub, p.hidden_from_users FROM posts p JOIN site_post_positions s "
                        "ON s.post_id = p.id WHERE p.forum_short_name = ? AND p.topic_slug = ? "
                        "AND s.position >= ? AND s.position < ? ORDER BY s.position",
                        (short_name, topic_slug, offset, offset + size))
