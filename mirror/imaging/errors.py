"""The one error of :mod:`mirror.imaging`."""

from __future__ import annotations

__all__ = ["MediaError"]


class MediaError(Exception):
    """The file cannot be read as the media type it claims to be."""
