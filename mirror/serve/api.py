"""The Philomena JSON API (`/api/v1/json`) answered from a board (a database in the store's schema).

Every GET endpoint of the reference, with its wrapper, paging rule, fixed or chosen sort, filter
rule and error bodies (sections 1-5, 7 and 11). Searches run the query language compiled to SQL
(:mod:`mirror.search`); records are those the mirror keeps, as the site sent them.

What the mirror cannot know it does not invent: a mirror has no accounts, so there a ``key`` is
ignored (anonymous), ``my:`` queries and the user's own filters are refused as the site refuses
them for anonymous callers, and ``interactions`` are empty. A board the local site generated has
accounts (:meth:`Board.user_for_key`), and then they work as on the site.
"""

from __future__ import annotations

import json
import re
import sqlite3
import urllib.parse
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Match, Route

from ..asof import Moment, record_as_of, versions_around, versions_page
from ..asof import search as as_of_search
from ..asof.search import images_out_of_sight_then
from ..asof.tables import tables_as_of
from ..search.postings import json_ids
from ..philomena import display_key
from ..store.history import record_key
from ..search import engine, images
from ..search.bitmap_search import ImageScope
from ..search.compile import TRUE, Sql
from ..search.filters import ImageFilter, filter_id_transform, my_transform
from ..search.images import MAX_QUERY
from ..search.indexes import (
    COMMENTS,
    FILTERS,
    IMAGE_SEARCH_SPEC,
    POSTS,
    TAGS,
    Index,
)
from ..search.query import MatchNone, Node, QueryError, parse_query
from ..search.sort import FIXED_ORDERS
from .board import Board, raw_records
from .http import (
    API_PREFIX,
    INT4_MAX,
    ErrorAnswer,
    JsonAnswer,
    Paging,
    bad_request,
    not_found,
    origin_of,
    parse_id,
    parse_integer_id,
)
from .lanes import RETRY_AFTER, Overloaded, lanes_of
from .memento import (AS_OF_PREFIX, TIMEGATE_PREFIX, TIMEMAP_PAGE, TIMEMAP_PREFIX, asked_datetime, memento_headers,
                      moment_of, names_of, now, original_headers, timegate_redirect, timemap, timemap_after)

__all__ = ["api_routes", "Context", "IMAGE_COLUMNS", "image_search_of", "answered"]

Record = dict[str, Any]


@dataclass
class Context:
    """One request: the board, its parameters, the filter it applies and its paging."""

    board: Board
    params: Any
    origin: str
    user_id: int | None
    filter_row: Record | None
    paging: Paging
    moment: Moment | None = None  # answer as of this moment (mirror.asof), or today
    began: list[str] = field(default_factory=list)  # when each version answered began, as of ``moment``
    found: list[tuple[str, Any, Any]] | None = None  # when a list: each record read, (resource, key, row)

    @classmethod
    def from_request(cls, request: Request, board: Board) -> Context:
        params = request.query_params
        user_id = board.user_for_key(params.get("key") or "")
        current = board.default_filter()
        if "filter_id" in params:
            text = params["filter_id"]
            if not re.fullmatch(r"[-+]?[0-9]+", text):
                raise bad_request()
            wanted = board.filter_row(int(text)) if abs(int(text)) <= INT4_MAX else None
            if wanted is not None and can_view_filter(wanted, user_id):
                current = wanted
        return cls(board, params, origin_of(request), user_id, current, Paging.from_params(params),
                   moment_of(request))

    def as_of(self, resource: str, key: Any, row: Any) -> Any:
        """``row`` (today's, with ``raw``) as it was at the moment asked for, or None where the
        record did not exist then; today's row when no moment is asked for."""
        if self.found is not None and row is not None:
            self.found.append((resource, key, row))
        if self.moment is None or row is None or row["raw"] is None:
            return row
        found = record_as_of(self.board.connection(), resource, record_key(key), dict(row), self.moment)
        if found is not None and found.began:
            self.began.append(found.began)
        return None if found is None else found.row

    def interactions(self, image_ids: list[int]) -> list[Record]:
        return self.board.interactions(self.user_id, image_ids) if self.user_id is not None else []

    @property
    def image_filter(self) -> ImageFilter:
        return ImageFilter.of(self.filter_row)

    def query(self, spec: Any, transforms: dict[str, Callable[[str], Node]] | None = None) -> Node:
        """The parsed ``q``: an empty one matches nothing, with no error."""
        q = self.params.get("q", "")
        if len(q) > MAX_QUERY:
            raise QueryError(f"the query is longer than {MAX_QUERY} characters")
        return parse_query(q, spec, transforms=transforms) if q.strip() else MatchNone()

    @contextmanager
    def reading(self, *tables: str) -> Iterator[sqlite3.Connection]:
        """A connection reading the archive, with ``tables`` as of the moment asked for (:mod:`mirror.asof.tables`)."""
        if self.moment is None:
            yield self.board.connection()
            return
        conn = tables_as_of(self.board.connection(), self.moment, tables)
        try:
            engine.prepare(conn)
            yield conn
        finally:
            conn.close()

    def search(self, index: Index, node: Node, order: Sql, *, where: Sql = TRUE, default_size: int = 25,
               columns: str = "{t}.raw", tables: tuple[str, ...] = ()) -> engine.Page:
        """A search of ``index`` (its table, and ``tables`` beside it, read as of the moment asked for)."""
        with self.reading(index.table, *tables) as conn:
            return engine.search(conn, index, node, order=order, where=where, limit=self.paging.size(default_size),
                                 offset=self.paging.offset(default_size), columns=columns,
                                 seconds=self.board.search_seconds)


def answered(handler: Callable[..., Any]) -> Callable[[Request], Any]:
    """The route of ``handler``, an answer of the API that is no record's (no Memento headers)."""
    return _endpoint(handler, memento=False)


def _endpoint(handler: Callable[..., Any], as_of: bool = False, memento: bool = True) -> Callable[[Request], Any]:
    """The route of ``handler``; ``as_of``: under ``/as-of/WHEN`` (:mod:`.memento`)."""
    def answer(request: Request) -> Response:
        board: Board = request.app.state.board
        params = {name: value for name, value in request.path_params.items() if name != "when"}
        original = not as_of and handler in RECORD_HANDLERS and getattr(request.app.state, "moment", None) is None
        try:
            if original and (asked := asked_datetime(request)) is not None:
                return _timegate(request, board, handler, params, asked)
            ctx = Context.from_request(request, board)
            body = handler(ctx, **params)
        except ErrorAnswer as error:
            return error.response()
        except QueryError as error:
            return JsonAnswer({"error": str(error)}, status_code=400)
        except engine.SearchTooSlow as error:
            return JsonAnswer({"error": str(error)}, status_code=400)
        response = body if isinstance(body, Response) else JsonAnswer(body)
        if not memento:
            return response
        if ctx.moment is not None:
            response.headers.update(memento_headers(names_of(request), ctx.moment, ctx.began))
        elif original:
            response.headers.update(original_headers(names_of(request)))
        return response

    async def endpoint(request: Request) -> Response:
        """Run in the request's lane (:mod:`.lanes`): a crowd of expensive searches cannot hold up a cheap one."""
        lane = lanes_of(request).for_search(request.url.path, request.query_params)
        try:
            return await lane.run(lambda: answer(request))
        except Overloaded as busy:
            return JsonAnswer({"error": str(busy)}, status_code=503, headers={"Retry-After": str(RETRY_AFTER)})

    endpoint.__name__ = handler.__name__
    return endpoint


def _record_of(request: Request, board: Board, handler: Callable[..., Any],
               params: dict[str, str]) -> tuple[str, Any, Any]:
    """(resource, key, today's row) of the record ``handler`` answers: the handler run once, today, to find it."""
    ctx = Context.from_request(request, board)
    ctx.moment, ctx.found = None, []
    handler(ctx, **params)
    if not ctx.found:
        raise not_found()
    return ctx.found[0]


def _timegate(request: Request, board: Board, handler: Callable[..., Any], params: dict[str, str],
              asked: Moment) -> Response:
    """The TimeGate's redirect to the memento in force at ``asked`` (:mod:`.memento`)."""
    resource, key, row = _record_of(request, board, handler, params)
    versions = versions_around(board.connection(), resource, record_key(key), dict(row), asked)
    if versions is None:
        raise not_found()
    return timegate_redirect(names_of(request), versions)


def _timemap_endpoint(handler: Callable[..., Any]) -> Callable[[Request], Any]:
    """The TimeMap of the record ``handler`` answers: the handler run once to find the record."""
    def answer(request: Request) -> Response:
        params = {name: value for name, value in request.path_params.items() if name != "kind"}
        try:
            return _timemap(request, handler, params)
        except ErrorAnswer as error:
            return error.response()

    async def endpoint(request: Request) -> Response:
        return await lanes_of(request).for_search(request.url.path, request.query_params).run(lambda: answer(request))

    endpoint.__name__ = f"timemap_{handler.__name__}"
    return endpoint


# ---------------------------------------------------------------------------- images

IMAGE_COLUMNS = "{t}.id, {t}.raw, {t}.stub, {t}.hidden_from_users"


def can_view_filter(row: Record, user_id: int | None) -> bool:
    """System, public, or the caller's own filter (there are no moderators here)."""
    return bool(row["system"] or row["public"] or (user_id is not None and row["user_id"] == user_id))


def image_search_of(ctx: Context) -> tuple[Node, ImageScope]:
    """The image search a request asks (``q``, with ``my:`` and ``filter_id:`` as the caller may
    use them) and the scope it is answered within (the filter, ``del``, the caller's hides)."""
    transforms = {"my": my_transform(ctx.user_id, ctx.board.my_images),
                  "filter_id": filter_id_transform(ctx.board.filter_row, lambda row: can_view_filter(row, ctx.user_id))}
    node = ctx.query(IMAGE_SEARCH_SPEC, transforms)
    excluded = None
    if ctx.user_id is not None and ctx.params.get("hidden") != "1":  # the caller's hidden images
        excluded = ctx.board.hidden_by(ctx.user_id)
    return node, ImageScope(ctx.image_filter, deleted=ctx.params.get("del") == "1", excluded=excluded)


def search_images(ctx: Context) -> Record:
    node, scope = image_search_of(ctx)
    if isinstance(node, MatchNone):
        return {"images": [], "interactions": [], "total": 0}
    searches = ctx.board.image_searches()
    with searches.connection() as conn:
        page = images.search(conn, searches.postings, node, scope, sf=ctx.params.get("sf"), sd=ctx.params.get("sd"),
                             limit=ctx.paging.size(15), offset=ctx.paging.offset(15), columns=IMAGE_COLUMNS,
                             seconds=ctx.board.search_seconds, reader=as_of_search.reader(ctx.moment))
    rows = [ctx.as_of("images", row["id"], row) for row in page.rows] if ctx.moment is not None else page.rows
    records = ctx.board.images(rows, ctx.image_filter, ctx.origin)
    return {"images": records, "interactions": ctx.interactions([row["id"] for row in page.rows]), "total": page.total}


def _image(ctx: Context, image_id: int) -> Record:
    row = ctx.as_of("images", image_id,
                    ctx.board.one("SELECT id, raw, stub, hidden_from_users FROM images WHERE id = ?", [image_id]))
    if row is None or row["raw"] is None:
        raise not_found()
    return {"image": ctx.board.images([row], ctx.image_filter, ctx.origin)[0], "interactions": ctx.interactions([image_id])}


def show_image(ctx: Context, id: str) -> Record:
    return _image(ctx, parse_id(id))


def featured_image(ctx: Context) -> Record:
    """The newest featured image not hidden (as of the moment asked for: featured by then, and not hidden then)."""
    if ctx.moment is None:
        row = ctx.board.one("SELECT f.image_id FROM featured_images f JOIN images i ON i.id = f.image_id "
                            "WHERE coalesce(i.hidden_from_users, 0) = 0 ORDER BY f.day DESC LIMIT 1")
        if row is None:
            raise not_found()
        return _image(ctx, row[0])
    for (image_id,) in ctx.board.all("SELECT image_id FROM featured_images WHERE day <= ? ORDER BY day DESC",
                                     [ctx.moment.text[:10]]):
        if not _image_hidden(ctx, image_id):
            return _image(ctx, image_id)
    raise not_found()


# ---------------------------------------------------------------------------- other searches


def _fixed_search(ctx: Context, name: str, index: Index, where: Sql = TRUE, order: str | None = None,
                  tables: tuple[str, ...] = ()) -> Record:
    node = ctx.query(index.spec)
    if isinstance(node, MatchNone):
        return {name: [], "total": 0}
    columns = "{t}.raw, {t}.stub, {t}.hidden_from_users" if index in (COMMENTS, POSTS) else "{t}.raw"
    page = ctx.search(index, node, Sql((order or FIXED_ORDERS[name]).format(t=index.alias)), where=where,
                      columns=columns, tables=tables)
    return {name: raw_records(page.rows), "total": page.total}


def search_comments(ctx: Context) -> Record:
    """Hidden comments, and comments on hidden images or on images the filter's tags hide, are left out."""
    hidden_tags = ImageFilter.of(ctx.filter_row).hidden_tags
    if ctx.moment is None:
        where = Sql("NOT EXISTS (SELECT 1 FROM images hidden WHERE hidden.id = c.image_id "
                    "AND hidden.hidden_from_users = 1) AND c.image_id NOT IN "
                    "(SELECT image_id FROM image_tags WHERE tag_id IN (SELECT value FROM json_each(?)))",
                    (json.dumps(hidden_tags),))
    else:
        out = images_out_of_sight_then(ctx.board.connection(), ctx.moment, hidden_tags)
        where = Sql("c.image_id NOT IN (SELECT value FROM json_each(?))", (json_ids(out),))
    where = Sql("coalesce(c.hidden_from_users, 0) = 0 AND c.raw IS NOT NULL") & where
    return _fixed_search(ctx, "comments", COMMENTS, where)


def search_posts(ctx: Context) -> Record:
    return _fixed_search(ctx, "posts", POSTS, Sql("coalesce(p.hidden_from_users, 0) = 0 AND p.raw IS NOT NULL"),
                         tables=("topics",))


def search_galleries(ctx: Context) -> Record:
    index, order = ctx.board.gallery_search()
    return _fixed_search(ctx, "galleries", index, Sql("g.raw IS NOT NULL AND g.id NOT IN (SELECT id FROM gone_galleries)"),
                         order=order)


def search_tags(ctx: Context) -> Record:
    return _fixed_search(ctx, "tags", TAGS, Sql("tg.raw IS NOT NULL"))


def search_filters(ctx: Context) -> Record:
    return _fixed_search(ctx, "filters", FILTERS, Sql("(f.public OR f.system OR f.user_id IS ?) AND f.raw IS NOT NULL",
                                                      (ctx.user_id,)))


# ---------------------------------------------------------------------------- show endpoints


def _raw(ctx: Context, resource: str, sql: str, params: list[Any]) -> Any:
    """The record (or stub) of the one row ``sql`` selects, as of the moment asked for: ``sql``
    selects the record's key first, then ``raw`` (and ``stub``, ``hidden_from_users``)."""
    row = ctx.board.one(sql, params)
    if row is not None:
        key = (row[0], row[1]) if resource == "topics" else row[0]  # a topic is keyed by its forum and slug
        row = ctx.as_of(resource, key, row)
    if row is None or row["raw"] is None:
        raise not_found()
    return raw_records([row])[0]



def show_tag(ctx: Context, slug: str) -> Record:
    return {"tag": _raw(ctx, "tags", "SELECT id, raw FROM tags WHERE slug = ?", [slug])}


def _image_hidden(ctx: Context, image_id: Any) -> bool:
    if ctx.moment is None:  # today's state is a column: no record to read
        return ctx.board.one("SELECT 1 FROM images WHERE id = ? AND hidden_from_users = 1", [image_id]) is not None
    row = ctx.board.one("SELECT id, raw, stub, hidden_from_users FROM images WHERE id = ?", [image_id])
    row = ctx.as_of("images", image_id, row) if row is not None else None
    return row is not None and bool(row["hidden_from_users"])


def show_comment(ctx: Context, id: str) -> Record:
    comment = _raw(ctx, "comments", "SELECT id, raw, stub, hidden_from_users FROM comments WHERE id = ?",
                   [parse_id(id)])
    if comment is None:  # destroyed: it renders as null on the site, and is not found
        raise not_found()
    if _image_hidden(ctx, comment.get("image_id")):
        raise ErrorAnswer(403)
    return {"comment": comment}


def show_post(ctx: Context, id: str) -> Record:
    post = _raw(ctx, "posts", "SELECT id, raw, stub, hidden_from_users FROM posts WHERE id = ?", [parse_id(id)])
    if post is None:
        raise not_found()
    return {"post": post}


def show_profile(ctx: Context, id: str) -> Record:
    user_id = parse_id(id)
    if ctx.board.one("SELECT 1 FROM gone_users WHERE id = ?", [user_id]) is not None:
        raise not_found()
    return {"user": _raw(ctx, "users", "SELECT id, raw FROM users WHERE id = ?", [user_id])}


def show_filter(ctx: Context, id: str) -> Record:
    return {"filter": _raw(ctx, "filters", "SELECT id, raw FROM filters WHERE id = ? "
                           "AND (public OR system OR user_id IS ?)", [parse_integer_id(id), ctx.user_id])}


def _listed(ctx: Context, name: str, table: str, where: str, order: str, params: tuple = ()) -> Record:
    """A Scrivener-paged list: a page past the end is the last page again."""
    with ctx.reading(table) as conn:
        total = conn.execute(f"SELECT count(*) FROM {table} WHERE {where}", params).fetchone()[0]
        rows = conn.execute(f"SELECT raw FROM {table} WHERE {where} ORDER BY {order} LIMIT ? OFFSET ?",
                            (*params, ctx.paging.size(), ctx.paging.scrivener_offset(total))).fetchall()
    return {name: raw_records(rows), "total": total}


def system_filters(ctx: Context) -> Record:
    return _listed(ctx, "filters", "filters", "system = 1 AND raw IS NOT NULL", "id")


def user_filters(ctx: Context) -> Record:
    if ctx.user_id is None:
        raise ErrorAnswer(403)
    return _listed(ctx, "filters", "filters", "user_id = ? AND NOT system AND raw IS NOT NULL", "id", (ctx.user_id,))


# ---------------------------------------------------------------------------- forums


def list_forums(ctx: Context) -> Record:
    return _listed(ctx, "forums", "forums", "raw IS NOT NULL", "name")


def show_forum(ctx: Context, short_name: str) -> Record:
    return {"forum": _raw(ctx, "forums", "SELECT short_name, raw FROM forums WHERE short_name = ?", [short_name])}


def list_topics(ctx: Context, short_name: str) -> Record:
    return _listed(ctx, "topics", "topics", "forum_short_name = ? AND raw IS NOT NULL",
                   "sticky DESC, last_replied_to_at DESC, slug", (short_name,))


def _topic(ctx: Context, short_name: str, topic_slug: str) -> Record:
    return _raw(ctx, "topics", "SELECT forum_short_name, slug, raw FROM topics WHERE forum_short_name = ? AND slug = ?",
                [short_name, topic_slug])


def show_topic(ctx: Context, short_name: str, topic_slug: str) -> Record:
    return {"topic": _topic(ctx, short_name, topic_slug)}


def list_topic_posts(ctx: Context, short_name: str, topic_slug: str) -> Record:
    """A topic's posts in order, ``per_page`` a page; ``total`` is the topic's post count.

    The site windows posts by their position in the topic, which records do not carry; a
    mirror orders them by id (the order they were written in) and windows that list."""
    topic = _topic(ctx, short_name, topic_slug)
    if ctx.moment is None:
        rows = ctx.board.topic_posts(short_name, topic_slug, ctx.paging.offset(), ctx.paging.size())
    else:  # the posts written by then, as they were then, windowed as today's are
        every = ctx.board.topic_posts(short_name, topic_slug, 0, 2**62)
        rows = [row for row in (ctx.as_of("posts", row["id"], row) for row in every) if row is not None]
        rows = rows[ctx.paging.offset():ctx.paging.offset() + ctx.paging.size()]
    posts = [post for post in raw_records(rows) if post is not None]
    return {"posts": posts, "total": topic.get("post_count", len(posts))}


def show_topic_post(ctx: Context, short_name: str, topic_slug: str, id: str) -> Record:
    _topic(ctx, short_name, topic_slug)
    post = _raw(ctx, "posts", "SELECT id, raw, stub, hidden_from_users FROM posts WHERE id = ? "
                "AND forum_short_name = ? AND topic_slug = ?", [parse_integer_id(id), short_name, topic_slug])
    if post is None:
        raise not_found()
    return {"post": post}


# ---------------------------------------------------------------------------- oEmbed


def oembed(ctx: Context) -> Record:
    """The oEmbed object of an image named by a page or file URL (reference section 10)."""
    url = ctx.params.get("url")
    if not url:
        raise not_found()
    path = urllib.parse.urlsplit(url).path
    match = re.search(r"/img/(?:view/|download/)?\d+/\d+/\d+/(\d+)[./_-]", path)
    if match is None and "/img/" not in path:
        match = re.search(r"/(\d+)", path)
    if match is None or int(match.group(1)) > INT4_MAX:
        raise not_found()
    record = _image(ctx, int(match.group(1)))["image"]
    if record.get("hidden_from_users"):
        raise not_found()
    return _oembed_of(ctx, record)


def _oembed_of(ctx: Context, image: Record) -> Record:
    tags = ctx.board.all("SELECT name, category, namespace, name_in_namespace FROM tags "
                         "WHERE id IN (SELECT value FROM json_each(?))", [json.dumps(image.get("tag_ids") or [])])
    ordered = sorted(tags, key=lambda t: display_key(t["category"], t["name"]))
    width, height = image.get("width") or 0, image.get("height") or 0
    if width > 1280 or height > 1024:
        ratio = image.get("aspect_ratio") or 1.0
        thumb = (1280, int(1280 // ratio)) if ratio > 1.25 else (int(1024 * ratio), 1024)
    else:
        thumb = (width, height)
    representations = image.get("representations") or {}
    return {
        "version": "1.0", "type": "photo",
        "title": f"#{image['id']} - {', '.join(t['name'] for t in ordered)} - Derpibooru",
        "author_name": ", ".join(t["name_in_namespace"] for t in ordered if t["namespace"] == "artist"),
        "author_url": (image.get("source_urls") or [image.get("source_url") or ""])[0],
        "provider_name": "Derpibooru", "provider_url": ctx.origin, "cache_age": 7200,
        "derpibooru_id": image["id"], "derpibooru_score": image.get("score"),
        "derpibooru_comments": image.get("comment_count"), "derpibooru_tags": image.get("tags"),
        "thumbnail_url": representations.get("large"), "thumbnail_width": thumb[0], "thumbnail_height": thumb[1],
        "url": representations.get("full"), "width": width, "height": height,
    }


def unknown_route(ctx: Context, rest: str) -> Record:
    raise ErrorAnswer(404, "Not Found")


API_ROUTES: list[tuple[str, Callable[..., Any]]] = [
    ("/search/images", search_images),
    ("/search", search_images),
    ("/search/tags", search_tags),
    ("/search/posts", search_posts),
    ("/search/comments", search_comments),
    ("/search/galleries", search_galleries),
    ("/search/filters", search_filters),
    ("/images/featured", featured_image),
    ("/images/{id}", show_image),
    ("/tags/{slug:path}", show_tag),
    ("/comments/{id}", show_comment),
    ("/posts/{id}", show_post),
    ("/profiles/{id}", show_profile),
    ("/filters/system", system_filters),
    ("/filters/user", user_filters),
    ("/filters/{id}", show_filter),
    ("/forums", list_forums),
    ("/forums/{short_name}", show_forum),
    ("/forums/{short_name}/topics", list_topics),
    ("/forums/{short_name}/topics/{topic_slug}", show_topic),
    ("/forums/{short_name}/topics/{topic_slug}/posts", list_topic_posts),
    ("/forums/{short_name}/topics/{topic_slug}/posts/{id}", show_topic_post),
    ("/oembed", oembed),
    ("/{rest:path}", unknown_route),
]


# The routes of one record (or a topic's posts): each has a TimeGate and a TimeMap (:mod:`.memento`).
# Every route answers as of a moment under /as-of/WHEN.
RECORD_HANDLERS = frozenset({show_image, show_tag, show_comment, show_post, show_profile, show_filter, show_forum,
                            show_topic, list_topic_posts, show_topic_post, oembed})


def api_routes() -> list[BaseRoute]:
    """The API; the same under ``/as-of/WHEN``; each record's TimeMap under ``/timemap/KIND``; the
    TimeGate and TimeMap of a site's URL under ``/timegate/{URI-R}`` and ``/timemap/KIND/{URI-R}``."""
    return ([Route(API_PREFIX + path, _endpoint(handler), methods=["GET"]) for path, handler in API_ROUTES]
            + [Route(AS_OF_PREFIX + API_PREFIX + path, _endpoint(handler, as_of=True), methods=["GET"])
               for path, handler in API_ROUTES]
            + [Route(TIMEMAP_PREFIX + API_PREFIX + path, _timemap_endpoint(handler), methods=["GET"])
               for path, handler in _TIMEMAPPED]
            + [Route(TIMEGATE_PREFIX + "/{uri:path}", _by_original(_aggregated_timegate), methods=["GET"]),
               Route(TIMEMAP_PREFIX + "/{uri:path}", _by_original(_timemap), methods=["GET"])])


_TIMEMAPPED = [(path, handler) for path, handler in API_ROUTES if handler in RECORD_HANDLERS and handler is not oembed]
# The record routes a URI-R's API path is matched against (aggregator-style TimeGates and TimeMaps).
_ORIGINALS = [Route(API_PREFIX + path, handler) for path, handler in _TIMEMAPPED]


def _by_original(answer: Callable[[Request, Callable[..., Any], dict[str, str]], Response]) -> Callable[[Request], Any]:
    """An aggregator-style route, ``/timegate/{URI-R}`` or ``/timemap/KIND/{URI-R}``: the site's
    URL of a record (``names_of`` refuses another site's) matched to the record's handler."""
    def found(request: Request) -> Response:
        try:
            names = names_of(request)
            path = names.path.split("?", 1)[0]
            for route in _ORIGINALS:
                match, child = route.matches({**request.scope, "path": path, "root_path": "", "path_params": {}})
                if match is Match.FULL:
                    return answer(request, route.endpoint, child["path_params"])
            raise not_found()
        except ErrorAnswer as error:
            return error.response()

    async def endpoint(request: Request) -> Response:
        return await lanes_of(request).for_search(request.url.path, request.query_params).run(lambda: found(request))
    return endpoint


def _aggregated_timegate(request: Request, handler: Callable[..., Any], params: dict[str, str]) -> Response:
    return _timegate(request, request.app.state.board, handler, params, asked_datetime(request) or now())


def _timemap(request: Request, handler: Callable[..., Any], params: dict[str, str]) -> Response:
    """One page of the TimeMap of the record ``handler`` answers (:mod:`.memento`)."""
    after = timemap_after(request)
    board: Board = request.app.state.board
    resource, key, row = _record_of(request, board, handler, params)
    versions, more = versions_page(board.connection(), resource, record_key(key), dict(row),
                                   after=after.text if after else "", limit=TIMEMAP_PAGE)
    return timemap(request, names_of(request), versions, first=after is None, more=more)
