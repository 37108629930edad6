"""The local site: a board database served by the same API as ``mirror serve``, inside the
test-only layers (faults, the request log, the control API).

The API reads the board through read-only connections while :class:`BoardEditor` changes it in
place (WAL: an edit is served from the moment it commits).
"""

from __future__ import annotations

from pathlib import Path

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.types import Receive, Scope, Send

from ...serve.api import api_routes
from ...serve.http import API_PREFIX, ProxyMiddleware
from ...serve.reverse import reverse_routes
from ..board.accounts import GeneratedBoard
from ..board.editor import BoardEditor
from ..files.dumps import dump_routes
from ..files.img import file_routes
from .control import control_routes
from .faults import RAW_SEND_KEY, FaultMiddleware, FaultProfile, FaultState
from .fetch import fetch_loopback
from .firehose import Firehose, firehose_routes
from .log import RequestLog, RequestLogMiddleware
from .uploads import upload_routes

__all__ = ["create_app", "API_PREFIX"]


class SiteApp(Starlette):
    """Starlette, plus the server's own `send` in the scope so faults can drop connections."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":  # (a WebSocket's scope is left as it is)
            scope[RAW_SEND_KEY] = send
        await super().__call__(scope, receive, send)


def create_app(editor: BoardEditor, faults: FaultProfile | str | None = None,
               log: RequestLog | None = None, dumps_dir: str | Path | None = None) -> Starlette:
    """The whole local site: API, image files, dump files, the firehose and the test control API,
    behind the fault layer.

    `app.state.faults` (a `FaultState`) can switch the fault profile while the app runs,
    `app.state.request_log` records every request, faulted ones included, and
    `app.state.dumps_dir` is the folder `/dumps/{name}` serves (None: no dumps), which tests may set.
    """
    fault_state = FaultState(faults if isinstance(faults, FaultProfile) else FaultProfile.parse(faults or ""))
    log = log if log is not None else RequestLog()
    app = SiteApp(
        # The POST routes come before the GET API, whose catch-all would answer them 405.
        routes=(control_routes() + file_routes() + dump_routes() + upload_routes() + reverse_routes()
                + firehose_routes() + api_routes()),
        middleware=[
            Middleware(RequestLogMiddleware, log=log),
            Middleware(FaultMiddleware, state=fault_state),
            Middleware(ProxyMiddleware),
        ],
    )
    app.state.editor = editor
    app.state.board = GeneratedBoard(editor.path)
    app.state.board.as_recorded = editor.recorded
    app.state.faults = fault_state
    app.state.fetch_url = fetch_loopback
    app.state.request_log = log
    app.state.firehose = Firehose(editor, app.state.board, fault_state)
    app.state.dumps_dir = dumps_dir
    # A stand-in for a real site in tests: its file URLs name whatever address it is asked under,
    # a fault proxy's in front of it included (mirror serve never trusts the Host header so).
    app.state.origin_from_host = True
    return app
