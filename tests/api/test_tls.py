"""Every client the mirror makes checks certificates, with one set of TLS settings a process."""

from __future__ import annotations

import asyncio
import ssl

from mirror.api.client import http_client, tls_settings


def test_clients_share_one_context_that_checks_certificates_and_host_names():
    async def contexts() -> list[ssl.SSLContext]:
        found = []
        for _ in range(3):
            async with http_client(timeout=5, contact="", max_connections=1) as client:
                found.append(client._transport._pool._ssl_context)
        return found

    shared = asyncio.run(contexts())
    assert all(context is tls_settings() for context in shared)
    assert shared[0].verify_mode == ssl.CERT_REQUIRED and shared[0].check_hostname
    assert shared[0].cert_store_stats()["x509_ca"] > 10  # the CA bundle is loaded
