"""Database dump files under `/dumps/{name}`, as the site's file host serves its nightly dumps.

Tests of ``mirror import-dump URL`` need a host for a file of any size that honours what the
fetcher relies on: `Range` (206 with `Content-Range`, 416 past the end), a strong `ETag` and a
`Last-Modified`, and `If-Range` (a validator that no longer matches gets the whole file, 200).
Starlette's `FileResponse` does all of that from the file itself (its ETag changes with the
file's size and mtime), streaming, so replacing a file between two requests is a file changed on
the server. The site's fault layer covers `/dumps` too: `drops` cuts a body short, `busy`
answers 503 with Retry-After.

Files come from the folder in `app.state.dumps_dir` (``mirror site --dumps-dir``); without one,
or for a name that is not a plain file there, the answer is 404.
"""

from __future__ import annotations

from pathlib import Path

from starlette.requests import Request
from starlette.responses import FileResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Route

__all__ = ["dump_routes"]


async def serve_dump(request: Request) -> Response:
    path = dump_file(getattr(request.app.state, "dumps_dir", None), request.path_params["name"])
    if path is None:
        return PlainTextResponse("Not Found", status_code=404)
    return FileResponse(path, media_type="application/octet-stream")


def dump_file(folder: str | Path | None, name: str) -> Path | None:
    """The file ``name`` in ``folder``, or None when there is no such plain file (or no folder).
    The route matches one path segment, and a hidden name (``..`` among them) is never served."""
    if folder is None or not name or name.startswith("."):
        return None
    path = Path(folder, name)
    return path if path.is_file() else None


def dump_routes() -> list[BaseRoute]:
    return [Route("/dumps/{name}", serve_dump, methods=["GET"])]
