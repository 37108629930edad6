"""``mirror import-dump``: the site's public dump into the mirror, table by table, resumable.

Two stages, each resumable on its own:

1. **Copy** each table the dump holds into the scratch file (:mod:`.staging`), one table per
   transaction. A killed import copies again only the table it was in.
2. **Write** the mirror's records from the copies, one resource after another, a batch of ids at
   a time, through the store's writers (the same ones a sync uses, so records land in the same
   columns, full-text indexes, links and history). Each batch is committed with the import's
   cursor (``sync_state`` ``import-dump``: the step and the last id written), so a killed import
   resumes at the next batch and ends with the same archive.

Importing into a mirror that already holds records keeps the newer of the two: an image or
comment the mirror has with a later ``updated_at`` than the dump's is left as it is; otherwise the
dump's fields are laid over the record kept, so what the API gave and the dump lacks
(``first_seen_at``, ``orig_size``, avatars...) stays. What changed is in the history, as a sync
would have recorded it. The site's own tag and source changes are added to the history once per
change (a later dump adds only the changes after the last one imported).

Tables and columns this version does not know are reported once and skipped; a column a known
table lacks reads as absent (a 2022 dump has no ``images.description`` and keeps its tag changes
in one table: both import). Every line printed is made :func:`~.archive.printable`: the names
come from the dump.

An import asked to stop (``stopping()`` turns true: SIGTERM or Ctrl-C) stops at the next batch
boundary, within about a second, with :class:`~.staging.Stopped`: what was committed is kept and
the next run resumes from it.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from ..store import ImageWriter
from ..store.dump_tables import save_dump_rows, save_features
from ..store.galleries import replace_members
from ..store.history import KeptSiteTags, SiteChange, save_site_changes, unseen_site_tags
from ..store.images import save_file_facts
from ..store.rejects import reject
from ..store.specs import COMMENTS, FORUMS, GALLERIES, POSTS, TAGS, TOPICS, USERS
from ..store.state import load_cursor, save_cursor, start_run
from ..store.upkeep import archive_is_empty, build, defer
from ..store.writer import RecordWriter
from .archive import Archive, DumpError, printable
from .records import BUILDERS, Batch, Builder, Reader, dump_time, image_stub, message, topic
from .space import say_space
from .staging import INDEXES, Staging, Stopped, Stopping

__all__ = ["LAYOUT", "ImportReport", "import_dump", "STATE_NAME"]

STATE_NAME = "import-dump"
BATCH = 1000
# The archive's page cache while importing: the history's and the links' indexes take rows in an
# order of their own (by image, by tag, by time), and with SQLite's default 2 MB every insert into
# a large one reads its pages from disk again (tag changes imported 2.6 times slower per row at
# 100,000 images than at 30,000). 200 MB keeps the import within its 500 MB of memory.
CACHE_KIB = 200 * 1024

# The public dump's tables and columns (data-dumps.md section 2), with the 2022 layout's extra
# columns of tag_changes; anything else is reported and skipped.
LAYOUT: Mapping[str, tuple[str, ...]] = {
    "artist_links": ("id", "user_id", "tag_id", "url"),
    "badge_awards": ("id", "user_id", "badge_id", "created_at", "label"),
    "badges": ("id", "title", "description", "image_url"),
    "comments": ("id", "image_id", "created_at", "updated_at", "user_id", "body"),
    "duplicate_reports": ("id", "image_id", "duplicate_of_image_id", "created_at", "updated_at", "user_id", "state",
                          "reason"),
    "forums": ("id", "topic_count", "post_count", "created_at", "updated_at", "name", "short_name", "description"),
    "galleries": ("id", "thumbnail_id", "user_id", "image_count", "created_at", "updated_at", "title",
                  "spoiler_warning", "description"),
    "gallery_interactions": ("image_id", "gallery_id", "position"),
    "image_duplicates": ("image_id", "target_id"),
    "image_faves": ("created_at", "image_id", "user_id"),
    "image_features": ("image_id", "created_at"),
    "image_hides": ("image_id", "reason"),
    "image_intensities": ("image_id", "nw_intensity", "ne_intensity", "sw_intensity", "se_intensity"),
    "image_sources": ("image_id", "source"),
    "image_taggings": ("image_id", "tag_id"),
    "images": ("id", "created_at", "updated_at", "image_width", "image_height", "image_size", "comment_count", "score",
               "favorites", "upvotes", "downvotes", "hides", "image_aspect_ratio", "user_id", "hidden_from_users",
               "image_mime_type", "image_format", "image_name", "version_path", "image_sha512_hash",
               "image_orig_sha512_hash", "description"),
    "posts": ("id", "topic_id", "created_at", "updated_at", "user_id", "body"),
    "source_changes": ("id", "image_id", "created_at", "updated_at", "user_id", "new_value"),
    "tag_aliases": ("tag_id", "target_tag_id"),
    "tag_change_tags": ("tag_change_id", "tag_id", "added"),
    "tag_changes": ("id", "image_id", "created_at", "updated_at", "user_id", "tag_id", "added", "tag_name_cache"),
    "tag_implications": ("tag_id", "target_tag_id"),
    "tags": ("id", "image_count", "name", "slug", "category", "description", "short_description"),
    "topics": ("id", "forum_id", "post_count", "view_count", "created_at", "updated_at", "sticky", "locked", "title",
               "slug"),
    "users": ("id", "name"),
}


# The columns the import names in its SQL, each table's: its id, the keys it is joined by, and a
# tag's name and slug. Any other column a dump lacks reads as absent; one of these missing (a
# damaged COPY statement) is the dump's fault, said as such, not the database's ("no such column").
READ_BY_NAME: Mapping[str, tuple[str, ...]] = {
    table: tuple(dict.fromkeys([*(["id"] if "id" in columns else []),
                                *(c for index in INDEXES.get(table, ()) for c in index),
                                *({"tags": ("name", "slug")}.get(table, ()))]))
    for table, columns in LAYOUT.items()}


@dataclass
class StepReport:
    """What one step did; a :class:`~mirror.progress.Reportable` for the progress display."""

    resource: str
    fetched: int = 0
    expected: int | None = None
    set_aside: int = 0
    seconds: float = 0.0

    def summary(self) -> str:
        aside = f"; {self.set_aside} set aside in rejects" if self.set_aside else ""
        rate = f" ({self.fetched / self.seconds:,.0f}/s)" if self.seconds >= 1 else ""
        return f"{self.resource}: {self.fetched:,} imported in {self.seconds:.1f} s{rate}{aside}"


@dataclass
class ImportReport:
    """What an import did: the dump's time, what it copied and wrote, what it skipped."""

    dumped_at: str
    as_of: str = ""
    copied: dict[str, int] = field(default_factory=dict)
    steps: list[StepReport] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


Progress = Callable[[StepReport], None]


def import_dump(db: Database, path: str | Path, *, file_root: str, staging_path: str | Path,
                progress: Progress | None = None, line: Callable[[str], None] = print,
                stopping: Stopping = lambda: False, space_check: bool = True) -> ImportReport:
    """Import the dump at ``path`` into ``db``; resume an import of the same dump killed before.

    ``file_root`` is where the site's files are (``https://derpicdn.net/img``): image records
    name their files below it, as the API's do. ``staging_path`` is the scratch file; it is
    deleted once the import is complete. Once ``stopping()`` is true the import raises
    :class:`Stopped` at the next batch boundary. Unless ``space_check`` is false, an import the
    disk seems too small for is refused before it starts (:mod:`.space`).
    """
    cache = db.execute("PRAGMA cache_size").fetchone()[0]
    db.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
    try:
        return _import(db, path, file_root, staging_path, progress, lambda text: line(printable(text)), stopping,
                       space_check)
    except sqlite3.OperationalError:
        if stopping():  # a statement cut short by the staging file's progress handler
            raise Stopped() from None
        raise
    finally:
        db.execute(f"PRAGMA cache_size={cache}")


def _import(db: Database, path: str | Path, file_root: str, staging_path: str | Path, progress: Progress | None,
            line: Callable[[str], None], stopping: Stopping, space_check: bool) -> ImportReport:
    archive = Archive.open(path)
    report = ImportReport(dumped_at=_text_time(archive))
    identity = {"file": Path(path).name, "size": Path(path).stat().st_size, "dumped_at": report.dumped_at}
    cursor = load_cursor(db, STATE_NAME)
    if cursor.get("dump") != identity or cursor.get("finished"):
        kept = KeptSiteTags.before_now(db)
        cursor = {"dump": identity, "done": [], "step": None, "after": None, "bulk": archive_is_empty(db),
                  "site_history_after": cursor.get("site_history_after", {}),
                  "site_tags_kept": None if kept is None else [kept.history_id, kept.newest]}
        _remove(Path(staging_path))
    database = db.execute("PRAGMA database_list").fetchone()[2]
    if database:  # not an in-memory database
        line(say_space(Path(path), Path(database), Path(staging_path), refuse=space_check))
    report.skipped = _unknown(archive)
    for skipped in report.skipped:
        line(skipped)
    staging = Staging(staging_path, stopping)
    try:
        for table in (t for t in archive.tables if t in LAYOUT and not staging.has(t)):
            _check_columns(archive, table)
            started = time.perf_counter()
            copied = staging.stage(archive, table)
            report.copied[table] = copied.rows
            aside = f", {copied.set_aside} set aside" if copied.set_aside else ""
            line(f"copied {table}: {copied.rows:,} rows in {time.perf_counter() - started:.1f} s{aside}")
        run, status = start_run(db, STATE_NAME), "failed"
        try:
            Writing(db, staging, file_root, cursor, report, progress, run.id, stopping, line).run()
            status = "done"
        finally:
            run.finish(db, status=status, fetched=sum(s.fetched for s in report.steps),
                       message=f"dump of {report.dumped_at}")
        report.as_of = _as_of(staging, report.dumped_at)
    finally:
        staging.close()
    _remove(Path(staging_path))
    return report


def _text_time(archive: Archive) -> str:
    return archive.created.strftime("%Y-%m-%dT%H:%M:%SZ")


def _as_of(staging: Staging, dumped_at: str) -> str:
    """The time the dump's records are complete to: when pg_dump ran, by the dumping machine's
    clock, which may not be UTC; so never later than the newest change the dump holds."""
    newest = []
    for table, column in (("images", "updated_at"), ("comments", "updated_at"), ("posts", "updated_at"),
                          ("tag_changes", "created_at"), ("source_changes", "created_at")):
        if column in staging.columns(table):
            value = staging.conn.execute(f'SELECT max("{column}") FROM "dump_{table}"').fetchone()[0]
            if value:
                newest.append(dump_time(value))
    return min(dumped_at, max(newest)) if newest else dumped_at


def _check_columns(archive: Archive, table: str) -> None:
    """Raise :class:`DumpError` (exit 2) when ``table``'s data lacks a column the import reads."""
    columns = archive.tables[table].columns
    if columns and (missing := [c for c in READ_BY_NAME.get(table, ()) if c not in columns]):
        raise DumpError(f"{archive.path}: table {table}: its data has no column {', '.join(missing)}, which the "
                        "import reads; the dump is damaged: fetch it again and check its SHA-256")


def _unknown(archive: Archive) -> list[str]:
    """One line for each table and column of the dump this version does not know."""
    messages = []
    for name, table in archive.tables.items():
        if name not in LAYOUT:
            messages.append(f"table {name}: not part of a public dump this version knows; skipped")
            continue
        extra = [c for c in table.columns if c not in LAYOUT[name]]
        if extra:
            messages.append(f"table {name}: columns {', '.join(extra)} not known to this version; skipped")
    return messages


def _remove(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        try:
            os.remove(f"{path}{suffix}")
        except FileNotFoundError:
            pass


class Writing:
    """The second stage: the mirror's records from the staged tables, step by step."""

    def __init__(self, db: Database, staging: Staging, file_root: str, cursor: dict[str, Any],
                 report: ImportReport, progress: Progress | None, run_id: int, stopping: Stopping,
                 line: Callable[[str], None] = lambda text: None) -> None:
        self.db, self.staging, self.file_root = db, staging, file_root
        self.cursor, self.report, self.progress, self.run_id = cursor, report, progress, run_id
        self.stopping, self.line = stopping, line
        self.reader = Reader(staging.conn, staging.staged())
        self.images = ImageWriter(db, file_root)
        self.writers = {spec.table: RecordWriter(db, spec, file_root)
                        for spec in (USERS, TAGS, COMMENTS, GALLERIES, FORUMS, TOPICS, POSTS)}

    def run(self) -> None:
        steps: list[tuple[str, Callable[[StepReport], None]]] = [
            *((builder.resource, self._records(builder)) for builder in BUILDERS),
            ("forums", self._forums), ("topics", self._topics), ("posts", self._posts),
            ("gallery_images", self._gallery_images), ("featured_images", self._features),
            *((table, self._dump_rows(table)) for table in ("image_faves", "duplicate_reports", "badges",
                                                            "badge_awards", "artist_links")),
            ("tag_changes", self._tag_changes), ("source_changes", self._source_changes),
            ("rejects", self._rejects),
        ]
        if self.cursor.get("bulk") and any(name not in self.cursor["done"] for name, _ in steps):
            defer(self.db)  # an empty archive: its indexes are built once, at the end (store.upkeep)
        for name, step in steps:
            if name in self.cursor["done"]:
                continue
            self._boundary()
            report = StepReport(name)
            started = time.perf_counter()
            step(report)
            report.seconds = time.perf_counter() - started
            self.report.steps.append(report)
            with self.db.atomic():
                self.cursor = {**self.cursor, "done": [*self.cursor["done"], name], "step": None, "after": None}
                save_cursor(self.db, STATE_NAME, self.cursor)
        self._boundary()
        build(self.db, self.line)
        with self.db.atomic():
            save_cursor(self.db, STATE_NAME, {**self.cursor, "finished": True})

    def _boundary(self) -> None:
        """Between two commits: stop here if asked to."""
        if self.stopping():
            raise Stopped()

    # --- walking a staged table by id, a batch per commit ---

    def _batches(self, name: str, table: str, report: StepReport, key: str = "id",
                 size: int = BATCH) -> Iterator[list[dict]]:
        """Rows of the staged ``table`` in ``key`` order, ``size`` at a time, from where the step
        ``name`` stopped; the caller writes each batch and :meth:`_checkpoint` s it at its last
        row's ``_key``."""
        if not self.reader.has(table):
            return
        after = self._resume_after(name)
        report.expected = self._count(table)
        while True:
            cursor = self.staging.conn.execute(f'SELECT {key} AS _key, * FROM "dump_{table}" WHERE {key} > ? '
                                               f"ORDER BY {key} LIMIT ?", [after, size])
            names = [d[0] for d in cursor.description]
            rows = [dict(zip(names, row)) for row in cursor]
            if not rows:
                return
            yield rows
            self._boundary()
            after = rows[-1]["_key"]

    def _count(self, table: str) -> int | None:
        if not self.reader.has(table):
            return None
        return self.staging.conn.execute(f'SELECT count(*) FROM "dump_{table}"').fetchone()[0]

    def _checkpoint(self, name: str, after: int, report: StepReport, count: int) -> None:
        self.cursor = {**self.cursor, "step": name, "after": after}
        save_cursor(self.db, STATE_NAME, self.cursor)
        report.fetched += count
        if self.progress:
            self.progress(report)

    def _resume_after(self, name: str) -> int:
        return self.cursor["after"] if self.cursor.get("step") == name and self.cursor.get("after") is not None else -1

    # --- the API's resources ---

    def _records(self, builder: Builder) -> Callable[[StepReport], None]:
        def step(report: StepReport) -> None:
            after = self._resume_after(builder.resource)
            report.expected = self._count(builder.table)
            while True:
                batch = builder.batch(self.reader, after, BATCH, self.file_root)
                if batch.last is None:
                    return
                with self.db.atomic():
                    self._write(builder.resource, batch)
                    self._checkpoint(builder.resource, batch.last, report, len(batch.records))
                report.set_aside += len(batch.bad)
                after = batch.last
                self._boundary()
        return step

    def _write(self, resource: str, batch: Batch, context: Mapping[str, Any] | None = None) -> None:
        for row, reason in batch.bad:
            reject(self.db, f"dump:{resource}", row, reason)
        records = self._merged(resource, batch.records, context or {})
        if resource == "images":
            stubs = [image_stub(r) for r in records if r.get("hidden_from_users")]
            facts = self._file_facts(records)
            self.images.save_page(records + stubs)
            for image_id, (animated, duration) in facts.items():
                save_file_facts(self.db, image_id, animated=bool(animated), duration=duration)
        elif records:
            self.writers[resource].save(records, context)

    def _merged(self, resource: str, records: list[dict], context: Mapping[str, Any]) -> list[dict]:
        """Each record laid over the one the mirror keeps, unless that one is newer; a record that
        would not change what is kept is left out."""
        writer = self.images.records if resource == "images" else self.writers[resource]
        keys = [writer.key_of(r, context) for r in records]
        kept = writer.rows.read([k for k in keys if k is not None], ("raw",))
        if not kept:
            return records
        merged = []
        for key, record in zip(keys, records):
            old = _loads(kept[key][0]) if key in kept else None
            if old is None or (writer.spec.is_stub and writer.spec.is_stub(record)):
                merged.append(record)
            elif (old.get("updated_at") or "") > (record.get("updated_at") or ""):
                continue  # the mirror's record is newer than the dump's
            elif (laid := {**old, **record}) != old:
                merged.append(laid)
        return merged

    def _file_facts(self, records: list[dict]) -> dict[int, tuple[int, float]]:
        """What kept originals said of these images (:mod:`mirror.download.file_facts`) where the
        records written over them do not say it: to be kept."""
        lacking = [r["id"] for r in records if "animated" not in r]
        rows = self.images.records.rows.read(lacking, ("animated", "duration"))
        return {image_id: row for image_id, row in rows.items() if row[0] is not None}

    def _forums(self, report: StepReport) -> None:
        rows = self._all("forums")
        records = [{"short_name": r.get("short_name"), "name": r.get("name"), "description": r.get("description"),
                    "topic_count": r.get("topic_count"), "post_count": r.get("post_count")} for r in rows]
        with self.db.atomic():
            self._write("forums", Batch(records, [], None))
            self._checkpoint("forums", 0, report, len(records))

    def _forum_names(self) -> dict[int, str]:
        return {r["id"]: r["short_name"] for r in self._all("forums") if r.get("short_name")}

    def _all(self, table: str) -> list[dict]:
        if not self.reader.has(table):
            return []
        cursor = self.staging.conn.execute(f'SELECT * FROM "dump_{table}" ORDER BY rowid')
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row)) for row in cursor]

    def _topics(self, report: StepReport) -> None:
        forums = self._forum_names()
        for rows in self._batches("topics", "topics", report):
            last_replies = self._last_replies(rows[0]["id"], rows[-1]["id"])
            groups: dict[str, list[dict]] = defaultdict(list)
            bad = []
            for row in rows:
                forum = forums.get(row.get("forum_id"))
                if forum is None or not isinstance(row.get("slug"), str):
                    bad.append((row, "a topic needs its forum and a slug"))
                    continue
                groups[forum].append(topic(row, last_replies.get(row["id"])))
            with self.db.atomic():
                for row, reason in bad:
                    reject(self.db, "dump:topics", row, reason)
                for forum, records in groups.items():
                    self._write("topics", Batch(records, [], None), {"forum_short_name": forum})
                self._checkpoint("topics", rows[-1]["id"], report, len(rows) - len(bad))
            report.set_aside += len(bad)

    def _last_replies(self, low: int, high: int) -> dict[int, str]:
        if not self.reader.has("posts") or "topic_id" not in self.staging.columns("posts"):
            return {}
        return {topic: dump_time(at) for topic, at in self.staging.conn.execute(
            "SELECT topic_id, max(created_at) FROM dump_posts WHERE topic_id BETWEEN ? AND ? GROUP BY topic_id",
            [low, high])}

    def _topic_places(self) -> dict[int, tuple[str, str]]:
        forums = self._forum_names()
        return {r["id"]: (forums[r["forum_id"]], r["slug"]) for r in self._all("topics")
                if r.get("forum_id") in forums and isinstance(r.get("slug"), str)}

    def _posts(self, report: StepReport) -> None:
        places = self._topic_places()
        for rows in self._batches("posts", "posts", report):
            authors = self.reader.names("users", (r.get("user_id") for r in rows))
            groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
            bad = []
            for row in rows:
                place = places.get(row.get("topic_id"))
                if place is None:
                    bad.append((row, "a post needs a topic the dump holds"))
                    continue
                groups[place].append(message(row, authors))
            with self.db.atomic():
                for row, reason in bad:
                    reject(self.db, "dump:posts", row, reason)
                for (forum, slug), records in groups.items():
                    self._write("posts", Batch(records, [], None), {"forum_short_name": forum, "topic_slug": slug})
                self._checkpoint("posts", rows[-1]["id"], report, len(rows) - len(bad))
            report.set_aside += len(bad)

    def _gallery_images(self, report: StepReport) -> None:
        """Each gallery's images in the dump's order (by ``position``), a gallery per commit."""
        if not self.reader.has("gallery_interactions"):
            return
        after = self._resume_after("gallery_images")
        galleries = [g for (g,) in self.staging.conn.execute(
            "SELECT DISTINCT gallery_id FROM dump_gallery_interactions WHERE gallery_id > ? ORDER BY gallery_id",
            [after])]
        for gallery_id in galleries:
            images = [i for (i,) in self.staging.conn.execute(
                "SELECT image_id FROM dump_gallery_interactions WHERE gallery_id = ? ORDER BY position, rowid",
                [gallery_id])]
            with self.db.atomic():
                replace_members(self.db, gallery_id, images)
                self._checkpoint("gallery_images", gallery_id, report, len(images))
            self._boundary()

    def _features(self, report: StepReport) -> None:
        rows = [(dump_time(r.get("created_at")), r.get("image_id")) for r in self._all("image_features")]
        with self.db.atomic():
            save_features(self.db, [(at, i) for at, i in rows if at and isinstance(i, int)])
            self._checkpoint("featured_images", 0, report, len(rows))

    def _dump_rows(self, table: str) -> Callable[[StepReport], None]:
        """A table the API has no counterpart of, row for row (``image_faves`` has no id: by rowid)."""
        def step(report: StepReport) -> None:
            for rows in self._batches(table, table, report, "rowid" if table == "image_faves" else "id", BATCH * 10):
                for row in rows:
                    for column in ("created_at", "updated_at"):
                        if column in row:
                            row[column] = dump_time(row[column])
                with self.db.atomic():
                    save_dump_rows(self.db, table, rows)
                    self._checkpoint(table, rows[-1]["_key"], report, len(rows))
        return step

    # --- the site's own history ---

    def _tag_changes(self, report: StepReport) -> None:
        """The site's tag changes, into the history once each: one change per ``tag_changes`` row,
        its tags from ``tag_change_tags`` (a 2022 dump has one tag per row, in the row itself).

        The last id imported marks where a later dump of the same layout starts; across the
        site's 2025 renumbering (a 2022 dump, then a 2026 one, or the other way) ids say nothing,
        and a change is known again by its content (:func:`~mirror.store.history.unseen_site_tags`)."""
        if not self.reader.has("tag_changes"):
            return
        one_table = "tag_id" in self.staging.columns("tag_changes")
        layout = "2022" if one_table else "2026"
        marks = self.cursor.get("site_history_after", {})
        same_ids = marks.get("tag_changes_layout", layout) == layout
        done = marks.get("tag_changes", -1) if same_ids else -1
        kept = KeptSiteTags(*self.cursor["site_tags_kept"]) if self.cursor.get("site_tags_kept") else None
        for rows in self._batches("tag_changes", "tag_changes", report):
            rows = [r for r in rows if isinstance(r.get("id"), int) and r["id"] > done]
            tags = self._change_tags(rows, one_table)
            names = self.reader.names("tags", (t for ts in tags.values() for _, t in ts))
            changes = [SiteChange(r["image_id"], dump_time(r.get("created_at")) or "", r.get("user_id"), "site_tags",
                                  tuple((sign, tag_id, names.get(tag_id) or r.get("tag_name_cache"))
                                        for sign, tag_id in tags.get(r["id"], [])))
                       for r in rows if isinstance(r.get("image_id"), int)]
            self._save_site(unseen_site_tags(self.db, kept, changes), "tag_changes", rows, report,
                            {"tag_changes_layout": layout})

    def _change_tags(self, rows: list[dict], one_table: bool) -> dict[int, list[tuple[str, int]]]:
        if not rows:
            return {}
        if one_table:
            return {r["id"]: [("+" if r.get("added") in ("t", "true") else "-", r["tag_id"])] for r in rows
                    if isinstance(r.get("tag_id"), int)}
        found: dict[int, list[tuple[str, int]]] = defaultdict(list)
        if not self.reader.has("tag_change_tags"):
            return found
        for change_id, tag_id, added in self.staging.conn.execute(
                "SELECT tag_change_id, tag_id, added FROM dump_tag_change_tags WHERE tag_change_id BETWEEN ? AND ? "
                "ORDER BY tag_change_id, tag_id", [rows[0]["id"], rows[-1]["id"]]):
            if isinstance(tag_id, int):
                found[change_id].append(("+" if added in ("t", "true") else "-", tag_id))
        return found

    def _source_changes(self, report: StepReport) -> None:
        done = self.cursor.get("site_history_after", {}).get("source_changes", -1)
        for rows in self._batches("source_changes", "source_changes", report):
            rows = [r for r in rows if isinstance(r.get("id"), int) and r["id"] > done]
            changes = [SiteChange(r["image_id"], dump_time(r.get("created_at")) or "", r.get("user_id"), "site_source",
                                  source=r.get("new_value"))
                       for r in rows if isinstance(r.get("image_id"), int)]
            self._save_site(changes, "source_changes", rows, report)

    def _save_site(self, changes: list[SiteChange], table: str, rows: list[dict], report: StepReport,
                   also: Mapping[str, Any] | None = None) -> None:
        with self.db.atomic():
            save_site_changes(self.db, self.run_id, changes)
            if rows:
                marks = {**self.cursor.get("site_history_after", {}), table: rows[-1]["id"], **(also or {})}
                self.cursor = {**self.cursor, "site_history_after": marks}
                self._checkpoint(table, rows[-1]["id"], report, len(changes))

    def _rejects(self, report: StepReport) -> None:
        """Rows the copy set aside (wrong width, bad UTF-8, an id twice), kept in ``rejects``, read a
        batch at a time (a step begun again keeps each once: :func:`reject` knows them)."""
        rows = self.staging.rejects()
        while batch := rows.fetchmany(BATCH):
            with self.db.atomic():
                for table, reason, row in batch:
                    reject(self.db, f"dump:{table}", json.loads(row), reason)
            report.fetched += len(batch)
            self._boundary()


def _loads(raw: str | None) -> dict | None:
    try:
        value = json.loads(raw) if raw else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None

