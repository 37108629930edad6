"""One TLS context for the tests' own HTTP clients.

``httpx.get`` makes a client a call, and each new client loaded the CA bundle again: some 40 ms of
CPU, a sixth of what `mirror serve`'s tests cost. The tests' clients talk to 127.0.0.1 over plain
HTTP; those made with httpx's defaults share one context a process instead (the mirror's own
clients do so already: :func:`mirror.api.client.tls_settings`). Any other settings asked for
(``verify=False``, a bundle, a client certificate) get a context of their own, as before.
"""

from __future__ import annotations

import functools
import ssl
from typing import Any

import httpx._transports.default as transports

_made = transports.create_ssl_context


@functools.cache
def _default() -> ssl.SSLContext:
    return _made()


def _shared(verify: Any = True, cert: Any = None, trust_env: bool = True) -> ssl.SSLContext:
    if verify is True and cert is None and trust_env:
        return _default()
    return _made(verify=verify, cert=cert, trust_env=trust_env)


def share_default_tls_context() -> None:
    transports.create_ssl_context = _shared
