"""What stands at a path the user named for a small file the mirror reads back and replaces.

Such a path may name something that is not a file: a FIFO (whose read waits for a writer that
never comes), ``/dev/zero`` through a link (whose read never ends), a folder. Those are told apart
by ``stat`` alone, which never waits, and refused before anything is opened.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

__all__ = ["NotASmallFile", "not_a_file", "read_small_file"]

_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


class NotASmallFile(OSError):
    """The path names something that is not a small regular file; the message says what."""


def not_a_file(path: str | Path) -> str | None:
    """What ``path`` (its links followed) is when it exists and is not a regular file, in words
    ("a FIFO"); None for a regular file or nothing at all."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    return _kind(mode)


def _kind(mode: int) -> str | None:
    if stat.S_ISREG(mode):
        return None
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def read_small_file(path: str | Path, most: int) -> str | None:
    """The text of the regular file at ``path``, None when there is none. :class:`NotASmallFile`,
    its message saying why, when ``path`` is something else or holds more than ``most`` bytes: the
    file is opened without waiting (a FIFO made there since it was checked) and never read past
    ``most``. Other OSErrors (no permission to read) are the caller's."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        kind = _kind(os.fstat(fd).st_mode)
        if kind is not None:
            raise NotASmallFile(f"it is {kind}, not a regular file")
        data = os.read(fd, most + 1)
    finally:
        os.close(fd)
    if len(data) > most:
        raise NotASmallFile(f"it holds more than {most // 2**20} MB, far more than such a file ever does")
    return data.decode("utf-8", errors="replace")
