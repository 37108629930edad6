"""Configuration: a TOML file with built-in defaults and environment overrides.

Every key is optional. ``mirror.toml`` in the working directory is read when present; otherwise the
defaults below apply. The API key is read from ``MIRROR_API_KEY`` first and ``site.api_key``
second; it is held in a :class:`Secret` so that printing a config never shows it.
"""

from __future__ import annotations

import copy
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
        "rewalk_after_days": 30,
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
        "refresh_days": 30,
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

# Environment variables that override a key, for cron jobs and containers.
ENVIRONMENT = {
    "MIRROR_BASE_URL": ("site", "base_url"),
    "MIRROR_FILTER_ID": ("site", "filter_id"),
    "MIRROR_DATABASE": ("store", "database"),
    "MIRROR_FILES": ("store", "files"),
}


class ConfigError(Exception):
    """The configuration cannot be used; the message says which key and why."""


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
    config = make_config(user, environ)
    config.path = file_path if user else None
    return config


def make_config(values: dict[str, Any], environ: dict[str, str] | None = None) -> Config:
    """A config from ``values`` (shaped like the TOML file) over the defaults, without reading a file."""
    sections = _merge(values)
    for variable, (section, key) in ENVIRONMENT.items():
        if environ and environ.get(variable):
            sections[section][key] = environ[variable]
    _validate(sections)
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


def _merge(user: dict[str, Any]) -> dict[str, dict[str, Any]]:
    sections = copy.deepcopy(DEFAULTS)
    for section, values in user.items():
        if section not in sections:
            raise ConfigError(f"unknown section [{section}]; known sections: {', '.join(sections)}")
        if not isinstance(values, dict):
            raise ConfigError(f"[{section}] must be a table of keys")
        sections[section].update(values)
    return sections


def _validate(sections: dict[str, dict[str, Any]]) -> None:
    polite = sections["polite"]
    for key in ("requests_per_second", "timeout", "backoff"):
        polite[key] = _number(polite[key], f"polite.{key}", positive=True)
    for key in ("max_retries", "give_up_after"):
        polite[key] = int(_number(polite[key], f"polite.{key}", positive=key == "give_up_after"))
    base_url = sections["site"]["base_url"]
    if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
        raise ConfigError(f"site.base_url must start with https:// (or http:// for a local site), got {base_url!r}")
    filter_id = sections["site"]["filter_id"]
    if filter_id not in (None, ""):
        try:
            sections["site"]["filter_id"] = int(filter_id)
        except (TypeError, ValueError):
            raise ConfigError(f"site.filter_id must be a filter's number, got {filter_id!r}") from None
    else:
        sections["site"]["filter_id"] = None
    images = sections["images"]
    if not isinstance(images["query"], str) or not images["query"].strip():
        raise ConfigError("images.query must be a non-empty search query; use \"*\" for every image")
    images["refresh_overlap"] = int(_number(images["refresh_overlap"], "images.refresh_overlap"))
    _validate_forums_posts(sections)
    _validate_comments_galleries(sections)
    _validate_download(sections["download"])
    _validate_tags_filters_profiles(sections)


def _validate_download(download: dict[str, Any]) -> None:
    from .download.layout import REPRESENTATIONS

    names = download["representations"]
    if isinstance(names, str) or not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise ConfigError(f"download.representations must be a list of names, got {names!r}")
    unknown = [n for n in names if n not in REPRESENTATIONS]
    if unknown:
        raise ConfigError(f"download.representations: unknown {', '.join(map(repr, unknown))}; "
                          f"known: {', '.join(REPRESENTATIONS)} (webm/mp4 of GIFs: gif_videos = true; "
                          "SVG originals: svg_originals = true)")
    download["concurrency"] = int(_number(download["concurrency"], "download.concurrency", positive=True))
    download["requests_per_second"] = _number(download["requests_per_second"], "download.requests_per_second",
                                              positive=True)
    download["file_deadline"] = _number(download["file_deadline"], "download.file_deadline", positive=True)


def _validate_tags_filters_profiles(sections: dict[str, dict[str, Any]]) -> None:
    _check_scope(sections, "tags")
    tags = sections["tags"]
    tags["refresh_per_run"] = int(_number(tags["refresh_per_run"], "tags.refresh_per_run"))
    ids = sections["filters"]["ids"]
    if not isinstance(ids, list) or not all(type(i) is int for i in ids):
        raise ConfigError(f"filters.ids must be a list of filter numbers, got {ids!r}")
    profiles = sections["profiles"]
    profiles["refresh_days"] = _number(profiles["refresh_days"], "profiles.refresh_days")
    profiles["refresh_per_run"] = int(_number(profiles["refresh_per_run"], "profiles.refresh_per_run"))


def _check_scope(sections: dict[str, dict[str, Any]], name: str) -> None:
    scope = sections[name]["scope"]
    if scope not in ("mirrored", "all"):
        raise ConfigError(f"{name}.scope must be \"mirrored\" or \"all\", got {scope!r}")


def _validate_comments_galleries(sections: dict[str, dict[str, Any]]) -> None:
    for name in ("comments", "galleries"):
        _check_scope(sections, name)
        section = sections[name]
        section["refresh_overlap"] = int(_number(section["refresh_overlap"], f"{name}.refresh_overlap"))
    comments = sections["comments"]
    comments["audit_per_run"] = int(_number(comments["audit_per_run"], "comments.audit_per_run"))
    galleries = sections["galleries"]
    galleries["rewalk_after_days"] = _number(galleries["rewalk_after_days"], "galleries.rewalk_after_days")
    galleries["rewalk_per_run"] = int(_number(galleries["rewalk_per_run"], "galleries.rewalk_per_run"))


def _validate_forums_posts(sections: dict[str, dict[str, Any]]) -> None:
    forums = sections["forums"]["forums"]
    if isinstance(forums, str) or not isinstance(forums, list) or not all(isinstance(f, str) for f in forums):
        raise ConfigError(f"forums.forums must be a list of forum short names, got {forums!r}")
    sections["forums"]["audit_pages_per_run"] = int(_number(sections["forums"]["audit_pages_per_run"],
                                                            "forums.audit_pages_per_run"))
    posts = sections["posts"]
    posts["refresh_overlap"] = int(_number(posts["refresh_overlap"], "posts.refresh_overlap"))


def _number(value: Any, name: str, positive: bool = False) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be a number, got {value!r}") from None
    if number < 0 or (positive and number == 0):
        raise ConfigError(f"{name} must be {'greater than 0' if positive else 'at least 0'}, got {value!r}")
    return number
