"""Which of an image's files is its original: the one the record's ``sha512_hash`` describes.

For most images that is ``full``. An SVG image is different (reference section 3: for
non-download URLs, svg becomes png): ``full`` and every sized representation are PNG renderings,
and the SVG itself, kept under the name ``svg``, is the original. The rule lives here once, in
Python for the downloader and in SQL for the download plan and the schema.
"""

from __future__ import annotations

# The name the SVG original is kept under; it is not a key of `representations` (see download.layout).
SVG_ORIGINAL = "svg"

# SQL: true when the representation name `{name}` is the original of the image `i` (by its `format`).
ORIGINAL_REPRESENTATION = "{name} = CASE WHEN i.format = 'svg' THEN 'svg' ELSE 'full' END"


def original_representation(fmt: str | None) -> str:
    """The representation name of the original file of an image in format ``fmt``."""
    return SVG_ORIGINAL if fmt == "svg" else "full"
