"""The SQLite store: schema and migrations, upserts, FTS, sync state. Never imports the client."""

from .database import StoreError, open_database, utc_now
from .images import ImageWriter
from .specs import is_image_stub

__all__ = ["ImageWriter", "StoreError", "is_image_stub", "open_database", "utc_now"]
