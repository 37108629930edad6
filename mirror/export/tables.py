"""The exported tables: their columns, typed as the API means them, and where their rows come from.

One :class:`ExportTable` per Delta table. A record table (``images`` ... ``filters``) takes the
store's typed columns under the API's names (:mod:`mirror.store.specs`) plus the version's two
times (:mod:`.versions`): ``valid_from``, when it began on the board, and ``seen_at``, when the
mirror held it. Timestamps become UTC timestamps, the
lists and objects kept as JSON text become Arrow lists and structs; a JSON field whose shape the
site does not fix stays JSON text. The history tables are appended to as the store appends to
them; the link and dump-only tables have no ``mirrored_at`` and are compared whole each export.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from ..store.dump_tables import DUMP_TABLES
from ..store.history import tag_name_sql
from ..store.tag_changes import of_history_row
from ..store.specs import SPECS, TableSpec

__all__ = ["Column", "ExportTable", "EXPORT_TABLES", "RECORDS", "APPENDED", "COMPARED"]

TIME = pa.timestamp("us", tz="UTC")
TEXTS = pa.list_(pa.string())
IDS = pa.list_(pa.int64())

# The kinds of a column: how its SQLite value becomes its Arrow value (:mod:`.batches`).
PLAIN, BOOL, STAMP, JSON = "plain", "bool", "time", "json"
RECORDS, APPENDED, COMPARED = "records", "appended", "compared"

REPRESENTATIONS = ("full", "large", "medium", "small", "tall", "thumb", "thumb_small", "thumb_tiny", "mp4", "webm")

# The JSON fields whose shape the API fixes, as Arrow types; any other JSON field stays text.
JSON_TYPES: dict[tuple[str, str], pa.DataType] = {
    ("images", "tags"): TEXTS,
    ("images", "tag_ids"): IDS,
    ("images", "source_urls"): TEXTS,
    ("images", "intensities"): pa.struct([(corner, pa.float64()) for corner in ("nw", "ne", "sw", "se")]),
    ("images", "representations"): pa.struct([(name, pa.string()) for name in REPRESENTATIONS]),
    ("tags", "aliases"): TEXTS,
    ("tags", "implied_tags"): TEXTS,
    ("tags", "implied_by_tags"): TEXTS,
    ("tags", "dnp_entries"): pa.list_(pa.struct([("id", pa.int64()), ("dnp_type", pa.string()),
                                                  ("conditions", pa.string()), ("reason", pa.string()),
                                                  ("created_at", pa.string())])),
    ("users", "links"): pa.list_(pa.struct([("user_id", pa.int64()), ("tag_id", pa.int64()), ("state", pa.string()),
                                            ("created_at", pa.string())])),
    ("users", "awards"): pa.list_(pa.struct([("id", pa.int64()), ("title", pa.string()), ("label", pa.string()),
                                             ("image_url", pa.string()), ("awarded_on", pa.string())])),
    ("filters", "hidden_tag_ids"): IDS,
    ("filters", "spoilered_tag_ids"): IDS,
}

SCALARS = {"int": pa.int64(), "float": pa.float64(), "text": pa.string(), "url": pa.string()}


@dataclass(frozen=True)
class Column:
    """One column: its name (the API's), its Arrow type, how it is converted, its SQL in the store."""

    name: str
    type: pa.DataType
    kind: str = PLAIN
    sql: str = ""

    @property
    def source(self) -> str:
        return self.sql or f'"{self.name}"'


@dataclass(frozen=True)
class ExportTable:
    """One Delta table: its columns (``seen_at`` last; a record table's ``valid_from`` before it), its
    key, and how new rows are found."""

    name: str
    columns: tuple[Column, ...]
    key: tuple[str, ...]  # the record's key columns; () for a table of events
    how: str  # RECORDS (by mirrored_at), APPENDED (by id), COMPARED (whole, by digest)
    about: str
    source: str = ""  # the store's table, when its name differs
    # An APPENDED table's rows past one history id and up to another, where they have no id of their own.
    by_history: str = ""

    @property
    def table(self) -> str:
        return self.source or self.name

    @property
    def appended_sql(self) -> str:
        """An APPENDED table's rows past a bound and up to another (two parameters), in order."""
        return self.by_history or f'FROM "{self.table}" WHERE id > ? AND id <= ? ORDER BY id'

    @property
    def bound_sql(self) -> str:
        """The bound up to which an APPENDED table's rows are written now."""
        return f'SELECT coalesce(max(id), 0) FROM "{"history" if self.by_history else self.table}"'

    def schema(self) -> pa.Schema:
        return pa.schema([pa.field(c.name, c.type) for c in self.columns])

    @property
    def key_ids(self) -> int:
        """How many 64-bit ids the key is, where it is one or two of them and nothing else (else 0)."""
        schema = self.schema()
        typed = all(pa.types.is_int64(schema.field(name).type) for name in self.key)
        return len(self.key) if typed and len(self.key) in (1, 2) else 0

    def key_sql(self, qualified: bool = False) -> str:
        """The record key as the store's history writes it (``123``, ``art``, ``["art","a-topic"]``);
        ``qualified``: its columns named with the table's, for a subquery over another table."""
        owner = f'"{self.table}".' if qualified else ""
        if len(self.key) > 1:
            return "json_array(" + ", ".join(f'{owner}"{k}"' for k in self.key) + ")"
        return f'CAST({owner}"{self.key[0]}" AS TEXT)'


def _is_time(name: str) -> bool:
    return name.endswith("_at")


def _spec_column(spec: TableSpec, name: str, kind: str) -> Column:
    if kind == "bool":
        return Column(name, pa.bool_(), BOOL)
    if kind in ("json", "url_map"):
        shape = JSON_TYPES.get((spec.table, name))
        return Column(name, shape, JSON) if shape is not None else Column(name, pa.string())
    if kind == "text" and _is_time(name):
        return Column(name, TIME, STAMP)
    return Column(name, SCALARS[kind])


SEEN_AT = Column("seen_at", TIME, STAMP, "mirrored_at")
# Worked out from the history for each version (:mod:`.versions`), not read from a column.
VALID_FROM = Column("valid_from", TIME, STAMP, "?")

ABOUT = {
    "images": "One row per version of an image record: its API fields, and its state when hidden, deleted or merged "
              "(hidden_from_users, deletion_reason, duplicate_of) with its last full content.",
    "tags": "One row per version of a tag record.",
    "comments": "One row per version of a comment (a hidden comment keeps its last body).",
    "posts": "One row per version of a forum post, with the forum and topic it was read under.",
    "topics": "One row per version of a forum topic, with its forum.",
    "forums": "One row per version of a forum.",
    "galleries": "One row per version of a gallery.",
    "users": "One row per version of a user profile.",
    "filters": "One row per version of a filter.",
}


def _record_table(spec: TableSpec) -> ExportTable:
    columns = [_spec_column(spec, name, kind) for name, kind in spec.columns().items()]
    if spec.hideable and "hidden_from_users" not in spec.columns():
        columns.append(Column("hidden_from_users", pa.bool_(), BOOL))
    return ExportTable(spec.table, (*columns, VALID_FROM, SEEN_AT), spec.pk_columns, RECORDS, ABOUT[spec.table])


def _history_tables() -> list[ExportTable]:
    history = ExportTable("history", (
        Column("id", pa.int64()), Column("resource", pa.string()), Column("record_key", pa.string()),
        Column("run_id", pa.int64()), Column("seen_at", TIME, STAMP), Column("event", pa.string()),
        Column("changes", pa.string()), Column("user_id", pa.int64())), (), APPENDED,
        "Every change the mirror saw, one row per record per sync that saw it differ; changes is JSON "
        '{"field": [old, new]}; events site_tags and site_source are the site\'s own changes from its dump.')
    # ``id`` stays in the table's schema, null from 0045 on: the store numbers its changes no more
    # (docs/export.md), and a DEST exported to before keeps its columns and the numbers it holds.
    tag_changes = ExportTable("image_tag_changes", (
        Column("id", pa.int64(), sql="NULL"), Column("history_id", pa.int64(), sql="c.history_id"),
        Column("image_id", pa.int64(), sql="c.image_id"), Column("tag_id", pa.int64(), sql="c.tag_id"),
        Column("tag_name", pa.string(), sql=tag_name_sql("c")), Column("change", pa.string(), sql="c.change"),
        Column("seen_at", TIME, STAMP, "c.seen_at"), Column("run_id", pa.int64(), sql="h.run_id")),
        (), APPENDED,
        "An image's tags added (+) and removed (-), one row each, with the history row they belong to.",
        # The history read in the order of its ids (the unary + on its resource: SQLite would read the
        # images' history by its index on the resource and sort every change), each row's tag changes
        # sought by their key (:func:`of_history_row`): no sort.
        by_history=f"FROM history h JOIN image_tag_changes c ON {of_history_row()} "
                   "WHERE h.id > ? AND h.id <= ? AND +h.resource = 'images' ORDER BY h.id, c.tag_id")
    return [history, tag_changes]


DUMP_ABOUT = {
    "gallery_images": "Which images each gallery holds, at which position.",
    "image_faves": "Who faved which image (from the site's public dump).",
    "duplicate_reports": "Duplicate reports (from the site's public dump).",
    "badges": "Badges (from the site's public dump).",
    "badge_awards": "Badges awarded to users (from the site's public dump).",
    "artist_links": "Artist links between users and tags (from the site's public dump).",
}
INT_COLUMNS = {"id", "image_id", "user_id", "duplicate_of_image_id", "badge_id", "tag_id", "gallery_id", "position"}


def _compared_table(name: str, columns: tuple[str, ...], key: tuple[str, ...]) -> ExportTable:
    typed = [Column(c, pa.int64()) if c in INT_COLUMNS else Column(c, TIME, STAMP) if _is_time(c)
             else Column(c, pa.string()) for c in columns]
    # No mirrored_at here: seen_at is the export's own time, when the mirror last found the row changed.
    return ExportTable(name, (*typed, Column("seen_at", TIME, STAMP, "?")), key, COMPARED, DUMP_ABOUT[name])


def _dump_key(name: str) -> tuple[str, ...]:
    return ("image_id", "user_id") if name == "image_faves" else ("id",)


EXPORT_TABLES: dict[str, ExportTable] = {t.name: t for t in [
    *(_record_table(spec) for spec in SPECS.values()),
    _compared_table("gallery_images", ("gallery_id", "image_id", "position"), ("gallery_id", "image_id")),
    *(_compared_table(name, columns, _dump_key(name)) for name, columns in DUMP_TABLES.items()),
    *_history_tables(),
]}
