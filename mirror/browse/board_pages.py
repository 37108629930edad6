"""The board's other pages in `mirror browse`: a tag, a user, a gallery, the forums, a forum's topics
and a thread, read from the mirror's tables, each in the look of the search page.

Text from records is shown as text; a URL from a record becomes a link only when it is http(s).
Grids of images are the site's media boxes, each opening the image's page (where its attribution is).
Authors link to their pages; a tag's aliases and implications are named, linked to their tags.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Callable
from typing import Any

from datasette.utils.asgi import NotFound, Response

from .authors import ANONYMOUS, name_authors
from ..search.slugs import unslug
from .cards import chosen_filter, filter_in_use, image_cards, spoilered
from .history_page import tag_lately
from .markup import render_all
from .places import forum_url, image_url, path_name, topic_url
from .search_page import PATH as SEARCH_PATH
from .search_page import page_number, quoted_term, search_url
from .settings import css, database_name, site_address
from .times import relative_time

__all__ = ["ROUTES"]

PER_PAGE = 50
POSTS_PER_PAGE = 25
TAGS_PER_PAGE = 200


def _link(text: str, href: str | None = None, category: str | None = None) -> dict[str, Any]:
    """A link of a page's lists; one with a ``category`` ("" for none) is a tag, coloured as the site colours it."""
    return {"text": text, "href": href, "category": category}


def _cards(conn: sqlite3.Connection, sql: str, params: list[Any]) -> list[int]:
    """The ids of the images ``sql`` selects (its first column), in order."""
    return [row[0] for row in conn.execute(sql, params).fetchall()]


def _record(conn: sqlite3.Connection, table: str, record_id: int, *columns: str) -> dict[str, Any] | None:
    """The record the site sent, its ``columns`` taken from the row where it lacks them (a stub keeps
    only those); None for no such row."""
    row = conn.execute(f"SELECT raw, {', '.join(columns)} FROM {table} WHERE id = ?", [record_id]).fetchone()
    if row is None:
        return None
    record = json.loads(row[0] or "{}")
    for column, value in zip(columns, row[1:]):
        if record.get(column) is None:
            record[column] = value
    return record


def tag_page(conn: sqlite3.Connection, tag_id: int, page: int) -> dict[str, Any] | None:
    tag = _record(conn, "tags", tag_id, "name", "images")
    if tag is None:
        return None
    name = tag.get("name")
    mirrored = conn.execute("SELECT count(*) FROM image_tags WHERE tag_id = ?", [tag_id]).fetchone()[0]
    return {
        "title": name, "title_category": tag.get("category") or "",
        "subtitle": tag.get("category") and f"{tag['category']} tag",
        "facts": [("images on the site", tag.get("images")), ("images mirrored", mirrored)],
        "texts": [t for t in (tag.get("short_description"), tag.get("description")) if t],
        "link_lists": [
            ("an alias of", _tags_of_slugs(conn, [tag.get("aliased_tag")])),
            ("aliases", _tags_of_slugs(conn, tag.get("aliases"))),
            ("implies", _tags_of_slugs(conn, tag.get("implied_tags"))),
            ("implied by", _tags_of_slugs(conn, tag.get("implied_by_tags"))),
            ("do-not-post entries", [_link(_dnp(e)) for e in tag.get("dnp_entries") or []]),
            ("", [_link("all its images, with the site's search", search_url(name))]),
            *tag_lately(conn, tag_id),
        ],
        "cards_title": "Its newest images", "searchbox_q": quoted_term(name),
        "rows": _cards(conn, "SELECT i.id FROM image_tags it JOIN images i ON i.id = it.image_id "
                             "WHERE it.tag_id = ? ORDER BY it.image_id DESC LIMIT ? OFFSET ?",
                       [tag_id, PER_PAGE, (page - 1) * PER_PAGE]),
        "pages": math.ceil(mirrored / PER_PAGE),
    }


def _tags_of_slugs(conn: sqlite3.Connection, slugs: Any) -> list[dict[str, Any]]:
    """Tags a tag record names by slug (its aliases and implications: ``earth+pony``), by name,
    each linked to its page, coloured by category; one the mirror lacks, by the name its slug
    spells, linked to its search."""
    wanted = [s for s in slugs or [] if isinstance(s, str) and s]
    if not wanted:
        return []
    names = [unslug(s) for s in wanted]
    kept = {}
    for tag_id, name, slug, category in conn.execute(  # by name too: a tag from a dump may have no slug
            "SELECT id, name, slug, category FROM tags WHERE slug IN (SELECT value FROM json_each(?)) "
            "OR name IN (SELECT value FROM json_each(?))", [json.dumps(wanted), json.dumps(names)]):
        kept[slug or name] = kept[name] = (tag_id, name, category)
    links = []
    for slug, name in zip(wanted, names):
        if (slug in kept) or (name in kept):
            tag_id, name, category = kept.get(slug) or kept[name]
            links.append(_link(name, f"/-/tag/{tag_id}", category or ""))
        else:
            links.append(_link(name, search_url(name), ""))
    return links


def _dnp(entry: Any) -> str:
    if not isinstance(entry, dict):
        return str(entry)
    return ": ".join(str(entry[k]) for k in ("dnp_type", "conditions", "reason") if entry.get(k))


def user_page(conn: sqlite3.Connection, user_id: int, page: int) -> dict[str, Any] | None:
    user = _record(conn, "users", user_id, "name")
    if user is None:
        return None
    uploads = conn.execute("SELECT count(*) FROM images WHERE uploader_id = ?", [user_id]).fetchone()[0]
    links = []
    for link in user.get("links") or []:
        tag = conn.execute("SELECT name FROM tags WHERE id = ?", [link.get("tag_id")]).fetchone() if isinstance(link, dict) else None
        if tag:
            links.append(_link(f"{tag[0]} ({link.get('state', '')})", search_url(tag[0])))
    messages = [{"author": user.get("name"), "user_id": user_id, "created_at": created, "body": body or "(hidden on the site)",
                 **_where(image_id, forum, slug)} for created, body, image_id, forum, slug in conn.execute(
        "SELECT created_at, body, image_id, NULL, NULL FROM comments WHERE user_id = ? "
        "UNION ALL SELECT created_at, body, NULL, forum_short_name, topic_slug FROM posts WHERE user_id = ? "
        "ORDER BY 1 DESC LIMIT 50", [user_id, user_id])]
    return {
        "title": user.get("name") or f"user {user_id}", "subtitle": user.get("role"),
        "facts": [("joined", relative_time(user.get("created_at"))), ("uploads", user.get("uploads_count")),
                  ("comments", user.get("comments_count")), ("posts", user.get("posts_count"))],
        "texts": [user["description"]] if user.get("description") else [],
        "link_lists": [("artist links", links),
                       ("awards", [_link(f"{a.get('title')} ({a.get('label') or ''})") for a in user.get("awards") or []
                                   if isinstance(a, dict)])],
        "cards_title": f"Uploads ({uploads:,} mirrored)",
        "rows": _cards(conn, "SELECT id FROM images WHERE uploader_id = ? ORDER BY id DESC "
                             "LIMIT ? OFFSET ?", [user_id, PER_PAGE, (page - 1) * PER_PAGE]),
        "pages": math.ceil(uploads / PER_PAGE), "messages_title": "Latest comments and posts", "messages": messages,
    }


def _where(image_id: int | None, forum: str | None, slug: str | None) -> dict[str, str]:
    """Where a comment (on an image) or a post (in a topic) was written, and the link there."""
    if forum is None:
        return {"where": f"on image #{image_id}", "href": image_url(image_id)}
    return {"where": f"in {forum}/{slug}", "href": topic_url(forum, slug or "")}


def gallery_page(conn: sqlite3.Connection, gallery_id: int, page: int) -> dict[str, Any] | None:
    gallery = _record(conn, "galleries", gallery_id, "title")
    if gallery is None:
        return None
    count = conn.execute("SELECT count(*) FROM gallery_images WHERE gallery_id = ?", [gallery_id]).fetchone()[0]
    creator = gallery.get("user") or gallery.get("creator")
    return {
        "title": gallery.get("title") or f"gallery {gallery_id}",
        "subtitle": f"by {creator}" if creator else None,
        "facts": [("images", count)] + ([("spoiler warning", gallery["spoiler_warning"])]
                                         if gallery.get("spoiler_warning") else []),
        "texts": [gallery["description"]] if gallery.get("description") else [],
        "link_lists": [("", [_link("its images as a search", f"{SEARCH_PATH}?q=gallery_id:{gallery_id}"
                                                              f"&sf=gallery_id:{gallery_id}&sd=desc")])],
        "cards_title": "Its images, in gallery order",
        "rows": _cards(conn, "SELECT i.id FROM gallery_images gi JOIN images i ON i.id = gi.image_id "
                             "WHERE gi.gallery_id = ? ORDER BY gi.position LIMIT ? OFFSET ?",
                       [gallery_id, PER_PAGE, (page - 1) * PER_PAGE]),
        "pages": math.ceil(count / PER_PAGE),
    }


def tags_page(conn: sqlite3.Connection, page: int) -> dict[str, Any]:
    """The board's tags, the most used first, coloured by category."""
    count = conn.execute("SELECT count(*) FROM tags").fetchone()[0]
    tags = conn.execute("SELECT id, name, category, images FROM tags ORDER BY images DESC, name LIMIT ? OFFSET ?",
                        [TAGS_PER_PAGE, (page - 1) * TAGS_PER_PAGE]).fetchall()
    return {"title": "Tags", "subtitle": f"{count:,} tags, the most used first",
            "link_lists": [("", [_link(f"{name} ({images or 0:,})", f"/-/tag/{tag_id}", category or "")
                                 for tag_id, name, category, images in tags])],
            "pages": math.ceil(count / TAGS_PER_PAGE)}


def galleries_page(conn: sqlite3.Connection, page: int) -> dict[str, Any]:
    """The board's galleries, the newest first."""
    count = conn.execute("SELECT count(*) FROM galleries").fetchone()[0]
    galleries = conn.execute("SELECT g.id, g.title, g.creator, (SELECT count(*) FROM gallery_images gi "
                             "WHERE gi.gallery_id = g.id) FROM galleries g ORDER BY g.id DESC LIMIT ? OFFSET ?",
                             [PER_PAGE, (page - 1) * PER_PAGE]).fetchall()
    return {"title": "Galleries", "subtitle": f"{count:,} galleries, the newest first",
            "link_lists": [("", [_link(f"{title or f'gallery {gallery_id}'} ({images:,} images, by {creator or 'unknown'})",
                                       f"/-/gallery/{gallery_id}") for gallery_id, title, creator, images in galleries])],
            "pages": math.ceil(count / PER_PAGE)}


def forums_page(conn: sqlite3.Connection, page: int) -> dict[str, Any]:
    forums = conn.execute("SELECT short_name, name, topic_count, post_count FROM forums ORDER BY name").fetchall()
    return {"title": "Forums", "link_lists": [("", [_link(f"{name} ({topics or 0} topics, {posts or 0} posts)",
                                                          forum_url(short)) for short, name, topics, posts in forums])]}


def forum_page(conn: sqlite3.Connection, short_name: str, page: int) -> dict[str, Any] | None:
    forum = conn.execute("SELECT name, description FROM forums WHERE short_name = ?", [short_name]).fetchone()
    if forum is None:
        return None
    count = conn.execute("SELECT count(*) FROM topics WHERE forum_short_name = ?", [short_name]).fetchone()[0]
    topics = conn.execute("SELECT slug, title, post_count, author, last_replied_to_at FROM topics "
                          "WHERE forum_short_name = ? ORDER BY sticky DESC, last_replied_to_at DESC, slug LIMIT ? OFFSET ?",
                          [short_name, PER_PAGE, (page - 1) * PER_PAGE]).fetchall()
    return {"title": forum[0], "texts": [forum[1]] if forum[1] else [],
            "link_lists": [("topics", [_link(f"{title} ({posts or 0} posts, by {author or 'unknown'})",
                                             topic_url(short_name, slug))
                                       for slug, title, posts, author, _ in topics])],
            "pages": math.ceil(count / PER_PAGE)}


def topic_page(conn: sqlite3.Connection, short_name: str, slug: str, page: int) -> dict[str, Any] | None:
    topic = conn.execute("SELECT title, author, post_count FROM topics WHERE forum_short_name = ? AND slug = ?",
                         [short_name, slug]).fetchone()
    if topic is None:
        return None
    count = conn.execute("SELECT count(*) FROM posts WHERE forum_short_name = ? AND topic_slug = ?",
                         [short_name, slug]).fetchone()[0]
    posts = [{"author": author, "user_id": user_id, "created_at": created, "body": body or "(hidden on the site)"}
             for author, user_id, created, body in conn.execute(
                 "SELECT author, user_id, created_at, body FROM posts WHERE forum_short_name = ? AND topic_slug = ? "
                 "ORDER BY created_at, id LIMIT ? OFFSET ?", [short_name, slug, POSTS_PER_PAGE, (page - 1) * POSTS_PER_PAGE])]
    return {"title": topic[0], "subtitle": f"in {short_name}, started by {topic[1] or ANONYMOUS}",
            "facts": [("posts on the site", topic[2]), ("posts mirrored", count)],
            "link_lists": [("", [_link("the forum", forum_url(short_name))])],
            "messages_title": "Posts, in order", "messages": posts, "pages": math.ceil(count / POSTS_PER_PAGE)}


def _shown(conn: sqlite3.Connection, found: dict[str, Any], chosen: int | None, site: str) -> dict[str, Any]:
    """A page's images as cards under the filter in use, and its texts and bodies rendered as the
    site renders its markup (their image references looked up together)."""
    used = filter_in_use(conn, chosen)
    if found.get("rows") is not None:
        found["rows"] = image_cards(conn, found["rows"], used)
    messages = found.get("messages") or []
    name_authors(conn, messages)
    bodies = [m.pop("body") for m in messages] + list(found.get("texts") or [])
    rendered = render_all(conn, bodies, site, lambda ids: spoilered(conn, ids, used))
    for message, body in zip(messages, rendered):
        message["body"] = body
    found["texts"] = rendered[len(messages):]
    found["filter"] = used
    return found


def _view(build: Callable[..., dict[str, Any] | None], *keys: str, integer: bool = True) -> Callable[..., Any]:
    async def view(datasette: Any, request: Any) -> Response:
        args = [int(request.url_vars[k]) if integer else path_name(request.url_vars[k]) for k in keys]
        page = page_number(request.args)
        database = database_name(datasette)
        site = site_address(datasette)
        chosen = chosen_filter(request)

        def read(conn: sqlite3.Connection) -> dict[str, Any] | None:
            found = build(conn, *args, page)
            return None if found is None else _shown(conn, found, chosen, site)

        found = await datasette.get_database(database).execute_fn(read)
        if found is None:
            raise NotFound("the mirror has no such record")
        rows = found.pop("rows", None)
        cards = None if rows is None else [card.box(image_url(card.image_id)) for card in rows]
        context = {"css": css(), "subtitle": None, "title_category": None, "facts": [], "texts": [], "link_lists": [], "cards": cards,
                   "cards_title": "", "messages": None, "messages_title": "", "page": page, "pages": 0,
                   "page_url": lambda number: f"?page={number}", **found}
        return Response.html(await datasette.render_template("booru_page.html", context, request=request))

    return view


ROUTES = [
    (r"^/-/tag/(?P<id>[0-9]{1,10})$", _view(tag_page, "id")),
    (r"^/-/user/(?P<id>[0-9]{1,10})$", _view(user_page, "id")),
    (r"^/-/gallery/(?P<id>[0-9]{1,10})$", _view(gallery_page, "id")),
    (r"^/-/forums$", _view(forums_page)),
    (r"^/-/tags$", _view(tags_page)),
    (r"^/-/galleries$", _view(galleries_page)),
    (r"^/-/forum/(?P<short>[^/]+)$", _view(forum_page, "short", integer=False)),
    (r"^/-/topic/(?P<short>[^/]+)/(?P<slug>[^/]+)$", _view(topic_page, "short", "slug", integer=False)),
]
