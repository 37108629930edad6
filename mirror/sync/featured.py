"""The featured image of the day: a small history in ``featured_images(day, image_id, seen_at)``.

Sites feature an image a day or so, and /images/featured only ever tells the newest, so the
history is built by asking once per UTC day, at most: the day asked is kept in the ``featured``
cursor (a day the site featured nothing, 404, is not asked twice either).
When the image is already mirrored its row is refreshed from the record; one outside the mirrored
query is not added to ``images``, which holds exactly what the configured query selects.
"""

from __future__ import annotations

from datetime import datetime, timezone

from sqlite_utils import Database

from ..api import NotFound, PhilomenaClient
from ..dates import utc_text
from ..store import ImageWriter
from ..store.state import load_cursor, save_cursor

STATE_NAME = "featured"


def utc_day() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%d")


async def record_featured(client: PhilomenaClient, db: Database) -> bool:
    """Record today's featured image; True when a row was added, False when today had one already
    or the site features nothing (404). Errors other than 404 propagate like any request's."""
    day = utc_day()
    if load_cursor(db, STATE_NAME).get("asked_on") == day:
        return False
    try:
        record = await client.featured_image()
    except NotFound:
        record = None
    with db.atomic():
        save_cursor(db, STATE_NAME, {"asked_on": day})
        image_id = record.get("id") if isinstance(record, dict) else None
        if type(image_id) is not int:
            return False  # nothing featured, or a record without a usable id
        if db.execute("SELECT 1 FROM images WHERE id = ?", [image_id]).fetchone():
            ImageWriter(db, client.base_url).save_page([record])
        db["featured_images"].insert({"day": day, "image_id": image_id, "seen_at": utc_text()}, pk="day",
                                     replace=True)
    return True
