"""Ports for tests that need nothing to listen: what a site that is down looks like."""

from __future__ import annotations

import socket


def a_closed_port() -> int:
    """A loopback port nothing listens on (it was free a moment ago and was closed again)."""
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    return port
