"""Configuration: a TOML file with built-in defaults and environment overrides.

Every key is optional. ``mirror.toml`` in the working directory is read when present; otherwise the
defaults below apply. The API key is read from ``MIRROR_API_KEY`` first and ``site.api_key``
second; it is held in a :class:`Secret` so that printing a config never shows it.
"""

from __future__ import annotations

import copy
import json
import os
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .config_types import (
    TYPE_NAMES,
    ConfigError,
    check_value,
    from_environment,
    key_type,
    shown,
    suggestion,
)
from .urls import is_loopback, redact

DEFAULT_CONFIG_FILE = "mirror.toml"

RESOURCES = ("images", "comments", "posts", "galleries", "tags", "forums", "filters", "profiles")

DEFAULTS: dict[str, dict[str, Any]] = {
    "site": {
        "base_url": "https://derpibooru.org",
        "filter_id": None,
        "user_agent": "",
        "api_key": None,
    },
    "polite": {
        "requests_per_second": 1.0,
        "max_retries": 5,
        "give_up_after": 10,
        "timeout": 30.0,
        # Base of the exponential backoff between retries, in seconds (a Retry-After wins).
        "backoff": 1.0,
    },
    "store": {
        "database": "data/mirror.db",
        "files": "data/files",
        # For S3-compatible object storage (store.files = "s3://bucket/prefix"); credentials
        # come from the usual AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY environment variables.
        "endpoint_url": None,
        # Seconds a write waits for another program's write transaction on the database.
        "busy_timeout": 30.0,
    },
    "images": {
        "enabled": True,
        "query": "*",
        "include_hidden": True,
        "refresh_overlap": 900,
    },
    "comments": {
        "enabled": False,
        # "mirrored": the comments on the mirrored images; "all": every comment of the site.
        "scope": "mirrored",
        # Seconds of overlap when re-reading comments updated since the last run (clock skew, indexing).
        "refresh_overlap": 900,
        # Batches of 50 mirrored images checked each run for comments hidden or destroyed since
        # (one request a batch when nothing changed; 0 turns the audit off).
        "audit_per_run": 2,
    },
    "posts": {
        "enabled": False,
        # Seconds of overlap when re-reading posts updated since the last run (clock skew, indexing).
        "refresh_overlap": 900,
    },
    "galleries": {
        "enabled": False,
        # "mirrored": the galleries holding mirrored images; "all": every gallery of the site.
        "scope": "mirrored",
        # Seconds of overlap when re-reading galleries updated since the last run.
        "refresh_overlap": 900,
        # Reordering a gallery leaves its updated_at alone, so galleries are also walked again
        # when their last walk is this many days old, at most rewalk_per_run of them per run.
        "rewalk_after_days": 30.0,
        "rewalk_per_run": 10,
    },
    "tags": {
        "enabled": False,
        # "mirrored": the tags the mirrored images name; "all": every tag of the site.
        "scope": "mirrored",
        # Tags re-fetched per run, longest-fetched first, so edits that touch no image arrive too.
        "refresh_per_run": 100,
    },
    "forums": {
        "enabled": False,
        # Short names of the forums to mirror (e.g. ["dis", "art"]); empty means every public forum.
        "forums": [],
        # Old pages of posts read again each run, going round every topic, so posts hidden since
        # they were mirrored (nothing else reports them) are marked. 0 turns this off.
        "audit_pages_per_run": 2,
    },
    "filters": {
        "enabled": False,
        # Filter ids to keep besides the system filters, the key owner's and the one in use.
        "ids": [],
    },
    "profiles": {
        "enabled": False,
        # Days before a profile (or a deleted account's 404) is asked for again.
        "refresh_days": 30.0,
        # At most this many stale profiles are refreshed per run, oldest first, so the profiles
        # fetched on the first night do not all fall due on one later night. New users always come.
        "refresh_per_run": 200,
    },
    "download": {
        "enabled": False,
        "representations": ["thumb", "full"],
        "concurrency": 4,
        # The file host's own pacing budget, retries included (retry rules come from [polite]).
        "requests_per_second": 4.0,
        "svg_originals": False,
        "gif_videos": False,
        # Where .part files wait when store.files is not a local folder.
        "partial_dir": "data/partial",
        # Seconds one attempt at one file may take, first byte to last; then it is a failed
        # attempt (retried by [polite], resuming its .part), so a trickling host cannot hold a worker.
        "file_deadline": 600.0,
    },
}

# The type of each key whose default is None; every other key holds the type of its default.
TYPES: dict[tuple[str, str], type] = {
    ("site", "filter_id"): int,
    ("site", "api_key"): str,
    ("store", "endpoint_url"): str,
}

# Environment variables that override a key, for cron jobs and containers.
ENVIRONMENT = {
    "MIRROR_BASE_URL": ("site", "base_url"),
    "MIRROR_FILTER_ID": ("site", "filter_id"),
    "MIRROR_DATABASE": ("store", "database"),
    "MIRROR_FILES": ("store", "files"),
}


class Secret:
    """A string that never shows itself in ``repr``, ``str`` or tracebacks."""

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('********')"

    __str__ = __repr__

    def __bool__(self) -> bool:
        return bool(self._value)


@dataclass
class Config:
    """The merged configuration: ``sections`` holds every key, with defaults filled in."""

    sections: dict[str, dict[str, Any]]
    api_key: Secret | None = None
    path: Path | None = None

    def __getitem__(self, section: str) -> dict[str, Any]:
        return self.sections[section]

    def to_toml(self) -> str:
        """The config as a TOML file that loads back to it (keys set to None are left out).

        JSON's strings, numbers, booleans and lists are also TOML's, so each value is written as
        JSON. For the commands a program starts in another process (tests, benchmarks, the demo).
        """
        lines = []
        for section, values in self.sections.items():
            lines.append(f"[{section}]")
            lines += [f"{key} = {json.dumps(value)}" for key, value in values.items() if value is not None]
        return "\n".join(lines) + "\n"

    @property
    def base_url(self) -> str:
        return self.sections["site"]["base_url"].rstrip("/")

    @property
    def database(self) -> Path:
        return Path(self.sections["store"]["database"])

    def enabled_resources(self) -> list[str]:
        return [name for name in RESOURCES if self.sections[name].get("enabled")]


def load_config(path: str | os.PathLike[str] | None = None, environ: dict[str, str] | None = None) -> Config:
    """Read ``path`` (or ``./mirror.toml`` when present), merge defaults and environment."""
    environ = os.environ if environ is None else environ
    file_path = Path(path) if path is not None else Path(DEFAULT_CONFIG_FILE)
    user: dict[str, Any] = {}
    if path is not None or file_path.exists():
        user = _read_toml(file_path)
    config = make_config(user, environ, source=str(file_path))
    config.path = file_path if user else None
    return config


def make_config(values: dict[str, Any], environ: dict[str, str] | None = None, *,
                source: str | None = None) -> Config:
    """A config from ``values`` (shaped like the TOML file) over the defaults, without reading a file.

    Every key given, in ``values`` or the environment, is checked on its own, so the one message a
    mistake gives names where it came from (``source``, or the variable) and which key it is.
    """
    sections = copy.deepcopy(DEFAULTS)
    for section, keys in values.items():
        _check_section(section, keys, source)
        for key, value in keys.items():
            sections[section][key] = _checked(section, key, value, source)
    for variable, (section, key) in ENVIRONMENT.items():
        if environ and environ.get(variable):
            value = from_environment(environ[variable], key_type(DEFAULTS, TYPES, section, key))
            sections[section][key] = _checked(section, key, value, f"environment {variable}")
    file_key = sections["site"].pop("api_key", None)
    key = (environ or {}).get("MIRROR_API_KEY") or file_key
    return Config(sections, Secret(key) if key else None)


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist; copy config.example.toml to start one") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"config file {path} is not valid TOML: {e}") from None


def _from(source: str | None, error: ConfigError) -> ConfigError:
    return ConfigError(f"{source}: {error}") if source else error


def _check_section(section: str, keys: Any, source: str | None) -> None:
    if section not in DEFAULTS:
        raise _from(source, ConfigError(f"[{section}]: unknown section{suggestion(section, list(DEFAULTS), '[{}]')}"))
    if not isinstance(keys, dict):
        raise _from(source, ConfigError(f"[{section}]: expected a table of keys, got {shown(keys)}"))


def _checked(section: str, key: str, value: Any, source: str | None) -> Any:
    """``value`` for ``[section] key`` once its name, type and rules are checked."""
    try:
        wanted = key_type(DEFAULTS, TYPES, section, key)
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
            ("polite", "give_up_after"), ("download", "concurrency"), ("download", "requests_per_second"),
            ("download", "file_deadline")}


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


def _base_url_problem(url: str) -> str | None:
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    if scheme not in ("http", "https") or not url.split("://", 1)[1].strip("/"):
        return f"must start with https:// and name the site, got {shown(redact(url))}"
    if scheme == "http" and not is_loopback(url):
        return ("http:// is only for a site on this machine (127.0.0.1, ::1, localhost); the site's rules "
                f"require https://, got {shown(redact(url))}")
    return None


def _representations_problem(names: list[Any]) -> str | None:
    from .philomena import REPRESENTATIONS

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


RULES: dict[str, Callable[[Any], str | None]] = {
    "site.base_url": _base_url_problem,
    "images.query": lambda q: None if q.strip() else 'must be a non-empty search query; use "*" for every image',
    "scope": _scope_problem,
    "download.representations": _representations_problem,
    "forums.forums": _list_of(str, "forum short names"),
    "filters.ids": _list_of(int, "filter numbers"),
}
