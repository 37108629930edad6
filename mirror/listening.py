"""The listening socket of the mirror's servers (`mirror serve`, `mirror browse`, `mirror site`).

It is bound here, before uvicorn starts, so that a port another program holds ends the command
with one line and its own exit status: uvicorn, left to bind it, logs the error and exits from
inside the event loop, with a traceback and a status (3) that reads as "site unavailable".
"""

from __future__ import annotations

import errno
import socket

from .errors import EXIT_PORT_BUSY, MirrorError

__all__ = ["PortUnavailable", "listen"]


class PortUnavailable(MirrorError):
    """The address to listen on cannot be had: the port is taken, privileged, or the host not ours."""

    exit_code = EXIT_PORT_BUSY


def listen(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host``:``port`` (0 picks a free port), ready for ``Server.serve(sockets=...)``."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                                             flags=socket.AI_PASSIVE)[0]
    except socket.gaierror:
        raise PortUnavailable(f"cannot listen on {host}: no such address on this machine; "
                              "choose another with --host") from None
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does: a restart need not wait
    try:
        sock.bind(address)
    except OSError as e:
        sock.close()
        raise PortUnavailable(_why(e, host, port)) from None
    sock.set_inheritable(True)
    return sock


def _why(error: OSError, host: str, port: int) -> str:
    if error.errno == errno.EADDRINUSE:
        return f"port {port} on {host} is in use by another program; choose another with --port"
    if error.errno == errno.EACCES:
        return f"port {port} on {host} needs privileges this user lacks; choose one above 1023 with --port"
    if error.errno == errno.EADDRNOTAVAIL:
        return f"cannot listen on {host}: it is not an address of this machine; choose another with --host"
    return f"cannot listen on {host}:{port} ({error.strerror or error}); choose another --host or --port"
