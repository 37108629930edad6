"""The SQLite store: schema and migrations, upserts, FTS, sync state. Never imports the client."""

from .database import DEFAULT_BUSY_TIMEOUT, open_database, open_read_only, reader_uri, remove_unused
from .errors import StoreError, database_errors
from .images import ImageWriter
from .run_lock import MirrorBusy, run_lock
from .specs import is_image_stub

__all__ = ["DEFAULT_BUSY_TIMEOUT", "ImageWriter", "MirrorBusy", "StoreError", "database_errors", "is_image_stub",
           "open_database", "open_read_only", "reader_uri", "remove_unused", "run_lock"]
