"""A record of every request the local site saw, so tests can assert on pacing and retries."""

from __future__ import annotations

import threading
import time
from dataclasses import asdict, dataclass

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["RequestRecord", "RequestLog", "RequestLogMiddleware"]


@dataclass(frozen=True)
class RequestRecord:
    time: float  # time.monotonic() when the request arrived
    method: str
    path: str
    query: str
    status: int  # 0 when the connection was dropped before any response
    client: str

    def to_dict(self) -> dict:
        return asdict(self)


class RequestLog:
    """A thread-safe, append-only list of `RequestRecord`s.

    A request is logged as its response starts, before the client can have it: a request that
    arrived before `clear()` is not logged after it either, so a test that clears the log between
    two syncs counts only the second one's requests.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._records: list[RequestRecord] = []
        self._cleared_at = float("-inf")

    def append(self, record: RequestRecord) -> None:
        with self._lock:
            if record.time >= self._cleared_at:
                self._records.append(record)

    def snapshot(self) -> list[RequestRecord]:
        with self._lock:
            return list(self._records)

    def clear(self) -> None:
        with self._lock:
            self._records.clear()
            self._cleared_at = time.monotonic()


class RequestLogMiddleware:
    """Outermost layer: logs each HTTP request (except the control API) with its final status."""

    def __init__(self, app: ASGIApp, log: RequestLog) -> None:
        self.app, self.log = app, log

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"].startswith("/_control"):
            await self.app(scope, receive, send)
            return
        started = time.monotonic()
        logged = False

        def record(status: int) -> None:
            client = scope.get("client") or ("", 0)
            self.log.append(RequestRecord(
                time=started,
                method=scope["method"],
                path=scope["path"],
                query=scope.get("query_string", b"").decode("latin-1"),
                status=status,
                client=client[0],
            ))

        async def recording_send(message: Message) -> None:
            nonlocal logged
            if message["type"] == "http.response.start" and not logged:
                # Logged before the response leaves, so a client that has its answer can count on it.
                record(message["status"])
                logged = True
            await send(message)

        try:
            await self.app(scope, receive, recording_send)
        finally:
            if not logged:
                record(0)  # the connection was dropped before any response
