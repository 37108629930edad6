"""Result orders: the image sorter (reference section 5) and the fixed orders of the other searches."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from .compile import Sql, sqlite_number

# The default order, the site's ``first_seen_at``: a record from the public dump lacks it (the dump
# does not hold it), and the site's own value is the upload's time for all but a few migrated
# images, so such a record sorts by ``created_at``, among the images uploaded with it, not after
# every image the API sent again. ``images_by_first_seen`` (migration 0036) indexes this expression.
FIRST_SEEN = "coalesce({t}.first_seen_at, {t}.created_at)"

IMAGE_SORT_FIELDS = {
    "id": "{t}.id", "updated_at": "{t}.updated_at", "first_seen_at": FIRST_SEEN,
    "aspect_ratio": "{t}.aspect_ratio", "faves": "{t}.faves", "downvotes": "{t}.downvotes",
    "upvotes": "{t}.upvotes", "width": "{t}.width", "height": "{t}.height", "score": "{t}.score",
    "comment_count": "{t}.comment_count", "tag_count": "{t}.tag_count", "wilson_score": "{t}.wilson_score",
    "pixels": "({t}.width * {t}.height)", "size": "{t}.size",
    "duration": "(CASE WHEN {t}.animated THEN coalesce({t}.duration, 0.0) ELSE 0.0 END)",
    "hides": "coalesce({t}.hides, 0)",
}

# The fixed orders of the other search endpoints; `sf` and `sd` are ignored there.
FIXED_ORDERS = {
    "tags": "{t}.images DESC, {t}.id",
    "posts": "{t}.created_at DESC, {t}.id DESC",
    "comments": "{t}.created_at DESC, {t}.id DESC",
    "galleries": "{t}.id DESC",  # the gallery record carries no date; newest first by id
    "filters": "{t}.name, {t}.id DESC",
}


def integer_parse(text: str | None) -> int | None:
    """Elixir ``Integer.parse/1``: ``10abc`` -> 10; ``abc`` or empty -> None."""
    match = re.match(r"[-+]?[0-9]+", text or "")
    return int(match.group()) if match else None


def image_order(sf: str | None, sd: str | None, alias: str, *, seed: int) -> Sql:
    """ORDER BY for an image search. ``seed`` is used by ``sf=random`` without a seed of its own."""
    direction = "ASC" if sd == "asc" else "DESC"
    sf = sf or "first_seen_at"
    t = alias
    if sf == "id":
        return Sql(f"{t}.id {direction}")
    if sf == "_score":  # no relevance scores here: every hit scores alike, so id decides
        return Sql(f"{t}.id {direction}")
    if sf.startswith("random"):
        given = integer_parse(sf.partition(":")[2])
        score = random_score_sql(f"{t}.id")
        return Sql(f"{score.text} {direction}, {t}.id {direction}",
                   ((given if given is not None else seed) & _MASK,) * len(score.params))
    if sf.startswith("gallery_id:"):
        value = sf.partition(":")[2]
        if not value.isdigit():
            return Sql("NULL")  # no sort at all is sent: the engine's own order
        position = f"(SELECT position FROM gallery_images WHERE gallery_id = ? AND image_id = {t}.id)"
        gallery = sqlite_number(int(value))
        return Sql(f"{position} IS NULL, {position} {direction}, {t}.id DESC", (gallery, gallery))
    column = IMAGE_SORT_FIELDS.get(sf, IMAGE_SORT_FIELDS["first_seen_at"]).format(t=t)
    return Sql(f"{column} {direction}, {t}.id {direction}")


@dataclass(frozen=True)
class Order:
    """An image search's order: its ``ORDER BY`` and, when that is one column of the row (or the
    default order's expression) then the id in the same direction, that column or expression over
    ``images`` (``id`` for the id alone), whose index can be walked."""

    sql: Sql
    column: str | None = None
    descending: bool = True
    by_id_alone: bool = False  # the order needs nothing of the row but its id (random)
    seed: int | None = None  # a random order's seed, as the SQL holds it


_COLUMN = re.compile(r"\{t\}\.(\w+)")


def image_sort(sf: str | None, sd: str | None, alias: str, *, seed: int) -> Order:
    """:func:`image_order` with what an index walk needs to know of it."""
    sql = image_order(sf, sd, alias, seed=seed)
    field = "id" if sf in ("id", "_score") else (sf or "first_seen_at")
    if field not in IMAGE_SORT_FIELDS and not field.startswith(("random", "gallery_id:")):
        field = "first_seen_at"
    column = _COLUMN.fullmatch(IMAGE_SORT_FIELDS.get(field, ""))
    walked = FIRST_SEEN.format(t="images") if field == "first_seen_at" else column.group(1) if column else None
    random_seed = sql.params[0] if field.startswith("random") else None
    return Order(sql, walked, sd != "asc", by_id_alone=field.startswith("random"), seed=random_seed)


_MASK = 0xFFFFFFFF
_PRIME = 2**31 - 1


def random_scores(ids: np.ndarray, seed: int) -> np.ndarray:
    """:func:`random_score_sql` of each id (int64), computed at once: the same scores, so a page
    sorted here is the page SQL sorts, for a million ids in milliseconds."""
    mixed = ((ids & _MASK) * 48271 + seed) % _PRIME
    return ((mixed * mixed + 11) % _PRIME * 16807) % _PRIME


def random_score_sql(key: str) -> Sql:
    """A stable pseudo-random score of ``key`` under a seed (each ``?``), in SQL arithmetic.

    A random sort scores every matching image; a Python function called per row costs more
    than the rest of the search. Affine steps modulo the prime 2**31 - 1 with a squaring between
    them (so neighbouring ids do not keep their order); every product stays below 2**63.
    """
    mixed = f"((({key}) & {_MASK}) * 48271 + ?) % {_PRIME}"
    return Sql(f"((({mixed}) * ({mixed}) + 11) % {_PRIME} * 16807) % {_PRIME}", (0, 0))
