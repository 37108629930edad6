"""What an export did, for the progress display, ``--json``, the metrics file and the health ping.

Kept apart from the writer so that the run's outcome (:mod:`mirror.commands.outcome`) can know an
export's report without importing ``deltalake`` and ``pyarrow``, which the ``export`` extra brings.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from ..errors import EXIT_STORE, EXIT_USAGE, MirrorError
from ..words import counted, human_bytes

__all__ = ["ExportReport", "ExportFailure", "ExportMissing"]


class ExportFailure(MirrorError):
    """DEST cannot be written, or holds what this database did not write."""

    exit_code = EXIT_STORE


class ExportMissing(MirrorError):
    """The ``export`` extra (deltalake, pyarrow) is not installed."""

    exit_code = EXIT_USAGE


@dataclass
class ExportReport:
    """One export: the batch written, the versions per table, the bytes of data files added."""

    resource: str = "export"
    fetched: int = 0  # versions written (rows), all tables
    expected: int | None = None
    dest: str = ""
    batch: int = 0
    tables: dict[str, int] = field(default_factory=dict)
    bytes: int = 0
    compacted: dict[str, Any] | None = None
    started: float = field(default_factory=time.monotonic)

    def summary(self) -> str:
        busy = [f"{name} {rows}" for name, rows in self.tables.items() if rows]
        line = (f"batch {self.batch}: {counted(self.fetched, 'version')} ({', '.join(busy) or 'nothing changed'}), "
                f"{human_bytes(self.bytes)} of data files, to {self.dest}, in {time.monotonic() - self.started:.1f} s")
        if self.compacted is not None:
            line += f"; compacted: {self.compacted.get('files_removed', 0)} files into {self.compacted.get('files_added', 0)}"
        return line

    def to_json(self) -> dict[str, Any]:
        return {"dest": self.dest, "batch": self.batch, "versions": self.fetched, "bytes": self.bytes,
                "tables": dict(self.tables), "compacted": self.compacted}
