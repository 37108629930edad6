"""The checks the site makes on an upload, with its exact messages (reference section 7,
"Upload validation rules and exact messages").

Each check adds its message to a field; as in Ecto, the messages of one field come out newest
first (``solo`` gives ``["must contain at least one rating tag", "must contain at least 3 tags"]``).
The duplicate check runs only when everything else passed, as ``prepare_changes`` does.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from ...imaging import Analysis
from ...philomena import GRIM, GROSS, MAX_FILE_SIZE, SEXUAL

__all__ = ["Errors", "check_upload", "tag_names", "CORRUPT", "MAX_SIZE"]

Errors = dict[str, Any]

MAX_SIZE = MAX_FILE_SIZE
MAX_DESCRIPTION = 50_000
MAX_SOURCES = 15
CORRUPT = "contents corrupt, not recognized, or dimensions are too large to process"
BLANK = "can't be blank"
_URL = re.compile(r"\Ahttps?://")
ANALYSIS_FIELDS = ("image_width", "image_height", "image_size", "image_orig_size", "image_format", "image_mime_type",
                   "image_aspect_ratio", "image_duration", "image_orig_sha512_hash", "image_sha512_hash",
                   "uploaded_image", "image_is_animated")


def tag_names(tag_input: str) -> list[str]:
    """``tag_input`` split on commas, cleaned and de-duplicated; names over 255 bytes dropped."""
    seen: dict[str, None] = {}
    for part in tag_input.split(","):
        name = " ".join(part.strip().lower().split())
        if name and len(name.encode()) <= 255:
            seen.setdefault(name)
    return list(seen)


def check_upload(fields: Mapping[str, Any], analysis: Analysis | None, size: int, name: str,
                 resolve: Callable[[list[str]], list[str]], blacklist: tuple[str, ...]) -> Errors:
    """Every error the site would give, by field (empty when the upload may go ahead).

    ``analysis`` is None when no file came; ``resolve`` turns tag names into the names of the
    tags they are (aliases followed).
    """
    errors: Errors = {}

    def add(field: str, message: str) -> None:
        errors.setdefault(field, []).insert(0, message)

    _check_text(fields, add)
    _check_sources(fields.get("sources"), errors)
    _check_tags(resolve(tag_names(str(fields.get("tag_input") or ""))), blacklist, add)
    _check_file(analysis, size, name, add)
    return errors


def _check_text(fields: Mapping[str, Any], add: Callable[[str, str], None]) -> None:
    if len(str(fields.get("description") or "").encode()) > MAX_DESCRIPTION:
        add("description", f"should be at most {MAX_DESCRIPTION} byte(s)")
    source_url = fields.get("source_url")
    if source_url not in (None, "") and not _URL.match(str(source_url)):
        add("source_url", "has invalid format")


def _check_sources(sources: Any, errors: Errors) -> None:
    """``sources`` as the form sends it, ``{"0": {"source": url}, ...}``: each checked, then the count."""
    if not isinstance(sources, Mapping):
        return
    children = [sources[k] for k in sorted(sources, key=lambda k: int(k) if str(k).isdigit() else 0)]
    nested = []
    for child in children:
        url = str(child.get("source") or "") if isinstance(child, Mapping) else ""
        problems = []
        if len(url) > 255:
            problems.insert(0, "should be at most 255 character(s)")
        if not _URL.match(url):
            problems.insert(0, "has invalid format")
        nested.append({"source": problems} if problems else {})
    if any(nested):
        errors["sources"] = nested
    if len(children) > MAX_SOURCES:
        errors.setdefault("sources", []).insert(0, f"should have at most {MAX_SOURCES} item(s)")


def _check_tags(names: list[str], blacklist: tuple[str, ...], add: Callable[[str, str], None]) -> None:
    tags = set(names)
    safe, sexual, grim, gross = tags & {"safe"}, tags & set(SEXUAL), tags & set(GRIM), tags & set(GROSS)
    if len(tags) < 3:
        add("tag_input", "must contain at least 3 tags")
    for bad in sorted(tags & set(blacklist)):
        add("tag_input", f"contains forbidden tag `{bad}'")
    if not (safe or sexual or grim or gross):
        add("tag_input", "must contain at least one rating tag")
    if safe and (sexual or grim or gross):
        add("tag_input", "may not contain any other rating if safe")
    if len(sexual) > 1:
        add("tag_input", "may contain at most one sexual rating")
    if len(grim) > 1:
        add("tag_input", "may contain at most one grim rating")


def _check_file(analysis: Analysis | None, size: int, name: str, add: Callable[[str, str], None]) -> None:
    """The analysis fields: required, size, name, type, then dimensions (image_changeset's order)."""
    known = analysis is not None and analysis.supported
    if analysis is None:
        add("image", BLANK)
    for field in ANALYSIS_FIELDS:
        if not known and not (field == "image_mime_type" and analysis is not None):
            add(field, BLANK)
    if known and size > MAX_SIZE:
        add("image_size", f"must be less than or equal to {MAX_SIZE}")
    if len(name.encode()) > 255:
        add("image_name", "should be at most 255 byte(s)")
    if analysis is not None and not analysis.supported:
        add("image_mime_type", f"({analysis.mime_type}) is invalid")
    width, height = (analysis.width, analysis.height) if known else (0, 0)
    if width <= 0 or height <= 0:
        add("image", CORRUPT)
    elif (((width + 63) & -64) * 8 + 1024) * (height + 128) >= 2_147_483_647:
        add("image", "dimensions are too large to process")
