"""What the upload, intensities and reverse-search tests share: posting to the local site (the
``upload_site`` fixture of tests/conftest.py), its key, pictures to post, and a counter of how many
things run at once."""

from __future__ import annotations

import threading

import httpx

from mirror.localsite.files.pictures import picture

BLANK = "can't be blank"


def key_of(site) -> str:
    return next(iter(site.editor.api_keys))


def png(seed: str, width: int = 120, height: int = 90) -> bytes:
    return picture(seed, "png", width, height, seed)


def post(site, *, key=True, file: bytes | None = None, name="a.png", **fields) -> httpx.Response:
    data = {f"image[{k}]": v for k, v in fields.items()}
    if key:
        data["key"] = key_of(site)
    files = {"image[image]": (name, file, "application/octet-stream")} if file is not None else None
    return httpx.post(site.api_url + "/images", data=data, files=files)


class Overlap:
    """Counts how many threads (or tasks) are inside ``with overlap:`` at once; ``most`` is the peak."""

    def __init__(self) -> None:
        self.inside = self.most = 0
        self._lock = threading.Lock()

    def __enter__(self) -> None:
        with self._lock:
            self.inside += 1
            self.most = max(self.most, self.inside)

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self.inside -= 1


def at_once(count: int, work) -> None:
    """Run ``work`` in ``count`` threads started together, and wait for them all."""
    threads = [threading.Thread(target=work) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
