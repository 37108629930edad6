"""URL hygiene shared by the client, the store, the downloader and the pages that show records.

The site hands out protocol-relative (``//derpicdn.net/...``) and sometimes plain ``http:`` URLs.
The mirror always uses ``https:``, except for a local site the user configured as ``http://``.
The API key travels as a ``key`` query parameter, and a password may sit in a URL's userinfo
(``https://user:password@host``, for a reverse proxy with basic auth, a health check, a bucket), so
every URL that may reach a log line, an error message or the database goes through :func:`redact`
first; the client keeps the site's address without its userinfo (:func:`split_credentials`).
"""

from __future__ import annotations

import re
from functools import lru_cache
from ipaddress import ip_address
from urllib.parse import SplitResult, parse_qsl, unquote, urlencode, urljoin, urlsplit, urlunsplit

from .words import one_printable_line

_WEB_URL = re.compile(r"https?://[^\s/?#]", re.IGNORECASE)


def https_url(url: str | None, base_url: str) -> str | None:
    """Return ``url`` made absolute against ``base_url`` and upgraded to ``https:``.

    ``http:`` is kept only for the host of a ``base_url`` that is itself ``http:`` (a local site).
    """
    if not url or url.startswith("https://"):
        return url
    base = _split_base(base_url)
    if base.scheme == "http" and url.startswith(f"http://{base.netloc}/") and not _REWRITTEN.search(url):
        return url  # a local http site's own URL, which urlsplit and urlunsplit would give back as it is
    if url.startswith("//"):
        url = "https:" + url
    elif not urlsplit(url).scheme:
        url = urljoin(base_url.rstrip("/") + "/", url)
    parts = urlsplit(url)
    if parts.scheme == "http" and not (base.scheme == "http" and parts.netloc == base.netloc):
        parts = parts._replace(scheme="https")
    return urlunsplit(parts)


# What urlsplit drops or moves (tabs and newlines; an empty query or fragment): URLs with these
# take the long way, so the short one returns exactly what it would have.
_REWRITTEN = re.compile(r"[\t\r\n?#]")


@lru_cache(maxsize=16)
def _split_base(base_url: str) -> SplitResult:
    """The site's base URL, split once: every file URL of every record is checked against it."""
    return urlsplit(base_url)


# A password in a URL's userinfo, wherever a URL sits in a line of text: ``scheme://user:``, the
# password, then ``@``. The user part cannot run past the host; the password may hold a ``/`` (a
# bucket's secret key often does), so ``host:port/path@x`` is masked too: better too much than a secret.
_PASSWORD = re.compile(r"(\b[a-z][a-z0-9+.-]*://[^/?#\s@:]*:)[^?#\s@]*@", re.IGNORECASE)


_KEY = re.compile(r"([?&]key=)[^&#\s]*", re.IGNORECASE)


def redact(url: str) -> str:
    """Return ``url`` (or a line of text holding URLs) with the value of any ``key`` query parameter
    and any password in a URL's userinfo replaced by ``***``: ``https://user:***@host/?key=***``."""
    url = _PASSWORD.sub(r"\1***@", str(url))
    try:
        parts = urlsplit(url)
    except ValueError:  # no URL to urllib (a [ with no ] around a host): the key masked where it stands
        return _KEY.sub(r"\1***", url)
    if not parts.query:
        return url
    query = [(k, "***" if k == "key" else v) for k, v in parse_qsl(parts.query, keep_blank_values=True)]
    return urlunsplit(parts._replace(query=urlencode(query, safe="*:,")))


def error_text(error: BaseException) -> str:
    """What a library's error says, as the mirror may print it, put in ``--json`` and ping with:
    one printable line (no colour codes), any password or key in it redacted; its class's name
    when it says nothing. delta-rs and botocore quote whole request URLs and answers' bodies."""
    return redact(one_printable_line(str(error))) or type(error).__name__


def split_credentials(url: str) -> tuple[str, tuple[str, str] | None]:
    """``url`` without its userinfo, and the ``(user, password)`` it held (percent-decoded), if any.

    The address without them is what may be shown, stored and joined with a record's relative
    URLs; the credentials go only into an ``Authorization`` header."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    userinfo, _, host = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    return urlunsplit(parts._replace(netloc=host)), (unquote(user), unquote(password))


def shortened(text: str, most: int = 300) -> str:
    """``text`` cut in the middle to ``most`` characters, for a message: a long query in a URL
    would otherwise fill a cron mail with one line."""
    if len(text) <= most:
        return text
    keep = (most - 5) // 2
    return f"{text[:keep]} ... {text[-keep:]}"


def is_web_url(value: object) -> bool:
    """Whether a URL taken from a record may become a link: ``http://`` or ``https://`` and nothing else.

    A record's ``source_url`` is whatever the uploader typed; as a link, ``javascript:``,
    ``data:`` or ``vbscript:`` would run in the browser of whoever clicks it. The test is on the
    text as written (no leading space or control character, which a browser would skip)."""
    return isinstance(value, str) and _WEB_URL.match(value) is not None


def public_url_problem(url: str) -> str | None:
    """What is wrong with ``url`` as the address a server is reached at (scheme, host, port and
    nothing more, no credentials: it is written into every answer), or None."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (raises for a port that is no number)
    except ValueError:
        parts = None
    if (parts is None or parts.scheme not in ("http", "https") or not parts.hostname or "@" in parts.netloc
            or parts.path.strip("/") or parts.query or parts.fragment):
        return f"give the address alone, such as https://mirror.example.org, got {redact(url)!r}"
    return None


def is_loopback(url: str) -> bool:
    """Whether ``url`` names this machine (127.0.0.0/8, ::1 or localhost), where plain http is allowed."""
    host = (urlsplit(url).hostname or "").rstrip(".")
    if host == "localhost":
        return True
    try:
        return ip_address(host).is_loopback
    except ValueError:
        return False
