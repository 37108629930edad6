"""Configs pointing at the local site, syncs run in-process, and the site's own listings walked
independently of the crawlers: the helpers most test modules share."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import NamedTuple

import httpx

from mirror.commands import runs
from mirror.config import Config, make_config
from mirror.localsite.http.server import LoopbackServer, SiteServer
from mirror.store import open_database

# Fast pacing for the local site; politeness is tested on its own with the real limits.
FAST = {"requests_per_second": 200, "backoff": 0.05, "max_retries": 8, "give_up_after": 12, "timeout": 5,
        "searches_per_10s": 2000}


def site_config(site: SiteServer, tmp_path: Path, *, polite: dict | None = None, api_key: str | None = None,
                **sections) -> Config:
    values = {
        # Like an archivist, the tests mirror through the filter that hides nothing.
        "site": {"base_url": site.url, "user_agent": "tests",
                 "filter_id": site.editor.everything_filter_id if hasattr(site, "editor") else None,
                 "api_key": api_key},
        "polite": {**FAST, **(polite or {})},
        "store": {"database": str(tmp_path / "mirror.db"), "files": str(tmp_path / "files")},
    }
    for name, options in sections.items():
        values[name] = options
    return make_config(values)


def changed(config: Config, **sections: dict) -> Config:
    """``config`` with some keys changed, section by section: ``changed(config, store={"files": ...})``."""
    return dataclasses.replace(config, **{name: dataclasses.replace(getattr(config, name), **values)
                                          for name, values in sections.items()})


def write_config(config: Config, path: Path) -> Path:
    """The same config as a TOML file, for the CLI in a subprocess."""
    path.write_text(config.to_toml())
    return path


def sync(config: Config, names=("images",)):
    db = open_database(config.database)
    return asyncio.run(runs.sync(config, db, list(names)))[0], db


def site_pages(site: SiteServer, path: str, key: str, **params) -> list:
    """Every record a list endpoint of the site serves, walked by page number (Everything filter),
    independently of the crawlers' own walks."""
    records, page = [], 1
    with httpx.Client(base_url=site.api_url) as http:
        while True:
            query = {"per_page": 50, "page": page, "filter_id": site.editor.everything_filter_id, **params}
            body = http.get(path, params=query).json()
            records += body[key]
            if len(body[key]) < 50 or page * 50 >= body.get("total", page * 50 + 1):
                return records
            page += 1


def site_images(site: SiteServer, query: str = "*", **extra) -> list[dict]:
    """Every image the site returns for ``query`` (hidden ones as stubs)."""
    return site_pages(site, "/search/images", "images", q=query, sf="id", sd="asc", **{"del": "1"}, **extra)


# Every resource a full mirror keeps; `mirror serve` answers them all.
RESOURCES = ("images", "tags", "comments", "galleries", "forums", "posts", "filters", "profiles")


def mirror_config(site, tmp_path: Path, filter_id: int) -> Config:
    """A config that mirrors every resource of ``site`` (whole scopes) and downloads the files."""
    enabled = {name: {"enabled": True, **({"scope": "all"} if name in ("comments", "galleries", "tags") else {})}
               for name in RESOURCES}
    config = site_config(site, tmp_path, download={"enabled": True, "requests_per_second": 500,
                                                   "partial_dir": str(tmp_path / "partial")}, **enabled)
    return changed(config, site={"filter_id": filter_id})


class Archive(NamedTuple):
    """A finished mirror and `mirror serve` answering from it."""

    config: Config
    db: object  # the mirror's sqlite_utils Database
    served: LoopbackServer
    everything: int  # the Everything filter's id: it hides nothing


LONG_TOPIC = 2  # the generated topic with 80 posts (two pages), in forum "art"


def synced_board(tmp_path: Path, *, seed: int, images: int) -> Config:
    """A mirror of every resource of a board the local site generates, synced once with its files
    (the site stopped after: what serve and browse answer from)."""
    from mirror.localsite.board.editor import BoardEditor

    with SiteServer(BoardEditor.generate(seed=seed, images=images)) as site:
        config = mirror_config(site, tmp_path, site.editor.everything_filter_id)
        sync(config, RESOURCES)
    return config
