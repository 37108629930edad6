"""Many records' histories read at once, for a reader of every version of many records.

:func:`mirror.asof.versions_of` reads one record's history with three queries of its own (when
the mirror knew each change, the changes, an image's tag changes). The first export reads every
version of every record, and for millions of them those queries, each prepared, bound and stepped
from Python, were a tenth of its time. :func:`histories_of` reads the same rows for a chunk of
records in two queries and hands each record's rows to :func:`~mirror.asof.records.versions_of`
(``history=``), which then reads exactly what its own queries would have given it, in the same
order; ``tests/asof/test_histories.py`` compares the versions read either way.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..store.first_sightings import COUNTED_AT_SQL
from ..store.history import tag_name_sql

__all__ = ["RecordHistory", "histories_of", "KNOWN_AT"]

# When the mirror knew of a history row ``h`` (joined to its run ``r``): its own changes when seen,
# the site's own (from a dump) when the run that read them began. A first sighting a run kept only
# as a count (mirror.store.first_sightings) is dated on the board at the end of the run's span, and
# known by the mirror no later than the row was written (``:mirrored``, its ``mirrored_at``).
KNOWN_AT = ("CASE WHEN h.event IN ('site_tags', 'site_source') "
            "THEN max(h.seen_at, coalesce(r.started_at, h.seen_at)) ELSE h.seen_at END")


@dataclass
class RecordHistory:
    """One record's history as :class:`~mirror.asof.records.Rewind` walks it: ``changes`` newest
    first (id, seen_at, event, changes; a first sighting kept only as a run's count as id 0),
    ``tag_changes`` newest first (seen_at, change, tag_id, name), and ``known``: for each time of
    the history, when the mirror knew every change made then."""

    changes: list[tuple[Any, ...]] = field(default_factory=list)
    tag_changes: list[tuple[Any, ...]] = field(default_factory=list)
    known: dict[str, str] = field(default_factory=dict)


def histories_of(conn: sqlite3.Connection, resource: str,
                 mirrored: Mapping[str, str | None]) -> dict[str, RecordHistory]:
    """The history of each record whose key ``mirrored`` holds (with its row's ``mirrored_at``),
    by key; a record with none has an empty one."""
    keys = list(mirrored)
    found = {key: RecordHistory() for key in keys}
    if not keys:
        return found
    listed = json.dumps(keys)
    for key, *change, known in conn.execute(
            f"SELECT h.record_key, h.id, h.seen_at, h.event, h.changes, {KNOWN_AT} FROM history h "
            "LEFT JOIN sync_runs r ON r.id = h.run_id WHERE h.resource = ? "
            "AND h.record_key IN (SELECT value FROM json_each(?)) ORDER BY h.record_key, h.seen_at DESC, h.id DESC",
            [resource, listed]):
        history = found[key]
        history.changes.append(tuple(change))
        seen = change[1]
        history.known[seen] = max(history.known.get(seen, known), known)
    counted = conn.execute(f"SELECT {COUNTED_AT_SQL}", {"resource": resource}).fetchone()[0]
    if counted is not None:
        for key, history in found.items():
            _add_counted(history, counted, mirrored[key])
    if resource == "images":
        _add_tag_changes(conn, found, keys)
    return found


def _add_counted(history: RecordHistory, at: str, mirrored: str | None) -> None:
    """The first sighting a run kept only as its count, for a record with no ``first_seen`` row of
    its own: dated when that run's sightings end, known then or by its row's ``mirrored_at``."""
    if any(event == "first_seen" for _, _, event, _ in history.changes):
        return
    # Newest first, and last among the rows of its time (its id, 0, is the least).
    place = next((n for n, (_, seen, _, _) in enumerate(history.changes) if seen < at), len(history.changes))
    history.changes.insert(place, (0, at, "first_seen", None))
    known = min(at, mirrored if mirrored is not None else at)
    history.known[at] = max(history.known.get(at, known), known)


def _add_tag_changes(conn: sqlite3.Connection, found: dict[str, RecordHistory], keys: Iterable[str]) -> None:
    ids = [int(key) for key in keys]
    for image_id, *change in conn.execute(
            f"SELECT c.image_id, c.seen_at, c.change, c.tag_id, {tag_name_sql('c')} FROM image_tag_changes c "
            "WHERE c.image_id IN (SELECT value FROM json_each(?)) "
            "ORDER BY c.image_id, c.seen_at DESC, c.history_id DESC, c.tag_id DESC", [json.dumps(ids)]):
        found[str(image_id)].tag_changes.append(tuple(change))
