"""``PhilomenaClient``: one async method per GET endpoint of ``/api/v1/json``.

Records come back as the dicts the site sent, untouched, so that the store can keep them
losslessly; lists come back as a :class:`Page`. Everything about pacing and retrying lives in
:mod:`mirror.api.polite`; this module knows the endpoints and what their answers mean.
"""

from __future__ import annotations

import email.utils
import functools
import logging
import os
import socket
import ssl
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import quote, urlencode

import httpx

from .. import __version__
from ..urls import is_loopback, redact, shortened, split_credentials
from .errors import (ApiError, BadQuery, Forbidden, KeyRequired, NotFound, NotPhilomena, UnexpectedResponse,
                     WrongBaseUrl)
from .polite import CHALLENGE_BACKOFF, Politeness, RetryableFailure, parse_retry_after

API_PREFIX = "/api/v1/json"
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
# Derpibooru's anti-bot challenge; see reference section 8.
CHALLENGE_STATUS = 501
MAX_PER_PAGE = 50

Record = dict[str, Any]


class _RedactKey(logging.Filter):
    """httpx logs each request URL at INFO; the key (and a password a URL holds) travels in that
    URL, so it is masked there."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.args = tuple(redact(str(a)) if isinstance(a, (str, httpx.URL)) else a for a in record.args or ())
        message = str(record.msg)
        record.msg = redact(message) if "key=" in message or "@" in message else record.msg
        return True


logging.getLogger("httpx").addFilter(_RedactKey())

# OpenSSL's reasons for a TLS handshake answered by a server that does not speak TLS: what a plain
# HTTP server's "HTTP/1.1 400" reads as when taken for a TLS record.
PLAIN_HTTP_REASONS = frozenset({"WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE", "PACKET_LENGTH_TOO_LONG",
                                "UNKNOWN_PROTOCOL", "HTTP_REQUEST"})


@dataclass(frozen=True)
class Upload:
    """A file to send (its bytes and name), or a URL for the site to fetch instead (at most
    :data:`~mirror.philomena.MAX_FILE_SIZE` bytes either way)."""

    data: bytes | None = None
    name: str = "upload"
    url: str | None = None


@dataclass
class Page:
    """One page of a list endpoint: the records, the site's ``total`` and when the site said so."""

    records: list[Record]
    total: int | None = None
    interactions: list[Record] = field(default_factory=list)
    server_date: datetime | None = None

    def __len__(self) -> int:
        return len(self.records)


def http_client(*, timeout: float, contact: str, max_connections: int, **options: Any) -> httpx.AsyncClient:
    """An httpx client as every part of the mirror uses one: retries left to :class:`Politeness`
    (so each attempt is paced), a bounded pool, a connect timeout, and our User-Agent.

    It never follows a redirect itself: httpx would follow one to any host, http included, and
    unpaced. A caller that follows redirects checks each hop and takes a turn for it (see
    :mod:`mirror.download.fetch`).
    """
    transport = httpx.AsyncHTTPTransport(retries=0, limits=httpx.Limits(max_connections=max_connections),
                                         verify=tls_settings())
    headers = {"User-Agent": user_agent(contact), **options.pop("headers", {})}
    return httpx.AsyncClient(transport=transport, timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)),
                             headers=headers, follow_redirects=False, **options)


@functools.cache
def tls_settings() -> ssl.SSLContext:
    """httpx's own TLS settings (certifi's CA bundle), made once a process and shared by every
    client: each new client loaded the bundle again, some 40 ms of CPU (a test run makes hundreds)."""
    return httpx.create_ssl_context()


def user_agent(contact: str = "") -> str:
    """The User-Agent: the tool, its version, and the contact the user configured."""
    agent = f"booru-mirror/{__version__} (+https://github.com/booru-mirror/booru-mirror)"
    return f"{agent} {contact.strip()}" if contact and contact.strip() else agent


class PhilomenaClient:
    """An async client for one Philomena site.

    ``base_url`` is the site (``https://derpibooru.org``); ``api_key`` is sent as the ``key``
    parameter and never shown; ``filter_id`` is sent with every request when set. A user and
    password in ``base_url`` (a reverse proxy's basic auth) go only into the Authorization header:
    ``self.base_url``, which errors show and records' relative URLs are joined with, has none.
    Use it as an async context manager, or call :meth:`aclose`.
    """

    def __init__(self, base_url: str, *, api_key: str | None = None, filter_id: int | None = None,
                 contact: str = "", politeness: Politeness | None = None, timeout: float = 30.0,
                 max_connections: int = 4) -> None:
        self.base_url, credentials = split_credentials(base_url.rstrip("/"))
        self.filter_id = filter_id
        self.politeness = politeness or Politeness()
        self._api_key = api_key or None
        self._answered = False  # whether the site has answered any request yet (see _check)
        self._http = http_client(timeout=timeout, contact=contact, max_connections=max_connections,
                                 base_url=self.base_url + API_PREFIX, headers={"Accept": "application/json"},
                                 auth=httpx.BasicAuth(*credentials) if credentials else None)

    @property
    def has_key(self) -> bool:
        return self._api_key is not None

    @property
    def requests_made(self) -> int:
        """Attempts sent to the site so far, retries included."""
        return self.politeness.attempts

    async def __aenter__(self) -> PhilomenaClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    # Images -------------------------------------------------------------------------------

    async def search_images(self, q: str, *, page: int = 1, per_page: int = MAX_PER_PAGE, sf: str | None = None,
                            sd: str | None = None, include_hidden: bool = False, filter_id: int | None = None) -> Page:
        """GET /search/images. ``include_hidden`` sends ``del=1``: hidden images come as stubs;
        ``filter_id`` searches through that filter instead of the client's."""
        params = {"q": q, "page": page, "per_page": per_page, "sf": sf, "sd": sd,
                  "del": "1" if include_hidden else None, "filter_id": filter_id}
        return await self._page("/search/images", params, "images")

    async def image(self, image_id: int) -> Record:
        """GET /images/:id. Hidden, deleted and merged images come back as stubs, not 404."""
        return await self._one(f"/images/{int(image_id)}", "image")

    async def featured_image(self) -> Record:
        """GET /images/featured: the image featured most recently."""
        return await self._one("/images/featured", "image")

    async def oembed(self, url: str) -> Record:
        """GET /oembed?url=: the bare (unwrapped) oEmbed object for an image URL."""
        return _json_object((await self._request("/oembed", {"url": url}))[0], "/oembed")

    async def reverse_search(self, upload: Upload, *, distance: float | None = None) -> Page:
        """POST /search/reverse: images whose intensities are near the file's (no key needed).

        Asking again changes nothing on the site, so this is retried like any GET.
        """
        data = {"distance": str(distance)} if distance is not None else {}

        shown = f"POST {API_PREFIX}/search/reverse"

        async def attempt() -> tuple[Any, httpx.Response]:
            response = await self._send_post("/search/reverse", upload, data)
            raise_for_retry(response)
            return (_parse_json(response, shown) if response.status_code == 200 else None), response

        body, response = await self.politeness.call(attempt, shown, path=f"{API_PREFIX}/search/reverse")
        self._check(response, shown)
        return self._page_of(_json_object(body, shown), response, "images", shown)

    async def post_image(self, upload: Upload, fields: Mapping[str, str]) -> httpx.Response:
        """POST /images once, paced but never retried here: a lost answer may hide a landed upload,
        so whether to try again is :mod:`mirror.api.upload`'s decision. Raises
        :class:`RetryableFailure` for a failure that may be retried after a check."""
        if not self._api_key:
            raise KeyRequired("uploading needs an API key: set MIRROR_API_KEY (or site.api_key)")
        await self.politeness.take_turn()
        response = await self._send_post("/images", upload, {**fields, "key": self._api_key})
        raise_for_retry(response)
        return response

    async def _send_post(self, path: str, upload: Upload, data: Mapping[str, str]) -> httpx.Response:
        """One POST with the file (``image[image]``) or its ``url``, the key only ever in the body."""
        form = dict(data)
        files = None
        if upload.url is not None:
            form["url"] = upload.url
        else:
            files = {"image[image]": (upload.name, upload.data or b"", "application/octet-stream")}
        try:
            return await self._http.post(path, data=form, files=files)
        except httpx.TransportError as e:
            raise transport_failure(e) from None

    # Tags ---------------------------------------------------------------------------------

    async def search_tags(self, q: str, *, page: int = 1, per_page: int = MAX_PER_PAGE) -> Page:
        return await self._page("/search/tags", {"q": q, "page": page, "per_page": per_page}, "tags")

    async def tag(self, slug: str) -> Record:
        """GET /tags/:slug. Looks up by slug only (``pinkie+pie``), not by name."""
        return await self._one(f"/tags/{_segment(slug)}", "tag")

    # Comments and posts -------------------------------------------------------------------

    async def search_comments(self, q: str, *, page: int = 1, per_page: int = MAX_PER_PAGE) -> Page:
        return await self._page("/search/comments", {"q": q, "page": page, "per_page": per_page}, "comments")

    async def comment(self, comment_id: int) -> Record:
        return await self._one(f"/comments/{int(comment_id)}", "comment")

    async def search_posts(self, q: str, *, page: int = 1, per_page: int = MAX_PER_PAGE) -> Page:
        return await self._page("/search/posts", {"q": q, "page": page, "per_page": per_page}, "posts")

    async def post(self, post_id: int) -> Record:
        return await self._one(f"/posts/{int(post_id)}", "post")

    # Galleries, filters, profiles ---------------------------------------------------------

    async def search_galleries(self, q: str, *, page: int = 1, per_page: int = MAX_PER_PAGE) -> Page:
        return await self._page("/search/galleries", {"q": q, "page": page, "per_page": per_page}, "galleries")

    async def search_filters(self, q: str, *, page: int = 1, per_page: int = MAX_PER_PAGE) -> Page:
        return await self._page("/search/filters", {"q": q, "page": page, "per_page": per_page}, "filters")

    async def filter(self, filter_id: int) -> Record:
        return await self._one(f"/filters/{int(filter_id)}", "filter")

    async def system_filters(self, *, page: int = 1, per_page: int = MAX_PER_PAGE) -> Page:
        """GET /filters/system. A page past the end repeats the last page."""
        return await self._page("/filters/system", {"page": page, "per_page": per_page}, "filters")

    async def user_filters(self, *, page: int = 1, per_page: int = MAX_PER_PAGE) -> Page:
        """GET /filters/user: the key owner's filters. Without a valid key the site answers 403."""
        try:
            return await self._page("/filters/user", {"page": page, "per_page": per_page}, "filters")
        except Forbidden as e:
            raise KeyRequired("the key owner's filters need a valid API key: set MIRROR_API_KEY",
                              url=e.url, status=e.status) from None

    async def profile(self, user_id: int) -> Record:
        """GET /profiles/:id. The site wraps the record as ``user``."""
        return await self._one(f"/profiles/{int(user_id)}", "user")

    # Forums -------------------------------------------------------------------------------

    async def forums(self, *, page: int = 1, per_page: int = MAX_PER_PAGE) -> Page:
        """GET /forums. A page past the end repeats the last page."""
        return await self._page("/forums", {"page": page, "per_page": per_page}, "forums")

    async def forum(self, short_name: str) -> Record:
        return await self._one(f"/forums/{_segment(short_name)}", "forum")

    async def topics(self, forum: str, *, page: int = 1, per_page: int = MAX_PER_PAGE) -> Page:
        """GET /forums/:forum/topics. A page past the end repeats the last page."""
        return await self._page(f"/forums/{_segment(forum)}/topics", {"page": page, "per_page": per_page}, "topics")

    async def topic(self, forum: str, slug: str) -> Record:
        return await self._one(f"/forums/{_segment(forum)}/topics/{_segment(slug)}", "topic")

    async def topic_posts(self, forum: str, topic: str, *, page: int = 1, per_page: int = MAX_PER_PAGE) -> Page:
        """GET /forums/:forum/topics/:slug/posts. Pages are windows of ``topic_position``."""
        path = f"/forums/{_segment(forum)}/topics/{_segment(topic)}/posts"
        return await self._page(path, {"page": page, "per_page": per_page}, "posts")

    async def topic_post(self, forum: str, topic: str, post_id: int) -> Record:
        return await self._one(f"/forums/{_segment(forum)}/topics/{_segment(topic)}/posts/{int(post_id)}", "post")

    # Plumbing -----------------------------------------------------------------------------

    async def _page(self, path: str, params: Mapping[str, Any], key: str) -> Page:
        body, response = await self._request(path, params)
        return self._page_of(_json_object(body, path), response, key, path)

    @staticmethod
    def _page_of(body: dict[str, Any], response: httpx.Response, key: str, path: str) -> Page:
        records = body.get(key)
        if not isinstance(records, list):
            raise UnexpectedResponse(f"{path} answered without a {key!r} list", url=path, status=200)
        total = body.get("total")
        return Page(records, total if isinstance(total, int) else None, body.get("interactions") or [],
                    _server_date(response))

    async def _one(self, path: str, key: str) -> Record:
        body = _json_object((await self._request(path, {}))[0], path)
        record = body.get(key)
        if not isinstance(record, dict):
            raise UnexpectedResponse(f"{path} answered without a {key!r} record", url=path, status=200)
        return record

    async def _request(self, path: str, params: Mapping[str, Any]) -> tuple[Any, httpx.Response]:
        """The parsed JSON body of a 200 answer, and the answer; raises for anything else."""
        query = {k: v for k, v in params.items() if v is not None}
        if self.filter_id is not None:
            query.setdefault("filter_id", self.filter_id)
        shown = shortened(redact(f"GET {API_PREFIX}{path}" + (f"?{urlencode(query)}" if query else "")))
        if self._api_key:
            query["key"] = self._api_key

        async def attempt() -> tuple[Any, httpx.Response]:
            try:
                response = await self._http.get(path, params=query)
            except httpx.TransportError as e:
                raise transport_failure(e) from None
            raise_for_retry(response)
            return (_parse_json(response, shown) if response.status_code == 200 else None), response

        body, response = await self.politeness.call(attempt, shown, path=API_PREFIX + path)
        self._check(response, shown)
        return body, response

    def _check(self, response: httpx.Response, shown: str) -> None:
        """Raise for an answer other than 200. Until the site has answered once, a 404 most often
        means site.base_url is wrong (a path too many or too few), so it names the whole URL asked
        and the base_url; afterwards it is a record the site does not have."""
        first, self._answered = not self._answered, True
        if response.status_code == 200:
            return
        if first and response.status_code == 404 and not is_html(response):
            raise NotFound(f"{asked(response)}: not found (404), and it was the run's first request, so site.base_url "
                           f"({_site_of(response)}) is likely wrong: give the site's own address (the mirror adds "
                           f"{API_PREFIX} to it)", url=shown, status=404)
        raise _error_for(response, shown)


def _segment(value: str) -> str:
    """Quote one path segment; ``+`` stays, because tag slugs use it for spaces."""
    return quote(str(value), safe="+")


def raise_for_retry(response: httpx.Response) -> None:
    """Raise :class:`RetryableFailure` for an answer worth another try (429, 5xx, a challenge)."""
    status = response.status_code
    if status in RETRY_STATUSES:
        retry_after = parse_retry_after(response.headers.get("retry-after"))
        raise RetryableFailure(f"the site answered {status} {response.reason_phrase}".rstrip(),
                               status=status, retry_after=retry_after)
    if status == CHALLENGE_STATUS:
        raise RetryableFailure("the site answered 501 (an anti-bot challenge)", status=status,
                               min_wait=CHALLENGE_BACKOFF)


def _parse_json(response: httpx.Response, shown: str) -> Any:
    """A 200 whose body is not JSON: a cut body is worth another try; a web page is not.

    Philomena's proxy sends its HTML pages with 429 and 5xx, never with 200 (reference section 8),
    so a 200 page is another site, a captive portal or a wrong path, and asking again in a minute
    changes nothing: it stops the run at once (exit 4), naming site.base_url."""
    try:
        return response.json()
    except ValueError:
        if is_html(response):
            raise _not_philomena(response, shown, "an HTML page (200)") from None
        raise RetryableFailure("the site answered 200 with a body that is not JSON", status=200) from None


def is_html(response: httpx.Response) -> bool:
    """Whether the body is a web page: what a site that is not Philomena, or not at that address, sends."""
    if "html" in response.headers.get("content-type", "").lower():
        return True
    return response.content[:256].lstrip().lower().startswith((b"<!doctype html", b"<html"))


def _site_of(response: httpx.Response | httpx.Request) -> str:
    """The address asked, up to the API's path: the configured site.base_url (no query, so no key;
    no userinfo, which the client keeps out of its URLs)."""
    request = response.request if isinstance(response, httpx.Response) else response
    return redact(str(request.url).partition(API_PREFIX)[0]) or "the site"


def asked(response: httpx.Response) -> str:
    """The request as one line: its method and whole URL, the key masked, a long query cut."""
    return shortened(redact(f"{response.request.method} {response.request.url}"))


def _not_philomena(response: httpx.Response, shown: str, what: str) -> NotPhilomena:
    return NotPhilomena(f"{asked(response)} was answered with {what}, not Philomena's JSON API: check that "
                        f"site.base_url ({_site_of(response)}) is the site's own address", url=shown,
                        status=response.status_code)


def transport_failure(error: httpx.TransportError) -> RetryableFailure | WrongBaseUrl:
    """A failed request to the API, with what to check when it never passes; or, for https:// to a
    server that speaks plain HTTP, which no retry mends, the error that says to fix site.base_url."""
    if speaks_plain_http(error):
        return _plain_http(error.request)
    unreachable = isinstance(error, (httpx.ConnectError, httpx.ConnectTimeout))
    return RetryableFailure(describe_transport_error(error),
                            hint="check site.base_url and your network" if unreachable else None)


def speaks_plain_http(error: httpx.TransportError) -> bool:
    """Whether a TLS handshake failed because the server answered in plain HTTP."""
    cause = _cause(error, ssl.SSLError)
    return cause is not None and getattr(cause, "reason", None) in PLAIN_HTTP_REASONS


def _plain_http(request: httpx.Request) -> WrongBaseUrl:
    site = _site_of(request)
    where = f"{request.url.host}:{request.url.port or 443}"
    plain = "http://" + site.removeprefix("https://")
    fix = (f'use http:// for it: set site.base_url = "{plain}"' if is_loopback(site) else
           "check the port (https:// is on 443 unless the site says otherwise); plain http:// is only for a site on "
           "this machine")
    return WrongBaseUrl(f"site.base_url ({site}) says https://, but the server at {where} speaks plain HTTP: {fix}",
                        url=redact(str(request.url)))


def _json_object(body: Any, path: str) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise UnexpectedResponse(f"{path} did not answer with a JSON object", url=path, status=200)
    return body


def _error_for(response: httpx.Response, shown: str) -> ApiError:
    status = response.status_code
    message = _error_message(response)
    if status == 400:
        return BadQuery(f"{shown}: the site rejected the request: {message or 'Bad Request'}", url=shown, status=status)
    if status == 401:
        return KeyRequired(f"{shown}: this needs a valid API key; set MIRROR_API_KEY", url=shown, status=status)
    if status == 403:
        return Forbidden(f"{shown}: the site refused (403){': ' + message if message else ''}", url=shown, status=status)
    if status == 404 and is_html(response):  # Philomena's API answers 404 in JSON, or empty
        return _not_philomena(response, shown, "an HTML page (404)")
    if status == 404:
        return NotFound(f"{shown}: not found", url=shown, status=status)
    if status in REDIRECT_STATUSES and response.headers.get("location"):
        return _redirected(response, shown)
    return ApiError(f"{shown}: unexpected answer {status}{': ' + message if message else ''}", url=shown, status=status)


def _redirected(response: httpx.Response, shown: str) -> ApiError:
    """A redirect is never followed (see :func:`http_client`), but where it points is most often
    the site's address as it should be configured (``www.``, another domain)."""
    url = response.request.url.join(response.headers["location"])
    target = str(url)
    base = target.partition(API_PREFIX)[0] if API_PREFIX in target else f"{url.scheme}://{url.netloc.decode()}"
    return NotPhilomena(f"{_site_of(response)} answered {shown} with a redirect ({response.status_code}) to "
                        f"{redact(base)}: set site.base_url = \"{redact(base)}\" if that is the site",
                        url=shown, status=response.status_code)


def _error_message(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return ""
    if isinstance(body, dict) and isinstance(body.get("error"), str):
        return body["error"]
    return ""


def describe_transport_error(error: httpx.TransportError) -> str:
    """What failed, naming the host and port, in words: "cannot connect to derpibooru.org:443
    (connection refused)", "derpibooru.org:443 stopped answering (read timeout)". Any key is redacted."""
    where = _host_and_port(error)
    cause = _os_error(error)
    if isinstance(error, httpx.ConnectTimeout):
        return f"cannot connect to {where} (no answer within the timeout)"
    if isinstance(error, httpx.ConnectError):
        if speaks_plain_http(error):
            return f"cannot speak TLS with {where}: it answers in plain HTTP (is the port or the https:// wrong?)"
        if (tls := _cause(error, ssl.SSLError)) is not None:  # a certificate refused, say
            return f"the TLS handshake with {where} failed ({_lower(getattr(tls, 'reason', None) or str(tls))})"
        if isinstance(cause, socket.gaierror):
            return f"cannot find {where.rpartition(':')[0]} (name lookup: {_lower(cause.strerror)})"
        why = os.strerror(cause.errno).lower() if cause is not None else _detail(error)
        return f"cannot connect to {where} ({why})"
    if isinstance(error, httpx.TimeoutException):
        return f"{where} stopped answering ({type(error).__name__.removesuffix('Timeout').lower()} timeout)"
    return f"{where} dropped the connection ({_detail(error)})"


def _host_and_port(error: httpx.TransportError) -> str:
    try:
        url = error.request.url
    except RuntimeError:  # raised without a request
        return "the site"
    return f"{url.host}:{url.port or (443 if url.scheme == 'https' else 80)}"


def _os_error(error: BaseException) -> OSError | None:
    """The operating system's own error behind httpx's and httpcore's wrappers, if any (not an
    ssl.SSLError: its errno is OpenSSL's, and 1 read as the system's is "operation not permitted")."""
    return next((e for e in _chain(error) if isinstance(e, OSError) and not isinstance(e, ssl.SSLError)
                 and e.errno is not None), None)


def _cause(error: BaseException, kind: type[BaseException]) -> BaseException | None:
    """The first error of ``kind`` behind ``error`` (itself included), if any."""
    return next((e for e in _chain(error) if isinstance(e, kind)), None)


def _chain(error: BaseException) -> Iterator[BaseException]:
    seen: BaseException | None = error
    while seen is not None:
        yield seen
        seen = seen.__cause__ or seen.__context__


def _detail(error: httpx.TransportError) -> str:
    detail = redact(str(error).strip())
    name = type(error).__name__
    return f"{name}: {detail}" if detail else name


def _lower(text: str | None) -> str:
    return (text or "").lower() or "no reason given"


def _server_date(response: httpx.Response) -> datetime | None:
    value = response.headers.get("date")
    if not value:
        return None
    try:
        return email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
