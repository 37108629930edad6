"""Writing records of any resource: typed columns, ``raw``, stubs that mark without wiping.

A stub (a hidden image, comment or post: the site sends only a few keys, or nulls) must never
wipe the fuller record kept from earlier syncs. Stubs therefore update the rows they name in
place: the hidden-state columns and ``stub`` change; ``raw`` and every other column stay.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlite_utils import Database
from sqlite_utils.db import jsonify_if_needed

from ..dates import utc_text
from . import derived, raw_rebuilt
from .history import Seen, note_event, recorder_for
from .records import MAX_ID, column_converters, shape, shape_values, to_json, valid_id
from .rejects import reject
from .rows import Row, TableRows, quoted
from .specs import TableSpec

Key = Any  # an int id, a short name, or a tuple for compound keys


@dataclass
class Saved:
    """What one batch did to a table."""

    new: int = 0  # records kept for the first time (no row, or a row holding only a name)
    updated: int = 0  # kept records whose stored content changed (not those sent again unchanged)
    hidden: int = 0
    rejected: int = 0
    unpaired_tags: int = 0  # image records whose tags and tag_ids disagree: linked by id, no tag named from them
    keys: list[Key] = field(default_factory=list)
    # The ``raw`` each key had before the batch (None: a row with no record yet); absent: no row.
    raw_before: dict[Key, str | None] = field(default_factory=dict, repr=False)

    def add(self, other: Saved) -> None:
        self.new += other.new
        self.updated += other.updated
        self.hidden += other.hidden
        self.rejected += other.rejected
        self.unpaired_tags += other.unpaired_tags
        self.keys += other.keys
        self.raw_before.update(other.raw_before)


class RecordWriter:
    """Writes batches of one resource's records to its table, for one site."""

    def __init__(self, db: Database, spec: TableSpec, base_url: str) -> None:
        self.db = db
        self.spec = spec
        self.converters = column_converters(spec.columns(), base_url)
        self.pk_kinds = [(column, spec.columns()[column]) for column in spec.pk_columns]
        self.rows = TableRows(db.conn, spec.table, spec.pk_columns)
        self._fields = [(name, self.converters[name]) for name in spec.fields]
        # What a full row sets besides the fields and the context: hidden records are shown again.
        hidden = () if "hidden_from_users" in spec.fields else ("hidden_from_users",)
        # A large table's ``raw`` is rebuilt from its columns (:mod:`.raw_rebuilt`): what is written
        # is the patch the rebuild needs, and the whole text only where the rebuild falls short.
        self.rebuilt = raw_rebuilt.is_rebuilt(spec.table)
        # Columns SQLite makes from the others (:mod:`.derived`) are written where the rule falls short.
        self._derived = derived.DERIVED.get(spec.table, {}) if self.rebuilt else {}
        self._field_columns = tuple(self._derived.get(name, name) for name in spec.fields)
        self._at = {name: index for index, name in enumerate(spec.fields)}
        record_columns = raw_rebuilt.STORED_COLUMNS if self.rebuilt else ("raw",)
        self._extra = (*record_columns, "mirrored_at", *(("stub", *hidden) if spec.hideable else ()))
        self._hidden_at = list(spec.fields).index("hidden_from_users") if spec.hideable and not hidden else None

    def save(self, records: Iterable[Any], context: Mapping[str, Any] | None = None) -> Saved:
        """Store a batch atomically. ``context`` fills the spec's context columns for every record.

        A key twice in the batch never fails it: the last full record is the row, and a stub of
        that key marks it (see :meth:`_save_stub`) wherever it came in the batch, as it would mark
        the row had that been stored by an earlier batch."""
        context = dict(context or {})
        result = Saved()
        full, stubs, bad = [], [], []
        for record in records:
            if record is None:
                continue  # a destroyed comment or post renders as null: nothing left to keep
            key = self.key_of(record, context) if isinstance(record, dict) else None
            if key is None:
                bad.append(record)
            elif self.spec.is_stub and self.spec.is_stub(record):
                stubs.append((key, record))
            else:
                full.append((key, record))
        now = utc_text()
        # Context columns not given (a post found by search has no topic) keep what the row has.
        given = {c: jsonify_if_needed(context[c]) for c in self.spec.context if c in context}
        columns = (*self._field_columns, *given, *self._extra)
        with self.db.atomic():
            for record in bad:
                reject(self.db, self.spec.table, record, f"a {self.spec.table} record needs {self._pk_text()}")
            before = self.rows.read([key for key, _ in full + stubs], columns)
            known = result.raw_before = self._kept_raw(before, columns)
            # A key twice in one batch: the last record wins, as with one upsert after another.
            texts: dict[Key, str] = {}
            made: dict[Key, dict[str, Any]] = {}
            latest = {key: self._full_row(record, given, now, texts, made, key) for key, record in full}
            self.rows.write(columns, latest, before)
            if self.rebuilt:
                self._keep_what_the_rebuild_misses(texts, made)
            # A stub whose key also came in full in this batch (a record hidden while the site built
            # the page) marks the row just written, as it marks a row kept from earlier, whichever
            # came first: inserting it as new would break the primary key and lose the whole batch.
            # Two stubs of one key: the last wins, as for full records.
            for key, record in dict(stubs).items():
                self._save_stub(key, record, given, now, key in known or key in latest,
                                texts.get(key, known.get(key)))
            recorder = recorder_for(self.db)
            if recorder is not None:
                recorder.saw(self.spec.table, self._seen(before, known, columns, full, stubs), self.spec.aliases,
                             now)
        result.rejected = len(bad)
        result.hidden = len(dict(stubs))
        changed = self._changed(before, known, columns, texts, dict(stubs))
        for key in dict.fromkeys(key for key, _ in full + stubs):  # a key twice in the batch counts once
            result.keys.append(key)
            if known.get(key) is None:  # no row, or one holding only a name so far
                result.new += 1
            elif key in changed:
                result.updated += 1
        return result

    def _kept_raw(self, before: Mapping[Key, Row], columns: tuple[str, ...]) -> dict[Key, str | None]:
        """The ``raw`` of each row ``before`` holds (None: a row with no record yet)."""
        if not self.rebuilt:
            raw = columns.index("raw")
            return {key: row[raw] for key, row in before.items()}
        found = self.rows.read(list(before), ("raw",))
        return {key: found[key][0] for key in before}

    def _keep_what_the_rebuild_misses(self, texts: Mapping[Key, str], made: Mapping[Key, dict[str, Any]]) -> None:
        """Read back the rows just written, and keep the value of every column SQLite made otherwise
        than expected (:mod:`.derived`), and whole the records whose rebuild is not the very text
        expected: nothing the site sent may be lost to the layout."""
        if self._derived:
            names = tuple(self._derived)
            for key, row in self.rows.read(list(made), names).items():
                wrong = [name for name, got in zip(names, row) if got != made[key][name]]
                if wrong:
                    self.rows.update(key, tuple(self._derived[name] for name in wrong),
                                     tuple(derived.kept_as(name, made[key][name]) for name in wrong))
        rebuilt = {key: row[0] for key, row in self.rows.read(list(texts), ("raw",)).items()}
        for key, text in raw_rebuilt.mismatches(rebuilt, texts).items():
            self.rows.update(key, ("raw_full",), (text,))

    def _changed(self, before: Mapping[Key, Row], known: Mapping[Key, str | None], columns: tuple[str, ...],
                 texts: Mapping[Key, str], stubs: Mapping[Key, Any]) -> set[Key]:
        """The kept keys whose stored content this batch changed: a full record whose ``raw`` differs
        from the one kept, a stub that hides a shown row or differs from the stub kept. A nightly
        refresh re-reads many records that did not change, and "updated" must not count them."""
        changed = {key for key, text in texts.items() if key in before and known[key] != text}
        if stubs and self.spec.hideable:
            stub, hidden = columns.index("stub"), columns.index("hidden_from_users")
            changed |= {key for key, record in stubs.items() if key in before and key not in texts
                        and (not before[key][hidden] or before[key][stub] != to_json(record))}
        return changed

    def _seen(self, before: Mapping[Key, Row], known: Mapping[Key, str | None], columns: tuple[str, ...],
              full: list[tuple[Key, Any]], stubs: list[tuple[Key, Any]]) -> list[Seen]:
        """Each record of the batch (the last of a key; a stub over a full one) with its kept row."""
        at = {column: columns.index(column) for column in ("stub", "hidden_from_users") if column in columns}
        latest = {**{key: (record, False) for key, record in full}, **{key: (record, True) for key, record in stubs}}
        seen = []
        for key, (record, is_stub) in latest.items():
            row = before.get(key)
            if row is None or known[key] is None:  # no row, or one holding only a name so far
                seen.append(Seen(key, record, is_stub))
            else:
                seen.append(Seen(key, record, is_stub, old_raw=known[key], known=True,
                                 old_stub=row[at["stub"]] if "stub" in at else None,
                                 old_hidden=bool(row[at["hidden_from_users"]]) if "hidden_from_users" in at else False))
        return seen

    def key_of(self, record: Mapping[str, Any], context: Mapping[str, Any]) -> Key | None:
        """The record's primary key, or None when it cannot be stored (missing, mistyped, or an int
        id out of range: see :data:`.records.MAX_ID`)."""
        values = []
        for column, kind in self.pk_kinds:
            value = context.get(column, record.get(column))
            if (kind == "int" and not valid_id(value)) or (kind == "text" and not isinstance(value, str)):
                return None
            values.append(value)
        return values[0] if len(values) == 1 else tuple(values)

    def _aliased(self, record: Mapping[str, Any]) -> Mapping[str, Any]:
        """``record`` with the fields it names by another name (see ``TableSpec.aliases``) added."""
        missing = {f: a for f, a in self.spec.aliases.items() if f not in record and a in record}
        return {**record, **{f: record[a] for f, a in missing.items()}} if missing else record

    def _full_row(self, record: Mapping[str, Any], given: Mapping[str, Any], now: str, texts: dict[Key, str],
                  made: dict[Key, dict[str, Any]], key: Key) -> Row:
        """The values of every column a full record sets, in the order of ``save``'s ``columns``;
        the record's ``raw`` text goes into ``texts`` under ``key``, and the values SQLite is to
        make of the columns it derives into ``made``."""
        if self._derived:
            record = derived.ordered_representations(record)
        values = shape_values(self._aliased(record) if self.spec.aliases else record, self._fields)
        if self._hidden_at is not None and values[self._hidden_at] is None:
            values[self._hidden_at] = 0
        values += given.values()
        if self.rebuilt:
            named = dict(zip(self.spec.fields, values))
            text, *stored = raw_rebuilt.split(self.spec, record, named)
            if self._derived:
                made[key] = {name: named[name] for name in self._derived}
                for name in self._derived:
                    values[self._at[name]] = derived.kept_value(name, named)
            values += (*stored, now)
        else:
            text = to_json(record)
            values += (text, now)
        texts[key] = text
        if self.spec.hideable:
            values += (None,) if self._hidden_at is not None else (None, 0)
        return tuple(values)

    def _save_stub(self, key: Key, record: Mapping[str, Any], given: Mapping[str, Any], now: str,
                   known: bool, kept_raw: str | None) -> None:
        """Mark a kept row with the stub's hidden state, keeping everything else it has (its record,
        ``kept_raw``, too); a row first seen as a stub takes every field the stub carries (a hidden
        post keeps its author, avatar and dates), since there is nothing fuller to keep."""
        if known:
            fields = [f for f in self.spec.stub_fields if f in self.spec.fields]
        else:
            fields = [f for f in self.spec.fields if f in record or self._has_alias(f, record)]
        source = self._aliased(record) if self.spec.aliases else record
        row = shape(source, self.converters, tuple(fields))
        for name, kept in self._derived.items():  # a stub never names its files; were one to, kept as it came
            if name in row:
                value = row.pop(name)
                row[kept] = derived.kept_as(name, value)
        row.update(given)
        row.update(stub=to_json(record), mirrored_at=now, hidden_from_users=1)
        if known:
            self.rows.update(key, tuple(row), tuple(row.values()))
            if self.rebuilt:
                keep_record(self.db, self.spec.table, key, kept_raw, tuple(row))
        else:
            # never seen in full: the stub is all there is, kept as a record is (split over the
            # columns it set), so that the row is the same however many times the stub was seen
            row["raw_full" if self.rebuilt else "raw"] = row["stub"]
            self.rows.insert(tuple(row), [tuple(row.values())])
            if self.rebuilt:
                keep_record(self.db, self.spec.table, key, to_json(raw_rebuilt.canonical(self.spec, record)),
                            tuple(row))

    def _has_alias(self, field: str, record: Mapping[str, Any]) -> bool:
        return field in self.spec.aliases and self.spec.aliases[field] in record

    def _pk_text(self) -> str:
        kinds = {"int": f"an integer from 0 to {MAX_ID}", "text": "text"}
        return " and ".join(f"{column} ({kinds[kind]})" for column, kind in self.pk_kinds)


def keep_record(db: Database, table: str, key: Key, kept_raw: str | None, changed: Iterable[str]) -> None:
    """Keep ``kept_raw``, the ``raw`` of row ``key`` before ``changed`` columns of it were set
    without a record (a stub's hidden state, a file's facts), as its ``raw`` still: its record is
    split again over the columns as they now are (:mod:`.raw_rebuilt`), and read back."""
    spec = raw_rebuilt.REBUILT.get(table)
    if kept_raw is None or spec is None or not set(changed) & set(spec.fields):
        return
    try:
        record = json.loads(kept_raw)
    except ValueError:
        record = None
    stored: tuple[Any, ...] = (None, None, kept_raw, None)  # what no split can give back is kept whole
    if isinstance(record, dict):
        columns = db.execute(f'SELECT {quoted(tuple(spec.fields))} FROM "{table}" WHERE id = ?', [key]).fetchone()
        stored = raw_rebuilt.split(spec, record, dict(zip(spec.fields, columns)))[1:]
    rows = TableRows(db.conn, table, spec.pk_columns)
    rows.update(key, raw_rebuilt.STORED_COLUMNS, stored)
    if rows.read([key], ("raw",))[key][0] != kept_raw:
        rows.update(key, ("raw_full",), (kept_raw,))


def mark_hidden(db: Database, table: str, key: Any, *, destroyed: bool = False) -> None:
    """Mark a kept row hidden from users, keeping its record, when the site no longer shows it and
    sends no stub (a comment on a hidden image is refused; a destroyed one is not found), and keep
    the event in the history (``hidden``, or ``destroyed``) the first time, so that the record
    as of a moment before is shown again (:mod:`mirror.asof`)."""
    with db.atomic():
        row = db.execute(f'SELECT hidden_from_users, stub, raw FROM "{table}" WHERE id = ?', [key]).fetchone()
        if row is None:
            return
        if destroyed:
            note_event(db, table, key, "destroyed")
        elif not row[0]:
            note_event(db, table, key, "hidden")
        # mirrored_at moves with the row, so that what reads changes by it (mirror export) sees this one
        db.execute(f'UPDATE "{table}" SET hidden_from_users = 1, mirrored_at = ?{", stub = ?" if destroyed else ""} '
                   "WHERE id = ?", [utc_text(), "null", key] if destroyed else [utc_text(), key])
        keep_record(db, table, key, row[2], ("hidden_from_users",))
