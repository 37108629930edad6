"""Pictures drawn once, kept on disk: the demo and `mirror site` draw the same files every run.

Drawing a board's pictures (a VP8 video, a 3000x2000 PNG) took most of the demo's first two
minutes, and every run drew them again, at generation (sizes, hashes, intensities) and again when
the files were downloaded. A drawn file is the same bytes for the same arguments, so it is kept in
a cache folder, named by a hash of what drew it (the arguments, :data:`VERSION` and the versions
of Pillow and PyAV, whose encoders make the bytes): ``$MIRROR_PICTURE_CACHE``, else
``$XDG_CACHE_HOME/booru-mirror/pictures``, else ``~/.cache/booru-mirror/pictures``;
``MIRROR_PICTURE_CACHE=off`` keeps nothing. A fresh clone has no cache, so the first run draws.

The cache is only a shortcut: a folder that cannot be written, or a file that cannot be read,
means drawing again, never an error. Files are written under a temporary name and renamed, so
two processes drawing the same picture (parallel test workers) each keep a whole file.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import av
import PIL

__all__ = ["VERSION", "cache_folder", "drawn"]

# Raise when what a picture looks like changes for the same arguments (the drawing code, the art).
VERSION = 2  # 2: a painting in a PNG has a palette


def cache_folder() -> Path | None:
    """Where drawn pictures are kept, or None when ``MIRROR_PICTURE_CACHE=off``."""
    chosen = os.environ.get("MIRROR_PICTURE_CACHE", "")
    if chosen.lower() == "off":
        return None
    if chosen:
        return Path(chosen)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "booru-mirror" / "pictures"


def drawn(draw: Callable[[], bytes], *arguments: object) -> bytes:
    """The bytes ``draw()`` makes for ``arguments``: read from the cache when kept there, else
    drawn and kept."""
    folder = cache_folder()
    if folder is None:
        return draw()
    name = hashlib.sha256(repr((VERSION, PIL.__version__, av.__version__, arguments)).encode()).hexdigest()
    path = folder / name[:2] / name
    try:
        return path.read_bytes()
    except OSError:
        pass
    data = draw()
    _keep(path, data)
    return data


def _keep(path: Path, data: bytes) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".drawing-")
    except OSError:
        return  # a cache that cannot be written only means drawing again next time
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(temporary, path)
    except OSError:
        Path(temporary).unlink(missing_ok=True)
