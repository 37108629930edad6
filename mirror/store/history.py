"""Every change a sync sees, kept: what each record was, and when it stopped being that.

An archive that keeps only the last version of a record forgets what archivists keep it for:
the tag someone removed, the description that was edited, the image that was deleted and why.
The writers already read each kept row before writing over it (:mod:`.rows` writes only the
columns that differ), so the change is at hand; it is kept the way Simon Willison's
``sqlite-history`` keeps it, as the changed fields only, not a second copy of the row:

``history(id, resource, record_key, run_id, seen_at, event, changes)``
    One row per record per sync that saw it differ. ``changes`` is ``{"field": [old, new], ...}``
    over the record's own fields (the ``raw`` the site sent, so a field added to the API since is
    kept too), or NULL for ``first_seen`` (the row itself is that version). ``event`` names what
    happened, for queries: :data:`EVENTS`. The first sightings of a run that fills an empty table
    (a first sync, a dump's import) are one count per resource instead (:mod:`.first_sightings`).
``image_tag_changes(image_id, history_id, tag_id, change, tag_name, seen_at)``
    An image's tags added (``+``) and removed (``-``), by id and name, instead of two long lists
    in ``changes``: "which images lost ``safe`` last month" is one indexed query. Its run is its
    history row's; it is known by (image, history row, tag), its table clustered by image
    (:mod:`.tag_changes`, migration 0045). ``tag_name`` is kept only where it is not the tag's name today (NULL: the
    tag's name, ``''``: a name not known), a tag renamed writing its old name into its changes
    first (migration 0044): some 0.4 GB of a whole board's 36 million changes. Read the name by
    :func:`tag_name_sql`.

A field the kept record lacked is not a change when a sync first receives it: it was unknown, not
different (a public dump leaves out fields the API fills in; the site adds fields to its API).
The relations of a tag listed in another order are the same relations. A date written another way
(``...:38`` and ``...:38Z``, ``.000`` or not) naming the same instant is the same date. The host an
image's files are served from (the root of its ``view_url`` and ``representations``) is the
mirror's configuration, not the record's: a dump imported before the site's URL was set names
the default host, and the first sync's records, the configured one; with the same files under
both roots, nothing changed.

Counters (votes, faves, scores, comment and image counts) change on every vote and would fill
the history with numbers; with them goes ``updated_at``, which the site moves on each vote. A
change of these alone is kept at the grain ``history.counters`` sets: ``daily`` (the default,
at most one point a day per record), ``all``, or ``off``. With any other change they are kept
alongside it. A tag's image count crossing zero is always kept (``emptied``, ``used``).

The site's own history, read from its dump (:mod:`mirror.dump`), is kept beside it: an image's
tag changes (event ``site_tags``, its tags in ``image_tag_changes``) and source changes
(``site_source``), each at the time the site made it and with the site's user in ``user_id``.

History is written only inside a sync run (:func:`recording`, begun by
:func:`~.state.start_run`), in the transaction that writes the rows, so a kill never leaves one
without the other. A board the local site generates, or a download, records nothing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

from sqlite_utils import Database

from ..dates import parse_utc, utc_text
from .derived import file_root
from .first_sightings import count_sightings, fills_empty_table
from .records import storable_text, tags_in_step
from .stderr_lines import say_to_stderr

__all__ = ["EVENTS", "COUNTER_MODES", "Seen", "HistoryRecorder", "KeptSiteTags", "unseen_site_tags", "recording", "recorder_for", "record_key",
           "note_event", "SiteChange", "save_site_changes", "tag_name_sql", "keep_only_renamed_tag_names",
           "keep_counters", "counters_kept"]

EVENTS = ("first_seen", "changed", "counters", "hidden", "deleted", "merged", "shown", "destroyed", "gone",
          "emptied", "used", "gallery_images", "site_tags", "site_source")
COUNTER_MODES = ("daily", "all", "off")

# The fields of each resource that move with votes and activity rather than edits.
COUNTERS: Mapping[str, frozenset[str]] = {
    "images": frozenset({"score", "upvotes", "downvotes", "faves", "hides", "wilson_score", "comment_count",
                         "updated_at"}),
    "tags": frozenset({"images"}),
    "users": frozenset({"comments_count", "uploads_count", "posts_count", "topics_count"}),
    "forums": frozenset({"topic_count", "post_count", "last_post", "last_topic"}),
    "topics": frozenset({"post_count", "view_count", "last_replied_to_at", "last_post", "updated_at"}),
    "filters": frozenset({"user_count"}),
    "comments": frozenset({"updated_at"}),
    "posts": frozenset({"updated_at"}),
    "galleries": frozenset({"updated_at"}),
}
# Kept as additions and removals in image_tag_changes rather than in ``changes``.
_TAG_FIELDS = frozenset({"tags", "tag_ids"})
# Lists whose order means nothing: the site lists a tag's relations in no set order (and a dump's
# importer in its own), so the same slugs in another order are the same relations.
_UNORDERED: Mapping[str, frozenset[str]] = {"tags": frozenset({"aliases", "implied_tags", "implied_by_tags"})}


def record_key(key: Any) -> str:
    """A primary key as text: ``123``, ``pony``, or for a compound key the JSON list SQLite's
    ``json_array`` gives (``["art","a-topic"]``), so the history joins its table in SQL."""
    return json.dumps(list(key), ensure_ascii=False, separators=(",", ":")) if isinstance(key, tuple) else str(key)


@dataclass(frozen=True)
class Seen:
    """A record a sync received, with what the mirror kept of it just before."""

    key: Any
    record: Mapping[str, Any] | None  # None: the site has no record (destroyed, gone)
    is_stub: bool = False
    old_raw: str | None = None  # the record kept before; None with ``known``: only a stub was
    old_stub: str | None = None
    old_hidden: bool = False
    known: bool = False  # a row existed before


class HistoryRecorder:
    """Writes the history of one sync run to its database."""

    def __init__(self, db: Database, run_id: int | None, counters: str = "daily") -> None:
        if counters not in COUNTER_MODES:
            raise ValueError(f"history.counters must be one of {', '.join(COUNTER_MODES)}, not {counters!r}")
        self.db, self.run_id, self.counters = db, run_id, counters
        self._counted: tuple[str, set[tuple[str, str]]] = ("", set())  # a day, and the records counted on it
        # Whether this run counts its first sightings of a resource rather than writing a row for each:
        # decided at its first batch of the resource, for the rest of the run.
        self._fills: dict[str, bool] = {}
        # When the changes written now were seen, if not now: the moment a firehose event arrived
        # (mirror.follow), the best change time anyone outside the site has.
        self.seen_at: str | None = None

    def saw(self, resource: str, seen: Sequence[Seen], aliases: Mapping[str, str] | None = None,
            now: str | None = None) -> None:
        """Keep what changed in each record seen (nothing for one that did not change). ``aliases``
        are the fields the site sends under two names (``creator`` or ``user``, see
        ``TableSpec.aliases``): one record under either name is the same record. ``now`` is the
        time the writer stamped the rows with (``mirrored_at``), so a change is never dated after
        the row that holds it, even when the clock's second turns between the two."""
        now = self.seen_at or now or utc_text()
        if resource not in self._fills:
            self._fills[resource] = self.run_id is not None and fills_empty_table(
                self.db, self.run_id, resource, None if any(item.known for item in seen) else len(seen))
        counted = 0
        for item in seen:
            found = self._change(resource, item, now, aliases or {})
            if found is None:
                continue
            event, changes, tags = found
            if event == "first_seen" and self._fills[resource]:
                counted += 1
                continue
            history_id = self._write(resource, item.key, event, changes, now)
            if tags:
                self._write_tags(history_id, item.key, tags, now)
        if counted:
            count_sightings(self.db, self.run_id, resource, counted, now)

    def event(self, resource: str, key: Any, event: str, changes: Mapping[str, Any] | None = None) -> None:
        """Keep an event the writers do not see as a record (a gallery gone, a comment destroyed)."""
        self._write(resource, key, event, changes, self.seen_at or utc_text())

    def _change(self, resource: str, item: Seen, now: str,
                aliases: Mapping[str, str]) -> tuple[str, dict | None, list] | None:
        if not item.known:
            return "first_seen", None, []
        new, old = _named_alike(item.record, aliases), _named_alike(_loads(item.old_raw), aliases)
        if item.is_stub:
            return self._hiding(resource, item, new or {})
        rooted = _under_root_of(old, new) if resource == "images" else old
        changes = _diff(rooted, new or {}, _UNORDERED.get(resource, frozenset()))
        changes = {field: [old.get(field), after] for field, (_, after) in changes.items()}
        tags = _tag_changes(old, new or {}) if resource == "images" else []
        if item.old_hidden:
            return "shown", changes or None, tags
        crossing = _crossing_zero(resource, changes)
        substantive = {f for f in changes if f not in COUNTERS.get(resource, ())}
        if substantive or tags:
            if self.counters == "off":
                changes = {f: v for f, v in changes.items() if f in substantive}
            return "changed", changes or None, tags
        if crossing:
            return crossing, changes, []
        if changes and self._counters_due(resource, item.key, now):
            return "counters", changes, []
        return None

    def _hiding(self, resource: str, item: Seen, stub: Mapping[str, Any]) -> tuple[str, dict | None, list] | None:
        """A stub: the record hidden, deleted or merged; or, already hidden, its reason changed."""
        before = _loads(item.old_stub) if item.old_hidden else {}
        before = before if isinstance(before, dict) else {}
        changes = {f: [before.get(f), stub.get(f)] for f in ("deletion_reason", "duplicate_of")
                   if f in stub and before.get(f) != stub.get(f)}
        # The stub's own time: it moves when the site edits a hidden record (kept, so the stub answered
        # at any moment is known: mirror.asof).
        if stub.get("updated_at") is not None and before.get("updated_at") != stub.get("updated_at"):
            changes["updated_at"] = [before.get("updated_at"), stub.get("updated_at")]
        if item.old_hidden and not changes:
            return None
        if stub.get("duplicate_of") is not None:
            event = "merged"
        elif stub.get("deletion_reason"):
            event = "deleted"
        else:
            event = "hidden"
        return event, changes or None, []

    def _counters_due(self, resource: str, key: Any, now: str) -> bool:
        if self.counters == "all":
            return True
        if self.counters == "off":
            return False
        day, counted = now[:10], (resource, record_key(key))
        if self._by_record():
            last = self.db.execute("SELECT seen_at FROM history WHERE resource = ? AND record_key = ? "
                                   "AND event = 'counters' ORDER BY id DESC LIMIT 1", list(counted)).fetchone()
            return last is None or last[0][:10] < day
        # Without the index (a first import leaves it to its end: store.upkeep) that lookup would read
        # the whole history for each record; the history is then this import's own, and what it
        # counted today is known here (a resumed import may count a record twice in a day, no more).
        if self._counted[0] != day:
            self._counted = (day, set())
        if counted in self._counted[1]:
            return False
        self._counted[1].add(counted)
        return True

    def _by_record(self) -> bool:
        return self.db.execute("SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = 'history_by_record_time'"
                               ).fetchone() is not None

    def _write(self, resource: str, key: Any, event: str, changes: Mapping[str, Any] | None, now: str) -> int:
        cursor = self.db.execute(
            "INSERT INTO history (resource, record_key, run_id, seen_at, event, changes) VALUES (?, ?, ?, ?, ?, ?)",
            [resource, storable_text(record_key(key)), self.run_id, now, event,
             None if changes is None else changes_json(changes)])
        return cursor.lastrowid

    def _write_tags(self, history_id: int, image_id: Any, tags: list[tuple[str, int, str | None]], now: str) -> None:
        self.db.conn.executemany(
            f"INSERT INTO image_tag_changes (history_id, image_id, tag_id, tag_name, change, seen_at) "
            f"VALUES (?, ?, ?, {_KEPT_NAME}, ?, ?)",
            [(history_id, image_id, tag_id, None if name is None else storable_text(name), tag_id, change, now)
             for change, tag_id, name in tags])


# ``tag_name`` as written: NULL where it is the tag's name today, '' where it is not known.
_KEPT_NAME = "nullif(coalesce(?, ''), (SELECT name FROM tags WHERE id = ?))"


def tag_name_sql(alias: str) -> str:
    """SQL of the name the tag change ``alias`` (a row of ``image_tag_changes``) gave its tag, NULL
    where it was not known: the tag's name today unless the change keeps another."""
    return (f"CASE WHEN {alias}.tag_name IS NULL THEN (SELECT name FROM tags WHERE tags.id = {alias}.tag_id) "
            f"ELSE nullif({alias}.tag_name, '') END")


def keep_only_renamed_tag_names(db: Database, say: Callable[[str], None] | None = None) -> None:
    """Clear ``tag_name`` in the tag changes that name their tag as it is named today, and write
    ``''`` where none was known, a million changes at a time, a line to stderr every tenth of a
    large table (a whole board's 36 million take minutes)."""
    say = say or say_to_stderr
    last = db.execute("SELECT max(id) FROM image_tag_changes").fetchone()[0] or 0
    step, loud = 1_000_000, last >= 500_000
    for start in range(0, last, step):
        db.execute("UPDATE image_tag_changes SET tag_name = nullif(coalesce(tag_name, ''), "
                   "(SELECT name FROM tags WHERE tags.id = image_tag_changes.tag_id)) WHERE id > ? AND id <= ?",
                   [start, start + step])
        if loud and (start // step + 1) % max(1, last // step // 10) == 0:
            say(f"image_tag_changes: {min(start + step, last):,} of {last:,} tag changes name only renamed tags")



def changes_json(changes: Mapping[str, Any]) -> str:
    """``changes`` as the history keeps them: JSON text SQLite can store. A lone surrogate (valid in
    JSON, not in UTF-8) becomes U+FFFD, as it does in a record's text columns at first sight."""
    return storable_text(json.dumps(changes, ensure_ascii=False, separators=(",", ":")))


def _loads(raw: str | None) -> Any:
    try:
        return json.loads(raw) if raw else {}
    except ValueError:
        return {}


def _diff(old: Any, new: Mapping[str, Any], unordered: frozenset[str] = frozenset()) -> dict[str, list[Any]]:
    """``{field: [old, new]}`` for every top-level field that differs.

    A field the kept record did not have is not a change: it was unknown, not different. A public
    dump leaves out what the API fills in (an image's ``animated``, a comment's ``avatar``, an
    anonymous author's name), and the site adds fields to its API over the years; when a sync
    first receives such a field, the record gains what it always had. The raw record keeps it
    from then on, so the next change of it is a change."""
    old = old if isinstance(old, dict) else {}
    return {field: [old.get(field), new.get(field)] for field in sorted(set(old) | set(new))
            if field not in _TAG_FIELDS and field in old and old[field] != new.get(field)
            and not (field in unordered and _same_members(old[field], new.get(field)))
            and not _same_instant(old[field], new.get(field))}


# A date and time as the site writes them, in any of its spellings (a seconds' fraction, Z or an offset).
_DATE_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}")


def _same_instant(old: Any, new: Any) -> bool:
    """Two spellings of one moment: ``2024-01-02T03:04:38`` and ``2024-01-02T03:04:38.000Z``."""
    if not (isinstance(old, str) and isinstance(new, str) and _DATE_TIME.match(old) and _DATE_TIME.match(new)):
        return False
    before, after = parse_utc(old), parse_utc(new)
    return before is not None and before == after


def _file_root(record: Any) -> str | None:
    """Where an image record's files are (:func:`.derived.file_root` of its ``view_url``), or None."""
    return file_root(record.get("view_url")) if isinstance(record, dict) else None


def _under_root_of(old: Any, new: Any) -> Any:
    """The image record ``old`` with its file URLs moved under ``new``'s file root, so that a change
    of host (configuration) is no change of the record, while any other change of its URLs is."""
    before, after = _file_root(old), _file_root(new)
    if before is None or after is None or before == after:
        return old

    def moved(url: Any) -> Any:
        return after + url[len(before):] if isinstance(url, str) and url.startswith(before + "/") else url

    rooted = {**old, "view_url": moved(old["view_url"])}
    if isinstance(old.get("representations"), dict):
        rooted["representations"] = {name: moved(url) for name, url in old["representations"].items()}
    return rooted


def _named_alike(record: Any, aliases: Mapping[str, str]) -> Any:
    """``record`` with each field it sends under its other name (``user``) under the field's name
    (``creator``), as the writers store it."""
    if not aliases or not isinstance(record, dict):
        return record
    renamed = {alias: field for field, alias in aliases.items() if alias in record and field not in record}
    return {renamed.get(name, name): value for name, value in record.items()}


def _same_members(old: Any, new: Any) -> bool:
    """Two lists of the same members (slugs), in any order."""
    return (isinstance(old, list) and isinstance(new, list)
            and sorted(old, key=json.dumps) == sorted(new, key=json.dumps))


def _tags_of(record: Any) -> dict[int, str | None]:
    """An image record's tags, id -> name (the API sends ``tag_ids`` and ``tags`` in step; a record
    whose lists disagree gives ids only, as its names cannot be paired with them)."""
    if not isinstance(record, dict) or not isinstance(record.get("tag_ids"), list):
        return {}
    names = record["tags"] if tags_in_step(record) else []
    ids = [i for i in record["tag_ids"] if type(i) is int]
    return {tag_id: (names[n] if n < len(names) and isinstance(names[n], str) else None)
            for n, tag_id in enumerate(ids)}


def _tag_changes(old: Any, new: Mapping[str, Any]) -> list[tuple[str, int, str | None]]:
    before, after = _tags_of(old), _tags_of(new)
    if not after and "tag_ids" not in new:
        return []  # a record without tags says nothing about them
    return ([("-", i, before[i]) for i in sorted(set(before) - set(after))]
            + [("+", i, after[i]) for i in sorted(set(after) - set(before))])


def _crossing_zero(resource: str, changes: Mapping[str, list[Any]]) -> str | None:
    """``emptied`` or ``used`` when a tag's image count crosses zero."""
    if resource != "tags" or "images" not in changes:
        return None
    old, new = changes["images"]
    if isinstance(old, int) and isinstance(new, int):
        if old > 0 and new == 0:
            return "emptied"
        if old == 0 and new > 0:
            return "used"
    return None


# The recorder of the sync run under way on each connection (one run at a time per database), and
# the grain counters are kept at by the runs on a connection (``history.counters`` of the config).
_RECORDERS: dict[int, HistoryRecorder] = {}
_COUNTERS: dict[int, str] = {}


def keep_counters(db: Database, mode: str) -> None:
    """Keep counters at the grain ``mode`` in the runs on ``db`` from now on: daily, all or off."""
    if mode not in COUNTER_MODES:
        raise ValueError(f"history.counters must be one of {', '.join(COUNTER_MODES)}, not {mode!r}")
    _COUNTERS[id(db.conn)] = mode


def counters_kept(db: Database) -> str:
    return _COUNTERS.get(id(db.conn), "daily")


@contextmanager
def recording(db: Database, run_id: int | None, counters: str = "daily") -> Iterator[HistoryRecorder]:
    """Record the history of what the writers store on ``db`` until the block ends."""
    recorder = start_recording(db, run_id, counters)
    try:
        yield recorder
    finally:
        stop_recording(db)


def start_recording(db: Database, run_id: int | None, counters: str = "daily") -> HistoryRecorder:
    recorder = _RECORDERS[id(db.conn)] = HistoryRecorder(db, run_id, counters)
    return recorder


def stop_recording(db: Database) -> None:
    _RECORDERS.pop(id(db.conn), None)


def recorder_for(db: Database) -> HistoryRecorder | None:
    """The recorder of the run writing to ``db`` now, or None outside a sync run."""
    return _RECORDERS.get(id(db.conn))


def note_event(db: Database, resource: str, key: Any, event: str, changes: Mapping[str, Any] | None = None) -> None:
    """Keep ``event`` for a record if a sync run is recording (a gallery gone, a comment destroyed)."""
    recorder = recorder_for(db)
    if recorder is not None:
        recorder.event(resource, key, event, changes)


@dataclass(frozen=True)
class SiteChange:
    """A change the site itself recorded for an image (its dump's ``tag_changes`` and
    ``source_changes``): when, by whom, and the tags added (``+``) and removed (``-``) or the source."""

    image_id: int
    at: str
    user_id: int | None
    event: str  # site_tags or site_source
    tags: tuple[tuple[str, int, str | None], ...] = ()  # (change, tag id, tag name)
    source: str | None = None


# The site regrouped its tag changes in 2025 (one row per tag became one batch per image, user
# and five-second window, under new ids), so a change kept from an older dump is found again by
# what it says, its time allowed to move by that window.
SITE_TAGS_WINDOW = 5


@dataclass(frozen=True)
class KeptSiteTags:
    """Where the site tag changes an import may meet again end: the last history row before it
    began, and the time of the newest site tag change then (plus the window)."""

    history_id: int
    newest: float

    @classmethod
    def before_now(cls, db: Database) -> KeptSiteTags | None:
        newest = db.execute("SELECT max(seen_at) FROM history WHERE resource = 'images' AND event = 'site_tags'").fetchone()[0]
        if newest is None:
            return None
        return cls(db.execute("SELECT max(id) FROM history").fetchone()[0], _seconds(newest) + SITE_TAGS_WINDOW)


def unseen_site_tags(db: Database, kept: KeptSiteTags | None, changes: Sequence[SiteChange]) -> list[SiteChange]:
    """``changes`` less the tag changes the history held before this import began (``kept``),
    matched on their content (image, tag, added or removed, and time within
    :data:`SITE_TAGS_WINDOW` seconds), never on the site's ids; a change all of whose tags were
    kept is left out. Only changes as old as the newest kept one are looked up: a later dump's new
    changes, and every change of a first import, cost nothing."""
    images = sorted({c.image_id for c in changes if kept and c.event == "site_tags" and _seconds(c.at) <= kept.newest})
    if not images:
        return list(changes)
    found: dict[tuple[int, int, str], list[float]] = {}
    for image_id, tag_id, sign, seen_at in db.execute(
            "SELECT c.image_id, c.tag_id, c.change, c.seen_at FROM image_tag_changes c "
            "JOIN history h ON h.id = c.history_id WHERE c.image_id IN (SELECT value FROM json_each(?)) "
            "AND h.event = 'site_tags' AND h.id <= ?", [json.dumps(images), kept.history_id]):
        found.setdefault((image_id, tag_id, sign), []).append(_seconds(seen_at))
    unseen = []
    for change in changes:
        at = _seconds(change.at)
        tags = tuple(t for t in change.tags if not any(
            abs(at - then) <= SITE_TAGS_WINDOW for then in found.get((change.image_id, t[1], t[0]), ())))
        if change.event != "site_tags" or tags:
            unseen.append(change if tags == change.tags else replace(change, tags=tags))
    return unseen


def _seconds(text: str | None) -> float:
    moment = parse_utc(text or "")
    return float("nan") if moment is None else moment.timestamp()  # no time: equal to no other


def save_site_changes(db: Database, run_id: int | None, changes: Sequence[SiteChange]) -> None:
    """Keep the site's own changes in the history, at the times the site made them.

    A dump brings millions: the batch's history rows take the ids after the last one (the writer
    holds the database's write lock) and go in with two statements, not one for each change; the
    tag changes in their table's order (:mod:`.tag_changes`: by image), each image's pages written once.
    A first import's go to a plain table, sorted into that order at its end (:mod:`.upkeep`)."""
    if not changes:
        return
    first = (db.execute("SELECT max(id) FROM history").fetchone()[0] or 0) + 1
    rows, tags = [], []
    for history_id, change in enumerate(changes, start=first):
        details = {"source": [None, change.source]} if change.event == "site_source" else None
        rows.append((history_id, str(change.image_id), run_id, change.at, change.event,
                     None if details is None else changes_json(details), change.user_id))
        tags += [(history_id, change.image_id, tag_id, None if name is None else storable_text(name), tag_id, sign,
                  change.at) for sign, tag_id, name in change.tags]
    db.conn.executemany("INSERT INTO history (id, resource, record_key, run_id, seen_at, event, changes, user_id) "
                        "VALUES (?, 'images', ?, ?, ?, ?, ?, ?)", rows)
    tags.sort(key=lambda row: (row[1], row[0], row[2]))
    db.conn.executemany("INSERT OR IGNORE INTO image_tag_changes (history_id, image_id, tag_id, tag_name, change, seen_at) "
                        f"VALUES (?, ?, ?, {_KEPT_NAME}, ?, ?)", tags)