"""Columns SQLite makes from the others: an image's ``representations``, from its ``view_url``,
and its SHA-512 hashes, from their bytes.

An image record names eight files (``thumb_tiny`` ... ``full``, a GIF's ``webm`` and ``mp4`` too),
some 500 bytes a record, a fifth of an image's row, and all of them follow from its view URL (the
files' host and folder, its upload day), its size and its format, by the site's own rule
(``image_view.ex`` ``thumb_urls``, :func:`mirror.philomena.representations`). So ``representations`` is a virtual generated column:
SQLite writes it on read by that rule, unless ``representations_kept`` holds the value, which
the writer stores only for a record the rule does not give (another host for thumbnails, a file
the site never made; ``'null'`` for none at all; ``'sized'`` for the older records, whose every
size names a file of its own). Each write is read back and compared, as ``raw`` is (:mod:`.raw_rebuilt`).

An image's ``sha512_hash`` and ``orig_sha512_hash`` are 128 hexadecimal digits as the site sends
them, 64 bytes as ``sha512_hash_bytes`` and ``orig_sha512_hash_bytes`` keep them, which SQLite
writes out as the text again on read (some 0.7 GB of a whole board's 3.5 million images, the
index on the hash included). A value that is not 128 lower-case hexadecimal digits (upper case, another
length, not a hash at all) is kept in that column as the text received, and read back as it is.
The hash's index is on the bytes: a search by hash looks them up (:class:`mirror.search.compile.Digest`).

The record's own ``representations`` is kept in the rule's order (the sizes, ``full``, the
videos, then any other name as received): a JSON object's keys have no order, and the site's
is its hash order, which differs between releases.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..philomena import GIF_VIDEOS, SIZE_BOXES
from .records import to_json

__all__ = ["DERIVED", "DIGESTS", "SIZED", "file_root", "stored_name", "stored_type", "derived_sql", "has_representation_sql",
           "made_by_rule_sql", "kept_value", "kept_as", "digest_kept", "digest_bytes", "ordered_representations"]

DIGESTS = {"sha512_hash": "sha512_hash_bytes", "orig_sha512_hash": "orig_sha512_hash_bytes"}
# table -> {column made by SQLite: the column that keeps its value where the rule does not give it}
DERIVED: dict[str, dict[str, str]] = {"images": {"representations": "representations_kept", **DIGESTS}}

_ORDER = (*SIZE_BOXES, "full", *GIF_VIDEOS)
_DIGEST = re.compile(r"[0-9a-f]{128}")
# Kept for an image whose every size names a file of its own, as the site's records did until a
# release that names ``full`` for a picture no larger than a size's box (the rule above).
SIZED = "sized"


def stored_name(table: str, column: str) -> str:
    """The column a writer stores ``column``'s value in."""
    return DERIVED.get(table, {}).get(column, column)


def stored_type(table: str, column: str) -> str:
    """The SQL type of the column that keeps ``column``'s value: a hash's holds bytes or text."""
    return "ANY" if column in DIGESTS else "TEXT"


def derived_sql(table: str, column: str) -> str:
    """The SQL of ``column``: the value kept, else the one the rule makes.

    A hash is its bytes in lower-case hexadecimal, or the text kept where it is not those. For an
    image's files, only columns no stub or file check rewrites are read (not ``created_at``: a stub may move it):
    the folder, the upload day and the id come from the view URL, ``ROOT/view/Y/M/D/ID__....EXT``."""
    if column in DIGESTS:
        kept = DIGESTS[column]
        return f"CASE WHEN typeof({kept}) = 'blob' THEN lower(hex({kept})) ELSE {kept} END"
    assert (table, column) == ("images", "representations")
    view = "instr(view_url, '/view/')"
    root = f"substr(view_url, 1, {view} - 1)"
    after = f"substr(view_url, {view} + 6)"
    name_at = f"coalesce(nullif(instr({after}, '/' || id || '__'), 0), instr({after}, '/' || id || '.'))"
    day = f"substr({after}, 1, {name_at} - 1)"
    ext = "CASE format WHEN 'svg' THEN 'png' ELSE format END"
    folder = f"{root} || '/' || {day} || '/' || id || '/'"
    every = "representations_kept IS 'sized'"
    sized = ", ".join(f"'{name}', {folder} || CASE WHEN {every} OR width > {w} OR height > {h} THEN '{name}' "
                      f"ELSE 'full' END || '.' || {ext}" for name, (w, h) in SIZE_BOXES.items())
    full = f"'full', {root} || '/view/' || {day} || '/' || id || '.' || {ext}"
    videos = ", ".join(f"'{video}', {folder} || 'full.{video}'" for video in GIF_VIDEOS)
    made = (f"CASE WHEN {view} > 0 AND {name_at} > 1 THEN json_patch(json_object({sized}, {full}), "
            f"CASE WHEN mime_type = 'image/gif' THEN json_object({videos}) ELSE '{{}}' END) END")
    return f"CASE WHEN representations_kept IS NULL OR {every} THEN {made} " \
           f"WHEN representations_kept != 'null' THEN representations_kept END"


def has_representation_sql(alias: str, name: str) -> str:
    """SQL true where image row ``alias`` names a file ``name`` (an SQL text expression): from the rule
    where it made the column, so a scan of every image does not have SQLite make every column."""
    return (f"CASE WHEN {alias}.representations_kept IS NULL OR {alias}.representations_kept = '{SIZED}' "
            f"THEN {alias}.view_url LIKE '%/view/%' AND ({made_by_rule_sql(alias, name)}) "
            f"ELSE json_extract({alias}.representations, '$.\"' || {name} || '\"') IS NOT NULL END")


def made_by_rule_sql(alias: str, name: str) -> str:
    """SQL true where the rule gives image row ``alias`` a file ``name`` (its view URL being one the
    rule reads): every size and ``full``, and a GIF's videos."""
    made = ", ".join(f"'{n}'" for n in (*SIZE_BOXES, "full"))
    videos = ", ".join(f"'{n}'" for n in GIF_VIDEOS)
    return f"{name} IN ({made}) OR ({name} IN ({videos}) AND {alias}.mime_type = 'image/gif')"


def kept_value(column: str, columns: Mapping[str, Any]) -> str | bytes | None:
    """What the column keeping ``column`` holds for an image row of ``columns`` (their typed
    values): a hash's bytes (the text where it is not a hash in lower case); for the files, None
    where the rule gives the ``representations`` column as it is."""
    if column in DIGESTS:
        return digest_kept(columns.get(column))
    value = columns.get("representations")
    if value is None:
        return None if _made(columns) is None else "null"  # read as NULL: no representations, none made
    if _made(columns) == value:
        return None
    return SIZED if _made(columns, every_size=True) == value else value


def kept_as(column: str, value: Any) -> Any:
    """What the column keeping ``column`` holds for SQLite to give back ``value`` as it is: the
    value itself (``'null'`` for the files' None, which the rule would fill in)."""
    return "null" if value is None and column not in DIGESTS else value


def digest_kept(value: Any) -> Any:
    """What keeps a hash ``value``: its bytes, or the value itself where it is not a hash in lower case."""
    return digest_bytes(value) or value


def digest_bytes(value: Any) -> bytes | None:
    """The bytes of a hash written as 128 lower-case hexadecimal digits; None for anything else."""
    return bytes.fromhex(value) if isinstance(value, str) and _DIGEST.fullmatch(value) else None


def file_root(url: Any) -> str | None:
    """Where an image's files are served from (the site's ``IMAGE_URL_ROOT``): its view or full URL
    up to ``/view/``; None for anything else."""
    return url.partition("/view/")[0] if isinstance(url, str) and "/view/" in url else None


def _made(columns: Mapping[str, Any], *, every_size: bool = False) -> str | None:
    """The ``representations`` the rule makes of these columns, as SQLite would write them."""
    view_url, image_id = columns.get("view_url"), columns.get("id")
    if not isinstance(view_url, str) or "/view/" not in view_url or type(image_id) is not int:
        return None
    root, _, after = view_url.partition("/view/")
    place = after.find(f"/{image_id}__")
    place = place if place >= 0 else after.find(f"/{image_id}.")
    if place < 1:
        return None
    day, fmt, width, height = after[:place], columns.get("format"), columns.get("width"), columns.get("height")
    if not isinstance(fmt, str) or type(width) is not int or type(height) is not int:
        return "unmade"  # SQLite makes something of these, which is kept apart from the value
    ext = "png" if fmt == "svg" else fmt
    folder = f"{root}/{day}/{image_id}/"
    urls = {name: f"{folder}{name if every_size or width > w or height > h else 'full'}.{ext}"
            for name, (w, h) in SIZE_BOXES.items()}
    urls["full"] = f"{root}/view/{day}/{image_id}.{ext}"
    if columns.get("mime_type") == "image/gif":
        urls.update((video, f"{folder}full.{video}") for video in GIF_VIDEOS)
    return to_json(urls)


def ordered_representations(record: Mapping[str, Any]) -> Mapping[str, Any]:
    """``record`` with its ``representations`` in the rule's order (the record itself when they are)."""
    found = record.get("representations")
    if not isinstance(found, dict):
        return record
    ordered = {name: found[name] for name in _ORDER if name in found}
    ordered.update((name, url) for name, url in found.items() if name not in ordered)
    if list(ordered) == list(found):
        return record
    return {**record, "representations": ordered}
