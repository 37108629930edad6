"""Run the local site with uvicorn: in a background thread for tests, or in the foreground for the CLI."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import Self

import uvicorn
from starlette.types import ASGIApp

from ...listening import listen
from ..board.editor import BoardEditor
from ..files.predraw import predraw
from .app import API_PREFIX, create_app
from .faults import FaultProfile
from .log import RequestLog, RequestRecord

__all__ = ["LoopbackServer", "SiteServer", "run_site", "RequestRecord"]


class LoopbackServer:
    """An ASGI app served by uvicorn from a daemon thread, for tests and benchmarks.

    `port=0` picks a free port; the real one is in `.port` / `.url` once started.
    """

    def __init__(self, app: ASGIApp, host: str = "127.0.0.1", port: int = 0) -> None:
        self.app = app
        self.host = host
        self.port = port
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def api_url(self) -> str:
        return self.url + API_PREFIX

    def start(self) -> Self:
        config = uvicorn.Config(self.app, host=self.host, port=self.port, log_level="warning", http="h11",
                                lifespan="off", timeout_graceful_shutdown=1)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, name="mirror-site", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the local site did not start on {self.host}:{self.port}")
            time.sleep(0.01)
        self.port = self._server.servers[0].sockets[0].getsockname()[1]
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


class SiteServer(LoopbackServer):
    """The local site on a loopback port, served from a daemon thread.

        with SiteServer(BoardEditor.generate(seed=1), faults="ratelimit") as site:
            httpx.get(site.api_url + "/search/images", params={"q": "safe"})
            site.requests      # every request seen, faulted ones included

    ``dumps_dir`` is the folder served under `/dumps/{name}` (see :mod:`mirror.localsite.files.dumps`).
    """

    def __init__(self, editor: BoardEditor, faults: str | FaultProfile = "", host: str = "127.0.0.1",
                 port: int = 0, dumps_dir: str | Path | None = None) -> None:
        self.editor = editor
        self._log = RequestLog()
        super().__init__(create_app(editor, faults, log=self._log, dumps_dir=dumps_dir), host, port)

    @property
    def requests(self) -> list[RequestRecord]:
        """A snapshot of the request log."""
        return self._log.snapshot()

    def clear_requests(self) -> None:
        self._log.clear()

    def set_faults(self, spec: str | FaultProfile) -> None:
        """Switch the fault profile (counters and rate-limit windows start afresh)."""
        self.app.state.faults.set(spec)


def run_site(seed: int = 1, images: int = 500, host: str = "127.0.0.1", port: int = 8808, faults: str = "",
             fixtures: str | Path | None = None, processing_delay: float = 0.5,
             dumps_dir: str | Path | None = None, pictures: bool = True) -> None:
    """Serve a generated (or fixture) board in the foreground until interrupted (`mirror site`),
    with the files in ``dumps_dir`` under `/dumps/{name}`: real pictures (drawn artwork, then
    shapes), or a few bytes each unless ``pictures``. The port is taken before the board is made."""
    sock = listen(host, port)
    if not fixtures:
        print(f"Generating a board of {images:,} images (seed {seed})...", flush=True)
        if pictures:
            predraw(seed, images)  # on 2 processes into the cache folder: the board then reads them
    editor = BoardEditor.for_site(seed, images, fixtures=fixtures, pictures=pictures)
    editor.processing_delay = processing_delay
    app = create_app(editor, faults, dumps_dir=dumps_dir)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", http="h11", lifespan="off")
    server = uvicorn.Server(config)

    async def announce() -> None:
        while not server.started:
            await asyncio.sleep(0.02)
        bound = server.servers[0].sockets[0].getsockname()[1]
        what = f"fixtures from {fixtures}" if fixtures else f"{images} images (seed {seed})"
        key = next(iter(editor.api_keys), None)
        print(f"Local Philomena site with {what} at http://{host}:{bound}", flush=True)
        print(f"  API:   http://{host}:{bound}{API_PREFIX}", flush=True)
        if key:
            print(f"  key:   {key}   Everything filter: {editor.everything_filter_id}", flush=True)
        if faults:
            print(f"  faults: {FaultProfile.parse(faults)}", flush=True)
        if dumps_dir:
            print(f"  dumps: http://{host}:{bound}/dumps/NAME from {dumps_dir}", flush=True)

    async def main() -> None:
        await asyncio.gather(server.serve(sockets=[sock]), announce())

    try:
        asyncio.run(main())
    finally:
        editor.close()
