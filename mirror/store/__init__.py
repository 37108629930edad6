"""The SQLite store: schema and migrations, upserts, FTS, sync state. Never imports the client."""

from .database import StoreError, open_database, utc_now
from .images import ImageWriter
from .run_lock import MirrorBusy, run_lock
from .specs import is_image_stub

__all__ = ["ImageWriter", "MirrorBusy", "StoreError", "is_image_stub", "open_database", "run_lock", "utc_now"]
