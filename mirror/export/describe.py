"""What DEST holds, said in DEST: a ``README.md`` that is a dataset card, and a ``datapackage.json``.

Someone handed the folder (a dataset on a hub, a bucket shared with a colleague) learns from them
what each table and column is, and where it came from, without this program. The README is a
Hugging Face dataset card, as machine learning's booru sets (Danbooru 2021, 2023) are published:
YAML front matter with a config per table (its live Parquet files, so ``datasets.load_dataset``
reads it, after a ``--compact`` too) and each table's features, then the tables and columns in
prose. Its licence is left for the archivist: the board's terms and the uploaders' rights are theirs
to state, not the program's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from .tables import APPENDED, COMPARED, EXPORT_TABLES, RECORDS, ExportTable

__all__ = ["describe_files"]

# What a column means, by (table, column) first, then by column alone.
COLUMN_NOTES = {
    ("history", "id"): "The row's number in the mirror's history (its own numbering, not an id on the site).",
    ("image_tag_changes", "id"): "The row's number in the mirror's tag changes, in rows exported before the mirror "
                                 "stopped numbering them (schema 0045); null since. A change is known by history_id "
                                 "and tag_id, which order the changes of one moment as id did.",
    ("history", "resource"): "The table of the record changed (images, tags, comments ...).",
    ("history", "record_key"): "The record's key as text: its id, a forum's short name, a topic's "
                               '["forum", "slug"].',
    ("history", "run_id"): "The mirror's run that saw the change (its own numbering).",
    ("history", "seen_at"): "When the change was made as far as the mirror knows: when a sync saw it, or, for "
                            "the site's own changes from its dump (site_tags, site_source), when the site made it.",
    ("history", "event"): "What happened: first_seen, changed, counters, hidden, deleted, merged, shown, destroyed, "
                          "gone, emptied, used, gallery_images, site_tags, site_source. A run that filled an empty "
                          "table (a first sync, a dump's import) has no first_seen row for the records it first "
                          "saw: the mirror keeps them as one count; a record's first version says when it was seen.",
    ("history", "user_id"): "For the site's own changes from its dump: the site's user who made it.",
    ("image_tag_changes", "history_id"): "The history row (history.id) the change belongs to.",
    ("image_tag_changes", "seen_at"): "As history.seen_at.",
    ("image_tag_changes", "run_id"): "As history.run_id.",
    "valid_from": "When this version began on the board, as the mirror's /as-of/ dates it: the time of the change "
                  "that began it (when a sync saw it, or the site's own time for its dump's changes), or the "
                  "record's created_at for its first version; null: in force before anything the history says.",
    "seen_at": "When the mirror held this version (UTC): the sync that saw it; for the site's own changes, the run "
               "that read its dump; for tables without a record time, when an export first found the row.",
    "id": "The record's id on the site.",
    "hidden_from_users": "Hidden, deleted or merged on the site; the row keeps the last full content the mirror saw.",
    "duplicate_of": "The image this one was merged into.",
    "deletion_reason": "Why the site deleted the image.",
    "tags": "Tag names.",
    "tag_ids": "Tag ids, in the order of tags.",
    "representations": "URLs of the image's files by size.",
    "intensities": "Corner intensities the site computed (reverse search).",
    "sha512_hash": "SHA-512 of the file as the site serves it, as 128 hex digits (text, as the API sends it).",
    "orig_sha512_hash": "SHA-512 of the file as uploaded, as 128 hex digits (text, as the API sends it).",
    "changes": 'JSON {"field": [old, new], ...}; null for first_seen.',
    "change": "+ added, - removed.",
}

ORIGIN = {
    RECORDS: "The site's API (/api/v1/json), as `mirror sync` read it, or the site's public dump; each past "
               "version rebuilt from the mirror's history, as its /as-of/ answers.",
    APPENDED: "The mirror's own history of what it saw change, and the site's own tag and source history from "
              "its public dump.",
    COMPARED: "The site's public dump (gallery_images: the API's gallery walks), compared whole by each export.",
}

FRICTIONLESS = ((pa.types.is_integer, "integer"), (pa.types.is_floating, "number"), (pa.types.is_boolean, "boolean"),
                (pa.types.is_timestamp, "datetime"), (pa.types.is_list, "array"), (pa.types.is_struct, "object"))


def note(table: str, column: str) -> str:
    """What ``column`` of ``table`` means."""
    return COLUMN_NOTES.get((table, column)) or COLUMN_NOTES.get(column, "")


def _frictionless(kind: pa.DataType) -> str:
    """The Frictionless Data type of an Arrow type."""
    return next((name for test, name in FRICTIONLESS if test(kind)), "string")


def _resource(table: ExportTable) -> dict:
    return {"name": table.name, "path": f"{table.name}/", "format": "delta", "description": table.about,
            "schema": {"fields": [{"name": c.name, "type": _frictionless(c.type), "arrowType": str(c.type),
                                   **({"description": note(table.name, c.name)} if note(table.name, c.name) else {})}
                                  for c in table.columns],
                       **({"primaryKey": [*table.key, "valid_from", "seen_at"] if table.how == RECORDS
                           else [*table.key, "seen_at"]} if table.key else {"primaryKey": ["id"]})}}


def feature(name: str | None, kind: pa.DataType) -> dict[str, Any]:
    """An Arrow type as a Hugging Face ``datasets`` feature, in a card's ``dataset_info`` form."""
    named = {"name": name} if name is not None else {}
    if pa.types.is_list(kind):
        inner = feature(None, kind.value_type)
        return {**named, "list": inner.get("dtype", inner.get("struct", inner))}
    if pa.types.is_struct(kind):
        return {**named, "struct": [feature(f.name, f.type) for f in kind]}
    return {**named, "dtype": str(kind)}


def _front_matter(files: Mapping[str, Sequence[str]]) -> dict[str, Any]:
    return {
        "pretty_name": "booru mirror export",
        "license": "unknown",
        "tags": ["booru", "philomena", "image-board", "metadata", "tabular"],
        "configs": [{"config_name": t.name, "data_files": [{"split": "train", "path": list(files[t.name])}],
                     **({"default": True} if t.name == "images" else {})} for t in EXPORT_TABLES.values()],
        "dataset_info": [{"config_name": t.name, "features": [feature(c.name, c.type) for c in t.columns]}
                         for t in EXPORT_TABLES.values()],
    }


_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str) and _PLAIN.fullmatch(value) and value not in ("true", "false", "null", "yes", "no"):
        return value
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a YAML double-quoted one


def yaml_text(value: Any, indent: int = 0) -> str:
    """``value`` (mappings, lists and scalars) as block YAML."""
    pad = " " * indent
    if isinstance(value, Mapping):
        lines = []
        for key, item in value.items():
            if isinstance(item, (Mapping, list)) and item:
                lines.append(f"{pad}{key}:\n{yaml_text(item, indent + 2)}")
            else:
                lines.append(f"{pad}{key}: {_scalar(item) if not isinstance(item, (Mapping, list)) else '[]'}")
        return "\n".join(lines)
    lines = []
    for item in value:
        if isinstance(item, Mapping) and item:
            inner = yaml_text(item, indent + 2)
            lines.append(f"{pad}- {inner.lstrip()}")
        elif isinstance(item, list) and item:
            lines.append(f"{pad}-\n{yaml_text(item, indent + 2)}")
        else:
            lines.append(f"{pad}- {_scalar(item)}")
    return "\n".join(lines)


_INTRO = """# booru mirror export

Every version of every record a [booru mirror](https://pypi.org/project/booru-mirror/) kept of a
Philomena image board (Derpibooru and its siblings), as Delta Lake tables of Parquet files: image,
tag, comment, forum, gallery, user and filter records, each version a row, and the history of what
changed. Written by `mirror export`; each later export appends what changed since.

- **Versions.** A record table holds each version the mirror's history can rebuild, from the first
  export on. `valid_from` says when a version began on the board (the clock the mirror's `/as-of/`
  answers by), `seen_at` when the mirror held it. A record as of a moment is its row with the latest
  `valid_from` at or before it (null: before everything), the latest `seen_at` among equals.
- **Reading it.** `views/` holds ready views for DuckDB, Spark, Polars and pandas over the live
  Parquet files (nothing to download, paths relative to this folder) and for Delta readers;
  with Hugging Face `datasets`, `load_dataset("parquet", data_files=...)` or this folder with a
  table's name as the config. `datapackage.json` says the same as data (Frictionless Data).
- **Licence.** Left for the archivist to state (`license` above): the board's terms and the
  uploaders' rights over their images and texts decide it, not the program that copied them.
- **What it cannot know.** Counters (votes, faves, counts) are exact where the mirror's history kept
  them (`history.counters`: by default a point a day); before the mirror first saw a record, only the
  site's own changes from its dump are known.
"""


def _readme(files: Mapping[str, Sequence[str]]) -> str:
    lines = ["---", yaml_text(_front_matter(files)), "---", "", _INTRO]
    for table in EXPORT_TABLES.values():
        key = f" Key: {', '.join(table.key)}." if table.key else ""
        lines += [f"## {table.name}", "", table.about + key, "", f"Where it comes from: {ORIGIN[table.how]}", "",
                  "| column | type | meaning |", "|---|---|---|"]
        lines += [f"| {c.name} | {c.type} | {note(table.name, c.name)} |" for c in table.columns]
        lines.append("")
    return "\n".join(lines)


def describe_files(files: Mapping[str, Sequence[str]]) -> dict[str, str]:
    """``datapackage.json`` and ``README.md`` (the dataset card), by file name, for tables whose live
    data files are ``files`` (relative to DEST)."""
    package = {"name": "booru-mirror-export", "profile": "data-package",
               "resources": [_resource(t) for t in EXPORT_TABLES.values()]}
    return {"datapackage.json": json.dumps(package, indent=1) + "\n", "README.md": _readme(files)}
