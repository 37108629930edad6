"""A client's ``Host`` header names no address the mirror answers with (issue 52, point 13):
redirects, Memento links, TimeMaps and the file URLs in records are built from the address the
server is reached at (the socket's, or ``mirror serve --public-url`` behind a proxy), so a client
sending ``Host: evil.example`` is not sent there, nor is a cache in front made to keep it."""

from __future__ import annotations

import subprocess
import sys

import httpx

from mirror.asof import Moment
from mirror.dates import utc_text

from ..support.browsing import browsing, serving
from .test_moment_edges import mirrored, served  # noqa: F401 (the fixtures: a small synced board, served)

EVIL = {"Host": "evil.example"}


def test_no_answer_of_mirror_serve_names_the_host_a_client_sent(mirrored, served):  # noqa: F811
    image = mirrored[2][0]
    path = f"/api/v1/json/images/{image}"
    with httpx.Client(base_url=served.url) as http:
        gate = http.get(path, headers={**EVIL, "Accept-Datetime": Moment(utc_text()).http_date})
        assert gate.status_code == 302
        memento = http.get(f"/as-of/{Moment(utc_text()).digits}{path}", headers=EVIL)
        record = http.get(path, headers=EVIL)
        timemap = http.get(f"/timemap/link{path}", headers=EVIL)
        listed = http.get(f"/timemap/json{path}", headers=EVIL)
        search = http.get("/api/v1/json/search/images?q=*", headers=EVIL)
    for answer in (gate, memento, record, timemap, listed, search):
        said = answer.text + " ".join(f"{k}: {v}" for k, v in answer.headers.items())
        assert "evil.example" not in said, (answer.url, said[:500])
    assert gate.headers["location"].startswith((served.url + "/", "/"))
    assert record.json()["image"]["representations"]["thumb"].startswith(served.url + "/")


def test_a_public_url_given_to_mirror_serve_is_the_address_its_answers_name(mirrored):
    image = mirrored[2][0]
    with serving(mirrored[1], args=("--public-url", "https://mirror.example.org")) as (api, _):
        record = httpx.get(f"{api}/images/{image}", headers=EVIL).json()
    assert record["image"]["representations"]["thumb"].startswith("https://mirror.example.org/")
    refused = subprocess.run([sys.executable, "-m", "mirror.cli", "-c", str(mirrored[1]), "serve", "--port", "0",
                              "--public-url", "mirror.example.org/x"], capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2 and "--public-url" in refused.stderr


def test_no_redirect_of_mirror_browse_names_the_host_a_client_sent(mirrored):  # noqa: F811
    with browsing(mirrored[1]) as url, httpx.Client(base_url=url.rstrip("/")) as http:
        for path in ("/-/as-of?when=2025-01-05", "/as-of/20250105000000/-/metadata", "/-/filter?id=1",
                     "/mirror/images/", "/-/as-of?when="):
            answer = http.get(path, headers=EVIL)
            assert answer.status_code in (301, 302, 303, 307, 308), (path, answer.status_code)
            assert "evil.example" not in answer.headers["location"], (path, answer.headers["location"])
