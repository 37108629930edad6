"""The records the API would have sent, built from the dump's tables (data-dumps.md section 4).

Each builder reads one batch of a staged table in id order, with what it joins, and returns
records in the API's field names and shapes, so the store keeps them exactly as it keeps what a
sync fetched. A field the dump does not carry is left out of the record, never guessed: the
image fields ``first_seen_at``, ``orig_size``, ``duration``, ``animated``, ``processed``,
``thumbnails_generated`` and ``spoilered``; a comment's or post's ``avatar``, ``edited_at`` and
``edit_reason``, and the ``author`` of an anonymous one; a topic's author; a tag's
``spoiler_image_uri`` and ``dnp_entries``. A column a dump lacks (``images.description`` before
2025) leaves its field out too. The API fills them when it next sends the record.

What the site computes from columns the dump has is computed as the site does:
``wilson_score``, ``representations`` and ``view_url`` (:mod:`mirror.philomena`), ``tag_count``,
``source_url``, a tag's namespace and its relations as slugs.
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .. import philomena
from ..philomena import display_key, split_namespace

__all__ = ["Batch", "Builder", "BUILDERS", "Reader", "dump_time", "image_stub", "message", "topic"]

Record = dict[str, Any]


def dump_time(value: str | None) -> str | None:
    """A PostgreSQL ``timestamp`` (``2026-08-13 01:02:03.456789``, UTC) as the API writes it."""
    if not value:
        return None
    return value[:19].replace(" ", "T") + "Z"


def _bool(value: str | None) -> bool | None:
    return None if value is None else value in ("t", "true", "1")


def _int(value: Any) -> int | None:
    if value is None or isinstance(value, int):
        return value
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _float(value: Any) -> float | None:
    try:
        return None if value is None else float(value)
    except (TypeError, ValueError):
        return None


@dataclass
class Batch:
    """The rows of one batch: ``records`` to write, ``bad`` rows (with the reason) to keep aside."""

    records: list[Record]
    bad: list[tuple[Record, str]]
    last: int | None  # the highest id read: the next batch starts after it


class Reader:
    """Reads staged rows as dicts, by column name; a column the dump lacks reads as absent."""

    def __init__(self, conn: sqlite3.Connection, columns: Mapping[str, tuple[str, ...]]) -> None:
        self.conn, self.columns = conn, columns

    def has(self, table: str) -> bool:
        return table in self.columns

    def page(self, table: str, after: int, limit: int) -> list[Record]:
        """Rows of ``table`` with ``id`` past ``after``, in id order."""
        if not self.has(table):
            return []
        cursor = self.conn.execute(f'SELECT * FROM "dump_{table}" WHERE id > ? ORDER BY id LIMIT ?', [after, limit])
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row)) for row in cursor]

    def by(self, table: str, column: str, low: int, high: int, order: str = "rowid") -> dict[int, list[Record]]:
        """Rows of ``table`` whose ``column`` is in ``low..high``, grouped by it, in ``order``."""
        if not self.has(table) or column not in self.columns[table]:
            return {}
        cursor = self.conn.execute(f'SELECT * FROM "dump_{table}" WHERE "{column}" BETWEEN ? AND ? ORDER BY {order}',
                                   [low, high])
        names = [d[0] for d in cursor.description]
        grouped: dict[int, list[Record]] = defaultdict(list)
        for row in cursor:
            item = dict(zip(names, row))
            grouped[item[column]].append(item)
        return grouped

    def names(self, table: str, ids: Iterable[Any], column: str = "name") -> dict[int, Any]:
        """``id -> column`` for these ids of ``table`` (users' names, tags' slugs)."""
        wanted = sorted({i for i in ids if isinstance(i, int)})
        if not wanted or not self.has(table) or column not in self.columns[table]:
            return {}
        found: dict[int, Any] = {}
        for start in range(0, len(wanted), 500):
            chunk = wanted[start:start + 500]
            found.update(self.conn.execute(f'SELECT id, "{column}" FROM "dump_{table}" WHERE id IN '
                                           f'({",".join("?" * len(chunk))})', chunk).fetchall())
        return found


def _valid(rows: list[Record], *required: str) -> tuple[list[Record], list[tuple[Record, str]]]:
    """Rows whose required columns hold whole numbers; the others, with the reason."""
    good, bad = [], []
    for row in rows:
        missing = [c for c in required if not isinstance(row.get(c), int)]
        if missing:
            bad.append((row, f"{', '.join(missing)}: null or not a whole number where the table needs one"))
        else:
            good.append(row)
    return good, bad


def _put(record: Record, row: Record, field: str, column: str, convert: Callable[[Any], Any] = lambda v: v) -> None:
    """``record[field]`` from ``row[column]`` when the dump has that column."""
    if column in row:
        record[field] = convert(row[column])


@dataclass(frozen=True)
class Builder:
    """Builds one resource's records from its staged table, a batch at a time."""

    resource: str  # the mirror's table
    table: str  # the dump's table the batch walks
    build: Callable[[Reader, list[Record], str], list[Record]]
    required: tuple[str, ...] = ("id",)

    def batch(self, reader: Reader, after: int, limit: int, file_root: str) -> Batch:
        rows = reader.page(self.table, after, limit)
        good, bad = _valid(rows, *self.required)
        last = max((r["id"] for r in rows if isinstance(r.get("id"), int)), default=None)
        return Batch(self.build(reader, good, file_root) if good else [], bad, last)


# Images ------------------------------------------------------------------------------------------

def build_images(reader: Reader, rows: list[Record], root: str) -> list[Record]:
    low, high = rows[0]["id"], rows[-1]["id"]
    taggings = reader.by("image_taggings", "image_id", low, high)
    tags = _tags_of(reader, taggings)
    sources = reader.by("image_sources", "image_id", low, high)
    intensities = reader.by("image_intensities", "image_id", low, high)
    hides = reader.by("image_hides", "image_id", low, high)
    merges = reader.by("image_duplicates", "image_id", low, high)
    uploaders = reader.names("users", (r.get("user_id") for r in rows))
    return [_image(row, [tags[t["tag_id"]] for t in taggings.get(row["id"], []) if t["tag_id"] in tags],
                   sources.get(row["id"], []), intensities.get(row["id"]), hides.get(row["id"]),
                   merges.get(row["id"]), uploaders, root) for row in rows]


def _tags_of(reader: Reader, taggings: Mapping[int, list[Record]]) -> dict[int, Record]:
    ids = sorted({t["tag_id"] for links in taggings.values() for t in links if isinstance(t["tag_id"], int)})
    found: dict[int, Record] = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        cursor = reader.conn.execute(f'SELECT id, name, slug, category FROM dump_tags WHERE id IN '
                                     f'({",".join("?" * len(chunk))})', chunk) if reader.has("tags") else []
        found.update({i: {"id": i, "name": n, "slug": s, "category": c} for i, n, s, c in cursor})
    return found


def _image(row: Record, tags: list[Record], sources: list[Record], intensities: list[Record] | None,
           hides: list[Record] | None, merges: list[Record] | None, uploaders: Mapping[int, str], root: str) -> Record:
    record: Record = {"id": row["id"]}
    _put(record, row, "created_at", "created_at", dump_time)
    _put(record, row, "updated_at", "updated_at", dump_time)
    for field, column, convert in _IMAGE_COLUMNS:
        _put(record, row, field, column, convert)
    record["tags"] = [t["name"] for t in tags]
    record["tag_ids"] = [t["id"] for t in tags]
    record["tag_count"] = len(tags)
    user_id = _int(row.get("user_id"))
    record["uploader"] = uploaders.get(user_id) if user_id is not None else None
    record["uploader_id"] = user_id
    if "upvotes" in row and "downvotes" in row:
        record["wilson_score"] = philomena.wilson_score(_int(row["upvotes"]) or 0, _int(row["downvotes"]) or 0)
    record["intensities"] = _corners(intensities[0]) if intensities else None
    urls = [s["source"] for s in sources if s.get("source") is not None]
    record["source_url"] = urls[0] if urls else ""
    record["source_urls"] = urls
    record.update(_urls(record, tags, root))
    reason = hides[0].get("reason") if hides else None
    target = _int(merges[0].get("target_id")) if merges else None
    record["deletion_reason"] = None if target is not None else reason
    record["duplicate_of"] = target
    record["hidden_from_users"] = bool(hides or merges or _bool(row.get("hidden_from_users")))
    return record


_IMAGE_COLUMNS: tuple[tuple[str, str, Callable[[Any], Any]], ...] = (
    ("width", "image_width", _int), ("height", "image_height", _int), ("size", "image_size", _int),
    ("mime_type", "image_mime_type", _text), ("format", "image_format", _text),
    ("aspect_ratio", "image_aspect_ratio", _float),
    ("name", "image_name", _text), ("sha512_hash", "image_sha512_hash", _text),
    ("orig_sha512_hash", "image_orig_sha512_hash", _text), ("score", "score", _int),
    ("upvotes", "upvotes", _int), ("downvotes", "downvotes", _int), ("faves", "favorites", _int),
    ("hides", "hides", _int), ("comment_count", "comment_count", _int), ("description", "description", _text),
)


def _corners(row: Record) -> dict[str, float | None]:
    return {corner: _float(row.get(f"{corner}_intensity")) for corner in ("nw", "ne", "sw", "se")}


def _urls(record: Record, tags: list[Record], root: str) -> Record:
    """``view_url`` and ``representations``, when the columns they are made of are there."""
    try:
        width, height, fmt = record["width"], record["height"], record["format"]
        created = record["created_at"]
        ordered = sorted(tags, key=lambda t: display_key(t["category"], t["name"] or ""))
        return {
            "view_url": philomena.view_url(record["id"], created, fmt, (t["slug"] or "" for t in ordered), root),
            "representations": philomena.representations(record["id"], created, width, height, fmt,
                                                         record.get("mime_type"), root),
        }
    except (KeyError, TypeError, AttributeError):
        return {}


def image_stub(record: Record) -> Record:
    """The 7-key record the API sends for a hidden image (less ``first_seen_at``, not in a dump)."""
    return {"id": record["id"], "created_at": record.get("created_at"), "updated_at": record.get("updated_at"),
            "duplicate_of": record.get("duplicate_of"), "deletion_reason": record.get("deletion_reason"),
            "hidden_from_users": True}


# Tags --------------------------------------------------------------------------------------------

def build_tags(reader: Reader, rows: list[Record], root: str) -> list[Record]:
    low, high = rows[0]["id"], rows[-1]["id"]
    aliased_to = reader.by("tag_aliases", "tag_id", low, high)
    aliases = reader.by("tag_aliases", "target_tag_id", low, high)
    implies = reader.by("tag_implications", "tag_id", low, high)
    implied_by = reader.by("tag_implications", "target_tag_id", low, high)
    related = [r.get("target_tag_id") for links in (*aliased_to.values(), *implies.values()) for r in links]
    related += [r.get("tag_id") for links in (*aliases.values(), *implied_by.values()) for r in links]
    slugs = reader.names("tags", related, "slug")

    def slugs_of(links: list[Record], column: str) -> list[str]:
        return sorted(slugs[r[column]] for r in links if r.get(column) in slugs)

    records = []
    for row in rows:
        record: Record = {"id": row["id"]}
        for field, column in (("name", "name"), ("slug", "slug"), ("description", "description"),
                              ("short_description", "short_description"), ("category", "category")):
            _put(record, row, field, column)
        _put(record, row, "images", "image_count", _int)
        if isinstance(row.get("name"), str):
            namespace, in_namespace = split_namespace(row["name"])
            record["namespace"], record["name_in_namespace"] = namespace, in_namespace
        target = [slugs[r["target_tag_id"]] for r in aliased_to.get(row["id"], []) if r["target_tag_id"] in slugs]
        record["aliased_tag"] = target[0] if target else None
        record["aliases"] = slugs_of(aliases.get(row["id"], []), "tag_id")
        record["implied_tags"] = slugs_of(implies.get(row["id"], []), "target_tag_id")
        record["implied_by_tags"] = slugs_of(implied_by.get(row["id"], []), "tag_id")
        records.append(record)
    return records


# Users, comments, galleries ----------------------------------------------------------------------

def build_users(reader: Reader, rows: list[Record], root: str) -> list[Record]:
    return [{"id": row["id"], "name": row.get("name")} for row in rows]


def message(row: Record, authors: Mapping[int, str]) -> Record:
    """A post, and the fields a comment shares with it: the author by name, unless anonymous
    (then unknown: the site's name for an anonymous author needs its secret salt)."""
    user_id = _int(row.get("user_id"))
    record: Record = {"id": row["id"], "user_id": user_id}
    if user_id is not None and user_id in authors:
        record["author"] = authors[user_id]
    _put(record, row, "body", "body")
    _put(record, row, "created_at", "created_at", dump_time)
    _put(record, row, "updated_at", "updated_at", dump_time)
    return record


def build_comments(reader: Reader, rows: list[Record], root: str) -> list[Record]:
    """Comments, each followed by the stub the API sends in its place when its image is hidden
    (every value null but the two ids), so that the row is kept whole and marked hidden."""
    authors = reader.names("users", (r.get("user_id") for r in rows))
    hidden = hidden_images(reader, {r["image_id"] for r in rows})
    records = []
    for row in rows:
        records.append({**message(row, authors), "image_id": row["image_id"]})
        if row["image_id"] in hidden:
            records.append({"id": row["id"], "image_id": row["image_id"], "user_id": None, "author": None,
                            "body": None, "created_at": None, "updated_at": None, "edited_at": None,
                            "edit_reason": None})
    return records


def hidden_images(reader: Reader, ids: Iterable[int]) -> set[int]:
    """Those of ``ids`` the site hides: deleted or merged, or marked hidden."""
    wanted = sorted(i for i in ids if isinstance(i, int))
    found: set[int] = set()
    for start in range(0, len(wanted), 500):
        chunk = wanted[start:start + 500]
        marks = ",".join("?" * len(chunk))
        for table, where in (("image_hides", "image_id"), ("image_duplicates", "image_id"),
                             ("images", "id")):
            if not reader.has(table):
                continue
            flag = " AND hidden_from_users IN ('t', 'true')" if table == "images" else ""
            found.update(i for (i,) in reader.conn.execute(
                f'SELECT {where} FROM "dump_{table}" WHERE {where} IN ({marks}){flag}', chunk))
    return found


def build_galleries(reader: Reader, rows: list[Record], root: str) -> list[Record]:
    creators = reader.names("users", (r.get("user_id") for r in rows))
    records = []
    for row in rows:
        record: Record = {"id": row["id"]}
        for field in ("title", "spoiler_warning", "description"):
            _put(record, row, field, field)
        _put(record, row, "thumbnail_id", "thumbnail_id", _int)
        user_id = _int(row.get("user_id"))
        record["creator"] = creators.get(user_id) if user_id is not None else None
        record["creator_id"] = user_id
        records.append(record)
    return records


def topic(row: Record, last_reply: str | None) -> Record:
    """A topic (its forum is the writer's context). ``last_replied_to_at`` is its newest post's
    time, as the site sets it on every reply; the author is unknown (not in a dump)."""
    record: Record = {"slug": row["slug"]}
    for field in ("title", "post_count", "view_count"):
        _put(record, row, field, field)
    for field in ("sticky", "locked"):
        _put(record, row, field, field, _bool)
    if last_reply:
        record["last_replied_to_at"] = last_reply
    return record


BUILDERS: tuple[Builder, ...] = (
    Builder("users", "users", build_users),
    Builder("tags", "tags", build_tags),
    Builder("images", "images", build_images),
    Builder("comments", "comments", build_comments, ("id", "image_id")),
    Builder("galleries", "galleries", build_galleries),
)
