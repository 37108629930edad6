"""Which files an image has, where each comes from, and where it is kept.

A kept file's path is built from trusted parts only: the representation name (from our own
list), the image id (an integer column) and an extension from an allow-list keyed by the record's
``format``. Never from ``name`` (the uploader's file name) and never from a path in a URL, so a
hostile record cannot write outside the files root or over another image's file.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from ..philomena import GIF_VIDEOS, REPRESENTATIONS
from ..store.originals import SVG_ORIGINAL, original_representation

# format -> extension of its representations (non-download URLs of an SVG serve its PNG rendering).
FORMAT_EXTENSIONS = {"png": "png", "jpg": "jpg", "jpeg": "jpg", "gif": "gif", "svg": "png", "webm": "webm"}
# Files per directory: ids 0-999 go to directory 0, 1000-1999 to 1, and so on.
PER_DIRECTORY = 1000


def wanted(representations: Iterable[str], *, svg_originals: bool = False, gif_videos: bool = False) -> list[str]:
    """The representation names to keep: the configured ones plus the optional extras.

    Keeping ``full`` means keeping each image's original, which for an SVG image is the SVG (its
    ``full`` is a PNG rendering), so ``full`` brings the SVG originals along.
    """
    names = list(dict.fromkeys(representations))
    if gif_videos:
        names += [n for n in GIF_VIDEOS if n not in names]
    if (svg_originals or "full" in names) and SVG_ORIGINAL not in names:
        names.append(SVG_ORIGINAL)
    return names


def extension(representation: str, fmt: str | None) -> str | None:
    """The file extension for ``representation`` of an image in ``fmt``, or None if not allowed."""
    if representation in GIF_VIDEOS:
        return representation if fmt == "gif" else None
    if representation == SVG_ORIGINAL:
        return "svg" if fmt == "svg" else None
    if representation not in REPRESENTATIONS:
        return None
    return FORMAT_EXTENSIONS.get(fmt or "")


def file_path(image_id: int, representation: str, ext: str) -> str:
    """``full/12/12345.png``: relative to the files root, from trusted parts only."""
    if type(image_id) is not int or image_id < 0:
        raise ValueError(f"an image id must be a non-negative integer, got {image_id!r}")
    if representation not in REPRESENTATIONS + GIF_VIDEOS + (SVG_ORIGINAL,):
        raise ValueError(f"unknown representation {representation!r}")
    if ext not in set(FORMAT_EXTENSIONS.values()) | {"svg", "mp4"}:
        raise ValueError(f"extension {ext!r} is not in the allow-list")
    return f"{representation}/{image_id // PER_DIRECTORY}/{image_id}.{ext}"


def file_url(representations: Mapping[str, Any] | str | None, representation: str) -> str | None:
    """Where the site serves ``representation``, from the record's ``representations`` map.

    The SVG original is not in the map: it is the ``full`` (view) URL with the extension
    ``.svg`` (``/img/view/Y/M/D/{id}.svg`` for ``/img/view/Y/M/D/{id}.png``), which the file
    host maps to the kept SVG, as the most used downloader fetches it.
    """
    if isinstance(representations, str):
        representations = json.loads(representations)
    if not isinstance(representations, Mapping):
        return None
    if representation == SVG_ORIGINAL:
        full = representations.get("full")
        if not isinstance(full, str) or "/view/" not in full or not full.endswith(".png"):
            return None
        return full.removesuffix(".png") + ".svg"
    url = representations.get(representation)
    return url if isinstance(url, str) else None


def expected_hash(representation: str, record: Mapping[str, Any]) -> str | None:
    """The sha512 a file must have, where the record states one: the original's ``sha512_hash``.

    Nothing states the hash of a thumbnail or of an SVG's PNG renderings (its ``full`` among
    them); those are checked by :mod:`~mirror.download.kinds` instead.
    """
    if representation != original_representation(record.get("format")):
        return None
    value = record.get("sha512_hash")
    return value.lower() if isinstance(value, str) and value else None
