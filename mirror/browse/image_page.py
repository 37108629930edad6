"""``/-/image/N``: an image as the board shows it, offline.

The picture itself (the largest file the mirror keeps; a video as a video; a placeholder with the
site's link when none is kept), its attribution (artists, every source, its page on the site),
its tags grouped by category in the site's order, each a link to its search with its count, the
description and comments as text, its figures, the galleries it is in with the images before and
after it in each, its hidden, deleted or merged state, and links to the file, the record as JSON
and its history. The arrow keys go to the previous and next image. Everything a record holds is
shown as text: a URL becomes a link only when it is http(s) (:func:`mirror.urls.is_web_url`).
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from datasette.utils.asgi import NotFound, Response

from ..asof import Moment
from ..philomena import DISPLAY_CATEGORIES, display_key
from ..search import engine, images
from ..search.bitmap_search import ImageScope
from ..search.postings import Postings
from ..search.query import QueryError
from ..urls import is_web_url
from .authors import author, name_authors
from .cards import chosen_filter, filter_in_use, spoilered
from .figure import VIDEO
from .history_page import history_url
from .markup import render_all
from .metadata import KEPT_PICTURE, kept_extension
from .moment import moment_of
from .places import SearchPlace, image_url, place_of
from .search_page import PATH as SEARCH_PATH
from .search_page import SECONDS as SEARCH_SECONDS
from .search_page import mirror_query, search_url
from .searching import run_search
from .settings import css, database_name, site_address
from .then import record_then, then, written_by
from .times import relative_time

PATH = "/-/image"


def _image_row(conn: sqlite3.Connection, image_id: int, moment: Moment | None) -> tuple[Any, ...] | None:
    """(record, hidden, deletion reason, duplicate of): today's, or as of ``moment``; None when
    the mirror has no such image (or it was not uploaded yet then)."""
    if moment is not None:
        found = then(conn, "images", image_id, moment)
        if found is None:
            return None
        stub = json.loads(found.row["stub"] or "{}")
        return (json.loads(found.row["raw"]), bool(found.row["hidden_from_users"]), stub.get("deletion_reason"),
                stub.get("duplicate_of"))
    row = conn.execute("SELECT raw, stub, hidden_from_users, deletion_reason, duplicate_of FROM images WHERE id = ?",
                       [image_id]).fetchone()
    return None if row is None else (json.loads(row[0] or row[1] or "{}"), bool(row[2]), row[3], row[4])


def _comments(conn: sqlite3.Connection, image_id: int, moment: Moment | None) -> list[dict[str, Any]]:
    """The image's comments, oldest first: today's, or those written by ``moment`` as they were then."""
    written, params = written_by(moment)
    comments = []
    for comment_id, name, user_id, created, body in conn.execute(
            f"SELECT id, author, user_id, created_at, body FROM comments WHERE image_id = ? AND {written} "
            "ORDER BY created_at, id", [image_id, *params]).fetchall():
        if moment is not None and (record := record_then(conn, "comments", comment_id, moment)) is not None:
            body = record.get("body")
        comments.append({"author": name, "user_id": user_id, "created_at": created,
                         "body": body or "(hidden on the site)"})
    return comments


def image_context(conn: sqlite3.Connection, image_id: int, chosen: int | None = None,
                  site: str = "", moment: Moment | None = None) -> dict[str, Any] | None:
    """Everything the page shows, from the mirror's tables (as of ``moment`` when given), its bodies
    rendered as the site renders them (``site`` is where an image they name but the mirror lacks is
    linked); None when the mirror has no such image."""
    row = _image_row(conn, image_id, moment)
    if row is None:
        return None
    record = row[0]
    picture = kept_extension(conn, image_id, KEPT_PICTURE)
    ids = [i for i in record.get("tag_ids") or [] if type(i) is int]
    tags = conn.execute("SELECT id, name, category, images FROM tags WHERE id IN (SELECT value FROM json_each(?))",
                        [json.dumps(ids)]).fetchall()
    groups: dict[str, list[dict[str, Any]]] = {}
    for tag_id, name, category, count in sorted(tags, key=lambda t: display_key(t[2], t[1])):
        groups.setdefault(category if category in DISPLAY_CATEGORIES else "other", []).append(
            {"id": tag_id, "name": name, "count": count, "category": category or "",
             # as of a moment, a tag's page lists its images then (the search as of one is to come)
             "href": search_url(name) if moment is None else f"/-/tag/{tag_id}"})
    comments = _comments(conn, image_id, moment)
    name_authors(conn, comments)
    used = filter_in_use(conn, chosen)
    description, *bodies = render_all(conn, [record.get("description")] + [c["body"] for c in comments], site,
                                      lambda ids: spoilered(conn, ids, used))  # the description first
    for comment, body in zip(comments, bodies):
        comment["body"] = body
    galleries = [{"id": gid, "title": title, "previous": prev, "next": nxt} for gid, title, prev, nxt in conn.execute(
        "SELECT g.id, g.title, (SELECT image_id FROM gallery_images p WHERE p.gallery_id = gi.gallery_id "
        "AND p.position < gi.position ORDER BY p.position DESC LIMIT 1), (SELECT image_id FROM gallery_images n "
        "WHERE n.gallery_id = gi.gallery_id AND n.position > gi.position ORDER BY n.position LIMIT 1) "
        "FROM gallery_images gi JOIN galleries g ON g.id = gi.gallery_id WHERE gi.image_id = ? ORDER BY g.id",
        [image_id])]
    uploaded, params = ("AND created_at <= ?", [moment.text]) if moment is not None else ("", [])
    neighbours = conn.execute(f"SELECT (SELECT max(id) FROM images WHERE id < ? {uploaded}), "
                              f"(SELECT min(id) FROM images WHERE id > ? {uploaded})", [image_id, *params, image_id, *params]).fetchone()
    sources = [s for s in (record.get("source_urls") or [record.get("source_url")]) if isinstance(s, str) and s]
    return {
        "id": image_id, "record": record, "description": description, "hidden": row[1],
        "deletion_reason": row[2], "duplicate_of": row[3],
        "picture": picture, "video": picture in VIDEO,
        "artists": [t["name"][len("artist:"):] for g in groups.values() for t in g if t["name"].startswith("artist:")],
        "sources": [{"text": s, "link": is_web_url(s)} for s in sources],
        "tag_groups": list(groups.items()), "comments": comments, "galleries": galleries,
        "uploader": _uploader(record, row[1] is not None and row[0] is None),
        "previous": neighbours[0], "next": neighbours[1],
        "figures": [(label, relative_time(record.get(key)) if key.endswith("_at") else record.get(key))
                    for label, key in (
            ("score", "score"), ("faves", "faves"), ("upvotes", "upvotes"), ("downvotes", "downvotes"),
            ("format", "format"), ("uploaded", "created_at"),
            ("first seen", "first_seen_at"))] + [("size", f"{record.get('width')}x{record.get('height')}")],
    }


def _uploader(record: dict[str, Any], stub: bool) -> dict[str, Any] | None:
    """Who uploaded the image, as the site names them: a user (linked), or "Background Pony" for
    an anonymous upload. A stub (hidden on the site) does not say, and neither does the page."""
    if stub and "uploader_id" not in record:
        return None
    user_id = record.get("uploader_id")
    return author(record.get("uploader"), user_id if type(user_id) is int else None,
                  {user_id} if type(user_id) is int else set())


def in_search(conn: sqlite3.Connection, postings: Postings, image_id: int,
              place: SearchPlace) -> tuple[str | None, str | None]:
    """The addresses of the images before and after ``image_id`` in the search it was opened from;
    (None, None) when the search no longer has it there (the mirror changed, or a random sort)."""
    if not place.steady:
        return None, None
    try:
        node = mirror_query(place.q)
        start = max(place.position - 1, 0)
        found = images.search(conn, postings, node, ImageScope(deleted=place.include_gone), sf=place.sf, sd=place.sd, limit=3,
                              offset=start, columns="{t}.id", seconds=SEARCH_SECONDS)
    except (QueryError, engine.SearchTooSlow):
        return None, None
    ids = [row[0] for row in found.rows]
    here = place.position - start
    if here >= len(ids) or ids[here] != image_id:
        return None, None
    before = image_url(ids[here - 1], place.moved(-1)) if here > 0 else None
    after = image_url(ids[here + 1], place.moved(1)) if here + 1 < len(ids) else None
    return before, after


async def booru_image(datasette: Any, request: Any) -> Response:
    image_id = int(request.url_vars["id"])
    database = database_name(datasette)
    place = place_of(request.args)

    site = site_address(datasette)
    chosen = chosen_filter(request)
    moment = moment_of(request)
    found = await datasette.get_database(database).execute_fn(
        lambda conn: image_context(conn, image_id, chosen, site, moment))
    if found is None:
        raise NotFound(f"the mirror has no image {image_id}" + (f" as of {moment.text}" if moment else ""))
    searched = (None, None)
    if place is not None and moment is None:  # a search's neighbours as of a moment: with the search as of one
        searched = await run_search(datasette, lambda conn, postings: in_search(conn, postings, image_id, place))
    by_id = tuple(None if found[side] is None else image_url(found[side]) for side in ("previous", "next"))
    found["in_search"] = searched != (None, None)
    found["previous_url"], found["next_url"] = searched if found["in_search"] else by_id
    found.update(css=css(), path=PATH, site=site, search_path=SEARCH_PATH,
                 searchbox_q=place.q if place else "",
                 json_url=datasette.urls.row(database, "images", str(image_id)) + ".json",
                 history_url=history_url(image_id))
    return Response.html(await datasette.render_template("booru_image.html", found, request=request))
