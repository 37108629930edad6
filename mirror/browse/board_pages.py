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

from ..asof import Moment
from ..asof import search as as_of_search
from ..search import images
from ..search.bitmap_search import ImageScope
from ..search.postings import Postings
from ..search.slugs import unslug
from .authors import ANONYMOUS, name_authors
from .cards import chosen_filter, filter_in_use, image_cards, spoilered
from .history_page import tag_lately
from .markup import render_all
from .moment import moment_of
from .places import forum_url, image_url, path_name, topic_url
from .search_page import PATH as SEARCH_PATH
from .search_page import SECONDS, page_number, quoted_term, search_url
from .settings import css, database_name, site_address
from .then import Listed, cards_then, gallery_then, record_then, search_as_of, written_by
from .times import relative_time
from .trend_chart import trend_src

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


def _record(conn: sqlite3.Connection, table: str, record_id: int, *columns: str,
            moment: Moment | None = None) -> dict[str, Any] | None:
    """The record the site sent (as of ``moment`` when given), its ``columns`` taken from the row
    where it lacks them (a stub keeps only those); None for no such row (or none then)."""
    row = conn.execute(f"SELECT raw, {', '.join(columns)} FROM {table} WHERE id = ?", [record_id]).fetchone()
    if row is None:
        return None
    record = json.loads(row[0] or "{}") if moment is None else record_then(conn, table, record_id, moment)
    if record is None:
        return None
    for column, value in zip(columns, row[1:]):
        if record.get(column) is None:
            record[column] = value
    return record


def tag_page(conn: sqlite3.Connection, tag_id: int, page: int, moment: Moment | None = None) -> dict[str, Any] | None:
    tag = _record(conn, "tags", tag_id, "name", "images", moment=moment)
    if tag is None:
        return None
    name = tag.get("name")
    if moment is not None:
        listed = _tagged_then(conn, tag_id, page, moment)
        mirrored, rows, lately, pages = listed.said, listed.ids, [], listed.pages(page, PER_PAGE)
    else:
        mirrored = conn.execute("SELECT count(*) FROM image_tags WHERE tag_id = ?", [tag_id]).fetchone()[0]
        rows = _cards(conn, "SELECT i.id FROM image_tags it JOIN images i ON i.id = it.image_id "
                            "WHERE it.tag_id = ? ORDER BY it.image_id DESC LIMIT ? OFFSET ?",
                      [tag_id, PER_PAGE, (page - 1) * PER_PAGE])
        lately, pages = tag_lately(conn, tag_id), math.ceil(mirrored / PER_PAGE)
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
            *lately,
        ],
        "cards_title": "Its newest images", "searchbox_q": quoted_term(name),
        "rows": rows, "pages": pages, "trend_q": quoted_term(name),
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


def _tagged_then(conn: sqlite3.Connection, tag_id: int, page: int, moment: Moment) -> Listed:
    """The images carrying the tag at ``moment`` and shown then, newest first (the search as of a moment)."""
    name = conn.execute("SELECT name FROM tags WHERE id = ?", [tag_id]).fetchone()[0]
    return _found_then(conn, quoted_term(name), page, moment)


def _found_then(conn: sqlite3.Connection, q: str, page: int, moment: Moment) -> Listed:
    """One page of the images ``q`` found at ``moment`` (shown then), newest first, and their total."""
    found = images.search(conn, Postings(), images.image_query(q), ImageScope(), sf="id", sd="desc", limit=PER_PAGE,
                          offset=(page - 1) * PER_PAGE, columns="{t}.id", seconds=SECONDS, reader=as_of_search.reader(moment))
    return Listed([row[0] for row in found.rows], found.total, False)


def _dnp(entry: Any) -> str:
    if not isinstance(entry, dict):
        return str(entry)
    return ": ".join(str(entry[k]) for k in ("dnp_type", "conditions", "reason") if entry.get(k))


def user_page(conn: sqlite3.Connection, user_id: int, page: int, moment: Moment | None = None) -> dict[str, Any] | None:
    user = _record(conn, "users", user_id, "name", moment=moment)
    if user is None:
        return None
    if moment is not None:
        listed = _found_then(conn, f"uploader_id:{int(user_id)}", page, moment)
        uploads, rows, pages = listed.said, listed.ids, listed.pages(page, PER_PAGE)
    else:
        uploads = conn.execute("SELECT count(*) FROM images WHERE uploader_id = ?", [user_id]).fetchone()[0]
        rows = _cards(conn, "SELECT id FROM images WHERE uploader_id = ? ORDER BY id DESC "
                            "LIMIT ? OFFSET ?", [user_id, PER_PAGE, (page - 1) * PER_PAGE])
        uploads, pages = f"{uploads:,}", math.ceil(uploads / PER_PAGE)
    written, params = written_by(moment)
    links = []
    for link in user.get("links") or []:
        tag = conn.execute("SELECT name FROM tags WHERE id = ?", [link.get("tag_id")]).fetchone() if isinstance(link, dict) else None
        if tag:
            links.append(_link(f"{tag[0]} ({link.get('state', '')})", search_url(tag[0])))
    messages = [{"author": user.get("name"), "user_id": user_id, "created_at": created,
                 "body": _body_then(conn, table, key, body, moment) or "(hidden on the site)",
                 **_where(image_id, forum, slug)} for table, key, created, body, image_id, forum, slug in conn.execute(
        f"SELECT 'comments', id, created_at, body, image_id, NULL, NULL FROM comments WHERE user_id = ? AND {written} "
        f"UNION ALL SELECT 'posts', id, created_at, body, NULL, forum_short_name, topic_slug FROM posts "
        f"WHERE user_id = ? AND {written} ORDER BY 3 DESC LIMIT 50", [user_id, *params, user_id, *params]).fetchall()]
    return {
        "title": user.get("name") or f"user {user_id}", "subtitle": user.get("role"),
        "facts": [("joined", relative_time(user.get("created_at"))), ("uploads", user.get("uploads_count")),
                  ("comments", user.get("comments_count")), ("posts", user.get("posts_count"))],
        "texts": [user["description"]] if user.get("description") else [],
        "link_lists": [("artist links", links),
                       ("awards", [_link(f"{a.get('title')} ({a.get('label') or ''})") for a in user.get("awards") or []
                                   if isinstance(a, dict)])],
        "cards_title": f"Uploads ({uploads} mirrored)", "rows": rows,
        "pages": pages, "messages_title": "Latest comments and posts", "messages": messages,
    }


def _body_then(conn: sqlite3.Connection, table: str, key: int, body: str | None, moment: Moment | None) -> str | None:
    """A comment's or post's body: today's, or as of ``moment``."""
    if moment is None:
        return body
    record = record_then(conn, table, key, moment)
    return record.get("body") if record is not None else body


def _where(image_id: int | None, forum: str | None, slug: str | None) -> dict[str, str]:
    """Where a comment (on an image) or a post (in a topic) was written, and the link there."""
    if forum is None:
        return {"where": f"on image #{image_id}", "href": image_url(image_id)}
    return {"where": f"in {forum}/{slug}", "href": topic_url(forum, slug or "")}


def gallery_page(conn: sqlite3.Connection, gallery_id: int, page: int,
                 moment: Moment | None = None) -> dict[str, Any] | None:
    gallery = _record(conn, "galleries", gallery_id, "title", moment=moment)
    if gallery is None:
        return None
    in_order = ("SELECT i.id FROM gallery_images gi JOIN images i ON i.id = gi.image_id "
                "WHERE gi.gallery_id = ? ORDER BY gi.position")
    if moment is not None:  # its images then that existed and were shown then
        listed = search_as_of(conn, iter(gallery_then(conn, gallery_id, moment)), moment,
                              offset=(page - 1) * PER_PAGE, limit=PER_PAGE)
        count, rows, pages = listed.said, listed.ids, listed.pages(page, PER_PAGE)
    else:
        count = conn.execute("SELECT count(*) FROM gallery_images WHERE gallery_id = ?", [gallery_id]).fetchone()[0]
        rows = _cards(conn, f"{in_order} LIMIT ? OFFSET ?", [gallery_id, PER_PAGE, (page - 1) * PER_PAGE])
        pages = math.ceil(count / PER_PAGE)
    creator = gallery.get("user") or gallery.get("creator")
    return {
        "title": gallery.get("title") or f"gallery {gallery_id}",
        "subtitle": f"by {creator}" if creator else None,
        "facts": [("images", count)] + ([("spoiler warning", gallery["spoiler_warning"])]
                                         if gallery.get("spoiler_warning") else []),
        "texts": [gallery["description"]] if gallery.get("description") else [],
        "link_lists": [("", [_link("its images as a search", f"{SEARCH_PATH}?q=gallery_id:{gallery_id}"
                                                              f"&sf=gallery_id:{gallery_id}&sd=desc")])],
        "cards_title": "Its images, in gallery order", "rows": rows,
        "pages": pages,
    }


def tags_page(conn: sqlite3.Connection, page: int, moment: Moment | None = None) -> dict[str, Any]:
    """The board's tags, the most used first, coloured by category."""
    count = conn.execute("SELECT count(*) FROM tags").fetchone()[0]
    tags = conn.execute("SELECT id, name, category, images FROM tags ORDER BY images DESC, name LIMIT ? OFFSET ?",
                        [TAGS_PER_PAGE, (page - 1) * TAGS_PER_PAGE]).fetchall()
    return {"title": "Tags", "subtitle": f"{count:,} tags, the most used first",
            "link_lists": [("", [_link(f"{name} ({images or 0:,})", f"/-/tag/{tag_id}", category or "")
                                 for tag_id, name, category, images in tags])],
            "pages": math.ceil(count / TAGS_PER_PAGE)}


def galleries_page(conn: sqlite3.Connection, page: int, moment: Moment | None = None) -> dict[str, Any]:
    """The board's galleries, the newest first."""
    count = conn.execute("SELECT count(*) FROM galleries").fetchone()[0]
    galleries = conn.execute("SELECT g.id, g.title, g.creator, (SELECT count(*) FROM gallery_images gi "
                             "WHERE gi.gallery_id = g.id) FROM galleries g ORDER BY g.id DESC LIMIT ? OFFSET ?",
                             [PER_PAGE, (page - 1) * PER_PAGE]).fetchall()
    return {"title": "Galleries", "subtitle": f"{count:,} galleries, the newest first",
            "link_lists": [("", [_link(f"{title or f'gallery {gallery_id}'} ({images:,} images, by {creator or 'unknown'})",
                                       f"/-/gallery/{gallery_id}") for gallery_id, title, creator, images in galleries])],
            "pages": math.ceil(count / PER_PAGE)}


def forums_page(conn: sqlite3.Connection, page: int, moment: Moment | None = None) -> dict[str, Any]:
    forums = conn.execute("SELECT short_name, name, topic_count, post_count FROM forums ORDER BY name").fetchall()
    return {"title": "Forums", "link_lists": [("", [_link(f"{name} ({topics or 0} topics, {posts or 0} posts)",
                                                          forum_url(short)) for short, name, topics, posts in forums])]}


def forum_page(conn: sqlite3.Connection, short_name: str, page: int,
               moment: Moment | None = None) -> dict[str, Any] | None:
    forum = conn.execute("SELECT name, description FROM forums WHERE short_name = ?", [short_name]).fetchone()
    if forum is None:
        return None
    if moment is not None:
        then_record = record_then(conn, "forums", short_name, moment)
        if then_record is None:
            return None
        forum = (then_record.get("name", forum[0]), then_record.get("description", forum[1]))
    written, params = _topic_started(moment)
    count = conn.execute(f"SELECT count(*) FROM topics WHERE forum_short_name = ? AND {written}",
                         [short_name, *params]).fetchone()[0]
    topics = conn.execute("SELECT slug, title, post_count, author, last_replied_to_at FROM topics "
                          f"WHERE forum_short_name = ? AND {written} "
                          "ORDER BY sticky DESC, last_replied_to_at DESC, slug LIMIT ? OFFSET ?",
                          [short_name, *params, PER_PAGE, (page - 1) * PER_PAGE]).fetchall()
    return {"title": forum[0], "texts": [forum[1]] if forum[1] else [],
            "link_lists": [("topics", [_link(f"{title} ({posts or 0} posts, by {author or 'unknown'})",
                                             topic_url(short_name, slug))
                                       for slug, title, posts, author, _ in topics])],
            "pages": math.ceil(count / PER_PAGE)}


def _topic_started(moment: Moment | None) -> tuple[str, list[str]]:
    """An SQL condition on ``topics`` keeping those started by ``moment``: a topic record has no
    time of its own, so by its first post mirrored (a topic with none mirrored is kept)."""
    if moment is None:
        return "1", []
    posts = "FROM posts p WHERE p.forum_short_name = topics.forum_short_name AND p.topic_slug = topics.slug"
    return f"(EXISTS (SELECT 1 {posts} AND p.created_at <= ?) OR NOT EXISTS (SELECT 1 {posts}))", [moment.text]


def topic_page(conn: sqlite3.Connection, short_name: str, slug: str, page: int,
               moment: Moment | None = None) -> dict[str, Any] | None:
    topic = conn.execute("SELECT title, author, post_count FROM topics WHERE forum_short_name = ? AND slug = ?",
                         [short_name, slug]).fetchone()
    if topic is None:
        return None
    if moment is not None:
        then_record = record_then(conn, "topics", (short_name, slug), moment)
        if then_record is None:
            return None
        topic = tuple(then_record.get(field, today) for field, today in zip(("title", "author", "post_count"), topic))
    written, params = written_by(moment)
    count = conn.execute(f"SELECT count(*) FROM posts WHERE forum_short_name = ? AND topic_slug = ? AND {written}",
                         [short_name, slug, *params]).fetchone()[0]
    posts = [{"author": author, "user_id": user_id, "created_at": created,
              "body": _body_then(conn, "posts", key, body, moment) or "(hidden on the site)"}
             for key, author, user_id, created, body in conn.execute(
                 f"SELECT id, author, user_id, created_at, body FROM posts WHERE forum_short_name = ? AND topic_slug = ? "
                 f"AND {written} ORDER BY created_at, id LIMIT ? OFFSET ?",
                 [short_name, slug, *params, POSTS_PER_PAGE, (page - 1) * POSTS_PER_PAGE]).fetchall()]
    return {"title": topic[0], "subtitle": f"in {short_name}, started by {topic[1] or ANONYMOUS}",
            "facts": [("posts on the site", topic[2]), ("posts mirrored", count)],
            "link_lists": [("", [_link("the forum", forum_url(short_name))])],
            "messages_title": "Posts, in order", "messages": posts, "pages": math.ceil(count / POSTS_PER_PAGE)}


def _shown(conn: sqlite3.Connection, found: dict[str, Any], chosen: int | None, site: str,
           moment: Moment | None) -> dict[str, Any]:
    """A page's images as cards under the filter in use (as of ``moment`` when given), and its
    texts and bodies rendered as the site renders its markup (their image references looked up together)."""
    used = filter_in_use(conn, chosen)
    if found.get("rows") is not None:
        found["rows"] = (image_cards(conn, found["rows"], used) if moment is None
                         else cards_then(conn, found["rows"], used, moment))
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
        moment = moment_of(request)

        def read(conn: sqlite3.Connection) -> dict[str, Any] | None:
            found = build(conn, *args, page, moment)
            return None if found is None else _shown(conn, found, chosen, site, moment)

        found = await datasette.get_database(database).execute_fn(read)
        if found is None:
            raise NotFound("the mirror has no such record" + (f" as of {moment.text}" if moment else ""))
        rows = found.pop("rows", None)
        if trend_q := found.pop("trend_q", None):
            found["chart_src"] = trend_src(trend_q, moment)
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
