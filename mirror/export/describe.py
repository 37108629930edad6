"""What DEST holds, said in DEST: a ``datapackage.json`` (Frictionless Data) and a ``README.md``.

Someone handed the folder (a dataset card on a hub, a bucket shared with a colleague) learns
from them what each table and column is without this program.
"""

from __future__ import annotations

import json

import pyarrow as pa

from .tables import EXPORT_TABLES, ExportTable

__all__ = ["describe_files"]

COLUMN_NOTES = {
    "seen_at": "When the mirror saw this version (UTC); for tables without a record time, when an export first found it.",
    "id": "The record's id on the site.",
    "hidden_from_users": "Hidden, deleted or merged on the site; the row keeps the last full content the mirror saw.",
    "duplicate_of": "The image this one was merged into.",
    "deletion_reason": "Why the site deleted the image.",
    "tags": "Tag names.",
    "tag_ids": "Tag ids, in the order of tags.",
    "representations": "URLs of the image's files by size.",
    "intensities": "Corner intensities the site computed (reverse search).",
    "changes": 'JSON {"field": [old, new], ...}; null for first_seen.',
    "change": "+ added, - removed.",
}


FRICTIONLESS = ((pa.types.is_integer, "integer"), (pa.types.is_floating, "number"), (pa.types.is_boolean, "boolean"),
                (pa.types.is_timestamp, "datetime"), (pa.types.is_list, "array"), (pa.types.is_struct, "object"))


def _frictionless(kind: pa.DataType) -> str:
    """The Frictionless Data type of an Arrow type."""
    return next((name for test, name in FRICTIONLESS if test(kind)), "string")


def _resource(table: ExportTable) -> dict:
    return {"name": table.name, "path": f"{table.name}/", "format": "delta", "description": table.about,
            "schema": {"fields": [{"name": c.name, "type": _frictionless(c.type), "arrowType": str(c.type),
                                   **({"description": COLUMN_NOTES[c.name]} if c.name in COLUMN_NOTES else {})}
                                  for c in table.columns],
                       **({"primaryKey": [*table.key, "seen_at"]} if table.key else {"primaryKey": ["id"]})}}


def _readme() -> str:
    lines = ["# booru mirror export", "",
             "Delta Lake tables written by `mirror export` (booru mirror). Each row of a record table is one "
             "version of a record as the mirror saw it, `seen_at` saying when; a record's latest version is "
             "its current one. Rows are only ever appended. `views/` holds the current-version and as-of "
             "views for DuckDB, Spark SQL and Trino; `datapackage.json` the same description as data.", ""]
    for table in EXPORT_TABLES.values():
        key = f" Key: {', '.join(table.key)} (with seen_at)." if table.key else ""
        lines += [f"## {table.name}", "", table.about + key, "", "| column | type | note |", "|---|---|---|"]
        lines += [f"| {c.name} | {c.type} | {COLUMN_NOTES.get(c.name, '')} |" for c in table.columns]
        lines.append("")
    return "\n".join(lines)


def describe_files() -> dict[str, str]:
    """``datapackage.json`` and ``README.md``, by file name."""
    package = {"name": "booru-mirror-export", "profile": "data-package",
               "resources": [_resource(t) for t in EXPORT_TABLES.values()]}
    return {"datapackage.json": json.dumps(package, indent=1) + "\n", "README.md": _readme()}
