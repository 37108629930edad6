"""Where a long store step (a migration, a table copied into a new layout) says how far it has
got when its caller gave no reporter of its own: a line on standard error, flushed at once, so
that a migration of a whole board that takes minutes is never silent."""

from __future__ import annotations

import sys

__all__ = ["say_to_stderr"]


def say_to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
