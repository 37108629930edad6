"""What ``mirror import-dump FILE_OR_URL`` was given, checked before anything is opened or created.

A mistyped path must cost one line, not a traceback and an empty ``mirror.db`` left behind for
``mirror status`` to report as a mirror; a pipe or a device must not hang the run (the archive is
read with seeks, so only a regular file can be read at all). So the source is looked at first,
before the mirror's lock or database: a path (or a ``file://`` URL) must name a regular file that
can be read, and a URL must be one the fetcher will fetch (https, or http to this machine, naming
a file).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from urllib.parse import unquote, urlsplit

from .archive import DumpError
from .fetch import check_url, dump_path

__all__ = ["is_url", "local_dump", "check_source"]

_FETCHED = ("http", "https")


def is_url(source: str) -> bool:
    """Whether ``source`` is an address to download (http or https) rather than a file here."""
    return urlsplit(source).scheme.lower() in _FETCHED


def check_source(source: str) -> str | Path:
    """``source`` as the import takes it: the URL to fetch, or the path of a readable dump file.

    Raises :class:`DumpError` (exit 2) with one line naming what is wrong and what to do.
    """
    if is_url(source):
        check_url(source)
        dump_path(source, Path("."))  # a URL that names no file is refused now, not after the lock
        return source
    return local_dump(source)


def local_dump(source: str) -> Path:
    """The path a dump given as a path or a ``file://`` URL names, once it is known to be a
    regular file this process can read; raise :class:`DumpError` for anything else."""
    path = _path_of(source)
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        raise DumpError(f"{path}: no such file; check the path (or give the dump's https:// address) "
                        "and run again") from None
    except OSError as e:
        raise _unreadable(path, e) from None
    if stat.S_ISDIR(mode):
        raise DumpError(f"{path} is a folder, not a dump: give the .pgdump file in it")
    if not stat.S_ISREG(mode):
        raise DumpError(f"{path} is not a regular file (a pipe, socket or device): import-dump reads a .pgdump "
                        "file on disk; save the dump to a file first and give its path")
    try:
        with open(path, "rb"):
            pass
    except OSError as e:
        raise _unreadable(path, e) from None
    return path


def _path_of(source: str) -> Path:
    parts = urlsplit(source)
    scheme = parts.scheme.lower()
    if scheme == "file":
        if parts.netloc not in ("", "localhost"):
            raise DumpError(f"{source}: a file:// address on another machine ({parts.netloc}) cannot be read; "
                            "give a path on this one")
        return Path(unquote(parts.path))
    if "://" in source:
        raise DumpError(f"{source}: import-dump takes a file's path or its https:// (or file://) address; "
                        f"{scheme}:// is not one of them")
    return Path(source)


def _unreadable(path: Path, error: OSError) -> DumpError:
    why = "permission denied" if isinstance(error, PermissionError) else (error.strerror or str(error))
    return DumpError(f"cannot read {path}: {why}; fix its permissions (or give another copy) and run again")
