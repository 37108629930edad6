"""A board written as the site's nightly public database dump (``pg_dump -Fc``).

``mirror import-dump`` reads the dumps Derpibooru publishes; its tests need such dumps of a board
whose every record they know. A hand-made archive would only show that the importer reads what
its author thought the format was, so the dump is made as the site makes it: the layout's tables
in a real PostgreSQL (:mod:`.postgres`), loaded with ``COPY`` and dumped by ``pg_dump``.

Rows go from SQLite cursors straight into ``psql``'s stdin, as the ``COPY ... FROM stdin`` text
that plain dumps restore with: a board of any size is written without holding its rows.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..board.editor import BoardEditor
from ..board.rows import SITE_TABLES
from .postgres import Postgres, binaries, running_postgres
from .tables import LAYOUTS, Table

__all__ = ["write_public_dump", "dump_site", "copy_line"]

_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})


def write_public_dump(board: BoardEditor | str | Path, out: str | Path, *, layout: str = "2026",
                      compress: bool = True, then: str = "", server: Postgres | None = None) -> Path:
    """Write ``board`` (an editor, or the path of a board database) to ``out`` as a public dump
    of ``layout`` (``"2026"`` or ``"2022"``), gzip-compressed unless ``compress`` is false.
    ``then`` is SQL run on the loaded tables before they are dumped: the tests of damaged dumps
    change a real dump's tables with it (an extra column, an id twice, a null where none belongs).

    The board is read in one transaction, so an editor may keep changing it meanwhile. A running
    ``server`` is used (in a new database of its own) instead of starting one for this dump.
    """
    if layout not in LAYOUTS:
        raise ValueError(f"no dump layout {layout!r} (known: {', '.join(sorted(LAYOUTS))})")
    out = Path(out)
    path = Path(board) if isinstance(board, (str, Path)) else board.path
    with (server.new_database() if server else running_postgres()) as server, closing(_read_only(path)) as db:
        db.execute("BEGIN")
        server.feed(_script(db, LAYOUTS[layout]))
        db.execute("COMMIT")
        if then:
            server.feed([then])
        server.run("pg_dump", "--format=custom", f"--compress={'gzip' if compress else 0}", "--schema=public",
                   "-f", str(out))
    return out


def dump_site(out: str | Path, *, seed: int = 1, images: int = 500, fixtures: str | Path | None = None,
              layout: str = "2026", pictures: bool = True) -> str:
    """``mirror site --dump``: the board ``mirror site`` would serve with the same options (its
    files pictures unless ``pictures`` is false, as with ``--stand-ins``), written as a public
    dump; returns the line that says what was written."""
    binaries()  # no board is generated for nothing when PostgreSQL is missing
    board = BoardEditor.for_site(seed, images, fixtures=fixtures, pictures=pictures)
    try:
        path = write_public_dump(board, out, layout=layout)
    finally:
        board.close()
    what = f"the fixtures in {fixtures}" if fixtures else f"{images:,} images (seed {seed})"
    return (f"Wrote {path} ({path.stat().st_size / 1e6:.1f} MB): {len(LAYOUTS[layout])} tables of the {layout} "
            f"public dump layout, from a board of {what}")


def _read_only(path: Path) -> sqlite3.Connection:
    """The board, read-only; the test site's tables it was made without read as empty."""
    if not path.exists():
        raise FileNotFoundError(f"no board database at {path}")
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)
    db.create_function("url_path", 1, lambda url: urlsplit(url).path if url else None, deterministic=True)
    present = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    for name, (columns, _) in SITE_TABLES.items():
        if name not in present:
            db.execute(f"CREATE TEMP TABLE {name} ({', '.join(columns)})")
    return db


def _script(db: sqlite3.Connection, tables: Iterable[Table]) -> Iterator[str]:
    """The psql script: the tables, then each one's rows as ``COPY`` text."""
    yield "SET client_encoding = 'UTF8';\n"
    for table in tables:
        yield table.create + "\n"
    for table in tables:
        yield f"COPY public.{table.name} ({', '.join(c.name for c in table.columns)}) FROM stdin;\n"
        yield from map(copy_line, db.execute(table.select))
        yield "\\.\n"


def copy_line(row: Iterable[Any]) -> str:
    """One row in ``COPY``'s text format: tab-separated, ``\\N`` for NULL, and backslash, tab,
    newline and carriage return escaped."""
    return "\t".join("\\N" if v is None else v.translate(_ESCAPES) if isinstance(v, str) else str(v)
                     for v in row) + "\n"
