"""Reading the history back (:mod:`.history` writes it): changes with the names of their records,
filtered by event, resource and record; a first sync's "first seen" rows counted per resource.

`mirror changes` and the pages of `mirror browse` read through here, so both say the same thing:
a tag or a user by its name where the mirror has it, the site's own changes (from its dump) with
the site's user, an image's tags added and removed by name.

Two orders, for two readers. :func:`changes_since` walks the ids down, as the syncs wrote them,
for `mirror changes --since` (the site's own changes, imported later at their earlier times,
show within ``--since`` only). :func:`changes_page` reads the newest by time, a page at a time,
one index range per resource and event (``history_by_resource_event``), so no page of a board's
whole history reads more than it shows.
"""

from __future__ import annotations

import heapq
import json
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from .first_sightings import first_seen_counted_at
from .history import EVENTS, tag_name_sql

__all__ = ["EVENTS", "Change", "FirstSeen", "TagChange", "RESOURCES", "SITE_EVENTS", "changes_since", "changes_page",
           "first_seen", "counted_sightings", "counted_sighting", "record_history", "tag_changes", "parse_cursor",
           "cursor_text"]

# The tables history is kept under, in the order a summary lists them.
RESOURCES = ("images", "tags", "users", "comments", "posts", "galleries", "forums", "topics", "filters")
SITE_EVENTS = frozenset({"site_tags", "site_source"})
# The record a resource's key names, and the column holding its name.
_NAMES = {"tags": "name", "users": "name", "galleries": "title", "filters": "name"}
_COLUMNS = "id, seen_at, resource, record_key, event, run_id, changes, user_id"
_BATCH = 500
# Nor more changes at once than hold this many characters (an image's 8 MB description, old and new,
# is one change of 16 MB).
_BATCH_CHARS = 32 * 2**20


def _cut(value: str, longest: int) -> str:
    """SQL for the JSON text ``value`` (of json_each), cut to ``longest`` characters and an ellipsis."""
    return f"(CASE WHEN length({value}) > {int(longest)} THEN substr({value}, 1, {int(longest)}) || '…' ELSE {value} END)"


def _cut_changes(longest: int) -> str:
    """SQL for ``changes`` with every text in it (a field's old or new value, or a field's own) cut
    to ``longest`` characters, by SQLite: the whole text never reaches Python, and lists, numbers,
    nulls and booleans stay as they are."""
    element = f"CASE WHEN e.type = 'text' THEN {_cut('e.value', longest)} ELSE json(f.value -> e.fullkey) END"
    field = (f"CASE WHEN f.type = 'array' THEN (SELECT json_group_array({element}) FROM json_each(f.value) e) "
             f"WHEN f.type = 'text' THEN {_cut('f.value', longest)} ELSE json(changes -> f.fullkey) END")
    return (f"CASE WHEN changes IS NULL THEN NULL ELSE "
            f"(SELECT json_group_object(f.key, {field}) FROM json_each(changes) f) END")


@dataclass
class Change:
    """One record's change: seen by a sync, or made on the site (read from its dump)."""

    id: int
    seen_at: str
    resource: str
    key: str
    event: str
    run_id: int | None
    changes: dict[str, list[Any]] | None
    user_id: int | None = None
    name: str | None = None  # the tag's or user's name, the gallery's title, where the mirror has it
    user_name: str | None = None  # the site's user who made a change on the site
    tags_added: list[str] = field(default_factory=list)
    tags_removed: list[str] = field(default_factory=list)

    @property
    def on_site(self) -> bool:
        """Made on the site and read from its dump, at the site's time, rather than seen by a sync."""
        return self.event in SITE_EVENTS


@dataclass(frozen=True)
class FirstSeen:
    """The records of one resource a sync saw for the first time, counted."""

    resource: str
    count: int
    first_at: str
    last_at: str
    # of ``count``, those a run kept only as its count, with no row to list (how a sighting is kept, not what)
    counted: int = field(default=0, compare=False)


def _kept(conn: sqlite3.Connection, table: str) -> bool:
    """Whether the mirror has ``table`` (one made before history was kept has none, and browsing
    migrates nothing)."""
    return conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", [table]).fetchone() is not None


def _counts_kept(conn: sqlite3.Connection) -> bool:
    """Whether the mirror keeps first sightings counted per run (migration 0041)."""
    return conn.execute("SELECT 1 FROM pragma_table_info('history_first_seen') WHERE name = 'counted'"
                        ).fetchone() is not None


def _decode(text: str | None) -> Any:
    return json.JSONDecoder().raw_decode(text)[0] if text else None


def _change(row: Sequence[Any]) -> Change:
    return Change(row[0], row[1], row[2], row[3], row[4], row[5], _decode(row[6]), row[7])


def _fill(conn: sqlite3.Connection, found: list[Change]) -> list[Change]:
    """Add the tags added and removed, the records' names and the site's users' names."""
    images = {c.id: c for c in found if c.resource == "images"}
    if images:
        for history_id, sign, tag_id, name in conn.execute(
                f"SELECT c.history_id, c.change, c.tag_id, {tag_name_sql('c')} FROM json_each(?) h "
                "JOIN image_tag_changes c ON c.image_id = h.value ->> 0 AND c.history_id = h.value ->> 1 "
                "ORDER BY c.history_id, c.tag_id",
                [json.dumps([[int(c.key), c.id] for c in images.values() if c.key.isdigit()])]):
            shown = name if name is not None else f"tag {tag_id}"
            (images[history_id].tags_added if sign == "+" else images[history_id].tags_removed).append(shown)
    for resource, column in _NAMES.items():
        keys = {c.key for c in found if c.resource == resource and c.key.isdigit()}
        names = _names(conn, resource, column, keys)
        for c in found:
            if c.resource == resource:
                c.name = names.get(c.key)
    users = _names(conn, "users", "name", {str(c.user_id) for c in found if c.user_id is not None})
    for c in found:
        if c.user_id is not None:
            c.user_name = users.get(str(c.user_id))
    return found


def _names(conn: sqlite3.Connection, table: str, column: str, keys: set[str]) -> dict[str, str]:
    if not keys:
        return {}
    rows = conn.execute(f"SELECT id, {column} FROM {table} WHERE id IN (SELECT value FROM json_each(?))",
                        [json.dumps(sorted(int(k) for k in keys))])
    return {str(record_id): name for record_id, name in rows if isinstance(name, str) and name}


def _filters(events: Iterable[str], resources: Iterable[str], key: str | None) -> tuple[list[str], list[Any]]:
    where: list[str] = []
    params: list[Any] = []
    for column, values in (("event", list(events)), ("resource", list(resources))):
        if values:
            where.append(f"{column} IN ({','.join('?' * len(values))})")
            params += values
    if key is not None:
        where.append("record_key = ?")
        params.append(key)
    return where, params


def changes_since(conn: sqlite3.Connection, since: str, *, events: Sequence[str] = (),
                  resources: Sequence[str] = (), key: str | None = None, limit: int | None = None,
                  longest: int | None = None) -> Iterator[Change]:
    """The changes seen at or after ``since`` (stored time text), newest first by id, read a batch at a
    time (a year of history is never held at once, nor a batch of huge ones). With ``longest``,
    every text in a change comes cut to that many characters (for a line that says "edited")."""
    # By the index on time: left to itself, SQLite takes min(id) as a walk up the ids, through a year.
    first = conn.execute("SELECT min(id) FROM history INDEXED BY history_by_time WHERE seen_at >= ?",
                         [since]).fetchone()[0]
    if first is None:
        return
    where, params = _filters(events, resources, key)
    where += ["id >= ?", "seen_at >= ?", "id < ?"]
    columns = _COLUMNS if longest is None else _COLUMNS.replace("changes", _cut_changes(longest))
    sql = f"SELECT {columns} FROM history WHERE {' AND '.join(where)} ORDER BY id DESC LIMIT ?"
    below, left = 2**62, limit if limit is not None else 2**62
    while left > 0:
        batch = _batch(conn.execute(sql, [*params, first, since, below, min(_BATCH, left)]))
        if not batch:
            return
        yield from _fill(conn, batch)
        below, left = batch[-1].id, left - len(batch)


def _batch(rows: sqlite3.Cursor) -> list[Change]:
    """The changes of ``rows``, read one at a time, up to the first past :data:`_BATCH_CHARS`."""
    batch, held = [], 0
    for row in rows:
        batch.append(_change(row))
        held += len(row[6] or "")
        if held >= _BATCH_CHARS:
            break
    rows.close()
    return batch


def changes_page(conn: sqlite3.Connection, *, events: Sequence[str], resources: Sequence[str],
                 before: tuple[str, int] | None = None, limit: int = 50) -> list[Change]:
    """The ``limit`` newest changes by time (then id) before ``before`` (a (seen_at, id) cursor), of
    the given events and resources: one index range for each pair (``history_by_resource_event``), merged."""
    if not _kept(conn, "history"):
        return []
    cursor = before or ("\uffff", 2**62)
    ranges = []
    for resource in resources:
        for event in events:
            ranges.append([_change(row) for row in conn.execute(
                f"SELECT {_COLUMNS} FROM history WHERE resource = ? AND event = ? "
                "AND (seen_at < ? OR (seen_at = ? AND id < ?)) ORDER BY seen_at DESC, id DESC LIMIT ?",
                [resource, event, cursor[0], cursor[0], cursor[1], limit])])
    newest = heapq.merge(*ranges, key=lambda c: (c.seen_at, c.id), reverse=True)
    return _fill(conn, [c for _, c in zip(range(limit), newest, strict=False)])


def first_seen(conn: sqlite3.Connection, *, since: str | None = None,
               resources: Sequence[str] = RESOURCES) -> list[FirstSeen]:
    """How many records of each resource were first seen (at or after ``since``), and when: from
    the counts kept as the history is written (:mod:`.first_sightings`). Since a time, the rows
    are counted, and a run's first sightings kept as a count are counted whole where they end at
    or after it (each record of it is answered as first seen at that end)."""
    found: list[FirstSeen] = []
    if not _kept(conn, "history"):
        return found
    counts = _counts_kept(conn)
    for resource in resources:
        if not counts:  # a mirror browsed before its next run migrates it: every sighting is a row
            row = conn.execute("SELECT count(*), min(seen_at), max(seen_at), 0 FROM history "
                               "WHERE resource = ? AND event = 'first_seen' AND seen_at >= ?",
                               [resource, since or ""]).fetchone()
        elif since is None:
            row = conn.execute("SELECT sum(count), min(first_at), max(last_at), sum(count * counted) "
                               "FROM history_first_seen WHERE resource = ?", [resource]).fetchone()
        else:
            row = conn.execute("""SELECT sum(n), min(first_at), max(last_at), sum(counted) FROM (
                SELECT count(*) AS n, min(seen_at) AS first_at, max(seen_at) AS last_at, 0 AS counted FROM history
                WHERE resource = :resource AND event = 'first_seen' AND seen_at >= :since
                UNION ALL
                SELECT count, last_at, last_at, count FROM history_first_seen
                WHERE resource = :resource AND counted = 1 AND last_at >= :since)""",
                               {"resource": resource, "since": since}).fetchone()
        if row and row[0]:
            found.append(FirstSeen(resource, *row))
    return found


def counted_sightings(conn: sqlite3.Connection, resources: Sequence[str] = RESOURCES) -> list[FirstSeen]:
    """The first sightings kept as a count rather than as rows (:mod:`.first_sightings`), per run
    and resource: what a list of the records first seen cannot show one by one."""
    if not _counts_kept(conn):
        return []
    rows = conn.execute("SELECT resource, count, first_at, last_at, count FROM history_first_seen "
                        "WHERE counted = 1 AND resource IN (SELECT value FROM json_each(?)) ORDER BY last_at DESC",
                        [json.dumps(list(resources))])
    return [FirstSeen(*row) for row in rows]


def record_history(conn: sqlite3.Connection, resource: str, key: str, *, before: tuple[str, int] | None = None,
                   limit: int = 50) -> list[Change]:
    """The ``limit`` newest changes of one record before ``before`` (a (seen_at, id) cursor), newest
    first by time (the site's own changes in their place, and a first sighting kept only as a
    count, :mod:`.first_sightings`, as a change numbered 0): a page, from one index range, however
    long the record's history (bots have given one image 75,260 tag changes)."""
    if not _kept(conn, "history"):
        return []
    cursor = before or ("\uffff", 2**62)
    rows = conn.execute(f"SELECT {_COLUMNS} FROM history WHERE resource = ? AND record_key = ? "
                        "AND (seen_at < ? OR (seen_at = ? AND id < ?)) ORDER BY seen_at DESC, id DESC LIMIT ?",
                        [resource, key, cursor[0], cursor[0], cursor[1], limit]).fetchall()
    found = [_change(row) for row in rows]
    # A first sighting a run kept only as a count, in its place by time (id 0: after its second's rows).
    counted = counted_sighting(conn, resource, key)
    if counted is not None and (counted.seen_at, 0) < cursor and (len(found) < limit
                                                                  or counted.seen_at > found[-1].seen_at):
        found = sorted([*found, counted], key=lambda c: (c.seen_at, c.id), reverse=True)[:limit]
    return _fill(conn, found)


def counted_sighting(conn: sqlite3.Connection, resource: str, key: str) -> Change | None:
    """The record's first sighting where a run kept it only as a count (:mod:`.first_sightings`),
    as a change numbered 0 dated when that run's sightings end; None where it has a row of its own."""
    counted = first_seen_counted_at(conn, resource, key)
    return Change(0, counted, resource, key, "first_seen", None, None) if counted is not None else None


def parse_cursor(text: str) -> tuple[str, int]:
    """The (seen_at, id) cursor an "older" link carries (``SEEN_AT~ID``); ValueError for anything else."""
    at, _, last = text.rpartition("~")
    if not last.isdigit() or not at or len(last) > 18:
        raise ValueError("before: give the cursor an 'older' link carries")
    return at, int(last)


def cursor_text(change: Change) -> str:
    """The cursor of the page after ``change`` (the last one shown), for an "older" link."""
    return f"{change.seen_at}~{change.id}"


@dataclass(frozen=True)
class TagChange:
    """An image that gained (``+``) or lost (``-``) a tag, when, and whether on the site."""

    image_id: int
    change: str
    seen_at: str
    on_site: bool


def tag_changes(conn: sqlite3.Connection, tag_id: int, limit: int = 20) -> list[TagChange]:
    """The images that gained or lost a tag lately, newest first."""
    if not _kept(conn, "image_tag_changes"):
        return []
    rows = conn.execute("SELECT c.image_id, c.change, c.seen_at, h.event FROM image_tag_changes c "
                        "JOIN history h ON h.id = c.history_id WHERE c.tag_id = ? ORDER BY c.seen_at DESC, c.history_id DESC "
                        "LIMIT ?", [tag_id, limit])
    return [TagChange(image_id, change, seen_at, event in SITE_EVENTS) for image_id, change, seen_at, event in rows]
