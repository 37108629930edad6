"""A ``pg_dump`` custom-format archive, read as a stream: header, table of contents, table rows.

The site publishes its dumps in this format (``pg_dump -Fc``, PostgreSQL 17: archive version
1.16). Three readers were weighed, and measured on the same dumps:

- ``pgdumplib`` unpacks every table into a temporary folder before it returns, building each
  block in memory, and strips every line, so a row whose last columns are empty strings comes
  back short;
- ``pg_restore`` streams, but must be at least as new as the dump (Debian 12's 15 refuses 1.16),
  and the one that reads it comes as a 70 MB wheel;
- the format itself is small and documented by PostgreSQL's ``pg_backup_archiver.c`` and
  ``pg_backup_custom.c``: a header, one entry per object, and then each table's data as
  length-prefixed chunks of COPY text, deflated when the dump is compressed.

So this module reads it directly: one table at a time, a chunk at a time, whatever the table's
size. Archive versions 1.12 to 1.16 are read; gzip or no compression (lz4 and zstd, which
pg_dump 16+ can write with ``-Z``, are refused with a message saying so). An archive written to a
pipe has no data offsets: its tables are found by reading the data blocks in order.
"""

from __future__ import annotations

import os
import re
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import BinaryIO

from ..errors import EXIT_USAGE, MirrorError
from ..words import printable

__all__ = ["DumpError", "Archive", "TableData", "BadRow", "parse_copy_columns", "copy_rows", "copy_value", "printable",
           "LONGEST_LINE", "KEPT_OF_A_LONG_LINE", "MOST_COLUMNS"]

MAGIC = b"PGDMP"
OLDEST, NEWEST = (1, 12), (1, 16)
_COMPRESSIONS = {0: "none", 1: "gzip", 2: "lz4", 3: "zstd"}
_BLOCK_DATA, _BLOCK_BLOBS = 1, 3
_OFFSET_NOT_SET, _OFFSET_SET, _NO_DATA = 1, 2, 3
_CHUNK = 1 << 16
# The longest line of COPY text read whole: far past what the site's longest text fields
# (descriptions, comment and post bodies) hold. A longer line is set aside, its first
# ``KEPT_OF_A_LONG_LINE`` bytes kept, and the rest read past without being held.
LONGEST_LINE = 16 << 20
KEPT_OF_A_LONG_LINE = 64 << 10
MOST_COLUMNS = 1600  # PostgreSQL's own limit (MaxHeapAttributeNumber): a dump with more is damaged
_DAMAGED = "the dump is damaged; fetch it again and check its SHA-256"


class DumpError(MirrorError):
    """The dump cannot be read: not a custom-format archive, a kind this version cannot read, cut
    short or damaged. Nothing was written for the table being read.

    The message may quote names the dump holds, so it is made :func:`printable` here, once for all."""

    exit_code = EXIT_USAGE

    def __init__(self, message: str) -> None:
        super().__init__(printable(message))


@dataclass(frozen=True)
class TableData:
    """One table's data entry in the archive's table of contents."""

    namespace: str
    name: str
    columns: tuple[str, ...]
    dump_id: int
    offset: int | None  # where its data block starts; None when the archive does not say


@dataclass
class Archive:
    """An open archive: what its header says, and its tables' data entries by name."""

    path: Path
    version: tuple[int, int, int]
    compression: str
    created: datetime  # when pg_dump ran, by the dumping machine's clock (taken as UTC)
    dbname: str
    server_version: str
    encoding: str
    tables: dict[str, TableData] = field(default_factory=dict)
    data_start: int = 0  # where the data blocks begin, after the table of contents
    int_size: int = 4
    offset_size: int = 8

    @classmethod
    def open(cls, path: str | Path) -> Archive:
        """Read the header and the table of contents of the archive at ``path``."""
        path = Path(path)
        with path.open("rb") as handle:
            return _Reader(handle, path).archive()

    def rows(self, table: str) -> Iterator[list[str | None]]:
        """The rows of ``table``, each a list of column values (None for SQL NULL), as text.

        Raises :class:`DumpError` when the data ends early or is damaged; a row that is not valid
        UTF-8 comes back as a :class:`BadRow`, for the caller to keep aside."""
        entry = self.tables[table]
        with self.path.open("rb") as handle:
            reader = _Reader(handle, self.path)
            reader.int_size, reader.offset_size = self.int_size, self.offset_size
            chunks = reader.data_chunks(entry, self.data_start)
            yield from copy_rows(_inflated(chunks, self.compression, self.path, table))


def parse_copy_columns(statement: str) -> tuple[str, ...]:
    """The column names of ``COPY public.tags (id, image_count, ...) FROM stdin;``."""
    found = re.search(r"\((.*)\)\s+FROM\s+stdin", statement, re.S | re.I)
    if not found:
        return ()
    return tuple(name.strip().strip('"') for name in found.group(1).split(","))


class _Reader:
    """The low-level reads of ``pg_backup_archiver.c``: integers, strings and offsets."""

    def __init__(self, handle: BinaryIO, path: Path) -> None:
        self.handle, self.path = handle, path
        self.int_size, self.offset_size = 4, 8
        self.size = os.fstat(handle.fileno()).st_size

    def _bytes(self, n: int) -> bytes:
        if n > self.size - self.handle.tell():  # never ask for more than the file holds: a damaged
            self._ends_early()                  # length would allocate it first
        data = self.handle.read(n)
        if len(data) != n:
            self._ends_early()
        return data

    def _ends_early(self) -> None:
        raise DumpError(f"{self.path}: the dump ends early (cut short while downloading or copying?); "
                        "fetch it again and check its SHA-256")

    def damaged(self, what: str) -> DumpError:
        return DumpError(f"{self.path}: {what}; {_DAMAGED}")

    def byte(self) -> int:
        return self._bytes(1)[0]

    def int(self) -> int:
        sign = self.byte()
        value = int.from_bytes(self._bytes(self.int_size), "little")
        return -value if sign else value

    def str(self) -> str | None:
        length = self.int()
        if length < 0:
            return None
        return self._bytes(length).decode("utf-8", "replace")

    def offset(self) -> tuple[int, int]:
        state = self.byte()
        return state, int.from_bytes(self._bytes(self.offset_size), "little")

    def archive(self) -> Archive:
        magic = self.handle.read(5)
        if magic != MAGIC:
            raise DumpError(f"{self.path}: not a PostgreSQL custom-format dump ({_what_it_is(magic)}); "
                            "import-dump reads the site's .pgdump files (pg_dump -Fc)")
        version = (self.byte(), self.byte(), self.byte())
        if not OLDEST <= version[:2] <= NEWEST:
            raise DumpError(f"{self.path}: archive version {'.'.join(map(str, version))} is not one this version "
                            f"reads (1.12 to 1.16, pg_dump 9.0 to 18); upgrade booru mirror")
        self.int_size, self.offset_size = self.byte(), self.byte()
        for name, size in (("integer", self.int_size), ("offset", self.offset_size)):
            if not 1 <= size <= 8:
                raise self.damaged(f"its header gives an {name} size of {size} bytes (pg_dump writes 4 and 8)")
        if self.byte() != 1:
            raise DumpError(f"{self.path}: a pg_dump archive, but not in the custom format (-Fc)")
        if version >= (1, 15, 0):
            code = self.byte()
            compression = _COMPRESSIONS.get(code, f"unknown ({code})")
        else:
            compression = "gzip" if self.int() != 0 else "none"
        if compression not in ("none", "gzip"):
            raise DumpError(f"{self.path}: the dump is compressed with {compression}, which this version cannot "
                            "read (gzip or none only); ask for the site's gzip dump, or convert it with "
                            "pg_restore -f - | pg_dump")
        created = self._created()
        dbname, server_version = self.str() or "", self.str() or ""
        self.str()  # pg_dump's own version
        archive = Archive(self.path, version, compression, created, dbname, server_version, "UTF8",
                          int_size=self.int_size, offset_size=self.offset_size)
        entries = self.int()
        if entries < 0:
            raise self.damaged(f"its table of contents counts {entries} entries")
        for _ in range(entries):
            self._entry(archive, version)
        archive.data_start = self.handle.tell()
        return archive

    def _created(self) -> datetime:
        """When pg_dump ran: six fields of ``struct tm`` (and a daylight saving flag)."""
        second, minute, hour, day, month, year = (self.int() for _ in range(6))
        self.int()  # daylight saving flag
        try:
            return datetime(year + 1900, month + 1, day, hour, minute, second, tzinfo=timezone.utc)
        except (ValueError, OverflowError):
            raise self.damaged(f"its header gives no real date (year {year + 1900}, month {month + 1}, day {day}, "
                               f"{hour}:{minute}:{second})") from None

    def _entry(self, archive: Archive, version: tuple[int, int, int]) -> None:
        dump_id = self.int()
        self.int()  # had a data dumper
        self.str(), self.str()  # table oid, oid
        tag, desc = self.str(), self.str()
        self.int()  # section
        defn = self.str()
        self.str()  # drop statement
        copy_statement = self.str()
        namespace = self.str()
        self.str()  # tablespace
        if version >= (1, 14, 0):
            self.str()  # table access method
        if version >= (1, 16, 0):
            self.int()  # relkind
        self.str()  # owner
        self.str()  # "with oids"
        while self.str() is not None:  # dependencies
            pass
        state, offset = self.offset()
        if desc == "ENCODING" and defn:
            found = re.search(r"client_encoding\s*=\s*'([^']+)'", defn)
            archive.encoding = found.group(1) if found else archive.encoding
        if desc == "TABLE DATA" and tag:
            columns = parse_copy_columns(copy_statement or "")
            if problem := _column_problem(columns):
                raise self.damaged(f"table {tag}: its column list {problem}")
            if state == _OFFSET_SET and offset >= self.size:
                raise DumpError(f"{self.path}: the dump ends early or is damaged: table {tag}'s data is said to "
                                f"start at byte {offset:,}, past its end ({self.size:,} bytes); fetch it again and "
                                "check its SHA-256")
            archive.tables[tag] = TableData(namespace or "", tag, columns, dump_id,
                                            offset if state == _OFFSET_SET else None)

    def data_chunks(self, entry: TableData, data_start: int) -> Iterator[bytes]:
        """The raw (maybe deflated) chunks of ``entry``'s data block."""
        if entry.offset is not None:
            self.handle.seek(entry.offset)
            self._block_header(entry)
        else:
            self._find_block(entry, data_start)
        while True:
            size = self.int()
            if size == 0:
                return
            if size < 0:
                raise self.damaged(f"table {entry.name}: a data chunk of negative size")
            while size > 0:  # a chunk as long as the file, a piece at a time: memory stays flat
                piece = self._bytes(min(size, _CHUNK))
                size -= len(piece)
                yield piece

    def _block_header(self, entry: TableData) -> None:
        kind, dump_id = self.byte(), self.int()
        if kind != _BLOCK_DATA or dump_id != entry.dump_id:
            raise self.damaged(f"table {entry.name}: its data is not where the table of contents says")

    def _find_block(self, entry: TableData, data_start: int) -> None:
        """Walk the data blocks from the start, skipping the others, to ``entry``'s own."""
        self.handle.seek(data_start)
        while True:
            head = self.handle.read(1)
            if not head:
                raise DumpError(f"{self.path}: table {entry.name}: its data was not found; the dump is cut short")
            kind, dump_id = head[0], self.int()
            if kind not in (_BLOCK_DATA, _BLOCK_BLOBS):
                raise self.damaged(f"an unknown data block ({kind})")
            if kind == _BLOCK_DATA and dump_id == entry.dump_id:
                return
            self._skip_block(kind)

    def _skip_block(self, kind: int) -> None:
        if kind == _BLOCK_BLOBS:
            raise DumpError(f"{self.path}: large objects in a public dump are not expected; the dump is not the site's")
        while (size := self.int()) != 0:
            if size < 0:
                raise self.damaged("a data chunk of negative size")
            self.handle.seek(size, 1)


def _column_problem(columns: tuple[str, ...]) -> str:
    """What is wrong with a table's column list as a COPY statement gives it, or nothing."""
    if len(columns) > MOST_COLUMNS:
        return f"has {len(columns):,} columns (PostgreSQL allows {MOST_COLUMNS:,})"
    if len(set(columns)) != len(columns):
        twice = sorted({c for c in columns if columns.count(c) > 1})
        return f"names {', '.join(twice)} twice"
    if any(not c for c in columns):
        return "has a column without a name"
    return ""


def _what_it_is(magic: bytes) -> str:
    if magic.startswith(b"\x1f\x8b"):
        return "a gzip file: gunzip it first"
    if magic.startswith(b"\x28\xb5\x2f\xfd"):
        return "a zstd file"
    if magic.startswith(b"PK"):
        return "a zip file"
    if magic.lstrip()[:2] in (b"--", b"SE", b"CR"):
        return "plain SQL text: a dump in the plain format"
    if not magic:
        return "an empty file"
    return "unknown contents"


def _inflated(chunks: Iterator[bytes], compression: str, path: Path, table: str) -> Iterator[bytes]:
    if compression == "none":
        yield from chunks
        return
    inflate = zlib.decompressobj()
    try:
        for chunk in chunks:
            data = inflate.decompress(chunk, _CHUNK)
            while data:
                yield data
                data = inflate.decompress(inflate.unconsumed_tail, _CHUNK) if inflate.unconsumed_tail else b""
        yield inflate.flush()
    except zlib.error as error:
        raise DumpError(f"{path}: table {table}: its compressed data is damaged ({error}); fetch the dump again") \
            from None


_ESCAPES = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}
_ESCAPE = re.compile(r"\\(x[0-9A-Fa-f]{1,2}|[0-7]{1,3}|.)", re.S)


def _unescape(match: re.Match[str]) -> str:
    code = match.group(1)
    if code in _ESCAPES:
        return _ESCAPES[code]
    if code[0] == "x" and len(code) > 1:
        return chr(int(code[1:], 16))
    if code[0] in "01234567":
        return chr(int(code, 8))
    return code


def copy_value(text: str) -> str | None:
    """One field of COPY text: ``\\N`` is NULL; backslash escapes decoded."""
    if text == "\\N":
        return None
    return _ESCAPE.sub(_unescape, text) if "\\" in text else text


def copy_rows(data: Iterator[bytes], longest: int = LONGEST_LINE) -> Iterator[list[str | None]]:
    """Rows of COPY text from a stream of bytes, split on line ends wherever the chunks fall.

    A line that is not valid UTF-8 comes back as a :class:`BadRow` with U+FFFD in place of the bad
    bytes, and so does a line longer than ``longest`` bytes, cut to its first
    ``KEPT_OF_A_LONG_LINE`` bytes (the importer keeps both aside, with the reason). The data ends at
    ``\\.``. Each byte is copied a bounded number of times and no more than ``longest`` bytes of a
    line are ever held, whatever the chunks and the lines."""
    for line, length in _lines(data, longest):
        if line == b"\\.":
            return
        if length > longest:
            yield _long_row(line, length, longest)
        else:
            yield _row(line)


def _lines(data: Iterator[bytes], longest: int) -> Iterator[tuple[bytes, int]]:
    """Each line of ``data`` (its first ``longest + 1`` bytes at most) and its whole length."""
    held: list[bytes] = []  # the start of a line that runs on into the next chunks
    kept = length = 0
    for chunk in data:
        pieces = chunk.split(b"\n")
        for piece in pieces[:-1]:
            if held:
                held.append(piece[:max(0, longest + 1 - kept)])
                line, length = b"".join(held), length + len(piece)
                held, kept = [], 0
            else:
                line, length = piece[:longest + 1], len(piece)
            yield line, length
            length = 0
        tail = pieces[-1]
        if tail and kept <= longest:
            held.append(tail[:longest + 1 - kept])
            kept += len(held[-1])
        length += len(tail)
    if length:
        yield b"".join(held), length


def _row(line: bytes) -> list[str | None]:
    try:
        text = line.decode()
    except UnicodeDecodeError:
        return BadRow((copy_value(v) for v in line.decode("utf-8", "replace").split("\t")),
                      "not valid UTF-8 (kept with U+FFFD in place of the bad bytes)")
    if "\\" not in text:
        return text.split("\t")
    return [copy_value(v) for v in text.split("\t")]


def _long_row(line: bytes, length: int, longest: int) -> BadRow:
    start = line[:min(KEPT_OF_A_LONG_LINE, longest)].decode("utf-8", "replace")
    return BadRow((copy_value(v) for v in start.split("\t")),
                  f"a line of {length:,} bytes, longer than the longest this version reads ({longest:,}): "
                  f"only its first {KEPT_OF_A_LONG_LINE:,} bytes are kept")


class BadRow(list):
    """A row that cannot be kept as it is (not valid UTF-8, or a line past the longest read), with
    the ``reason``: its values hold U+FFFD where bad bytes were, and a long line only its start."""

    def __init__(self, values: Iterable[str | None], reason: str) -> None:
        super().__init__(values)
        self.reason = reason
