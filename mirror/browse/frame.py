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
    site = site_address(datasette)
    return BoardFrame(site_name(site), site, MENU, datasette.urls.database(database_name(datasette)), TABLES_PATH)
