"""The archive's own image files under `/img`, at the paths the served records name.

Served records keep the site's file paths and point them at this server (see
:func:`mirror.serve.board.rebase`), so a client asks for `/img/2024/1/2/123/thumb.png` or
`/img/view/2024/1/2/123.png` exactly as it would ask the site. The file is the one the mirror
fetched from that same path (`downloads.url`); the slugged and download forms of the view URL
(`123__safe_pony.png`, `/img/download/...`) name the same file as the short view URL. A file the
mirror does not keep answers 404, as the site answers for a file it does not have.

Local files go out as :class:`~starlette.responses.FileResponse` (Range, ETag, Last-Modified);
files in object storage are read through the storage and sent whole.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import BaseRoute, Route

from ..download.storage import Storage
from ..philomena import MIME_TYPES, parse_img_path
from ..store.records import MAX_ID
from .board import Board

__all__ = ["kept_file_routes", "kept_path"]



def _canonical(path: str) -> tuple[int, str] | None:
    """(image id, the path the mirror would have fetched the file from), or None if not a file path."""
    found = parse_img_path(path.removeprefix("/img/")) if path.startswith("/img/") else None
    if found is None or found.image_id > MAX_ID:  # an id no record is kept under
        return None
    return found.image_id, "/img/" + found.canonical


def kept_path(board: Board, path: str) -> str | None:
    """The kept file (relative to the files root) for a request path, or None."""
    found = _canonical(path)
    if found is None:
        return None
    image_id, wanted = found
    hidden = board.one("SELECT hidden_from_users FROM images WHERE id = ?", [image_id])
    if hidden is None or hidden[0]:
        return None  # the site serves no files of a hidden image
    for row in board.all("SELECT url, path FROM downloads WHERE image_id = ? AND status = 'done'", [image_id]):
        url = _canonical(urlsplit(row["url"] or "").path)
        if url is not None and url[1] == wanted:
            return row["path"]
    return None


async def serve_kept_file(request: Request) -> Response:
    board: Board = request.app.state.board
    storage: Storage = request.app.state.storage
    path = await run_in_threadpool(kept_path, board, "/img/" + request.path_params["path"])
    if path is None:
        return Response(b"Not Found", status_code=404, media_type="text/plain")
    media_type = MIME_TYPES.get(path.rpartition(".")[2], "application/octet-stream")
    headers = {"cache-control": "public, max-age=2147483647"}
    try:
        if storage.local:
            return FileResponse(inside_root(storage.root, path), media_type=media_type, headers=headers)
        data = await run_in_threadpool(storage.fs.cat_file, f"{storage.root}/{path}")
    except FileNotFoundError:  # recorded as kept, but gone since: `mirror verify` will say so
        return Response(b"Not Found", status_code=404, media_type="text/plain")
    return Response(data, media_type=media_type, headers=headers)


def inside_root(root: str, path: str) -> str:
    """The real file ``path`` names under ``root``, only if it is a regular file inside the root.

    The files folder is on a disk other programs write to: a symbolic link put there (to
    ``/etc/shadow``, say) must not make the server hand out whatever it points at. Raises
    FileNotFoundError otherwise, which answers 404 as for a file that is not kept.
    """
    real_root = os.path.realpath(root)
    real = os.path.realpath(os.path.join(root, path))
    if os.path.commonpath([real_root, real]) != real_root or not os.path.isfile(real):
        raise FileNotFoundError(path)
    return real


def kept_file_routes() -> list[BaseRoute]:
    return [Route("/img/{path:path}", serve_kept_file, methods=["GET", "HEAD"])]
