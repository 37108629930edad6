"""A generated board's pictures drawn on several processes into the cache folder (:mod:`.drawn`),
before the board itself is generated on one: the demo's first run on a fresh clone.

Drawing is most of what a first demo costs, and generating a board draws one picture after the
other. A board's records (sizes, formats) do not depend on its pictures, so a board of stand-ins
(quick to make) says what will be drawn; the workers draw each image's full file, its thumbnail
and its intensities, and the board generated next reads them all from the cache.
"""

from __future__ import annotations

from typing import Any

from ...philomena import thumb_ext
from ...workers import worker_pool
from .drawn import cache_folder
from .img import FileSource, file_key, finish_image_file

__all__ = ["predraw"]


def predraw(seed: int, images: int, workers: int = 2) -> int:
    """Draw the pictures of the board ``BoardEditor.generate(seed, images, with_pictures=True)``
    makes into the cache folder, on ``workers`` processes; how many images were drawn (none
    when the cache is off)."""
    if cache_folder() is None:
        return 0
    from ..board.editor import BoardEditor  # the board imports this package's files

    stand_ins = BoardEditor.generate(seed=seed, images=images)
    try:
        jobs = [(file_key(seed, image_id), dict(record)) for image_id, record in sorted(stand_ins.images.items())]
    finally:
        stand_ins.close()
    with worker_pool(workers) as pool:
        for _ in pool.map(_draw, jobs, chunksize=4):
            pass
    return len(jobs)


def _draw(job: tuple[str, dict[str, Any]]) -> None:
    key, image = job
    source = FileSource(key, pictures=True)
    finish_image_file(image, source)  # the full file (and upload), and the intensities read from it
    ext = thumb_ext(image["format"])
    source.data(image, f"thumb.{ext}", ext)
