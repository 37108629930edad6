"""How counts, sizes and durations are said in the lines the mirror prints: "1 request", "5.1 GB", "14 min";
and how text it did not write (a dump's names, a library's error) is made fit to print."""

from __future__ import annotations

import re

# A terminal's escape sequence (CSI: colours, cursor moves), as delta-rs colours its errors' arrows.
_ESCAPE_SEQUENCE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``count`` and ``noun``, the noun in the plural (``noun + "s"`` unless given) but for exactly one."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"


def human_bytes(n: float) -> str:
    """A size in decimal units, as the site lists its dumps: ``512 B``, ``1.2 MB``, ``5.1 GB``."""
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    raise AssertionError("unreachable")  # pragma: no cover


def human_duration(seconds: float) -> str:
    """A duration to the unit that matters: ``4.2 s``, ``14 min``, ``2 h 05 min``."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes = round(seconds / 60)
    return f"{minutes} min" if minutes < 60 else f"{minutes // 60} h {minutes % 60:02d} min"


def printable(text: str) -> str:
    """``text`` with its control and other unprintable characters written as escapes (``\\x1b``,
    ``\\u202e``): a table or column name in a dump must not drive the user's terminal."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


def one_printable_line(text: str) -> str:
    """A library's message as one line of printable text: its colour codes dropped (they are
    decoration), its line breaks and runs of spaces made one space, anything else unprintable escaped."""
    return printable(" ".join(_ESCAPE_SEQUENCE.sub("", text).split()))
