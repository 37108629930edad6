"""Checking a config key by key: its name, its type and its rules, each problem one line naming the key.

A typo in a key name or a value of the wrong type must stop the run before any request: a
misspelt ``base_urll`` would otherwise mirror the default site, a misspelt ``querry`` everything,
and ``enabled = "no"`` would count as true. Each problem is reported as one line naming the key.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from ..errors import EXIT_USAGE, MirrorError
from ..files import not_a_file
from ..philomena import REPRESENTATIONS
from ..store.history import COUNTER_MODES
from ..urls import is_loopback, redact
from .defaults import DEFAULTS, TYPES

# What a key of each type is called in a message.
TYPE_NAMES = {bool: "true or false", int: "an integer", float: "a number", str: "a string", list: "a list"}


class ConfigError(MirrorError):
    """The configuration cannot be used; the message says which key and why."""

    exit_code = EXIT_USAGE


def shown(value: Any) -> str:
    """``value`` written as in a TOML file, so a message quotes what the user wrote."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(shown(v) for v in value) + "]"
    if isinstance(value, dict):
        return "a table"
    return str(value)


def suggestion(name: str, known: list[str], template: str = "{}") -> str:
    """`` (did you mean X?)`` for the known name closest to ``name``, or nothing."""
    close = difflib.get_close_matches(name, known, n=1)
    return f" (did you mean {template.format(close[0])}?)" if close else ""


def key_type(section: str, key: str) -> type:
    """The type ``[section] key`` holds, or a ConfigError naming it when there is no such key."""
    known = DEFAULTS[section]
    if key not in known:
        raise ConfigError(f"[{section}] {key}: unknown key{suggestion(key, list(known))}")
    return TYPES.get((section, key)) or type(known[key])


def check_value(section: str, key: str, value: Any, wanted: type) -> Any:
    """``value`` if it is a ``wanted`` (None stands for unset), else a ConfigError naming the key.

    bool is not an int here, a float with a fraction or not is not an int, and an int is a fine
    float; inf and nan are refused everywhere since no setting means them. A secret's value is
    never shown.
    """
    if value is None:
        return None
    if wanted is float and type(value) is int:
        value = float(value)
    got = TYPE_NAMES.get(type(value), "a table") if key == "api_key" else shown(value)
    if type(value) is not wanted:
        raise ConfigError(f"[{section}] {key}: expected {TYPE_NAMES[wanted]}, got {got}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"[{section}] {key}: expected a finite number, got {got}")
    return value


def from_environment(text: str, wanted: type) -> Any:
    """An environment variable's text as a ``wanted``, or the text itself for check_value to refuse."""
    try:
        if wanted is int:
            return int(text.strip())
        if wanted is float:
            return float(text.strip())
    except ValueError:
        pass
    return text


def _from(source: str | None, error: ConfigError) -> ConfigError:
    return ConfigError(f"{source}: {error}") if source else error


def check_section(section: str, keys: Any, source: str | None) -> None:
    """Refuse a section that does not exist, or one that is not a table of keys."""
    if section not in DEFAULTS:
        raise _from(source, ConfigError(f"[{section}]: unknown section{suggestion(section, list(DEFAULTS), '[{}]')}"))
    if not isinstance(keys, dict):
        raise _from(source, ConfigError(f"[{section}]: expected a table of keys, got {shown(keys)}"))


def checked(section: str, key: str, value: Any, source: str | None) -> Any:
    """``value`` for ``[section] key`` once its name, type and rules are checked."""
    try:
        wanted = key_type(section, key)
        if value is None and DEFAULTS[section][key] is not None:
            raise ConfigError(f"[{section}] {key}: expected {TYPE_NAMES[wanted]}, got nothing")
        value = check_value(section, key, value, wanted)
        if value is not None:
            _check_rules(section, key, value)
        return value
    except ConfigError as e:
        raise _from(source, e) from None


# Numbers that must be above 0; every other number must be at least 0.
POSITIVE = {("polite", "requests_per_second"), ("polite", "timeout"), ("polite", "backoff"),
            ("polite", "searches_per_10s"),
            ("polite", "give_up_after"), ("download", "concurrency"), ("download", "requests_per_second"),
            ("download", "file_deadline"), ("download", "dump_stall_seconds"), ("report", "healthcheck_timeout"),
            ("export", "timeout")}


def _check_rules(section: str, key: str, value: Any) -> None:
    """What a well-typed value must also be: in range, one of the choices, a known name."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        positive = (section, key) in POSITIVE
        if value < 0 or (positive and value == 0):
            raise ConfigError(f"[{section}] {key}: must be {'greater than 0' if positive else 'at least 0'}, "
                              f"got {shown(value)}")
    rule = RULES.get(key) or RULES.get(f"{section}.{key}")
    if rule:
        problem = rule(value)
        if problem:
            raise ConfigError(f"[{section}] {key}: {problem}")


def _port_problem(url: str) -> str | None:
    """A URL urllib cannot read (a ``[`` with no ``]`` around its host), or a port no connection can be
    made to (``:99999``, ``:0``, ``:https``), is refused here, not met as a traceback later."""
    try:
        parts = urlsplit(url)
    except ValueError as e:
        return f"is not a URL that can be read ({e}), got {shown(redact(url))}"
    try:
        port = parts.port
    except ValueError:
        port = 0
    if port is not None and not 1 <= port <= 65535:
        return f"its port must be a number from 1 to 65535, got {shown(redact(url))}"
    return None


# The API's own path, which the client adds to base_url: pasted with it (as the site's API docs
# show every URL), each request would ask for /api/v1/json/api/v1/json/... and get a 404.
API_PATH = "/api/v1/json"


def _base_url_problem(url: str) -> str | None:
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    if scheme not in ("http", "https") or not url.split("://", 1)[1].strip("/"):
        return f"must start with https:// and name the site, got {shown(redact(url))}"
    if problem := _one_line_problem(url) or _port_problem(url) or _api_path_problem(url):
        return problem
    if scheme == "http" and not is_loopback(url):
        return ("http:// is only for a site on this machine (127.0.0.1, ::1, localhost); the site's rules "
                f"require https://, got {shown(redact(url))}")
    return None


def _api_path_problem(url: str) -> str | None:
    """base_url with the API's path in it (``https://derpibooru.org/api/v1/json``, or a whole
    endpoint's URL): the fix is the address before it."""
    path = urlsplit(url).path.rstrip("/")
    before, found, after = path.partition(API_PATH)
    if not found or (after and not after.startswith("/")):
        return None
    site = urlsplit(url)._replace(path=before, query="", fragment="").geturl()
    return (f"ends with {API_PATH}, which the mirror adds itself; drop it: base_url = {shown(redact(site))}"
            if not after else f"is the URL of an API request; give the site's own address: "
            f"base_url = {shown(redact(site))}")


def _healthcheck_url_problem(url: str) -> str | None:
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    if scheme not in ("http", "https") or not url.split("://", 1)[1].strip("/"):
        return f"must be an http:// or https:// URL, such as https://hc-ping.com/UUID, got {shown(redact(url))}"
    return _one_line_problem(url) or _port_problem(url)


def _representations_problem(names: list[Any]) -> str | None:
    unknown = [n for n in names if n not in REPRESENTATIONS]
    if unknown:
        return (f"unknown {', '.join(map(shown, unknown))}; known: {', '.join(REPRESENTATIONS)} "
                "(webm/mp4 of GIFs: gif_videos = true; SVG originals: svg_originals = true)")
    return None


def _list_of(kind: type, what: str) -> Callable[[list[Any]], str | None]:
    def problem(values: list[Any]) -> str | None:
        return None if all(type(v) is kind for v in values) else f"expected a list of {what}, got {shown(values)}"

    return problem


def _scope_problem(scope: str) -> str | None:
    return None if scope in ("mirrored", "all") else f'expected "mirrored" or "all", got {shown(scope)}'


# The longest images.query taken: the query goes in every page's URL, and the site's proxy refuses
# a request line much longer (`mirror serve` refuses longer queries too).
MAX_QUERY = 4096


def _query_problem(query: str) -> str | None:
    if not query.strip():
        return 'must be a non-empty search query; use "*" for every image'
    if len(query) > MAX_QUERY:
        return f"is {len(query):,} characters long; the most is {MAX_QUERY:,} (the site's URLs cannot carry more)"
    return None


def _one_line_problem(text: str) -> str | None:
    """A header value or a URL: a line break in a header would end it (and every request would
    fail); in a URL httpx refuses it with an error that is not an HTTP one, at the first request.
    The value is not shown: a URL's path may be a secret."""
    if any(ord(c) < 32 or ord(c) == 127 for c in text):
        return "must be one line of text (it has a line break or another control character)"
    return None


def _endpoint_url_problem(url: str) -> str | None:
    """An S3 endpoint: credentials in it would be printed with every error that quotes a request."""
    if problem := _one_line_problem(url):
        return problem
    if urlsplit(url).password is not None or "@" in urlsplit(url).netloc:
        return (f"holds credentials ({shown(redact(url))}); give the address alone, and the credentials in the "
                "environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY), never in this file")
    return None


def _files_problem(url: str) -> str | None:
    """A folder, or a URL of a storage fsspec knows (s3://, gcs://...)."""
    import fsspec

    protocol = url.split("://", 1)[0].lower() if "://" in url else ""
    if protocol and protocol not in fsspec.available_protocols():
        return (f"unknown protocol {protocol!r} in {shown(redact(url))}; give a folder, or a URL such as "
                "s3://bucket/prefix")
    return None


def _metrics_file_problem(path: str) -> str | None:
    """A FIFO, a device or a folder there would hang or fill the run that reads the file back."""
    kind = not_a_file(path)
    if kind is None:
        return None
    return (f"{shown(path)} is {kind}, not a regular file; give the path of a file, such as "
            "/var/lib/node_exporter/textfile/mirror.prom")


def _counters_problem(mode: str) -> str | None:
    return None if mode in COUNTER_MODES else f'expected "daily", "all" or "off", got {shown(mode)}'


RULES: dict[str, Callable[[Any], str | None]] = {
    "history.counters": _counters_problem,
    "site.base_url": _base_url_problem,
    "report.healthcheck_url": _healthcheck_url_problem,
    "report.metrics_file": _metrics_file_problem,
    "images.query": _query_problem,
    "site.user_agent": _one_line_problem,
    "store.endpoint_url": _endpoint_url_problem,
    "store.files": _files_problem,
    "scope": _scope_problem,
    "download.representations": _representations_problem,
    "forums.forums": _list_of(str, "forum short names"),
    "filters.ids": _list_of(int, "filter numbers"),
}
