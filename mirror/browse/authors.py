"""Who wrote a comment or a post, or uploaded an image, as the board names them: a user the mirror
keeps links to their page (``/-/user/N``); an anonymous author is named as the site names one.

The site names an anonymous author "Background Pony #XXXX", four hex digits hashed with its
secret salt: the API sends that name, and the mirror shows it as sent. A dump names no anonymous
author (the salt is the site's), so the mirror says "Background Pony", as far as it can follow.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from typing import Any

__all__ = ["ANONYMOUS", "author", "known_users", "name_authors"]

ANONYMOUS = "Background Pony"


def known_users(conn: sqlite3.Connection, ids: Iterable[int | None]) -> set[int]:
    """The users among ``ids`` the mirror keeps a page for."""
    wanted = sorted({i for i in ids if type(i) is int})
    if not wanted:
        return set()
    return {row[0] for row in conn.execute("SELECT id FROM users WHERE id IN (SELECT value FROM json_each(?))",
                                           [json.dumps(wanted)])}


def author(name: str | None, user_id: int | None, known: set[int]) -> dict[str, Any]:
    """An author's name and the address of their page (None when the mirror has none)."""
    href = f"/-/user/{user_id}" if user_id in known else None
    return {"author": name or (f"user {user_id}" if user_id is not None else ANONYMOUS), "author_href": href}


def name_authors(conn: sqlite3.Connection, messages: list[dict[str, Any]]) -> None:
    """Give each message (with ``author`` and ``user_id``) its author's name and page."""
    known = known_users(conn, (m.get("user_id") for m in messages))
    for message in messages:
        message.update(author(message.get("author"), message.get("user_id"), known))
