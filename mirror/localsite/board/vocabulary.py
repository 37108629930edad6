"""A board's tags in memory: names, aliases and implications, as tagging an image needs them.

Tagging follows aliases and adds implied tags, which asks about many tags for each image; a
board's vocabulary is small (capped however many images it has), so the generator and the
board editor keep it here rather than asking the database tag by tag. The database stays the
record of what the site serves: the editor loads this from its ``tags`` rows.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from typing import Any

from ...philomena import NAMESPACE_CATEGORIES, RATINGS, split_namespace
from ...search.slugs import slug

__all__ = ["Vocabulary"]

Record = dict[str, Any]


class Vocabulary:
    """Tags by id, name and slug, with the rules the site applies when it tags an image."""

    def __init__(self) -> None:
        self.tags: dict[int, Record] = {}
        self._by_name: dict[str, int] = {}
        self._by_slug: dict[str, int] = {}

    @classmethod
    def from_rows(cls, rows: Iterable[sqlite3.Row]) -> Vocabulary:
        """The vocabulary of a board's ``tags`` rows (id, name, slug, namespace, name_in_namespace,
        category, aliased_tag, implied_tags); relations are stored as slugs."""
        vocab, relations = cls(), []
        for row in rows:
            namespace, in_namespace = split_namespace(row["name"])
            vocab.add({"id": row["id"], "name": row["name"], "slug": row["slug"] or slug(row["name"]),
                       "namespace": namespace, "name_in_namespace": in_namespace, "category": row["category"],
                       "aliased_tag_id": None, "implied_tag_ids": []})
            relations.append((row["id"], row["aliased_tag"], row["implied_tags"]))
        for tag_id, aliased, implied in relations:
            tag = vocab.tags[tag_id]
            tag["aliased_tag_id"] = vocab._by_slug.get(aliased) if aliased else None
            tag["implied_tag_ids"] = [vocab._by_slug[s] for s in _slugs(implied) if s in vocab._by_slug]
        return vocab

    def add(self, tag: Record) -> Record:
        self.tags[tag["id"]] = tag
        self._by_name[tag["name"]] = tag["id"]
        self._by_slug[tag["slug"]] = tag["id"]
        return tag

    def by_name(self, name: str) -> Record | None:
        tag_id = self._by_name.get(name)
        return self.tags.get(tag_id) if tag_id is not None else None

    def ensure(self, name: str, tag_id: int | None = None) -> Record:
        """The tag called `name`, created (with namespace and category rules) if missing."""
        name = " ".join(name.strip().lower().split())
        tag = self.by_name(name)
        if tag is not None:
            return tag
        namespace, in_namespace = split_namespace(name)
        category = "rating" if name in RATINGS else NAMESPACE_CATEGORIES.get(namespace) if namespace else None
        return self.add({
            "id": tag_id if tag_id is not None else max(self.tags, default=0) + 1, "name": name, "slug": slug(name),
            "namespace": namespace, "name_in_namespace": in_namespace, "category": category, "description": "",
            "short_description": "", "aliased_tag_id": None, "implied_tag_ids": [], "dnp_entries": [],
            "spoiler_image": None,
        })

    def resolve(self, names: Iterable[str]) -> list[Record]:
        """Tags for `names`, following aliases and adding implied tags, ordered by id."""
        found: dict[int, Record] = {}
        pending = [self.ensure(n) for n in names if n.strip()]
        while pending:
            tag = pending.pop()
            if tag.get("aliased_tag_id") is not None:
                tag = self.tags[tag["aliased_tag_id"]]
            if tag["id"] in found:
                continue
            found[tag["id"]] = tag
            pending.extend(self.tags[i] for i in tag.get("implied_tag_ids", ()) if i in self.tags)
        return [found[i] for i in sorted(found)]

    def resolved_name(self, name: str) -> str:
        """The name a tag name stands for, its alias followed, without creating any tag."""
        tag = self.by_name(name)
        if tag is not None and tag.get("aliased_tag_id") is not None:
            tag = self.tags.get(tag["aliased_tag_id"], tag)
        return tag["name"] if tag else name

    def alias_names(self) -> dict[int, list[str]]:
        """tag id -> names of the tags aliased to it."""
        out: dict[int, list[str]] = {}
        for tag in self.tags.values():
            if tag.get("aliased_tag_id") is not None:
                out.setdefault(tag["aliased_tag_id"], []).append(tag["name"])
        return out

    def implied_by(self) -> dict[int, list[int]]:
        """tag id -> ids of the tags that imply it, by id."""
        out: dict[int, list[int]] = {}
        for other in sorted(self.tags):
            for implied in self.tags[other]["implied_tag_ids"]:
                out.setdefault(implied, []).append(other)
        return out


def _slugs(value: str | None) -> list[str]:
    return json.loads(value) if value else []
