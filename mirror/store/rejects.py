"""Records that cannot be stored in their table are kept here, raw, with the reason."""

from __future__ import annotations

from typing import Any

from sqlite_utils import Database

from .database import utc_now
from .records import to_json


def reject(db: Database, resource: str, record: Any, reason: str) -> None:
    """Keep ``record`` as received in ``rejects`` so that nothing the site sent is lost."""
    key = record.get("id") if isinstance(record, dict) else None
    db["rejects"].insert({
        "resource": resource,
        "record_key": None if key is None else str(key),
        "reason": reason,
        "raw": to_json(record),
        "seen_at": utc_now(),
    })
