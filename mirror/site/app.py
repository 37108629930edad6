"""The local site: a generated board, published through the store and served by the same API as
``mirror serve``, inside the test-only layers (faults, the request log, the control API).

The board's world lives in a :class:`Dataset`, where tests change it; each change marks the
published database stale, and the next request publishes it afresh (:mod:`.publish`) before it
is answered, so several changes in a row cost one publication.
"""

from __future__ import annotations

import sqlite3
import tempfile
import threading
from pathlib import Path

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.types import Receive, Scope, Send

from .api import api_routes
from .board import Board
from .control import control_routes
from .dataset import Dataset
from .faults import RAW_SEND_KEY, FaultMiddleware, FaultProfile, FaultState
from .files import file_routes
from .http import API_PREFIX, ProxyMiddleware
from .log import RequestLog, RequestLogMiddleware
from .publish import publish
from .write import reverse_routes, upload_routes

__all__ = ["create_app", "API_PREFIX", "PublishedBoard"]


class PublishedBoard(Board):
    """A :class:`Board` kept in step with a dataset: republished, to a new file, after each change."""

    def __init__(self, dataset: Dataset, folder: str | Path | None = None) -> None:
        self.dataset = dataset
        self._folder = Path(folder or tempfile.mkdtemp(prefix="mirror-site-"))
        self._publishing = threading.Lock()
        self._published = -1
        self.path = self._publish()
        self.as_recorded = dataset.recorded
        super().__init__(self.path)

    def _publish(self) -> Path:
        version = self.dataset.version
        path = self._folder / f"board-{version}.db"
        if not path.exists():
            publish(self.dataset, path)
        self._published = version
        return path

    def connection(self) -> sqlite3.Connection:
        if self.dataset.version != self._published:
            with self._publishing:
                if self.dataset.version != self._published:
                    old, self.path = self.path, self._publish()
                    _remove(old)
        return super().connection()


def _remove(path: Path) -> None:
    """Delete a superseded board (readers still holding it keep reading; the kernel frees it after)."""
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


class SiteApp(Starlette):
    """Starlette, plus the server's own `send` in the scope so faults can drop connections."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            scope[RAW_SEND_KEY] = send
        await super().__call__(scope, receive, send)


def create_app(dataset: Dataset, faults: FaultProfile | str | None = None,
               log: RequestLog | None = None) -> Starlette:
    """The whole local site: API, image files and the test control API, behind the fault layer.

    `app.state.faults` (a `FaultState`) can switch the fault profile while the app runs, and
    `app.state.request_log` records every request, faulted ones included.
    """
    fault_state = FaultState(faults if isinstance(faults, FaultProfile) else FaultProfile.parse(faults or ""))
    log = log if log is not None else RequestLog()
    app = SiteApp(
        # The POST routes come before the GET API, whose catch-all would answer them 405.
        routes=control_routes() + file_routes() + upload_routes() + reverse_routes() + api_routes(),
        middleware=[
            Middleware(RequestLogMiddleware, log=log),
            Middleware(FaultMiddleware, state=fault_state),
            Middleware(ProxyMiddleware),
        ],
    )
    app.state.dataset = dataset
    app.state.board = PublishedBoard(dataset)
    app.state.faults = fault_state
    app.state.request_log = log
    return app
