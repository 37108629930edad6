"""The frame every board page is drawn in (``_booru_base.html``): the mirrored site's name and the
board's menu at the top, where Datasette draws its crumbs, and the board's footer where Datasette
says what powers it. Datasette's own pages (tables, rows, SQL) keep Datasette's frame."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from .front_page import MENU, TABLES_PATH
from .settings import database_name, site_address

__all__ = ["BoardFrame", "board_frame"]


@dataclass(frozen=True)
class BoardFrame:
    """What the frame shows: the site's name and address, the menu, and where Datasette's pages are."""

    name: str
    site: str
    menu: list[tuple[str, str]]
    database_url: str
    tables_path: str


def site_name(site: str) -> str:
    """The mirrored site as a reader knows it: its host name (``derpibooru.org``)."""
    return urlsplit(site).netloc or site


def board_frame(datasette: Any) -> BoardFrame:
    """The frame of ``datasette``'s board pages. It is asked for on every page Datasette draws, its
    own too (the plugin loads in any Datasette), so a Datasette with no database still draws."""
    site = site_address(datasette)
    try:
        database_url = datasette.urls.database(database_name(datasette))
    except StopIteration:  # no database but Datasette's own
        database_url = TABLES_PATH
    return BoardFrame(site_name(site), site, MENU, database_url, TABLES_PATH)
