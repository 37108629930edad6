"""The one error of :mod:`mirror.imaging`."""

from __future__ import annotations

__all__ = ["MediaError", "TooLarge"]


class MediaError(Exception):
    """The file cannot be read as the media type it claims to be."""


class TooLarge(MediaError):
    """The picture is larger than this process decodes (:mod:`.bounds`); refused unread."""
