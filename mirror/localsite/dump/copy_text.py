"""COPY text for a million rows at a time, made with numpy instead of a Python loop per row.

The whole board's dump is some 160 million rows; formatting them one by one in Python would take
most of the 20 minutes it is allowed. Here each column of a batch of rows is rendered at once as
a byte matrix, one row per line, narrower values padded with zero bytes (PostgreSQL text never
holds a NUL, so a zero is never a real byte); the line is the matrices side by side, and the
text is the matrix with its zero bytes dropped, which keeps every row's bytes in order. Long
texts (descriptions, comment bodies) are too uneven in length for a matrix: they come from a
:class:`Pool` of texts escaped once, and such rows are joined from their parts' bytes.

Everything written here is already COPY text: numbers, timestamps (``YYYY-MM-DD HH:MM:SS``, UTC
as ``timestamp without time zone``), ``t``/``f``, ``\\N`` for NULL; pool texts and short strings
are escaped when the pool is made.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np

__all__ = ["Pool", "strings", "ints", "signed_ints", "fixed_digits", "decimals", "civil", "timestamps", "hex_digests",
           "constant", "bools", "with_nulls", "lines", "escape"]

_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})
_POWERS = 10 ** np.arange(1, 19, dtype=np.int64)
_HEX = np.frombuffer(b"".join(f"{b:02x}".encode() for b in range(256)), np.uint8).reshape(256, 2)


def escape(text: str) -> str:
    """``text`` as a COPY text field (backslash, tab, newline and carriage return escaped)."""
    return text.translate(_ESCAPES)


def strings(values: Sequence[str | None]) -> np.ndarray:
    """Short strings (escaped here; None is NULL) as a matrix, one row each: pick rows of it with
    ``matrix[indexes]`` for a column drawn from a few values (formats, categories, names)."""
    encoded = [b"\\N" if v is None else escape(v).encode() for v in values]
    width = max(map(len, encoded), default=1) or 1
    out = np.zeros((len(encoded), width), np.uint8)
    for row, data in enumerate(encoded):
        out[row, :len(data)] = np.frombuffer(data, np.uint8)
    return out


def fixed_digits(values: np.ndarray, width: int) -> np.ndarray:
    """Non-negative integers as exactly ``width`` decimal digits, zero-filled (``07``)."""
    rest = np.asarray(values, np.int64).copy()
    out = np.empty((len(rest), width), np.uint8)
    for place in range(width - 1, -1, -1):
        rest, digit = np.divmod(rest, 10)
        out[:, place] = digit
    out += ord("0")
    return out


def ints(values: np.ndarray) -> np.ndarray:
    """Non-negative integers in decimal, without leading zeros."""
    values = np.asarray(values, np.int64)
    if not len(values):
        return np.zeros((0, 1), np.uint8)
    digits = np.searchsorted(_POWERS, values, side="right") + 1
    width = int(digits.max())
    out = fixed_digits(values, width)
    out[np.arange(width) < (width - digits)[:, None]] = 0
    return out


def signed_ints(values: np.ndarray) -> np.ndarray:
    """Integers in decimal, a minus sign before the negative ones."""
    values = np.asarray(values, np.int64)
    sign = np.where(values < 0, ord("-"), 0).astype(np.uint8)[:, None]
    return np.hstack([sign, ints(np.abs(values))])


def decimals(values: np.ndarray, places: int = 6) -> np.ndarray:
    """Non-negative numbers with up to ``places`` decimals, trailing zeros dropped (``118.79``, ``2``)."""
    scaled = np.rint(np.asarray(values, np.float64) * 10 ** places).astype(np.int64)
    whole, fraction = np.divmod(scaled, 10 ** places)
    digits = fixed_digits(fraction, places)
    zeros = np.flip(np.cumprod(np.flip(digits == ord("0"), axis=1), axis=1), axis=1).astype(bool)
    digits[zeros] = 0
    point = np.where(zeros[:, 0], 0, ord(".")).astype(np.uint8)[:, None]
    return np.hstack([ints(whole), point, digits])


def civil(seconds: np.ndarray) -> tuple[np.ndarray, ...]:
    """Seconds since 1970 (UTC) as year, month, day, hour, minute, second: the civil date by
    Howard Hinnant's ``civil_from_days``, vectorised."""
    days, second = np.divmod(np.asarray(seconds, np.int64), 86400)
    z = days + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = np.where(mp < 10, mp + 3, mp - 9)
    hour, rest = np.divmod(second, 3600)
    return (yoe + era * 400 + (month <= 2), month, day, hour, *np.divmod(rest, 60))


def timestamps(seconds: np.ndarray) -> np.ndarray:
    """Seconds since 1970 (UTC) as ``YYYY-MM-DD HH:MM:SS``."""
    year, month, day, hour, minute, second = civil(seconds)
    n = len(year)
    dash, colon = constant(b"-", n), constant(b":", n)
    return np.hstack([fixed_digits(year, 4), dash, fixed_digits(month, 2), dash, fixed_digits(day, 2),
                      constant(b" ", n), fixed_digits(hour, 2), colon, fixed_digits(minute, 2), colon,
                      fixed_digits(second, 2)])


def hex_digests(raw: np.ndarray) -> np.ndarray:
    """Rows of bytes (``(n, k)`` uint8) as lowercase hex, ``2k`` characters each."""
    return _HEX[raw].reshape(len(raw), -1)


def constant(text: bytes, n: int) -> np.ndarray:
    return np.broadcast_to(np.frombuffer(text, np.uint8), (n, len(text)))


def bools(values: np.ndarray) -> np.ndarray:
    return np.where(np.asarray(values, bool), ord("t"), ord("f")).astype(np.uint8)[:, None]


def with_nulls(matrix: np.ndarray, null: np.ndarray) -> np.ndarray:
    """``matrix`` with the rows where ``null`` is true written as ``\\N``."""
    out = np.zeros((len(matrix), max(2, matrix.shape[1])), np.uint8)
    out[:, out.shape[1] - matrix.shape[1]:] = matrix
    out[null] = 0
    out[null, -2:] = np.frombuffer(b"\\N", np.uint8)
    return out


@dataclass(frozen=True)
class Pool:
    """Texts escaped once, for columns that pick one per row."""

    texts: tuple[bytes, ...]

    @classmethod
    def of(cls, texts: Sequence[str | None]) -> Pool:
        return cls(tuple(b"\\N" if t is None else escape(t).encode() for t in texts))

    def __len__(self) -> int:
        return len(self.texts)

    def pick(self, indexes: np.ndarray) -> Pool.Picked:
        return Pool.Picked(self, np.asarray(indexes, np.int64))

    @dataclass(frozen=True)
    class Picked:
        pool: Pool
        indexes: np.ndarray


def lines(pieces: Sequence[np.ndarray | Pool.Picked]) -> bytes:
    """The COPY text of a batch of rows: each row its pieces in order (tabs and the newline are
    pieces too, made with :func:`constant`), matrices with their zero bytes dropped.

    Matrices side by side are packed at once; a row with pool texts is joined from its parts'
    bytes (a copy at memory speed, some 100 ns a part: gathering uneven texts byte by byte with
    numpy was six times slower)."""
    groups: list[list[np.ndarray] | Pool.Picked] = []
    for piece in pieces:
        if isinstance(piece, np.ndarray) and groups and isinstance(groups[-1], list):
            groups[-1].append(piece)
        else:
            groups.append([piece] if isinstance(piece, np.ndarray) else piece)
    if len(groups) == 1 and isinstance(groups[0], list):
        return _packed(groups[0])[0].tobytes()
    columns = [_row_bytes(*_packed(g)) if isinstance(g, list) else list(map(g.pool.texts.__getitem__,
                                                                             g.indexes.tolist()))
               for g in groups]
    return b"".join(chain.from_iterable(zip(*columns)))


def _packed(matrices: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Matrices side by side, as their bytes without padding and each row's length."""
    matrix = np.hstack(matrices) if len(matrices) > 1 else np.ascontiguousarray(matrices[0])
    kept = matrix != 0
    return matrix[kept], kept.sum(axis=1, dtype=np.int64)


def _row_bytes(data: np.ndarray, length: np.ndarray) -> list[bytes]:
    buffer, ends = data.tobytes(), np.cumsum(length)
    return [buffer[start:end] for start, end in zip((ends - length).tolist(), ends.tolist())]
