from .sqlite_utils_lean import import_sqlite_utils

__version__ = "0.1.0"

import_sqlite_utils()  # before any module of the package imports it
