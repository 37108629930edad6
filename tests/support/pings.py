"""A health-check service on 127.0.0.1 that records every ping, for the nightly job's and the follower's tests."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Pings:
    """A health-check service on 127.0.0.1 that records every ping (method, path, body)."""

    def __init__(self, status: int = 200) -> None:
        pings = self.pings = []

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.record()

            def do_POST(self) -> None:
                self.record()

            def record(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
                pings.append((self.command, self.path, body))
                self.send_response(status)
                self.end_headers()
                self.wfile.write(b"OK")

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/ping/3f1c-check"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
