"""Reading the site's public database dumps (``mirror import-dump``).

A whole-board mirror starts here rather than with 1.3 million API requests: the site asks for it
(its API page points whole-board mirrors at its nightly dumps). The dump is read without a
PostgreSQL server, table by table, in bounded memory:

- :mod:`.archive` reads a ``pg_dump -Fc`` archive: its header, its table of contents and each
  table's rows, streamed from the file;
- :mod:`.staging` keeps the rows of each table in a scratch SQLite file beside the mirror, so the
  dump's tables can be joined (an image's tags, sources, intensities) whatever order they come in;
- :mod:`.records` turns staged rows into the records the API would have sent;
- :mod:`.importer` runs it all, table by table, resumable, writing through the store's writers.
"""
