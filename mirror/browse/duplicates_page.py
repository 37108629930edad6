"""``/-/duplicates``: the archive's groups of near-duplicate images, each image shown with its
attribution, for a curator to review (:mod:`mirror.search.similar`)."""

from __future__ import annotations

import sqlite3
from typing import Any

from datasette.utils.asgi import Response
from sqlite_utils import Database

from ..search.similar import HashIndex, groups
from .cards import chosen_filter, filter_in_use, image_cards
from .figure import ImageCard
from .places import image_url
from .search_page import PATH as SEARCH_PATH
from .settings import css, database_name, site_address

PATH = "/-/duplicates"
# Groups shown at most: a curator reviews them a page at a time.
MOST = 200
# Images shown of a group at most (a cluster of blank pictures holds thousands).
SHOWN = 60


def _groups(conn: sqlite3.Connection, chosen: int | None) -> list[tuple[list[ImageCard], int]]:
    """Each group's first :data:`SHOWN` images as cards under the filter in use, and how many more it has."""
    try:
        found = groups(HashIndex.load(Database(conn)))[:MOST]
    except sqlite3.OperationalError:  # a mirror from before fingerprints
        return []
    used = filter_in_use(conn, chosen)
    return [(image_cards(conn, group[:SHOWN], used), max(0, len(group) - SHOWN)) for group in found]


async def booru_duplicates(datasette: Any, request: Any) -> Response:
    database = database_name(datasette)
    chosen = chosen_filter(request)
    found = await datasette.get_database(database).execute_fn(lambda conn: _groups(conn, chosen))
    site = site_address(datasette)
    cards = [([card.html(site, SEARCH_PATH, image_url(card.image_id)) for card in group], more)
             for group, more in found]
    context = {"css": css(), "groups": cards,
               "error": None if cards or found else "No near-duplicates found (or no fingerprints yet: they are "
                                                    "read from the files `mirror download` keeps)."}
    return Response.html(await datasette.render_template("booru_duplicates.html", context, request=request))
