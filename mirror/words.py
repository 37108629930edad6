"""How counts are said in the lines the mirror prints: "1 request", "3 requests"."""

from __future__ import annotations


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``count`` and ``noun``, the noun in the plural (``noun + "s"`` unless given) but for exactly one."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"
