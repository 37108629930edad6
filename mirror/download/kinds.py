"""Whether a file is whole and of the format its name says.

An original is checked against the record's ``sha512_hash``; nothing states the hash of a
thumbnail, an SVG's PNG renderings or a GIF's webm and mp4. Those are checked here instead: a
file host that answers with an HTML error page and status 200, or a body cut short while its
``Content-Length`` agrees, gives bytes that no hash catches but that do not start (or end) the
way the format must. Every format's first bytes are checked, and its last bytes where the
format fixes them (a PNG's IEND chunk, a GIF's trailer, a JPEG's end-of-image marker). A PNG,
whose every chunk carries a CRC, is also checked whole by Pillow, so a byte changed in transit
is caught too. WebM and MP4 have no fixed last bytes, but their top-level elements (boxes) state
their sizes: those must add up to the file's size exactly.
"""

from __future__ import annotations

import os
import zlib
from typing import BinaryIO

from PIL import Image, UnidentifiedImageError

# Bytes read from each end of a file: enough for every signature below and an XML prologue.
HEAD, TAIL = 512, 32

_PNG = b"\x89PNG\r\n\x1a\n"
_PNG_END = b"IEND\xaeB`\x82"
_EBML = b"\x1a\x45\xdf\xa3"
_BOM = b"\xef\xbb\xbf"
NAMES = {"png": "a PNG", "jpg": "a JPEG", "gif": "a GIF", "svg": "an SVG", "webm": "a WebM", "mp4": "an MP4"}


def problem(f: BinaryIO, ext: str) -> str | None:
    """Why the seekable binary file ``f`` is not a whole ``ext`` file, or None."""
    name = NAMES.get(ext)
    if name is None:
        return None
    head, tail = _ends(f)
    if not head:
        return "empty"
    if _looks_like_html(head):
        return f"an HTML page, not {name} file"
    if not _starts_right(head, ext):
        return f"not {name} file (it starts with {head[:16]!r})"
    if not _ends_right(tail, ext):
        return f"{name} file cut short (it does not end as {name} file must)"
    if ext == "png":
        f.seek(0)
        return _png_problem(f)
    if ext in ("webm", "mp4"):
        size = f.seek(0, os.SEEK_END)
        stated = _ebml_size(f) if ext == "webm" else _boxes_size(f, size)
        if stated != size:
            return f"{name} file whose parts add up to {stated} bytes, not its {size} (cut short?)"
    return None


def file_problem(path: str | os.PathLike[str], ext: str) -> str | None:
    """:func:`problem` for a local file."""
    with open(path, "rb") as f:
        return problem(f, ext)


def _ends(f: BinaryIO) -> tuple[bytes, bytes]:
    """The first :data:`HEAD` and last :data:`TAIL` bytes of ``f``."""
    head = f.read(HEAD)
    if len(head) < HEAD:
        return head, head[-TAIL:]
    f.seek(-TAIL, os.SEEK_END)
    return head, f.read(TAIL)


def _vint(f: BinaryIO) -> tuple[int, int] | None:
    """(value, length in bytes) of the EBML variable-length integer at the current position, or
    None at the end of the file or on a byte no such integer starts with."""
    first = f.read(1)
    if not first or first[0] == 0:
        return None
    length = 9 - first[0].bit_length()
    value = first[0] & (0xFF >> length)
    for byte in f.read(length - 1):
        value = value << 8 | byte
    return value, length


def _ebml_size(f: BinaryIO) -> int | None:
    """Where the EBML header and the Segment after it say the file ends (a Segment of unknown
    size, as live recordings write, is taken as running to the end)."""
    end = 0
    for _ in range(2):  # the EBML header element, then the Segment
        f.seek(end)
        if _vint(f) is None:  # the element's id
            return end
        size = _vint(f)
        if size is None:
            return None
        value, length = size
        if value == (1 << 7 * length) - 1:
            return f.seek(0, os.SEEK_END)
        end = f.tell() + value
    return end


def _boxes_size(f: BinaryIO, size: int) -> int:
    """Where the MP4's top-level boxes say the file ends."""
    position = 0
    while position < size:
        f.seek(position)
        header = f.read(8)
        if len(header) < 8:
            return position + len(header) + 1  # a box header cut short: never the file's size
        length = int.from_bytes(header[:4], "big")
        if length == 1:
            length = int.from_bytes(f.read(8), "big")
        elif length == 0:
            return size  # the last box runs to the end
        if length < 8:
            return -1
        position += length
    return position


def _png_problem(f: BinaryIO) -> str | None:
    """Pillow's check of every chunk's CRC, up to IEND."""
    try:
        with Image.open(f, formats=["PNG"]) as image:
            image.verify()
    except (OSError, SyntaxError, UnidentifiedImageError, zlib.error) as e:
        return f"a damaged PNG file ({e})"
    return None


def _looks_like_html(head: bytes) -> bool:
    text = head.lstrip(_BOM).lstrip().lower()
    return text.startswith((b"<!doctype html", b"<html", b"<head", b"<body"))


def _starts_right(head: bytes, ext: str) -> bool:
    if ext == "png":
        return head.startswith(_PNG) and head[12:16] == b"IHDR"
    if ext == "jpg":
        return head.startswith(b"\xff\xd8\xff")
    if ext == "gif":
        return head.startswith((b"GIF87a", b"GIF89a"))
    if ext == "webm":
        return head.startswith(_EBML)
    if ext == "mp4":
        return head[4:8] == b"ftyp"
    # SVG: XML text; the <svg> element may follow a prologue, comments or a doctype.
    text = head.lstrip(_BOM).lstrip()
    return text.startswith(b"<") and (b"<svg" in head or text.startswith((b"<?xml", b"<!--", b"<!DOCTYPE svg")))


def _ends_right(tail: bytes, ext: str) -> bool:
    if ext == "png":
        return tail.endswith(_PNG_END)
    if ext == "jpg":
        return b"\xff\xd9" in tail  # some encoders pad after the end-of-image marker
    if ext == "gif":
        return tail.endswith(b"\x3b")
    if ext == "svg":
        return tail.rstrip().endswith(b">")
    return True  # WebM and MP4 have no fixed last bytes
