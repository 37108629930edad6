"""What an image's kept original says about it when its record does not: ``animated`` and ``duration``.

A record imported from the site's dump lacks them (the public dump drops ``is_animated`` and
``image_duration``), and the API gives them only when it next sends the record. The original
file holds the answer, read as the site's analysers read it (:func:`mirror.imaging.analyze`), so
it is filled into the typed columns when that file is kept. The record in ``raw`` stays as the
site sent it: the API's values replace these when it sends them.
"""

from __future__ import annotations

import asyncio

from sqlite_utils import Database

from ..imaging.analyze import analyze
from ..store.images import lacks_file_facts, save_file_facts
from .storage import Storage

__all__ = ["keep_file_facts"]


async def keep_file_facts(db: Database, storage: Storage, image_id: int, path: str, original: bool) -> bool:
    """Fill ``animated`` and ``duration`` from the kept original when the record lacks them."""
    if not original or not lacks_file_facts(db, image_id):
        return False
    data = await asyncio.to_thread(storage.read, path)
    if data is None:
        return False
    analysis = await asyncio.to_thread(analyze, data)
    if not analysis.supported:
        return False
    save_file_facts(db, image_id, animated=analysis.animated, duration=analysis.duration)
    return True
