"""The SQLite store: schema and migrations, upserts, FTS, sync state. Never imports the client."""

from .database import StoreError, open_database, utc_now
from .images import ImageWriter, SavedImages, is_stub

__all__ = ["ImageWriter", "SavedImages", "StoreError", "is_stub", "open_database", "utc_now"]
