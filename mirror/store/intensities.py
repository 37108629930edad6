"""The ``image_intensities`` table: one row per image, what reverse search compares a query with.

The site's own values come first: every image record carries the ``intensities`` the site's
program computed (``computed_from = 'record'``), kept as each page is stored, so an archive with
no files at all can be searched. Only an image whose record has none gets values read from a
kept file (``full``, or the ``svg`` original), by the same program's rule (:mod:`mirror.imaging`).
"""

from __future__ import annotations

from collections.abc import Iterator

from sqlite_utils import Database

from ..dates import utc_text

__all__ = ["save_intensities", "save_record_intensities", "without_intensities", "RECORD"]

RECORD = "record"  # computed_from of the values an image record carries: the site's own


def save_intensities(db: Database, image_id: int, values: tuple[float, float, float, float], aspect_ratio: float,
                     computed_from: str) -> None:
    """Keep (or replace) an image's intensities, read from its ``computed_from`` file."""
    nw, ne, sw, se = values
    with db.atomic():
        db.execute("INSERT OR REPLACE INTO image_intensities (image_id, nw, ne, sw, se, aspect_ratio, computed_from, "
                   "computed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                   (image_id, nw, ne, sw, se, aspect_ratio, computed_from, utc_text()))


def save_record_intensities(db: Database, records: list[dict], computed_from: str) -> None:
    """Keep the intensities image records state (``{"nw", "ne", "sw", "se"}``), where they do."""
    now = utc_text()
    rows = [(r["id"], *values, _aspect(r.get("aspect_ratio")), computed_from, now)
            for r in records if (values := _corners(r.get("intensities"))) is not None]
    with db.atomic():
        db.conn.executemany("INSERT OR REPLACE INTO image_intensities (image_id, nw, ne, sw, se, aspect_ratio, "
                            "computed_from, computed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)


def _corners(value: object) -> tuple[float, ...] | None:
    """The four numbers of a record's ``intensities``, or None when it has none (or not all four)."""
    if not isinstance(value, dict):
        return None
    corners = [value.get(k) for k in ("nw", "ne", "sw", "se")]
    if not all(type(c) in (int, float) for c in corners):
        return None
    return tuple(float(c) for c in corners)


def _aspect(value: object) -> float:
    return float(value) if type(value) in (int, float) else 0.0


def without_intensities(db: Database, representations: tuple[str, ...]) -> Iterator[dict]:
    """Kept files of those ``representations`` whose image has no intensities yet, or whose
    intensities were read from another file than its kept ``full`` (the file preferred: an SVG's
    original is read only while its rendering is not kept), oldest id first. An image whose
    record carries the site's own values needs no file read.

    Which files a run kept before it was killed must not decide the values a mirror ends with."""
    marks = ", ".join("?" for _ in representations)
    sql = (f"SELECT d.image_id, d.representation, d.path, coalesce(i.aspect_ratio, 0) AS aspect_ratio "
           f"FROM downloads d JOIN images i ON i.id = d.image_id "
           f"WHERE d.status = 'done' AND d.representation IN ({marks}) "
           f"AND (d.image_id NOT IN (SELECT image_id FROM image_intensities) "
           f"     OR (d.representation = 'full' AND d.image_id IN ("
           f"         SELECT image_id FROM image_intensities WHERE computed_from NOT IN ('full', '{RECORD}')))) "
           f"ORDER BY d.image_id, d.representation = 'full'")
    for row in db.execute(sql, representations).fetchall():
        yield dict(zip(("image_id", "representation", "path", "aspect_ratio"), row))
