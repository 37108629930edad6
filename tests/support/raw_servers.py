"""Bare servers on 127.0.0.1 for what a misbehaving peer does on the socket itself: any handler of
the standard library's ``http.server`` (a body that drips, colour codes in an error), or a server
that takes every connection and never sends a byte back."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

__all__ = ["handler_server", "silent_server"]


@contextmanager
def handler_server(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """``http://127.0.0.1:PORT`` answered by ``handler`` (a thread per connection), while it runs."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def silent_server() -> Iterator[str]:
    """``http://127.0.0.1:PORT`` that takes every connection and never answers, while it runs."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    held: list[socket.socket] = []

    def take() -> None:
        try:
            while True:
                held.append(server.accept()[0])
        except OSError:  # closed: done
            return

    threading.Thread(target=take, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}"
    finally:
        server.close()
        for connection in held:
            connection.close()
