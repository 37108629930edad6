"""The ``image_intensities`` table: one row per image whose kept file was read for reverse search."""

from __future__ import annotations

from collections.abc import Iterator

from sqlite_utils import Database

from .database import utc_now

__all__ = ["save_intensities", "save_record_intensities", "without_intensities"]


def save_intensities(db: Database, image_id: int, values: tuple[float, float, float, float], aspect_ratio: float,
                     computed_from: str) -> None:
    """Keep (or replace) an image's intensities, read from its ``computed_from`` file."""
    nw, ne, sw, se = values
    with db.atomic():
        db.execute("INSERT OR REPLACE INTO image_intensities (image_id, nw, ne, sw, se, aspect_ratio, computed_from, "
                   "computed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                   (image_id, nw, ne, sw, se, aspect_ratio, computed_from, utc_now()))


def save_record_intensities(db: Database, records: list[dict], computed_from: str) -> None:
    """Keep the intensities image records state (``{"nw", "ne", "sw", "se"}``), where they do."""
    now = utc_now()
    rows = [(r["id"], *(float(r["intensities"][k]) for k in ("nw", "ne", "sw", "se")),
             float(r.get("aspect_ratio") or 0.0), computed_from, now)
            for r in records if isinstance(r.get("intensities"), dict)]
    with db.atomic():
        db.conn.executemany("INSERT OR REPLACE INTO image_intensities (image_id, nw, ne, sw, se, aspect_ratio, "
                            "computed_from, computed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)


def without_intensities(db: Database, representations: tuple[str, ...]) -> Iterator[dict]:
    """Kept files of those ``representations`` whose image has no intensities yet, or whose
    intensities were read from another file than its kept ``full`` (the file preferred: an SVG's
    original is read only while its rendering is not kept), oldest id first.

    Which files a run kept before it was killed must not decide the values a mirror ends with."""
    marks = ", ".join("?" for _ in representations)
    sql = (f"SELECT d.image_id, d.representation, d.path, coalesce(i.aspect_ratio, 0) AS aspect_ratio "
           f"FROM downloads d JOIN images i ON i.id = d.image_id "
           f"WHERE d.status = 'done' AND d.representation IN ({marks}) "
           f"AND (d.image_id NOT IN (SELECT image_id FROM image_intensities) "
           f"     OR (d.representation = 'full' AND d.image_id IN ("
           f"         SELECT image_id FROM image_intensities WHERE computed_from != 'full'))) "
           f"ORDER BY d.image_id, d.representation = 'full'")
    for row in db.execute(sql, representations).fetchall():
        yield dict(zip(("image_id", "representation", "path", "aspect_ratio"), row))
