"""A bare file host on 127.0.0.1 that misbehaves as a dump's host can: a body cut short under a
Content-Length that promised more, or a trickle of a few bytes at a time.

The local site serves dumps through Starlette and its fault layer; these faults are about the raw
bytes on the socket, so they are written here with the standard library's ``http.server`` (real
sockets, a thread per connection), and nothing else.
"""

from __future__ import annotations

import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FileHost:
    """Serves ``data`` at every path, ``Range: bytes=N-`` honoured (206). The first ``cut``
    answers send half of what they promise and close; with ``trickle=(BYTES, PAUSE)`` every answer
    sends BYTES every PAUSE seconds until the client leaves (``BYTES`` 0: its headers, then not one
    byte for PAUSE seconds). ``ranges`` lists each request's Range header (None when it had none)."""

    def __init__(self, data: bytes, *, cut: int = 0, trickle: tuple[int, float] | None = None) -> None:
        self.data, self.cut, self.trickle = data, cut, trickle
        self.ranges: list[str | None] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> FileHost:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def answer(self, range_header: str | None) -> tuple[int, int, bool]:
        """Note a request; return where its body starts, its status, and whether to cut it."""
        with self._lock:
            self.ranges.append(range_header)
            cut = len(self.ranges) <= self.cut
        match = re.fullmatch(r"bytes=(\d+)-", range_header or "")
        start = int(match.group(1)) if match and int(match.group(1)) < len(self.data) else 0
        return start, 206 if start else 200, cut


def _handler(host: FileHost) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            start, status, cut = host.answer(self.headers.get("Range"))
            body = host.data[start:]
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            if status == 206:
                self.send_header("Content-Range", f"bytes {start}-{len(host.data) - 1}/{len(host.data)}")
            self.end_headers()
            try:
                if cut:
                    self.wfile.write(body[: len(body) // 2])
                    self.close_connection = True
                elif host.trickle:
                    step, pause = host.trickle
                    if not step:
                        time.sleep(pause)
                        self.close_connection = True
                        return
                    for offset in range(0, len(body), step):
                        self.wfile.write(body[offset:offset + step])
                        self.wfile.flush()
                        time.sleep(pause)
                else:
                    self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (http.server's name)
            pass

    return Handler
