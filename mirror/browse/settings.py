"""What the browser plugin reads from Datasette's metadata: the mirror database and the site."""

from __future__ import annotations

from functools import cache
from importlib.resources import files
from typing import Any

from .metadata import PLUGIN

__all__ = ["database_name", "site_address", "css"]


def _config(datasette: Any) -> dict[str, Any]:
    return datasette.plugin_config(PLUGIN) or {}


def database_name(datasette: Any) -> str:
    """The mirror database: as configured (``mirror browse`` does), else the first one attached."""
    return _config(datasette).get("database") or next(name for name in datasette.databases if name != "_internal")


def site_address(datasette: Any) -> str:
    """The site the images came from, for links to their pages there."""
    return (_config(datasette).get("site") or "https://derpibooru.org").rstrip("/")


@cache
def css() -> str:
    return (files("mirror.browse") / "booru.css").read_text(encoding="utf-8")
