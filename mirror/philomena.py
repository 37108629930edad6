"""The site's fixed vocabulary: what every Philomena board means by its names and limits.

Shared by the client, the store, the server (`mirror serve`), Datasette pages and the local
test site, so each fact is written once. Facts come from the reference (`philomena-api.md`)
and the site's sources named beside them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["SIZE_BOXES", "SIZES", "REPRESENTATIONS", "GIF_VIDEOS", "MAX_FILE_SIZE", "MIME_TYPES", "DISPLAY_CATEGORIES", "display_key",
           "NAMESPACES", "QUERY_NAMESPACES", "NAMESPACE_CATEGORIES", "SAFE", "SEXUAL", "GRIM", "GROSS", "RATINGS",
           "split_namespace", "ImgPath", "parse_img_path", "img_path"]

# The sized representations Philomena names (reference section 3), smallest first, then `full`,
# with the box each is scaled into (a picture no larger than a box has no file of that size: the
# record names `full` for it).
SIZE_BOXES = {
    "thumb_tiny": (50, 50),
    "thumb_small": (150, 150),
    "thumb": (250, 250),
    "small": (320, 240),
    "medium": (800, 600),
    "large": (1280, 1024),
    "tall": (1024, 4096),
}
SIZES = tuple(SIZE_BOXES)
REPRESENTATIONS = (*SIZES, "full")
# The webm and mp4 transcodes the site makes of every GIF.
GIF_VIDEOS = ("webm", "mp4")

# The largest file the site accepts for an image (lib/philomena/images/image.ex: 125 MiB).
MAX_FILE_SIZE = 131_072_000

# The media type of a file by the extension the site gives it.
MIME_TYPES = {
    "png": "image/png",
    "jpg": "image/jpeg",
    "gif": "image/gif",
    "svg": "image/svg+xml",
    "webm": "video/webm",
    "mp4": "video/mp4",
}

# Tag.display_order: these categories first, in this order, then everything else; then by name.
DISPLAY_CATEGORIES = (
    "error", "rating", "origin", "character", "oc", "species", "body-type",
    "content-fanmade", "content-official", "spoiler",
)


def display_key(category: str | None, name: str) -> tuple:
    """Sort key reproducing Tag.display_order: the order the site lists an image's tags in."""
    return tuple(category != c for c in DISPLAY_CATEGORIES) + (name,)


# Tag namespaces (lib/philomena/tags/tag.ex): ``artist:foo`` is in the namespace ``artist``.
NAMESPACES = (
    "artist", "art pack", "ask", "blog", "colorist", "comic", "commissioner", "editor", "fanfic",
    "oc", "parent", "parents", "photographer", "series", "species", "spoiler", "video",
)
# The query parser normalises the spaces around a colon for two names more.
QUERY_NAMESPACES = frozenset(NAMESPACES) | {"musician", "album"}
# The category a namespace gives a new tag.
NAMESPACE_CATEGORIES = {
    "artist": "origin", "colorist": "origin", "editor": "origin", "photographer": "origin",
    "oc": "oc", "spoiler": "spoiler",
    "art pack": "content-fanmade", "comic": "content-fanmade", "fanfic": "content-fanmade",
    "series": "content-fanmade", "video": "content-fanmade",
}
# The rating tags (reference section 7): an image has one, safe alone, at most one of each group.
SAFE = ("safe",)
SEXUAL = ("suggestive", "questionable", "explicit")
GRIM = ("semi-grimdark", "grimdark")
GROSS = ("grotesque",)
RATINGS = (*SAFE, *SEXUAL, *GRIM, *GROSS)


def split_namespace(name: str) -> tuple[str | None, str]:
    """`artist:foo` -> ("artist", "foo"); names without a known namespace have none."""
    prefix, sep, rest = name.partition(":")
    if sep and prefix in NAMESPACES and rest:
        return prefix, rest
    return None, name


# The paths below ``/img/`` the site serves files at (reference section 3): a view or download of
# the original, slugged or not (``view/2024/1/2/123__safe_pony.png``), and a representation
# (``2024/1/2/123/thumb.png``). Month and day are not zero-padded.
_VIEW_PATH = re.compile(r"(view|download)/(\d+)/(\d+)/(\d+)/(\d+)(?:__[^/]*)?\.([a-z0-9]+)")
_SIZED_PATH = re.compile(r"(\d+)/(\d+)/(\d+)/(\d+)/([a-z_]+)\.([a-z0-9]+)")


@dataclass(frozen=True)
class ImgPath:
    """A file path below ``/img/``: ``kind`` is ``view``, ``download`` or a representation name."""

    kind: str
    day: str  # "Y/M/D"
    image_id: int
    ext: str

    @property
    def canonical(self) -> str:
        """The path the file is fetched from: a view's or download's without its slug, as a view."""
        if self.kind in ("view", "download"):
            return img_path("view", self.day, self.image_id, self.ext)
        return img_path(self.kind, self.day, self.image_id, self.ext)


def parse_img_path(path: str) -> ImgPath | None:
    """The parts of a path below ``/img/`` (without that prefix), or None when it names no file."""
    if match := _VIEW_PATH.fullmatch(path):
        kind, y, m, d, image_id, ext = match.groups()
    elif match := _SIZED_PATH.fullmatch(path):
        y, m, d, image_id, kind, ext = match.groups()
    else:
        return None
    return ImgPath(kind, f"{y}/{m}/{d}", int(image_id), ext)


def img_path(kind: str, day: str, image_id: int, ext: str, slug: str | None = None) -> str:
    """The path below ``/img/`` of an image's file: the inverse of :func:`parse_img_path`."""
    if kind in ("view", "download"):
        return f"{kind}/{day}/{image_id}{'' if slug is None else '__' + slug}.{ext}"
    return f"{day}/{image_id}/{kind}.{ext}"
