"""Where an image page was opened from: a place in a search, carried in the page's address so
that its previous and next (and the arrow keys) follow the search, not the ids."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlencode

__all__ = ["SearchPlace", "image_url", "place_of"]


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
