"""A real public dump made hostile: one table's data replaced by whatever a test or benchmark
brings (100 MB of NUL bytes, ten million empty lines, a 100 MB field), its COPY statement
rewritten (a column named twice, 3,000 columns), or the places of its header fields found for a
test to spoil.

The dump itself stays the one ``pg_dump`` wrote (:mod:`.public`): its header and table of
contents are kept byte for byte, the new data block is appended at the end of the file, written as
``pg_dump`` writes blocks (length-prefixed chunks, deflated when the dump is), and the table's
entry is pointed at it. So what is tested is the reader meeting bad data in a good archive, not a
hand-made archive that only shows what its author thought the format was.
"""

from __future__ import annotations

import shutil
import zlib
from collections.abc import Iterable
from pathlib import Path

from ...dump.archive import Archive, _Reader
from .archive_writer import pg_int, write_block

__all__ = ["with_table_data", "with_copy_statement", "offset_place", "entry_count_place"]


def offset_place(dump: str | Path, table: str) -> int:
    """Where in ``dump`` the data offset of ``table``'s entry lies (its state byte, then the offset)."""
    return _marked(dump).places[table]


def entry_count_place(dump: str | Path) -> int:
    """Where in ``dump`` the count of its table of contents' entries lies (a sign byte, then the count)."""
    return _marked(dump).count_place


def with_copy_statement(dump: str | Path, out: str | Path, table: str, statement: str) -> Path:
    """A copy of ``dump`` at ``out`` whose ``table`` entry has ``statement`` as its COPY statement
    (the column list the data is read with); every data offset moved by the difference in length."""
    marks, data = _marked(dump), Path(dump).read_bytes()
    start, end = marks.copies[table]
    text = statement.encode()
    new = pg_int(len(text), marks.int_size) + text
    moved = len(new) - (end - start)
    changed = bytearray(data[:start] + new + data[end:])
    for place, state, offset in marks.offsets:
        if state == 2:
            place += moved if place > start else 0
            changed[place + 1:place + 1 + marks.offset_size] = (offset + moved).to_bytes(marks.offset_size, "little")
    Path(out).write_bytes(bytes(changed))
    return Path(out)


def with_table_data(dump: str | Path, out: str | Path, table: str, data: Iterable[bytes]) -> Path:
    """A copy of ``dump`` at ``out`` whose ``table`` holds ``data`` (COPY text, in pieces) instead."""
    dump, out = Path(dump), Path(out)
    archive = Archive.open(dump)
    entry = archive.tables[table]
    place = offset_place(dump, table)
    shutil.copyfile(dump, out)  # the header and table of contents as they are
    with out.open("r+b") as handle:
        end = handle.seek(0, 2)
        write_block(handle, entry.dump_id, data, None if archive.compression == "none" else zlib.Z_DEFAULT_COMPRESSION)
        handle.seek(place)
        handle.write(bytes([2]) + end.to_bytes(archive.offset_size, "little"))
    return out


def _marked(dump: str | Path) -> _Marking:
    with Path(dump).open("rb") as handle:
        reader = _Marking(handle, Path(dump))
        reader.archive()
    return reader


class _Marking(_Reader):
    """The archive's reader, noting where the fields a test spoils lie: each table's data offset and
    COPY statement, every offset, the count of entries."""

    def __init__(self, handle, path: Path) -> None:  # noqa: ANN001
        super().__init__(handle, path)
        self.places: dict[str, int] = {}
        self.copies: dict[str, tuple[int, int]] = {}
        self.offsets: list[tuple[int, int, int]] = []
        self.strings: list[tuple[int, int]] = []
        self.count_place = self.last_int = -1

    def int(self) -> int:
        self.last_int = self.handle.tell()
        return super().int()

    def str(self) -> str | None:
        start = self.handle.tell()
        text = super().str()
        self.strings.append((start, self.handle.tell()))
        return text

    def offset(self) -> tuple[int, int]:
        place = self.handle.tell()
        state, offset = super().offset()
        self.offsets.append((place, state, offset))
        return state, offset

    def _entry(self, archive, version) -> None:  # noqa: ANN001
        if self.count_place < 0:
            self.count_place = self.last_int
        before, self.strings = set(archive.tables), []
        super()._entry(archive, version)
        for name in set(archive.tables) - before:
            self.places[name] = self.offsets[-1][0]
            self.copies[name] = self.strings[6]  # oid, oid, tag, kind, definition, drop, copy statement
