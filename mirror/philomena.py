"""The site's fixed vocabulary: what every Philomena board means by its names and limits.

Shared by the client, the store, the server (`mirror serve`), Datasette pages and the local
test site, so each fact is written once. Facts come from the reference (`philomena-api.md`)
and the site's sources named beside them.
"""

from __future__ import annotations

__all__ = ["SIZES", "REPRESENTATIONS", "GIF_VIDEOS", "MAX_FILE_SIZE", "MIME_TYPES", "DISPLAY_CATEGORIES", "display_key"]

# The sized representations Philomena names (reference section 3), smallest first, then `full`.
SIZES = ("thumb_tiny", "thumb_small", "thumb", "small", "medium", "large", "tall")
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
