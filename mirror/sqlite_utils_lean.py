"""sqlite-utils imported without pandas, so that every ``mirror`` command costs what it uses.

``sqlite_utils.db`` imports pandas at its own import when pandas is installed (a researcher's first
move after an export), only to map ``pandas.Timestamp`` to ``TEXT`` for DataFrames inserted
through it, which the mirror never does: some 70 MB and 0.3-0.5 s on every start. A lazy module
(:class:`importlib.util.LazyLoader`) would not help, as that mapping reads an attribute of pandas at
import time. So pandas is made to look absent while sqlite-utils loads, and only then: a later
``import pandas`` (by an engine reading an export, by the user's own code) finds it as usual.
"""

from __future__ import annotations

import importlib
import sys

__all__ = ["import_sqlite_utils"]


def import_sqlite_utils() -> None:
    """Import ``sqlite_utils`` without letting it import pandas (nothing to do if either is loaded)."""
    if "sqlite_utils.db" in sys.modules or "pandas" in sys.modules:
        return
    sys.modules["pandas"] = None  # type: ignore[assignment]  # `import pandas` raises ImportError
    try:
        importlib.import_module("sqlite_utils")
    finally:
        if sys.modules.get("pandas", 0) is None:
            del sys.modules["pandas"]
