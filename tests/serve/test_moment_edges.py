"""Moments at the calendar's edges (issue 52, point 5): year 1, year 9999, an offset that pushes
past either, a year of 21 digits, digits that are not ASCII. One rule for every way a moment
comes in (``/as-of/WHEN/`` of serve and browse, ``Accept-Datetime``, ``--as-of``): a moment the
calendar can write is answered (the board as it was: nothing yet, in year 1); anything else is a
400, or exit 2, with one line. Never a 500."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from urllib.parse import quote

import httpx
import pytest

from mirror.localsite.http.server import LoopbackServer
from mirror.serve.app import create_serve_app
from mirror.serve.board import Board

from ..support.browsing import browsing
from ..support.configs import synced_board, write_config

WRITABLE = ["00010101000000", "0001-01-01", "0001-01-01T00:00:00Z", "99991231235959", "9999-12-31",
            "9999-12-31T23:59:59Z", "0001-01-01T05:00:00+05:00"]
REFUSED = ["0001-01-01T00:00:00+05:00", "9999-12-31T23:00:00-05:00", "٢٠٢٥-٠١-٠٥", "２０２５-０１-０５",
           "２０２５０１０５１２００００", "2025-01-05T12:00:00+٠٥:٠٠", "00000101000000", "0000-12-31"]


@pytest.fixture(scope="module")
def mirrored(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("moment-edges")
    config = synced_board(tmp, seed=5, images=12)
    with sqlite3.connect(config.database) as db:
        found = db.execute("SELECT (SELECT min(id) FROM images), (SELECT min(slug) FROM tags), "
                           "(SELECT min(id) FROM comments), (SELECT min(id) FROM posts), "
                           "(SELECT min(uploader_id) FROM images), (SELECT min(short_name) FROM forums), "
                           "(SELECT min(slug) FROM topics), (SELECT min(id) FROM filters)").fetchone()
    return config, write_config(config, tmp / "mirror.toml"), found


def api_paths(found) -> list[str]:
    image, tag, comment, post, user, forum, topic, filter_id = found
    return [f"/api/v1/json/{path}" for path in (
        "search/images?q=*", "search?q=*", "search/tags?q=*", "search/posts?q=*", "search/comments?q=*",
        "search/galleries?q=*", "search/filters?q=*", "images/featured", f"images/{image}", f"tags/{tag}",
        f"comments/{comment}", f"posts/{post}", f"profiles/{user}", "filters/system", f"filters/{filter_id}",
        "forums", f"forums/{forum}", f"forums/{forum}/topics", f"forums/{forum}/topics/{topic}",
        f"forums/{forum}/topics/{topic}/posts", f"oembed?url=/images/{image}")]


@pytest.fixture(scope="module")
def served(mirrored):
    with LoopbackServer(create_serve_app(Board(mirrored[0].database), None)) as server:
        yield server


def test_every_serve_route_as_of_a_moment_at_the_calendars_edges_answers_or_refuses_never_500(mirrored, served):
    with httpx.Client(base_url=served.url, timeout=30) as http:
        for when in WRITABLE + REFUSED:
            for path in api_paths(mirrored[2]):
                answer = http.get(f"/as-of/{quote(when)}{path}")
                assert answer.status_code in ((200, 404) if when in WRITABLE else (400,)), (when, path, answer.text)
                if when in REFUSED:
                    assert len(answer.json()["error"].splitlines()) == 1


def test_accept_datetime_at_the_calendars_edges_is_read_as_written_or_refused(mirrored, served):
    path = api_paths(mirrored[2])[8]
    with httpx.Client(base_url=served.url, timeout=30) as http:
        gate = http.get(path, headers={"Accept-Datetime": "Mon, 01 Jan 0001 00:00:00 GMT"})
        first = http.get(f"/timemap/json{path}").json()["mementos"]["list"][0]["uri"]
        assert gate.status_code == 302 and gate.headers["location"] == first  # before the first memento: the first
        assert http.get(gate.headers["location"]).status_code == 200
        for asked in ("Mon, 01 Jan 100000000000000000000 00:00:00 GMT", "Fri, 31 Dec 9999 23:00:00 -0500",
                      "Sun, 05 Jan ٢٠٢٥ 12:00:00 GMT", "Sun, 05 Jan 2025 １２:00:00 GMT"):
            refused = http.get(path, headers={"Accept-Datetime": asked.encode()})
            assert refused.status_code == 400, (asked, refused.text)


def test_browse_pages_as_of_a_moment_at_the_calendars_edges_answer_or_refuse_never_500(mirrored):
    image = mirrored[2][0]
    with browsing(mirrored[1]) as url, httpx.Client(base_url=url.rstrip("/"), timeout=60) as http:
        for when in WRITABLE[:2] + WRITABLE[3:5] + REFUSED[:4]:
            for path in ("/", "/-/tags", "/-/booru?q=safe", f"/-/image/{image}", f"/-/image/{image}/history",
                         "/-/changes", "/-/forums", "/-/galleries"):
                answer = http.get(f"/as-of/{quote(when)}{path}")
                assert answer.status_code in ((200, 404) if when in WRITABLE else (400,)), (when, path)
        chosen = http.get("/-/as-of", params={"when": "0001-01-01T00:00:00+05:00"})
        assert chosen.status_code == 400


@pytest.mark.parametrize("command", ["serve", "browse"])
def test_as_of_beyond_the_calendar_is_exit_2_in_one_line(mirrored, command):
    for when in ("0001-01-01T00:00:00+05:00", "9999-12-31T23:00:00-05:00", "٢٠٢٥-٠١-٠٥"):
        done = subprocess.run([sys.executable, "-m", "mirror.cli", "-c", str(mirrored[1]), command, "--port", "0",
                               "--as-of", when], capture_output=True, text=True, timeout=60)
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert "--as-of" in done.stderr


def test_a_timemap_of_a_kind_there_is_none_of_is_a_404_not_a_500(mirrored, served):
    image = mirrored[2][0]
    with httpx.Client(base_url=served.url) as http:
        assert http.get(f"/timemap/link/api/v1/json/images/{image}").status_code == 200
        unknown = http.get(f"/timemap/UNKNOWN/api/v1/json/images/{image}")
        assert unknown.status_code == 404 and unknown.json()["error"] == "Not Found"
