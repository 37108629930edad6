"""Tiny, valid, deterministic media files for the local site, built without Pillow.

Every image of the generated board needs real bytes behind its representation URLs so that
downloads can be verified against `sha512_hash`. The files are a few hundred bytes each: the
record's `width`/`height` describe the board's pretend original, not these stand-ins. Each file
is varied per image id (colours, and a comment or metadata chunk carrying the id), so no two
images share a hash.
"""

from __future__ import annotations

import hashlib
import struct
import zlib

from ...philomena import MIME_TYPES

__all__ = ["make_file", "EXTENSIONS"]

EXTENSIONS = tuple(MIME_TYPES)


def _palette(key: str) -> bytes:
    """Six deterministic bytes (two RGB colours) derived from `key`."""
    return hashlib.sha256(key.encode()).digest()[:6]


def png(key: str, size: int = 8) -> bytes:
    """A `size`x`size` two-colour checkerboard PNG (8-bit RGB) with a tEXt chunk naming `key`."""
    c = _palette(key)
    rows = []
    for y in range(size):
        row = bytearray([0])  # filter type: none
        for x in range(size):
            row += c[0:3] if (x + y) % 2 == 0 else c[3:6]
        rows.append(bytes(row))
    raw = b"".join(rows)

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"tEXt", b"Comment\x00" + key.encode())
        + chunk(b"IDAT", zlib.compress(raw, 9))
        + chunk(b"IEND", b"")
    )


def jpeg(key: str) -> bytes:
    """An 8x8 flat grey baseline JPEG: one DC coefficient, every AC coefficient zero.

    Hand-encoded: both Huffman tables hold a single symbol (code `0`), which is all a flat block
    needs. A COM segment carries `key`.
    """
    level = _palette(key)[0]
    dc = level - 128  # quantised DC with q=8: F(0,0) = 8 * (level - 128)
    category = abs(dc).bit_length()
    bits_value = dc if dc >= 0 else dc + (1 << category) - 1

    def segment(marker: int, data: bytes) -> bytes:
        return struct.pack(">BBH", 0xFF, marker, len(data) + 2) + data

    dqt = bytes([0]) + bytes([8] * 64)
    sof = struct.pack(">BHHB", 8, 8, 8, 1) + bytes([1, 0x11, 0])
    dht_dc = bytes([0x00]) + bytes([1] + [0] * 15) + bytes([category])
    dht_ac = bytes([0x10]) + bytes([1] + [0] * 15) + bytes([0x00])
    sos = bytes([1, 1, 0x00, 0, 63, 0])
    bits = "0" + (format(bits_value, f"0{category}b") if category else "") + "0"
    bits += "1" * (-len(bits) % 8)
    scan = bytearray()
    for i in range(0, len(bits), 8):
        byte = int(bits[i : i + 8], 2)
        scan.append(byte)
        if byte == 0xFF:
            scan.append(0)
    return (
        b"\xff\xd8"
        + segment(0xFE, key.encode())
        + segment(0xDB, dqt)
        + segment(0xC0, sof)
        + segment(0xC4, dht_dc)
        + segment(0xC4, dht_ac)
        + segment(0xDA, sos)
        + bytes(scan)
        + b"\xff\xd9"
    )


def gif(key: str, frames: int = 1) -> bytes:
    """A 1x1 GIF89a with a comment extension; `frames` > 1 makes a looping animation."""
    c = _palette(key)
    out = bytearray(b"GIF89a" + struct.pack("<HH", 1, 1) + b"\x80\x00\x00" + c)
    comment = key.encode()[:255]
    out += b"\x21\xfe" + bytes([len(comment)]) + comment + b"\x00"
    if frames > 1:
        out += b"\x21\xff\x0bNETSCAPE2.0\x03\x01\x00\x00\x00"
    for i in range(frames):
        out += b"\x21\xf9\x04\x00" + struct.pack("<H", 10) + b"\x00\x00"
        out += b"\x2c\x00\x00\x00\x00\x01\x00\x01\x00\x00"
        out += b"\x02\x02" + (b"\x44\x01" if i % 2 == 0 else b"\x4c\x01") + b"\x00"
    out += b"\x3b"
    return bytes(out)


def svg(key: str) -> bytes:
    """A small SVG drawing whose colours and title depend on `key`."""
    c = _palette(key)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<svg xmlns="http://www.w3.org/2000/svg" width="64" height="64" viewBox="0 0 64 64">'
        f"<title>{key}</title>"
        f'<rect width="64" height="64" fill="#{c[:3].hex()}"/>'
        f'<circle cx="32" cy="32" r="20" fill="#{c[3:].hex()}"/></svg>\n'
    ).encode()


def _ebml(element_id: bytes, payload: bytes) -> bytes:
    """One EBML element with an 8-byte size field (simple, always valid)."""
    return element_id + (0x01 << 56 | len(payload)).to_bytes(8, "big") + payload


def webm(key: str) -> bytes:
    """A structurally valid WebM (EBML header, Info, one VP8 track, one cluster).

    The frame payload is a placeholder, so players may refuse to decode it; the mirror only ever
    stores and hashes these bytes.
    """
    header = _ebml(
        b"\x1a\x45\xdf\xa3",
        _ebml(b"\x42\x86", b"\x01")
        + _ebml(b"\x42\xf7", b"\x01")
        + _ebml(b"\x42\xf2", b"\x04")
        + _ebml(b"\x42\xf3", b"\x08")
        + _ebml(b"\x42\x82", b"webm")
        + _ebml(b"\x42\x87", b"\x02")
        + _ebml(b"\x42\x85", b"\x02"),
    )
    info = _ebml(
        b"\x15\x49\xa9\x66",
        _ebml(b"\x2a\xd7\xb1", (1_000_000).to_bytes(3, "big"))
        + _ebml(b"\x4d\x80", b"booru-mirror site")
        + _ebml(b"\x57\x41", key.encode())
        + _ebml(b"\x44\x89", struct.pack(">f", 1000.0)),
    )
    video = _ebml(b"\xb0", b"\x08") + _ebml(b"\xba", b"\x08")
    track = _ebml(
        b"\xae",
        _ebml(b"\xd7", b"\x01") + _ebml(b"\x83", b"\x01") + _ebml(b"\x86", b"V_VP8") + _ebml(b"\xe0", video),
    )
    tracks = _ebml(b"\x16\x54\xae\x6b", track)
    frame = b"\x81\x00\x00\x80" + hashlib.sha256(key.encode()).digest()
    cluster = _ebml(b"\x1f\x43\xb6\x75", _ebml(b"\xe7", b"\x00") + _ebml(b"\xa3", frame))
    return header + _ebml(b"\x18\x53\x80\x67", info + tracks + cluster)


def mp4(key: str) -> bytes:
    """An ISO BMFF `ftyp` box plus a `free` box carrying `key` (what the GIF `mp4` link serves)."""
    ftyp = b"ftyp" + b"isom" + struct.pack(">I", 512) + b"isomiso2mp41"
    free = b"free" + key.encode()
    return struct.pack(">I", len(ftyp) + 4) + ftyp + struct.pack(">I", len(free) + 4) + free


def make_file(key: str, ext: str, *, animated: bool = False) -> bytes:
    """Bytes of a file of type `ext` for `key` (for example `"image-42-full"`)."""
    if ext == "png":
        return png(key)
    if ext == "jpg":
        return jpeg(key)
    if ext == "gif":
        return gif(key, frames=3 if animated else 1)
    if ext == "svg":
        return svg(key)
    if ext == "webm":
        return webm(key)
    if ext == "mp4":
        return mp4(key)
    raise ValueError(f"unsupported extension {ext!r}")
