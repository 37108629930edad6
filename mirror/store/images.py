"""Writing pages of image records: the rows, their tags and the image-tag links, one transaction.

Stubs (hidden, deleted and merged images) are handled by :class:`RecordWriter`: they mark the
kept row and never wipe it, and the links of a stubbed image stay as they were.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlite_utils import Database

from .intensities import RECORD, save_record_intensities
from .records import storable_text, tags_in_step, valid_id
from .rows import TableRows
from .specs import IMAGES, is_image_stub
from .writer import RecordWriter, Saved, keep_record


class ImageWriter:
    """Writes pages of image records to one database, for one site."""

    def __init__(self, db: Database, base_url: str) -> None:
        self.db = db
        self.records = RecordWriter(db, IMAGES, base_url)
        self.tags = TableRows(db.conn, "tags", ("id",))
        self.links = TableRows(db.conn, "image_tags", ("image_id", "tag_id"))

    def save_page(self, records: Iterable[Any]) -> Saved:
        """Store one page of records atomically: all of it lands, or none of it."""
        records = list(records)
        with self.db.atomic():
            saved = self.records.save(records)
            kept = set(saved.keys)  # links only for images stored: a rejected id has no row to link
            # An image twice in the page: the later copy is the row, so its tags are the links.
            latest = {r["id"]: r for r in records if isinstance(r, dict) and valid_id(r.get("id")) and r["id"] in kept
                      and not is_image_stub(r)}
            saved.unpaired_tags = self._save_tags(list(latest.values()))
            save_record_intensities(self.db, list(latest.values()), RECORD)
        return saved

    def _save_tags(self, records: list[dict[str, Any]]) -> int:
        """Name the tags and link the images; returns how many records' tags and tag_ids disagreed."""
        if not records:
            return 0
        tags: dict[int, str] = {}
        links = []
        unpaired = 0
        for record in records:
            tag_ids, names = record.get("tag_ids"), record.get("tags")
            if not (isinstance(tag_ids, list) and isinstance(names, list)):
                continue  # mistyped (a string of names would pair each id with a letter): raw keeps it
            image_id = record["id"]
            if not tags_in_step(record):
                # Linked by its ids only; the tags crawler names any tag no other record has named.
                unpaired += 1
                links += [(image_id, tag_id) for tag_id in tag_ids if valid_id(tag_id)]
                continue
            for tag_id, name in zip(tag_ids, names):
                if type(tag_id) is int and isinstance(name, str):
                    tags[tag_id] = name if name.isascii() else storable_text(name)
                    links.append((image_id, tag_id))
        self._save_tag_names(tags)
        self._save_links({r["id"] for r in records}, set(links))
        return unpaired

    def _save_links(self, image_ids: set[int], links: set[tuple[int, int]]) -> None:
        """Make these images' links exactly ``links``, writing only the ones that differ.

        A nightly sync re-reads many images whose tags did not change (a new vote changes
        ``updated_at``): leaving their links alone spares rewriting scattered index pages.
        """
        marks = ",".join("?" * len(image_ids))
        kept = set(self.db.execute(f"SELECT image_id, tag_id FROM image_tags WHERE image_id IN ({marks})",
                                   list(image_ids)).fetchall())
        self.db.conn.executemany("DELETE FROM image_tags WHERE image_id = ? AND tag_id = ?", sorted(kept - links))
        self.links.insert(("image_id", "tag_id"), sorted(links - kept))  # in key order: appended, not scattered

    def _save_tag_names(self, tags: dict[int, str]) -> None:
        """Add tags first seen on these images; rename the few whose name changed.

        Most tags on a page are already known with the same name: leaving those rows untouched
        keeps a page's write cost proportional to what changed. Full tag records come from the
        tags crawler.
        """
        if not tags:
            return
        ids = list(tags)
        marks = ",".join("?" * len(ids))
        known = dict(self.db.execute(f"SELECT id, name FROM tags WHERE id IN ({marks})", ids).fetchall())
        renamed = [(n, i) for i, n in tags.items() if i in known and known[i] != n]
        self.tags.insert(("id", "name"), [(i, n) for i, n in tags.items() if i not in known])
        if renamed:
            self.db.conn.executemany("UPDATE tags SET name = ? WHERE id = ?", renamed)


def lacks_file_facts(db: Database, image_id: int) -> bool:
    """Whether the image's record does not say whether it is animated (a record from a dump)."""
    row = db.execute("SELECT animated IS NULL AND json_type(raw, '$.animated') IS NULL FROM images WHERE id = ?",
                     [image_id]).fetchone()
    return bool(row and row[0])


def save_file_facts(db: Database, image_id: int, *, animated: bool, duration: float) -> None:
    """``animated`` and ``duration`` read from the kept original, for a record that lacks them;
    the record stays as it came (:func:`.writer.keep_record`)."""
    with db.atomic():
        row = db.execute("SELECT raw FROM images WHERE id = ? AND animated IS NULL", [image_id]).fetchone()
        if row is None:
            return
        db.execute("UPDATE images SET animated = ?, duration = ? WHERE id = ?", [int(animated), duration, image_id])
        keep_record(db, "images", image_id, row[0], ("animated", "duration"))
