"""Writing pages of image records: upserts, tag links and stubs, one transaction per page.

A stub (a hidden, deleted or merged image: seven keys only) must never wipe the fuller record
kept from earlier syncs. Stubs are therefore written apart from full records: they set the
hidden-state columns and the ``stub`` column, and leave ``raw`` and every other column alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlite_utils import Database

from .database import utc_now
from .records import column_converters, shape, to_json
from .rejects import reject
from .schema import IMAGE_FIELDS, IMAGE_STUB_FIELDS


@dataclass
class SavedImages:
    """What one page did to the mirror."""

    new: int = 0
    updated: int = 0
    hidden: int = 0
    rejected: int = 0
    ids: list[int] = field(default_factory=list)


def is_stub(record: Mapping[str, Any]) -> bool:
    """True for the cut-down record the site sends for hidden, deleted and merged images."""
    return record.get("hidden_from_users") is True and "tags" not in record


class ImageWriter:
    """Writes pages of image records to one database, for one site."""

    def __init__(self, db: Database, base_url: str) -> None:
        self.db = db
        self.converters = column_converters(IMAGE_FIELDS, base_url)

    def save_page(self, records: Iterable[Any]) -> SavedImages:
        """Store one page of records atomically: all of it lands, or none of it."""
        result = SavedImages()
        full: list[dict[str, Any]] = []
        stubs: list[dict[str, Any]] = []
        bad: list[Any] = []
        for record in records:
            if not isinstance(record, dict) or type(record.get("id")) is not int:
                bad.append(record)
            else:
                (stubs if is_stub(record) else full).append(record)
        now = utc_now()
        with self.db.atomic():
            for record in bad:
                reject(self.db, "images", record, "an image record must be an object with an integer id")
            result.rejected = len(bad)
            known = self._known_ids([r["id"] for r in full] + [r["id"] for r in stubs])
            self._save_full(full, now)
            self._save_stubs(stubs, known, now)
        for record in full + stubs:
            result.ids.append(record["id"])
            if record["id"] in known:
                result.updated += 1
            else:
                result.new += 1
        result.hidden = len(stubs)
        return result

    def _known_ids(self, ids: list[int]) -> set[int]:
        if not ids:
            return set()
        marks = ",".join("?" * len(ids))
        return {row[0] for row in self.db.execute(f"SELECT id FROM images WHERE id IN ({marks})", ids)}

    def _save_full(self, records: list[dict[str, Any]], now: str) -> None:
        if not records:
            return
        rows = []
        tags: dict[int, str] = {}
        links = []
        for record in records:
            row = shape(record, self.converters)
            row["raw"] = to_json(record)
            row["stub"] = None
            row["mirrored_at"] = now
            rows.append(row)
            names, ids = record.get("tags") or [], record.get("tag_ids") or []
            for tag_id, name in zip(ids, names):
                if type(tag_id) is int and isinstance(name, str):
                    tags[tag_id] = name
                    links.append((record["id"], tag_id))
        self.db["images"].upsert_all(rows, pk="id")
        self._save_tag_names(tags)
        ids = [r["id"] for r in records]
        self.db.execute(f"DELETE FROM image_tags WHERE image_id IN ({','.join('?' * len(ids))})", ids)
        self.db.conn.executemany("INSERT OR IGNORE INTO image_tags (image_id, tag_id) VALUES (?, ?)", links)

    def _save_tag_names(self, tags: dict[int, str]) -> None:
        """Add tags first seen on these images; rename the few whose name changed.

        Most tags on a page are already known with the same name: leaving those rows untouched
        keeps a page's write cost proportional to what changed.
        """
        if not tags:
            return
        ids = list(tags)
        marks = ",".join("?" * len(ids))
        known = dict(self.db.execute(f"SELECT id, name FROM tags WHERE id IN ({marks})", ids).fetchall())
        added = [{"id": i, "name": n} for i, n in tags.items() if i not in known]
        renamed = [(n, i) for i, n in tags.items() if i in known and known[i] != n]
        if added:
            self.db["tags"].insert_all(added, pk="id")
        if renamed:
            self.db.conn.executemany("UPDATE tags SET name = ? WHERE id = ?", renamed)

    def _save_stubs(self, stubs: list[dict[str, Any]], known: set[int], now: str) -> None:
        for record in stubs:
            row = shape(record, self.converters, IMAGE_STUB_FIELDS)
            row["stub"] = to_json(record)
            row["mirrored_at"] = now
            if record["id"] in known:
                self.db["images"].update(record["id"], row)
            else:
                row["raw"] = row["stub"]  # never seen in full: the stub is all there is
                self.db["images"].insert(row, pk="id")
