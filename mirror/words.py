"""How counts, sizes and durations are said in the lines the mirror prints: "1 request", "5.1 GB", "14 min"."""

from __future__ import annotations


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
