"""``/-/duplicates``: the archive's groups of near-duplicate images side by side, for a curator to
review (:mod:`mirror.search.similar`): each image in its box (its attribution on its page) with its
distance from the group's first, the site's own merges marked (``duplicate_of``: the site already agreed), and a
search for the group, where it can be tagged or compared on the board's pages."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from datasette.utils.asgi import Response
from markupsafe import Markup
from sqlite_utils import Database

from ..search.similar import GROUP_DISTANCE, HashIndex, groups
from .cards import chosen_filter, filter_in_use, image_cards
from .figure import ImageCard
from .places import image_url
from .search_page import PATH as SEARCH_PATH
from .settings import css, database_name

PATH = "/-/duplicates"
# Groups shown at most: a curator reviews them a page at a time.
MOST = 200
# Images shown of a group at most (a cluster of blank pictures holds thousands).
SHOWN = 60


@dataclass(frozen=True)
class Member:
    card: ImageCard
    distance: int  # from the group's first image, on the scale `mirror reverse --similar` prints
    merged_into: int | None  # the image the site merged this one into, if it did


@dataclass(frozen=True)
class Group:
    members: list[Member]
    more: int  # images of the group not shown

    @property
    def search(self) -> str:
        """The search page for the group's images, shown ones first."""
        query = " || ".join(f"id:{member.card.image_id}" for member in self.members)
        return f"{SEARCH_PATH}?{urlencode({'q': query})}"


@dataclass(frozen=True)
class Found:
    groups: list[Group]
    fingerprinted: int  # images with a fingerprint: none means no file was kept or read yet


def _groups(conn: sqlite3.Connection, chosen: int | None) -> Found:
    """Each group's first :data:`SHOWN` images under the filter in use, and how many more it has."""
    try:
        index = HashIndex.load(Database(conn))
    except sqlite3.OperationalError:  # a mirror from before fingerprints
        return Found([], 0)
    used = filter_in_use(conn, chosen)
    found = []
    for group in groups(index)[:MOST]:
        shown = group[:SHOWN]
        distances = dict(zip(shown, index.distances_within(shown)))
        merged = _merged_into(conn, shown)
        members = [Member(card, distances[card.image_id], merged.get(card.image_id))
                   for card in image_cards(conn, shown, used)]
        found.append(Group(members, max(0, len(group) - SHOWN)))
    return Found(found, len(index))


def _merged_into(conn: sqlite3.Connection, ids: list[int]) -> dict[int, int]:
    rows = conn.execute("SELECT id, duplicate_of FROM images WHERE duplicate_of IS NOT NULL "
                        "AND id IN (SELECT value FROM json_each(?))", [json.dumps(ids)])
    return {image_id: into for image_id, into in rows}


def _member_html(member: Member, first: int) -> Markup:
    card = member.card.box(image_url(member.card.image_id))
    distance = (Markup('<span class="booru-distance">the first of the group</span>') if member.distance == 0
                and member.card.image_id == first else
                Markup('<span class="booru-distance" title="0: the same picture; copies mostly 0-12">'
                       'distance {} from #{}</span>').format(member.distance, first))
    merged = (Markup('<span class="booru-merged">merged into <a href="{}">#{}</a> on the site</span>').format(
        image_url(member.merged_into), member.merged_into) if member.merged_into else Markup(""))
    return Markup('<div class="booru-member">{}{}{}</div>').format(card, distance, merged)


async def booru_duplicates(datasette: Any, request: Any) -> Response:
    database = database_name(datasette)
    chosen = chosen_filter(request)
    found = await datasette.get_database(database).execute_fn(lambda conn: _groups(conn, chosen))
    shown = [([_member_html(member, group.members[0].card.image_id) for member in group.members],
              group.more, group.search, sum(member.merged_into is not None for member in group.members))
             for group in found.groups if group.members]
    context = {"css": css(), "groups": shown, "distance": GROUP_DISTANCE, "fingerprinted": found.fingerprinted,
               "notice": _notice(found, len(shown)),
               "error": None if found.fingerprinted else (
                   "No fingerprints yet: they are read from the files `mirror download` keeps (thumbnails are "
                   "enough), and `mirror verify` reads them for files kept before.")}
    return Response.html(await datasette.render_template("booru_duplicates.html", context, request=request))


def _notice(found: Found, shown: int) -> str | None:
    """What an archive with fingerprints but no group on show is told: it is an answer, not an error."""
    if not found.fingerprinted or shown:
        return None
    hidden = f" ({len(found.groups):,} hidden by the filter in use)" if found.groups else ""
    return (f"No two of the {found.fingerprinted:,} fingerprinted images are within distance {GROUP_DISTANCE} of "
            f"each other{hidden}: no copies found.")
