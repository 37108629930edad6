"""``/-/duplicates``: the archive's groups of near-duplicate images, each image shown with its
attribution, for a curator to review (:mod:`mirror.search.similar`)."""

from __future__ import annotations

import sqlite3
from typing import Any

from datasette.utils.asgi import Response
from sqlite_utils import Database

from ..search.similar import HashIndex, groups
from .figure import ImageCard, artists_of_tags
from .metadata import kept_extension
from .places import image_url
from .search_page import PATH as SEARCH_PATH
from .settings import css, database_name, site_address

PATH = "/-/duplicates"
# Groups shown at most: a curator reviews them a page at a time.
MOST = 200


def _groups(conn: sqlite3.Connection) -> list[list[tuple[int, str | None, str | None, str | None]]]:
    """Each group's images: (id, tags, source_url, the kept thumbnail's extension)."""
    try:
        found = groups(HashIndex.load(Database(conn)))[:MOST]
    except sqlite3.OperationalError:  # a mirror from before fingerprints
        return []
    shown = []
    for group in found:
        rows = []
        for image_id in group:
            row = conn.execute("SELECT tags, source_url FROM images WHERE id = ?", [image_id]).fetchone()
            rows.append((image_id, row[0] if row else None, row[1] if row else None, kept_extension(conn, image_id)))
        shown.append(rows)
    return shown


async def booru_duplicates(datasette: Any, request: Any) -> Response:
    database = database_name(datasette)
    found = await datasette.get_database(database).execute_fn(_groups)
    site = site_address(datasette)
    cards = [[ImageCard(image_id, artists_of_tags(tags), source or None, kept).html(
                  site, SEARCH_PATH, image_url(image_id))
              for image_id, tags, source, kept in group] for group in found]
    context = {"css": css(), "groups": cards,
               "error": None if cards or found else "No near-duplicates found (or no fingerprints yet: they are "
                                                    "read from the files `mirror download` keeps)."}
    return Response.html(await datasette.render_template("booru_duplicates.html", context, request=request))
