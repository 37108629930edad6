"""Records that cannot be stored in their table are kept here, raw, with the reason.

A site that keeps sending the same bad record (a page served again, every nightly run meeting the
same record) must not grow the table without bound: each distinct record is kept once per reason,
found by ``fingerprint``, a hash of the resource, the reason and the raw record.
"""

from __future__ import annotations

from typing import Any

from sqlite_utils import Database

from ..dates import utc_text
from .records import fingerprint, to_json


def reject(db: Database, resource: str, record: Any, reason: str) -> None:
    """Keep ``record`` as received in ``rejects`` so that nothing the site sent is lost; once only."""
    key = record.get("id") if isinstance(record, dict) else None
    raw = to_json(record)
    db.execute(
        "INSERT INTO rejects (resource, record_key, reason, raw, seen_at, fingerprint) VALUES (?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (fingerprint) DO NOTHING",
        [resource, None if key is None else str(key), reason, raw, utc_text(), fingerprint(resource, reason, raw)])
