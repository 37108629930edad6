"""A record with a history of tens of thousands of versions (a bot's tag war; the site has an image
with 75,260 tag changes), issue 52, point 6: its history page, the record as of a moment inside
the history, and its TimeMap each answer a bounded page, in bounded time and memory, with never
one SQL variable per version (SQLite refuses more than 32,766), and an error that is no replaced
file is not said to be one.

The history is written through the store's own writer of the site's changes
(:func:`mirror.store.history.save_site_changes`), as an import of the site's dump writes it:
40,000 syncs would take an hour."""

from __future__ import annotations

import re
import sqlite3
import time
import tracemalloc
from datetime import datetime, timedelta, timezone

import httpx
import pytest

from mirror.asof import Moment
from mirror.dates import utc_text
from mirror.localsite.board.editor import BoardEditor
from mirror.localsite.http.server import LoopbackServer, SiteServer
from mirror.serve.app import create_serve_app
from mirror.serve.board import Board
from mirror.store import open_database
from mirror.store.history import SiteChange, save_site_changes

from ..support.browsing import browse_client
from ..support.configs import mirror_config, sync

VERSIONS = 40_000  # past SQLite's 32,766 variables, in a few seconds of writing
BOT_TAG = (987_654, "bot war")
START = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(days=2)


class StandardBoard(Board):
    """The board, its connections held to SQLite's default 32,766 variables (Debian builds allow
    250,000; most others, Python's own builds among them, the default)."""

    def _connect(self, path):
        conn = super()._connect(path)
        conn.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 32_766)
        return conn


def at(n: int) -> str:
    return utc_text(START + timedelta(seconds=n))


@pytest.fixture(scope="module")
def hammered(tmp_path_factory):
    """A small mirror whose first image had the bot's tag added and removed 20,000 times each."""
    tmp = tmp_path_factory.mktemp("long-history")
    with SiteServer(BoardEditor.generate(seed=7, images=5)) as site:
        config = mirror_config(site, tmp, site.editor.everything_filter_id)
        sync(config, ("images", "tags"))
    db = open_database(config.database)
    image = db.execute("SELECT min(id) FROM images WHERE hidden_from_users = 0").fetchone()[0]
    with db.conn:
        save_site_changes(db, None, [SiteChange(image, at(n), 1, "site_tags", tags=(("+-"[n % 2], *BOT_TAG),))
                                     for n in range(VERSIONS)])
    db.close()
    with sqlite3.connect(config.database) as conn:
        assert conn.execute("SELECT count(*) FROM history WHERE record_key = ?", [str(image)]).fetchone()[0] >= VERSIONS
    with LoopbackServer(create_serve_app(StandardBoard(config.database), None)) as served:
        yield config, image, served


def measured(get, url: str, **options) -> tuple[httpx.Response, float, float]:
    """The answer, the seconds it took and the MB of Python memory it peaked at."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    started = time.monotonic()
    try:
        answer = get(url, **options)
        seconds = time.monotonic() - started
        return answer, seconds, tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def test_a_record_as_of_a_moment_inside_a_long_history_is_what_it_was_then(hammered):
    config, image, served = hammered
    path = f"/api/v1/json/images/{image}"
    with httpx.Client(base_url=served.url, timeout=60) as http:
        for n, carried in ((VERSIONS // 2, True), (VERSIONS // 2 + 1, False), (10, True), (VERSIONS - 3, False)):
            answer, seconds, peak = measured(http.get, f"/as-of/{Moment(at(n)).digits}{path}")
            assert answer.status_code == 200, answer.text  # not 503 "was it overwritten while being served?"
            assert (BOT_TAG[1] in answer.json()["image"]["tags"]) is carried  # added at even n, removed at odd
            assert answer.headers["memento-datetime"] == Moment(at(n)).http_date
            assert seconds < 5 and peak < 100, (n, seconds, peak)


def test_the_timemap_of_a_long_history_comes_in_pages_linked_by_next(hammered):
    config, image, served = hammered
    url = f"/timemap/link/api/v1/json/images/{image}"
    mementos, pages = [], 0
    with httpx.Client(base_url=served.url, timeout=60) as http:
        while url:
            answer, seconds, peak = measured(http.get, url)
            assert answer.status_code == 200 and seconds < 5 and peak < 100, (url, seconds, peak)
            pages += 1
            lines = answer.text.split(",\n")
            mementos += [line for line in lines if 'memento"' in line or "memento;" in line]
            following = [line for line in lines if 'rel="next"' in line]
            url = re.match(r"<([^>]+)>", following[0]).group(1) if following else None
        assert pages > 1
        assert len(mementos) == len(set(mementos)) >= VERSIONS
        assert 'rel="first memento"' in mementos[0] and 'rel="last memento"' in mementos[-1]
        listed = http.get(f"/timemap/json/api/v1/json/images/{image}").json()
        assert 0 < len(listed["mementos"]["list"]) < VERSIONS and listed["next"].startswith(served.url)


async def test_the_history_page_of_a_long_history_shows_one_page_and_links_the_older(hammered):
    config, image, _ = hammered
    client = await browse_client(config)
    tracemalloc.start()
    started = time.monotonic()
    page = await client.get(f"/-/image/{image}/history")
    seconds, peak = time.monotonic() - started, tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    assert page.status_code == 200 and seconds < 5 and peak < 100, (seconds, peak)
    older = re.search(r'href="(/-/image/\d+/history\?before=[^"]+)"', page.text)
    assert older, page.text[-2000:]
    assert (await client.get(older.group(1).replace("&amp;", "&"))).status_code == 200
    moment = Moment(at(VERSIONS // 2)).digits
    assert (await client.get(f"/as-of/{moment}/-/image/{image}")).status_code == 200
    assert (await client.get(f"/as-of/{moment}/-/image/{image}/history")).status_code == 200


def test_a_database_error_is_called_a_replaced_file_only_when_the_file_was_overwritten(hammered, tmp_path):
    config, image, _ = hammered
    served_file = tmp_path / "served.db"
    with sqlite3.connect(config.database) as source, sqlite3.connect(served_file) as copy:
        source.backup(copy)
    with sqlite3.connect(served_file) as db:
        db.execute("DROP TABLE galleries")  # a query the file cannot answer: not a replaced file
    with LoopbackServer(create_serve_app(Board(served_file), None)) as served, httpx.Client(base_url=served.url) as http:
        assert http.get(f"/api/v1/json/images/{image}").status_code == 200
        failed = http.get("/api/v1/json/search/galleries?q=*")
        assert failed.status_code == 500 and "overwritten" not in failed.json()["error"]
        assert "no such table: galleries" in failed.json()["error"]
        with open(served_file, "r+b") as file:  # overwritten in place by what is no database
            file.write(b"\0" * served_file.stat().st_size)
        replaced = http.get("/api/v1/json/search/tags?q=*")
        assert replaced.status_code == 503 and "overwritten while being served" in replaced.json()["error"]
