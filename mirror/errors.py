"""The root of every error a user can hit, and the exit status each one ends a run with.

Each family lives beside what raises it and draws its own tree in its docstring
(:mod:`mirror.api.errors`, :mod:`mirror.store.errors`); every class carries its ``exit_code``,
as gallery-dl's exceptions do, so the CLI applies them in one place (``cli.handle_errors``)
with no table of its own::

    MirrorError                 1  unexpected
    ├── ConfigError             2  bad usage or config: the message names the key (mirror.config)
    ├── SourceError             2  the file or URL to upload or search with cannot be read
    ├── DumpError               2  the site's dump cannot be read or does not match its SHA-256 (mirror.dump.archive)
    ├── ApiError                4  the site rejected a request or answered wrongly (mirror.api.errors)
    │   ├── WrongBaseUrl        2  site.base_url cannot be right: https:// to a server that speaks plain HTTP
    │   └── SiteUnavailable     3  the site is down or kept rate-limiting; run again later
    ├── StoreError              5  the database cannot be written or must not be touched (mirror.store.errors)
    ├── StorageFailure          5  the files cannot be written (mirror.download.storage)
    ├── BoardMissing            5  no mirror database to serve (mirror.serve.board)
    ├── MirrorBusy              7  another run is writing to the same mirror (mirror.store.run_lock)
    ├── PortUnavailable         8  serve, browse or site cannot listen where asked: the port is taken (mirror.listening)
    └── FirehoseRefused         9  the site lets no client follow its firehose (mirror.follow.phoenix)

Status 6 is not an error: `mirror verify` ends with it when it found missing or corrupt files.
"""

from __future__ import annotations

__all__ = ["MirrorError", "EXIT_ERROR", "EXIT_USAGE", "EXIT_UNAVAILABLE", "EXIT_REJECTED", "EXIT_STORE",
           "EXIT_DAMAGED", "EXIT_BUSY", "EXIT_PORT_BUSY", "EXIT_NO_FIREHOSE"]

EXIT_ERROR, EXIT_USAGE, EXIT_UNAVAILABLE, EXIT_REJECTED, EXIT_STORE, EXIT_DAMAGED, EXIT_BUSY = 1, 2, 3, 4, 5, 6, 7
EXIT_PORT_BUSY = 8
EXIT_NO_FIREHOSE = 9


class MirrorError(Exception):
    """An error a user can hit: its message says what happened and what to do."""

    exit_code = EXIT_ERROR
