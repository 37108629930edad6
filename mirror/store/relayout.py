"""Moving a table to the current rebuilt layout (:mod:`.raw_rebuilt`): from the old way (``raw``
stored whole), or from an earlier rebuilt layout (another SQL for ``raw``, other stored columns).

SQLite can neither turn a stored column into a generated one nor change a generated column's
expression, so the table is copied: a new table with the new layout, filled a batch of rows at a
time (each record split into its patch, each rebuild read back and compared, as the writer does),
then put in the old one's place, its indexes and triggers made again from their own SQL. Row ids
are kept, so the full-text indexes that read the table stay as they are. A row of an earlier
rebuilt layout is read back as the very text its ``raw`` gave. It runs inside the migration's
transaction: a killed run leaves the old table untouched and starts over next time. The freed
pages are reused as the archive grows; ``VACUUM`` gives them back to the disk.

A large table prints a line to stderr every tenth of the way: at a whole board's size (3.5 million
images) the copy takes minutes, and a nightly job must not look hung.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from sqlite_utils import Database

from . import derived, raw_rebuilt
from .records import to_json
from .specs import TableSpec
from .stderr_lines import say_to_stderr

__all__ = ["relayout", "LOUD_FROM"]

BATCH = 2000
LOUD_FROM = 50_000  # rows from which the copy says how far it has got

# ``raw`` as the old layout declares it, or as an earlier rebuilt layout did (its stored columns first)
_RAW = re.compile(r'"raw" TEXT NOT NULL|"raw_rest" TEXT, .*?"raw" TEXT GENERATED ALWAYS AS \(.*?\) VIRTUAL', re.S)


def _raw_definition(spec: TableSpec) -> str:
    stored = "".join(f'"{column}" {"INTEGER" if column == "raw_absent" else "TEXT"}, '
                     for column in raw_rebuilt.STORED_COLUMNS)
    return f'{stored}"raw" TEXT GENERATED ALWAYS AS ({raw_rebuilt.raw_expression(spec)}) VIRTUAL'


def _derived_definition(table: str, column: str, kept: str) -> str:
    return (f'"{kept}" {derived.stored_type(table, column)}, '
            f'"{column}" TEXT GENERATED ALWAYS AS ({derived.derived_sql(table, column)}) VIRTUAL')


def relayout(db: Database, spec: TableSpec, say: Callable[[str], None] | None = None) -> None:
    """Rebuild ``spec``'s table with ``raw`` rebuilt from its columns as this version does, keeping
    every record's value; a table already so is left as it is."""
    table = spec.table
    say = say or say_to_stderr
    create = db.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", [table]).fetchone()[0]
    definition = _raw_definition(spec)
    made = {column: _derived_definition(table, column, kept) for column, kept in derived.DERIVED.get(table, {}).items()}
    if definition in create and all(sql in create for sql in made.values()):
        return
    others = db.execute("SELECT sql FROM sqlite_master WHERE tbl_name = ? AND type IN ('index', 'trigger') "
                        "AND sql IS NOT NULL", [table]).fetchall()
    new = f"{table}_relayout"
    db.execute(f'DROP TABLE IF EXISTS "{new}"')
    renamed = re.sub(rf'^CREATE TABLE\s+"?{table}"?', f'CREATE TABLE "{new}"', create, count=1)
    renamed = _RAW.sub(lambda _: definition, renamed, count=1)
    for column, kept in derived.DERIVED.get(table, {}).items():
        declared = rf'"{kept}" \w+, "{column}" TEXT GENERATED ALWAYS AS \(.*?\) VIRTUAL|"{column}" TEXT(?=[,\n )])'
        renamed = re.sub(declared, lambda _, sql=made[column]: sql, renamed, count=1, flags=re.S)
    db.execute(renamed)
    if definition in create and all(column in derived.DIGESTS for column, sql in made.items() if sql not in create):
        _copy_with_digests(db, table, new, say)  # ``raw`` is made as before: nothing to split again
    else:
        _copy(db, spec, table, new, say)
    db.execute(f'DROP TABLE "{table}"')
    db.execute("PRAGMA legacy_alter_table = ON")  # views naming the table are not re-checked mid-swap
    try:
        db.execute(f'ALTER TABLE "{new}" RENAME TO "{table}"')
    finally:
        db.execute("PRAGMA legacy_alter_table = OFF")
    for (sql,) in others:
        db.execute(sql)


def _copy(db: Database, spec: TableSpec, table: str, new: str, say: Callable[[str], None]) -> None:
    """Copy every row of ``table`` into ``new``, its record split again; a row already kept in a
    rebuilt layout is read back as the very text its ``raw`` gave."""
    # the typed columns, as the record's fields (a derived column's value, not what keeps it)
    laid_out = [row[1] for row in db.execute(f'PRAGMA table_xinfo("{table}")')]
    rebuilt = "raw_rest" in laid_out
    made_here = derived.DERIVED.get(table, {})
    left = {"raw", *raw_rebuilt.STORED_COLUMNS, *made_here.values()}
    columns = [column for column in laid_out if column not in left]
    names = ", ".join(f'"{c}"' for c in columns)
    stored_names = ", ".join(f'"{derived.stored_name(table, c)}"' for c in (*columns, *raw_rebuilt.STORED_COLUMNS))
    total = db.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0]
    marks = f"({', '.join('?' * (len(columns) + len(raw_rebuilt.STORED_COLUMNS)))})"
    done, after, step = 0, None, max(1, total // 10)
    while True:
        where, params = ("WHERE rowid > ?", [after]) if after is not None else ("", [])
        rows = db.execute(f'SELECT rowid, {names}, raw FROM "{table}" {where} ORDER BY rowid LIMIT {BATCH}',
                          params).fetchall()
        if not rows:
            break
        values, texts, made = [], {}, {}
        for rowid, *kept, raw in rows:
            named = _ordered(dict(zip(columns, kept)))
            text, *stored = _split(spec, named, raw)
            if made_here:
                made[rowid] = {column: named[column] for column in made_here}
                named.update({column: derived.kept_value(column, named) for column in made_here})
            values += [*named.values(), *stored]
            texts[rowid] = raw if rebuilt else text
        db.execute(f'INSERT INTO "{new}" ({stored_names}) VALUES {", ".join([marks] * len(rows))}', values)
        _keep_made(db, table, new, made)
        _keep_whole(db, new, texts)
        after = rows[-1][0]
        before, done = done, done + len(rows)
        if total >= LOUD_FROM and done // step > before // step:
            say(f"{table}: moved {done:,} of {total:,} records to the compact layout")


def _copy_with_digests(db: Database, table: str, new: str, say: Callable[[str], None]) -> None:
    """Copy every row of ``table`` into ``new`` in SQL, as it is but for the hashes, kept from now on
    as :func:`.derived.kept_value` says: ``raw`` is made of the same values by the same SQL, so no
    record is split again in Python (:func:`_copy`: five times as long at 100,000 images), and each
    hash read back is compared with the text it was, which it keeps where they differ."""
    db.conn.create_function("mirror_digest_kept", 1, derived.digest_kept, deterministic=True)
    kept_of = {kept: column for column, kept in derived.DIGESTS.items()}
    old = {row[1] for row in db.execute(f'PRAGMA table_xinfo("{table}")') if row[6] == 0}  # stored, not made
    stored = [row[1] for row in db.execute(f'PRAGMA table_xinfo("{new}")') if row[6] == 0]
    names = ", ".join(f'"{c}"' for c in stored)
    sources = ", ".join(f'"{c}"' if c in old else f'mirror_digest_kept("{kept_of[c]}")' for c in stored)
    total = db.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0]
    done, after, step = 0, -1, max(1, total // 10)
    while copied := db.execute(f'INSERT INTO "{new}" ({names}) SELECT {sources} FROM "{table}" WHERE rowid > ? '
                               f"ORDER BY rowid LIMIT {BATCH * 25}", [after]).rowcount:
        after = db.execute(f'SELECT max(rowid) FROM "{new}"').fetchone()[0]
        before, done = done, done + copied
        if total >= LOUD_FROM and done // step > before // step:
            say(f"{table}: moved {done:,} of {total:,} records to the compact layout")
    for column, kept in derived.DIGESTS.items():
        db.execute(f'UPDATE "{new}" SET "{kept}" = (SELECT o."{column}" FROM "{table}" o WHERE o.rowid = "{new}".rowid) '
                   f'WHERE rowid IN (SELECT o.rowid FROM "{table}" o JOIN "{new}" n ON n.rowid = o.rowid '
                   f'WHERE o."{column}" IS NOT n."{column}")')


def _ordered(columns: dict[str, Any]) -> dict[str, Any]:
    """The row's ``representations`` in the order the records' are now kept (:mod:`.derived`)."""
    text = columns.get("representations")
    if isinstance(text, str) and text.startswith("{"):
        try:
            value = json.loads(text)
        except ValueError:
            return columns
        columns["representations"] = to_json(derived.ordered_representations({"representations": value})
                                              ["representations"])
    return columns


def _keep_made(db: Database, table: str, new: str, made: dict[int, dict[str, Any]]) -> None:
    """Keep the value of each column of a row of ``new`` that SQLite makes otherwise than it was."""
    if not made:
        return
    kept = derived.DERIVED[table]
    marks = ",".join("?" * len(made))
    names = ", ".join(f'"{column}"' for column in kept)
    for rowid, *got in db.execute(f'SELECT rowid, {names} FROM "{new}" WHERE rowid IN ({marks})', list(made)):
        for column, value in zip(kept, got):
            if value != made[rowid][column]:
                db.execute(f'UPDATE "{new}" SET "{kept[column]}" = ? WHERE rowid = ?',
                           [derived.kept_as(column, made[rowid][column]), rowid])


def _split(spec: TableSpec, columns: dict[str, Any], raw: str | None) -> raw_rebuilt.Split:
    """(the record's text, its patch, its fields without a column, its whole text where the
    rebuild cannot give it, the mask of the fields it lacks)."""
    try:
        record = json.loads(raw) if raw is not None else None
    except ValueError:
        record = None
    if not isinstance(record, dict):
        return raw, None, None, raw, None
    return raw_rebuilt.split(spec, derived.ordered_representations(record), columns)


def _keep_whole(db: Database, table: str, texts: dict[int, str]) -> None:
    marks = ",".join("?" * len(texts))
    rebuilt = dict(db.execute(f'SELECT rowid, raw FROM "{table}" WHERE rowid IN ({marks})', list(texts)).fetchall())
    for rowid, text in raw_rebuilt.mismatches(rebuilt, texts).items():
        db.execute(f'UPDATE "{table}" SET raw_full = ? WHERE rowid = ?', [text, rowid])
