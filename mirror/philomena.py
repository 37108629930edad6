"""The site's fixed vocabulary: what every Philomena board means by its names and limits.

Shared by the client, the store, the server (`mirror serve`), Datasette pages and the local
test site, so each fact is written once. Facts come from the reference (`philomena-api.md`)
and the site's sources named beside them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

from .dates import parse_utc

__all__ = ["SIZE_BOXES", "SIZES", "REPRESENTATIONS", "GIF_VIDEOS", "MAX_FILE_SIZE", "MIME_TYPES", "DISPLAY_CATEGORIES", "display_key",
           "NAMESPACES", "QUERY_NAMESPACES", "NAMESPACE_CATEGORIES", "SAFE", "SEXUAL", "GRIM", "GROSS", "RATINGS",
           "split_namespace", "ImgPath", "parse_img_path", "img_path", "date_path", "thumb_ext", "representations",
           "view_url", "wilson_score"]

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


def date_path(created_at: str) -> str:
    """``Y/M/D`` of an image's ``created_at`` in UTC, month and day not zero-padded."""
    created = parse_utc(created_at)
    return f"{created.year}/{created.month}/{created.day}"


def thumb_ext(fmt: str) -> str:
    """Non-download URLs of an SVG point at its PNG rendering."""
    return "png" if fmt == "svg" else fmt


def representations(image_id: int, created_at: str, width: int, height: int, fmt: str, mime_type: str | None,
                    root: str) -> dict[str, str]:
    """An image record's ``representations`` (image_view.ex ``thumb_urls``): a sized file only when
    the image exceeds that size's box, ``full.EXT`` otherwise; GIFs add their webm and mp4."""
    day, ext = date_path(created_at), thumb_ext(fmt)
    urls = {name: f"{root}/{img_path(name if width > w or height > h else 'full', day, image_id, ext)}"
            for name, (w, h) in SIZE_BOXES.items()}
    urls["full"] = f"{root}/{img_path('view', day, image_id, ext)}"
    if mime_type == "image/gif":
        for video in GIF_VIDEOS:
            urls[video] = f"{root}/{img_path('full', day, image_id, video)}"
    return urls


def view_url(image_id: int, created_at: str, fmt: str, slugs: Iterable[str], root: str) -> str:
    """``{root}/view/Y/M/D/{id}__{slugs}.{ext}``: ``slugs`` are the tags' in display order
    (:func:`display_key`); only ``a-z0-9_-+`` kept, cut to 151 characters."""
    joined = re.sub(r"[^a-z0-9_\-+]", "", "_".join(slugs))[:151]
    return f"{root}/{img_path('view', date_path(created_at), image_id, thumb_ext(fmt), joined)}"


def wilson_score(upvotes: int, downvotes: int) -> float | int:
    """The lower bound of the Wilson interval at z=2.57583 (search_index.ex), or the integer 0 with
    no upvotes, as the site computes an image's ``wilson_score``."""
    if upvotes <= 0:
        return 0
    n = float(upvotes + downvotes)
    p_hat = upvotes / n
    z, z2 = 2.57583, 6.634900189
    return (p_hat + z2 / (2 * n) - z * math.sqrt((p_hat * (1 - p_hat) + z2 / (4 * n)) / n)) / (1 + z2 / n)
