"""A record table's rows for one export: every version of each record, as ``/as-of/`` reads it.

The first export to a DEST writes, for every record, each version its history can rebuild
(:func:`mirror.asof.versions_of`, the reading ``mirror serve``'s ``/as-of/`` answers with), so the
past the mirror kept is in the tables from the start. A later export writes, for each record with
history since the last, its versions from the earliest of those changes on (a dump read since can
tell of a change the site made before the last export), all of them when one showed a record first
kept as a stub (``/as-of/`` reads its earlier versions with the fields the stub lacked), each seen
when the mirror knew the newest change, so that it wins over a row exported before for the same
start; and otherwise today's version when it differs from the one last exported (its digest). A
count the history's daily grain did not keep reaches no further back than that: the next kept
change holds it as its old value.

Each row carries both clocks: ``valid_from``, when the version began on the board as ``/as-of/``
dates it (null: before anything the history says), and ``seen_at``, when the mirror held it. As of
a moment, a record is its row with the latest ``valid_from`` at or before it, the latest ``seen_at``
among equals. A version the same as the one before it (a first sighting that changed nothing) is
not written again: the earlier row already holds it from its start.

Most records have no change kept at all, only their first sighting: the first export writes them
from the table's columns alone (:meth:`RecordRows.plain_versions`, what the as-of reading gives
for such a record, worked out without it), and reads ``raw`` (which SQLite rebuilds from the
columns for the large tables) and calls the as-of reading only for the others.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

from ..asof import versions_of
from ..asof.histories import RecordHistory, histories_of
from ..asof.records import KNOWN_AT, Then, created_time, latest_began
from ..store.first_sightings import COUNTED_AT_SQL
from ..store.raw_rebuilt import STORED_COLUMNS, column_holds_sql, is_rebuilt, rebuilt_record
from ..store.records import column_converters, parse_json
from ..store.specs import SPECS
from .tables import ExportTable

__all__ = ["RecordRows", "EXTRA", "FIRST_EXTRA"]

# What the query reads after the table's columns: the record key, its last digest, and what the
# as-of reading rebuilds a version from.
EXTRA = ("record_key", "digest", "raw", "stub")
# What the first export's query reads after them (:meth:`RecordRows.first_sql`): the row's rowid,
# its record's created_at, and what its history holds (:data:`NO_HISTORY`, :data:`NO_RECORD`, the
# time of its first sighting and nothing else, or NULL: more, read by the as-of reading).
FIRST_EXTRA = ("record_key", "digest", "rowid", "created_at", "history")
NO_HISTORY, NO_RECORD = "", "-"
# What a first export's as-of reading takes of a row its columns do not say: whether it has a record
# at all, the record, the stub, and the history.
Kept = tuple[bool, Any, Any, RecordHistory]


class RecordRows:
    """Turns a record table's rows (its columns, then :data:`EXTRA`) into rows of versions."""

    # Off, a first export reads every record by the as-of reading: the reference its quick route
    # is tested against (tests/export/test_first_export_routes.py).
    plain_records = True

    def __init__(self, conn: sqlite3.Connection, table: ExportTable, *, first: bool, history_after: int,
                 history_upto: int, now: str) -> None:
        self.conn, self.table, self.first, self.now = conn, table, first, now
        self.history_after, self.history_upto = history_after, history_upto
        self.spec = SPECS[table.name]
        self.converters = column_converters(self.spec.fields, "")
        self.names = [c.name for c in table.columns if c.sql != "?"]  # seen_at (mirrored_at) last
        self.width = len(self.names) - 1
        self.at = {name: n for n, name in enumerate(self.names[:self.width])}  # each column's place in a row
        self.stub_fields = [f for f in self.spec.stub_fields if f in self.spec.fields and f not in self.spec.pk_columns]
        # When a record with no first_seen row of its own was first seen (:mod:`mirror.store.first_sightings`)
        self.counted_at: str | None = conn.execute(f"SELECT {COUNTED_AT_SQL}", {"resource": table.name}).fetchone()[0]

    def first_sql(self) -> str:
        """The columns of :data:`FIRST_EXTRA` from ``rowid`` on, in SQL over the table's rows. ``raw``
        is read only where the columns cannot say the record: a large table's rebuilt ``raw`` (its
        generated column) for no row whose created_at its column holds."""
        name, quoted = self.table.name, f'"{self.table.table}"'
        if is_rebuilt(self.table.table):
            plain = column_holds_sql(self.table.table, "created_at")
            created, cases = '"created_at"', [f"WHEN NOT {plain} THEN NULL"]
        else:  # ``raw`` is a stored column here
            plain = "json_valid(raw) AND json_type(raw) = 'object'"
            created = f"CASE WHEN {plain} THEN raw ->> '$.created_at' END"
            cases = [f"WHEN raw IS NULL THEN '{NO_RECORD}'", f"WHEN NOT ({plain}) THEN NULL"]
        if self.spec.hideable:
            cases.append('WHEN coalesce("hidden_from_users", 0) THEN NULL')
        if name == "images":  # the as-of reading takes an image's tag changes from their own table
            cases.append(f"WHEN EXISTS (SELECT 1 FROM image_tag_changes WHERE image_id = {quoted}.\"id\") THEN NULL")
        history = ("(SELECT CASE WHEN count(*) = 0 THEN '' WHEN count(*) = 1 AND min(event) = 'first_seen' "
                   "THEN min(seen_at) END FROM (SELECT event, seen_at FROM history "
                   f"WHERE resource = '{name}' AND record_key = {self.table.key_sql(qualified=True)} LIMIT 2))")
        if not self.plain_records:
            return f"{quoted}.rowid, {created}, NULL"
        return f"{quoted}.rowid, {created}, CASE {' '.join(cases)} ELSE {history} END"

    def kept_records(self, rows: Sequence[Sequence[Any]]) -> dict[int, Kept]:
        """What the as-of reading needs of each row of a first export's chunk whose history is more
        than a first sighting, by rowid (:data:`Kept`): the history read for the whole chunk at
        once (:mod:`mirror.asof.histories`), not record by record."""
        at = len(self.names)
        wanted = [row for row in rows if row[at + 4] is None]
        if not wanted:
            return {}
        histories = histories_of(self.conn, self.table.name, {row[at]: row[self.width] or self.now for row in wanted})
        rows_by_id = {row[at + 2]: row for row in wanted}
        stub = "stub" if self.spec.hideable else "NULL"
        table = self.table.table
        rebuilt = is_rebuilt(table)  # the record made from the row's columns, as SQLite's raw gives it
        found = self.conn.execute(f'SELECT rowid, {", ".join(STORED_COLUMNS) if rebuilt else "raw"}, {stub} '
                                  f'FROM "{table}" WHERE rowid IN (SELECT value FROM json_each(?))',
                                  [json.dumps(list(rows_by_id))])
        kept: dict[int, Kept] = {}
        for rowid, *stored, stub_text in found:
            row = rows_by_id[rowid]
            if rebuilt:
                present, record = True, rebuilt_record(table, dict(zip(self.names, row)), *stored)
            else:
                present, record = stored[0] is not None, None if stored[0] is None else parse_json(stored[0])
            kept[rowid] = (present, record, stub_text, histories[row[at]])
        return kept

    def values(self, row: Sequence[Any]) -> tuple:
        """The values a digest is taken of: the record's columns, ``seen_at`` left out."""
        return tuple(row[:self.width])

    def versions(self, row: Sequence[Any], changed: bool, kept: dict[int, Kept] | None = None) -> Iterator[tuple]:
        """The rows to write for one record (``changed``: today's differs from the one last exported);
        in a first export, what its columns do not say in ``kept`` (:meth:`kept_records`)."""
        history = None
        at = len(self.names)
        if self.first:
            if row[at + 4] is not None:
                yield from self.plain_versions(row, changed)
                return
            present, record, stub, history = (kept or {})[row[at + 2]]
            row = (*row[:at + 2], None, stub)
        else:
            present, stub = row[at + 2] is not None, row[at + 3]
            record = parse_json(row[at + 2]) if present else None
        today = dict(zip(self.names, row))
        key = row[at]
        mirrored = today["seen_at"] or self.now  # a tag an image named has no mirrored_at yet
        kept_row = {"raw": row[at + 2], "stub": stub, "hidden_from_users": today.get("hidden_from_users"),
                    "mirrored_at": mirrored}
        if not present:  # a tag an image named before the tags crawler read it: no record to rebuild
            if changed:
                yield (*self.values(row), None, mirrored)
            return
        if self.first:
            yield from self._rows(row, today, key, kept_row, record, since=None, seen_after=None, history=history)
            return
        since, seen_after, anew = self._changed_since(key)
        if since is None:
            if changed:
                began = latest_began(self.conn, self.table.name, key, kept_row)
                yield (*self.values(row), began, max(filter(None, (mirrored, began))))
            return
        # First seen since the last export, every version is new, those begun before its sighting too
        # (its upload: /as-of/ answers an image from its created_at). Shown again: a record first kept
        # as a stub has its full content now, and /as-of/ reads every earlier version with it (the
        # fields a stub lacked): they are written again.
        yield from self._rows(row, today, key, kept_row, record, since=None if anew else since, seen_after=seen_after)

    def plain_versions(self, row: Sequence[Any], changed: bool) -> list[tuple]:
        """The versions of a record shown today whose history is its first sighting alone, or
        nothing: those :func:`versions_of` gives (its upload and its first sighting, the same
        record, the earlier kept), from the row's columns and its first export's extra columns."""
        at = len(self.names)
        values, history = self.values(row), row[at + 4]
        mirrored = row[self.width] or self.now
        if history == NO_RECORD:  # a tag an image named before the tags crawler read it
            return [(*values, None, mirrored)] if changed else []
        created = created_time({"created_at": row[at + 3]})
        if history == NO_HISTORY:
            if self.counted_at is None:
                return [(*values, created, mirrored)]
            # first seen by a run that counted its sightings: at its end, known by then or by its row
            began, known = self.counted_at, min(self.counted_at, mirrored)
        else:
            began = known = history
        today = (*values, created if created is not None and created > began else began, max(mirrored, known))
        if created is None or created >= began:
            return [today]
        # Uploaded before the mirror first saw it: the version at the upload, as :meth:`_then` reads it.
        uploaded = values
        if self.spec.hideable:
            hidden = self.at["hidden_from_users"]
            uploaded = (*values[:hidden], False, *values[hidden + 1:])
        return [today, (*uploaded, created, known)] if uploaded != values else [(*uploaded, created, known)]

    def _rows(self, row: Sequence[Any], today: dict[str, Any], key: str, kept: dict[str, Any], record: Any, *,
              since: str | None, seen_after: str | None, history: RecordHistory | None = None) -> Iterator[tuple]:
        """The versions of one record begun at or after ``since`` (all without it); each seen no
        earlier than ``seen_after``, so that it wins over a version begun at the same time and
        exported before. Read newest first, each is written once the one before it is known to differ."""
        odd = _not_self_equal(record) if isinstance(record, dict) else frozenset()
        columns = self.values(row)  # today's
        newer: tuple | None = None
        for version in versions_of(self.conn, self.table.name, key, kept, since=since, record=record, history=history):
            if version.then is None:
                values = columns
                seen = max(filter(None, (today["seen_at"] or self.now, version.known, seen_after)), default=None)
            else:
                values = self._then(today, columns, record, version.then, odd)
                seen = max(filter(None, (version.known, seen_after)), default=None)
            if newer is not None and newer[:self.width] != values:
                yield newer
            newer = (*values, version.began, seen)
        if newer is not None:
            yield newer

    def _changed_since(self, key: str) -> tuple[str | None, str | None, bool]:
        """Of the changes kept since the last export: when the earliest was made, when the mirror
        knew the last, and whether one first saw the record or showed it again, so that its every
        version is to be written (None, None, False: none kept)."""
        since, known, anew = self.conn.execute(
            f"SELECT min(h.seen_at), max({KNOWN_AT}), max(h.event IN ('shown', 'first_seen')) FROM history h "
            "LEFT JOIN sync_runs r ON r.id = h.run_id "
            "WHERE h.resource = ? AND h.record_key = ? AND h.id > ? AND h.id <= ?",
            [self.table.name, key, self.history_after, self.history_upto]).fetchone()
        return since, known, bool(anew)

    def _then(self, today: dict[str, Any], columns: tuple, record: dict[str, Any], then: Then,
              odd: frozenset[str]) -> tuple:
        """Today's ``columns`` with the record as it was: the fields that differ from today's record
        (of those the rewind touched, and ``odd``, those never equal to themselves) converted as the
        writer converts them, and the stub's fields when it was hidden (or, hidden
        today and not then, the record's own)."""
        values = list(columns)
        at = self.at
        fields = self.converters if then.touched is None else {*then.touched, *odd}
        for field in fields:
            convert = self.converters.get(field)
            value = then.record.get(field)
            if convert is not None and field in at and value != record.get(field):
                values[at[field]] = None if value is None else convert(value)
        if self.spec.hideable:
            values[at["hidden_from_users"]] = then.hidden
            source = json.loads(then.stub) if then.hidden and then.stub else then.record
            if then.hidden or today.get("hidden_from_users"):
                for field in self.stub_fields:
                    if field in at:
                        value = source.get(field)
                        values[at[field]] = None if value is None else self.converters[field](value)
        return tuple(values)


def _not_self_equal(record: dict[str, Any]) -> frozenset[str]:
    """The fields of ``record`` that hold a NaN, which no comparison finds equal to itself."""
    return frozenset(name for name, value in record.items() if isinstance(value, float) and value != value)
