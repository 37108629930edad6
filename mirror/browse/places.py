"""Where an image page was opened from: a place in a search, carried in the page's address so
that its previous and next (and the arrow keys) follow the search, not the ids."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import unquote, urlencode

from datasette.utils import tilde_decode, tilde_encode

__all__ = ["SearchPlace", "forum_url", "image_url", "path_name", "place_of", "topic_url"]


@dataclass(frozen=True)
class SearchPlace:
    """A search (query, sort, whether images gone from the site are in it) and a position in it."""

    q: str
    sf: str | None
    sd: str | None
    include_gone: bool
    position: int

    def moved(self, by: int) -> SearchPlace:
        return replace(self, position=self.position + by)

    @property
    def steady(self) -> bool:
        """Whether the search gives the same order each time (a random sort does not)."""
        return not (self.sf or "").startswith("random")


def image_url(image_id: int, place: SearchPlace | None = None) -> str:
    """The image page's address, with the place in the search it is opened from."""
    if place is None:
        return f"/-/image/{image_id}"
    query = {"q": place.q, "sf": place.sf or "", "sd": place.sd or "", "pos": place.position,
             **({"del": "1"} if place.include_gone else {})}
    return f"/-/image/{image_id}?{urlencode(query)}"


def place_of(args: Any) -> SearchPlace | None:
    """The place in a search a request's arguments name, or None."""
    q, pos = args.get("q", ""), args.get("pos", "")
    if not q.strip() or not pos.isdigit():
        return None
    return SearchPlace(q, args.get("sf") or None, args.get("sd") or None, args.get("del") == "1", int(pos))


def forum_url(short_name: str) -> str:
    """A forum's page. Its short name is a record's text and may hold a ``/``: Datasette routes on the
    raw path and sends a ``%2F`` elsewhere, so names are tilde-encoded, as Datasette encodes its tables'."""
    return f"/-/forum/{tilde_encode(short_name)}"


def topic_url(short_name: str, slug: str) -> str:
    """A topic's page (both names encoded as in :func:`forum_url`)."""
    return f"/-/topic/{tilde_encode(short_name)}/{tilde_encode(slug)}"


def path_name(raw: str) -> str:
    """A name as a page's path carries it: tilde-encoded (:func:`forum_url`), or percent-encoded as typed."""
    return tilde_decode(unquote(raw))
