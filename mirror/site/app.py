"""The Philomena-compatible JSON API (`/api/v1/json`) over a `Dataset`, as a Starlette app.

Endpoints follow reference sections 1-5, 7 and 11: the same wrappers, pagination quirks
(OpenSearch-backed searches answer an empty page past the end, Scrivener-backed lists answer the
last page again), sorts, error bodies and filter rules. Handlers are plain functions of a
`Context` returning the body; `_endpoint` adds the shared parts (lock, errors, JSON).
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import Receive, Scope, Send

from . import search
from .control import control_routes
from .dataset import Dataset
from .faults import RAW_SEND_KEY, FaultMiddleware, FaultProfile, FaultState
from .files import file_routes
from .http import (API_PREFIX, INT4_MAX, ApiError, Paging, ProxyMiddleware, bad_request, not_found, parse_id,
                   parse_integer_id)
from .log import RequestLog, RequestLogMiddleware
from ..search.query import COMMENT_FIELDS, FILTER_FIELDS, GALLERY_FIELDS, POST_FIELDS, TAG_FIELDS, QueryError, parse_query
from .render import (Urls, render_comment, render_filter, render_forum, render_gallery, render_image,
                     render_oembed, render_post, render_tag, render_topic, render_user)

__all__ = ["create_app", "API_PREFIX"]

Record = dict[str, Any]


@dataclass
class Context:
    """What every handler needs about its request: data, caller, filter and paging."""

    ds: Dataset
    urls: Urls
    params: Any
    user_id: int | None
    filter: Record | None
    page: int
    per_page: int | None  # None when the request gave no per_page

    @classmethod
    def from_request(cls, request: Request, ds: Dataset) -> Context:
        params = request.query_params
        user_id = ds.api_keys.get(params.get("key") or "")
        current = ds.filters.get(ds.default_filter_id)
        if "filter_id" in params:
            text = params["filter_id"]
            if not re.fullmatch(r"[-+]?[0-9]+", text):
                raise bad_request()
            wanted = ds.filters.get(int(text))
            if wanted is not None and search.can_view_filter(wanted, user_id):
                current = wanted
        paging = Paging.from_params(params)
        origin = f"{request.url.scheme}://{request.url.netloc}"
        return cls(ds, Urls(origin), params, user_id, current, paging.page, paging.per_page)

    def size(self, default: int = 25) -> int:
        return self.per_page if self.per_page is not None else default

    def query(self) -> str | None:
        """The `q` parameter, or None when it is empty (which matches nothing, with no error)."""
        q = self.params.get("q", "")
        return q if q.strip() else None

    def interactions(self, image_ids: Sequence[int]) -> list[Record]:
        if self.user_id is None:
            return []
        wanted = set(image_ids)
        return [dict(i) for i in self.ds.interactions if i["user_id"] == self.user_id and i["image_id"] in wanted]

    def image(self, image: Record) -> Record:
        spoilered = search.ImageFilter(self.ds, self.filter).spoilers(search.image_doc(self.ds, image))
        return render_image(image, self.urls.img, self.ds.tags, spoilered=spoilered)


def search_page(ctx: Context, items: Sequence[Any], default_size: int = 25) -> list[Any]:
    """OpenSearch paging: a page past the end is simply empty."""
    size = ctx.size(default_size)
    start = (ctx.page - 1) * size
    return list(items[start:start + size])


def scrivener_page(ctx: Context, items: Sequence[Any]) -> list[Any]:
    """Scrivener paging: a page past the end is clamped to the last page."""
    size = ctx.size()
    pages = max(1, -(-len(items) // size))
    start = (min(ctx.page, pages) - 1) * size
    return list(items[start:start + size])


def _endpoint(handler: Callable[..., Any]) -> Callable[[Request], Any]:
    async def endpoint(request: Request) -> Response:
        ds: Dataset = request.app.state.dataset
        try:
            with ds.lock:
                ctx = Context.from_request(request, ds)
                body = handler(ctx, **request.path_params)
        except ApiError as error:
            return error.response()
        except QueryError as error:
            return JSONResponse({"error": str(error)}, status_code=400)
        return body if isinstance(body, Response) else JSONResponse(body)

    endpoint.__name__ = handler.__name__
    return endpoint


# ---------------------------------------------------------------------------- images


def search_images(ctx: Context) -> Record:
    q = ctx.query()
    if q is None:
        return {"images": [], "interactions": [], "total": 0}
    node = search.parse_image_query(ctx.ds, q, ctx.user_id)
    ds = ctx.ds
    image_filter = search.ImageFilter(ds, ctx.filter)
    include_hidden = ctx.params.get("del") == "1"
    hidden_by_user = set()
    if ctx.user_id is not None and ctx.params.get("hidden") != "1":
        hidden_by_user = {i["image_id"] for i in ds.interactions
                          if i["user_id"] == ctx.user_id and i["interaction_type"] == "hidden"}
    docs = [
        doc for doc in search.image_docs(ds)
        if (include_hidden or not doc["hidden_from_users"])
        and doc["id"] not in hidden_by_user
        and not image_filter.hides(doc)
        and node.matches(doc)
    ]
    key, reverse = search.image_sort_key(ctx.params.get("sf"), ctx.params.get("sd"), ds.gallery_positions())
    docs.sort(key=key, reverse=reverse)
    page = search_page(ctx, docs, default_size=15)
    images = [render_image(ds.images[d["id"]], ctx.urls.img, ds.tags, spoilered=image_filter.spoilers(d))
              for d in page]
    return {"images": images, "interactions": ctx.interactions([d["id"] for d in page]), "total": len(docs)}


def show_image(ctx: Context, id: str) -> Record:
    image = ctx.ds.images.get(parse_id(id))
    if image is None:
        raise not_found()
    return {"image": ctx.image(image), "interactions": ctx.interactions([image["id"]])}


def featured_image(ctx: Context) -> Record:
    for feature in sorted(ctx.ds.features, key=lambda f: f["created_at"], reverse=True):
        image = ctx.ds.images.get(feature["image_id"])
        if image is not None and not image["hidden_from_users"]:
            return {"image": ctx.image(image), "interactions": ctx.interactions([image["id"]])}
    raise not_found()


def oembed(ctx: Context) -> Record:
    url = ctx.params.get("url")
    if not url:
        raise not_found()
    path = urllib.parse.urlsplit(url).path
    match = re.search(r"/img/(?:view/|download/)?\d+/\d+/\d+/(\d+)[./_-]", path)
    if match is None and "/img/" not in path:
        match = re.search(r"/(\d+)", path)
    if match is None or int(match.group(1)) > INT4_MAX:
        raise not_found()
    image = ctx.ds.images.get(int(match.group(1)))
    if image is None or image["hidden_from_users"]:
        raise not_found()
    return render_oembed(image, ctx.ds.tags, ctx.urls)


# ---------------------------------------------------------------------------- other searches


def _search(ctx: Context, name: str, pairs: list[tuple[Record, Record]], spec: Any,
            keep: Callable[[Record, Record], bool], sort: Callable[[tuple[Record, Record]], Any],
            render: Callable[[Record], Record | None], *, reverse: bool = False) -> Record:
    """Shared body of the non-image search endpoints (fixed sorts, OpenSearch paging)."""
    q = ctx.query()
    if q is None:
        return {name: [], "total": 0}
    hits = search.matching(pairs, parse_query(q, spec), keep)
    hits.sort(key=sort, reverse=reverse)
    return {name: [render(record) for record, _ in search_page(ctx, hits)], "total": len(hits)}


def _newest(pair: tuple[Record, Record]) -> Any:
    """`created_at` (then id) key; used with reverse=True for the created_at-desc searches."""
    return (pair[0].get("created_at") or "", pair[0]["id"])


def search_comments(ctx: Context) -> Record:
    ds = ctx.ds
    hidden_tags = frozenset((ctx.filter or {}).get("hidden_tag_ids") or ())

    def keep(comment: Record, doc: Record) -> bool:
        if comment["hidden_from_users"] or comment["destroyed_content"]:
            return False
        image = ds.images.get(comment["image_id"])
        return image is None or not (image["hidden_from_users"] or hidden_tags & set(image["tag_ids"]))

    return _search(ctx, "comments", search.comment_docs(ds), COMMENT_FIELDS, keep, _newest,
                   lambda c: render_comment(c, ds.images.get(c["image_id"]), ds.users, ctx.urls), reverse=True)


def _post_visible(ds: Dataset, post: Record) -> bool:
    topic = ds.topics[post["topic_id"]]
    return (not post.get("hidden_from_users") and not post.get("destroyed_content") and not topic.get("hidden")
            and ds.forums[topic["forum"]]["access_level"] == "normal")


def search_posts(ctx: Context) -> Record:
    ds = ctx.ds
    return _search(ctx, "posts", search.post_docs(ds), POST_FIELDS,
                   lambda post, doc: _post_visible(ds, post), _newest,
                   lambda p: render_post(p, ds.topics[p["topic_id"]], ds.users, ctx.urls), reverse=True)


def search_galleries(ctx: Context) -> Record:
    ds = ctx.ds
    return _search(ctx, "galleries", search.gallery_docs(ds), GALLERY_FIELDS,
                   lambda g, doc: True, _newest, lambda g: render_gallery(g, ds.users), reverse=True)


def search_tags(ctx: Context) -> Record:
    ds = ctx.ds
    return _search(ctx, "tags", search.tag_docs(ds), TAG_FIELDS, lambda t, doc: True,
                   lambda pair: (-pair[1]["images"], pair[0]["id"]), lambda t: _render_tag(ctx, t))


def search_filters(ctx: Context) -> Record:
    return _search(ctx, "filters", search.filter_docs(ctx.ds), FILTER_FIELDS,
                   lambda f, doc: search.can_view_filter(f, ctx.user_id),
                   lambda pair: (pair[0]["name"], -pair[0]["id"]), render_filter)


# ---------------------------------------------------------------------------- show endpoints


def _render_tag(ctx: Context, tag: Record) -> Record:
    ds = ctx.ds
    return render_tag(tag, ds.tags, ds.tag_image_counts(), ds.alias_names(), ds.implied_by(), ctx.urls)


def show_tag(ctx: Context, slug: str) -> Record:
    tag = ctx.ds.tag_by_slug(slug) or ctx.ds.tag_by_slug(urllib.parse.quote(slug, safe="-._~+"))
    if tag is None:
        raise not_found()
    return {"tag": _render_tag(ctx, tag)}


def show_comment(ctx: Context, id: str) -> Record:
    comment = ctx.ds.comments.get(parse_id(id))
    if comment is None or comment.get("destroyed_content"):
        raise not_found()
    image = ctx.ds.images.get(comment["image_id"])
    if image is not None and image["hidden_from_users"]:
        raise ApiError(403)
    return {"comment": render_comment(comment, image, ctx.ds.users, ctx.urls)}


def show_post(ctx: Context, id: str) -> Record:
    post = ctx.ds.posts.get(parse_id(id))
    if post is None or post.get("destroyed_content"):
        raise not_found()
    topic = ctx.ds.topics[post["topic_id"]]
    if topic.get("hidden") or ctx.ds.forums[topic["forum"]]["access_level"] != "normal":
        raise not_found()
    return {"post": render_post(post, topic, ctx.ds.users, ctx.urls)}


def show_profile(ctx: Context, id: str) -> Record:
    user = ctx.ds.users.get(parse_id(id))
    if user is None or user.get("deleted"):
        raise not_found()
    return {"user": render_user(user, ctx.urls)}


def show_filter(ctx: Context, id: str) -> Record:
    flt = ctx.ds.filters.get(parse_integer_id(id))
    if flt is None or not search.can_view_filter(flt, ctx.user_id):
        raise not_found()
    return {"filter": render_filter(flt)}


def system_filters(ctx: Context) -> Record:
    filters = [f for _, f in sorted(ctx.ds.filters.items()) if f["system"]]
    return {"filters": [render_filter(f) for f in scrivener_page(ctx, filters)], "total": len(filters)}


def user_filters(ctx: Context) -> Record:
    if ctx.user_id is None:
        raise ApiError(403)
    filters = [f for _, f in sorted(ctx.ds.filters.items()) if f["user_id"] == ctx.user_id and not f["system"]]
    return {"filters": [render_filter(f) for f in scrivener_page(ctx, filters)], "total": len(filters)}


# ---------------------------------------------------------------------------- forums


def _forum(ctx: Context, short_name: str) -> Record | None:
    forum = ctx.ds.forums.get(short_name)
    return forum if forum is not None and forum["access_level"] == "normal" else None


def _topic(ctx: Context, short_name: str, topic_slug: str) -> Record:
    forum = _forum(ctx, short_name)
    topic = forum and next((t for t in ctx.ds.topics.values()
                            if t["forum"] == short_name and t["slug"] == topic_slug and not t.get("hidden")), None)
    if not topic:
        raise not_found()
    return topic


def list_forums(ctx: Context) -> Record:
    forums = sorted((f for f in ctx.ds.forums.values() if f["access_level"] == "normal"), key=lambda f: f["name"])
    return {"forums": [render_forum(f) for f in scrivener_page(ctx, forums)], "total": len(forums)}


def show_forum(ctx: Context, short_name: str) -> Record:
    forum = _forum(ctx, short_name)
    if forum is None:
        raise not_found()
    return {"forum": render_forum(forum)}


def list_topics(ctx: Context, short_name: str) -> Record:
    if _forum(ctx, short_name) is None:
        return {"topics": [], "total": 0}
    topics = [t for t in ctx.ds.topics.values() if t["forum"] == short_name and not t.get("hidden")]
    topics.sort(key=lambda t: (t["sticky"], t["last_replied_to_at"] or "", t["id"]), reverse=True)
    return {"topics": [render_topic(t) for t in scrivener_page(ctx, topics)], "total": len(topics)}


def show_topic(ctx: Context, short_name: str, topic_slug: str) -> Record:
    return {"topic": render_topic(_topic(ctx, short_name, topic_slug))}


def list_topic_posts(ctx: Context, short_name: str, topic_slug: str) -> Record:
    topic = _topic(ctx, short_name, topic_slug)
    size = ctx.size()
    low, high = size * (ctx.page - 1), size * ctx.page
    posts = [p for p in ctx.ds.topic_posts(topic["id"])
             if low <= p["topic_position"] < high and not p.get("destroyed_content")]
    return {"posts": [render_post(p, topic, ctx.ds.users, ctx.urls) for p in posts], "total": topic["post_count"]}


def show_topic_post(ctx: Context, short_name: str, topic_slug: str, id: str) -> Record:
    topic = _topic(ctx, short_name, topic_slug)
    post = ctx.ds.posts.get(parse_integer_id(id))
    if post is None or post["topic_id"] != topic["id"] or post.get("destroyed_content"):
        raise not_found()
    return {"post": render_post(post, topic, ctx.ds.users, ctx.urls)}


def unknown_route(ctx: Context, rest: str) -> Record:
    raise ApiError(404, "Not Found")


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


class SiteApp(Starlette):
    """Starlette, plus the server's own `send` in the scope so faults can drop connections."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            scope[RAW_SEND_KEY] = send
        await super().__call__(scope, receive, send)


def create_app(dataset: Dataset, faults: FaultProfile | str | None = None,
               log: RequestLog | None = None) -> Starlette:
    """The whole local site: API, image files and the test control API, behind the fault layer.

    `app.state.faults` (a `FaultState`) can switch the fault profile while the app runs, and
    `app.state.request_log` records every request, faulted ones included.
    """
    fault_state = FaultState(faults if isinstance(faults, FaultProfile) else FaultProfile.parse(faults or ""))
    log = log if log is not None else RequestLog()
    routes: list[BaseRoute] = [Route(API_PREFIX + path, _endpoint(handler), methods=["GET"])
                               for path, handler in API_ROUTES]
    app = SiteApp(
        routes=control_routes() + file_routes() + routes,
        middleware=[
            Middleware(RequestLogMiddleware, log=log),
            Middleware(FaultMiddleware, state=fault_state),
            Middleware(ProxyMiddleware),
        ],
    )
    app.state.dataset = dataset
    app.state.faults = fault_state
    app.state.request_log = log
    return app
