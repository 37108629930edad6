"""How large a picture this process will decode, and how many at once.

A picture the site accepts can take over a gigabyte decoded (a 500 KiB PNG of 16000x11000
pixels does), so every decode is checked first against what the file's header says: the site's
own pixel bound (:func:`.analyze.too_large_to_process`) and, for a thumbnail, the box the site
scales it into (a file host that serves a 108-megapixel PNG as a 250x250 thumbnail is refused
before a byte of it is decoded). Pictures are then decoded one at a time in a process, and a
large one's memory handed back to the system once read.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from .analyze import Analysis, too_large_to_process
from .errors import TooLarge

__all__ = ["check_size", "decoding", "release_memory"]

_ONE_AT_A_TIME = threading.Lock()
# Pictures of at least this many pixels give their memory back to the system once read.
_LARGE = 4_000_000


def check_size(analysis: Analysis, box: tuple[int, int] | None = None) -> None:
    """Raise :class:`.errors.TooLarge` when the picture is past the site's bound, or larger than
    ``box`` (the representation's, for a thumbnail: the site scales into it, never past it)."""
    width, height = analysis.width, analysis.height
    if too_large_to_process(width, height):
        raise TooLarge(f"the picture is {width}x{height} pixels: "
                         "its dimensions are too large to process (the site refuses it too)")
    if box is not None and (width > box[0] or height > box[1]):
        raise TooLarge(f"the picture is {width}x{height} pixels, larger than its {box[0]}x{box[1]} box "
                         "(the site never makes such a file); not decoded")


@contextmanager
def decoding(analysis: Analysis) -> Iterator[None]:
    """Hold the process's one decoding turn while a large picture is read, and give its memory
    back afterwards. Small pictures (a few megabytes decoded) take no turn: they never wait
    behind a large one."""
    if analysis.width * analysis.height < _LARGE:
        yield
        return
    with _ONE_AT_A_TIME:
        try:
            yield
        finally:
            release_memory()


def _glibc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.malloc_trim  # noqa: B018 (glibc only)
    except (OSError, AttributeError):
        return None
    return libc


_LIBC = _glibc()


def release_memory() -> None:
    """Hand the memory a large picture was decoded into back to the system.

    Freed, it stays with the C allocator (a server that read one 100-megapixel picture kept
    over 100 MB, and several at once kept gigabytes); glibc's ``malloc_trim`` returns it.
    Elsewhere this does nothing.
    """
    if _LIBC is not None:
        _LIBC.malloc_trim(0)
