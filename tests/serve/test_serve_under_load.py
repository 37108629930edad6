"""`mirror serve` under a hostile load: slow searches do not hold up quick ones, the database
deleted or replaced under it is noticed, and a burst of huge reverse searches gives its memory back."""

from __future__ import annotations

import io
import re
import sqlite3
import threading
import time

import httpx
from PIL import Image

from mirror.localsite.http.server import LoopbackServer
from mirror.search import images
from mirror.serve.app import create_serve_app
from mirror.serve.board import Board

from ..support.browsing import serving
from ..support.configs import write_config


def test_a_quick_search_is_answered_at_once_while_eight_slow_ones_run(archive, monkeypatch):
    """Each slow search holds its connection for as long as it runs (up to the 5 s limit); with
    four connections a fifth request waited for one (4.8 s for id:5 behind four slow ones)."""
    real = images.search
    started = threading.Barrier(9)

    def search(conn, postings, node, scope, **options):
        if "slow" in repr(node):
            started.wait(timeout=10)
            time.sleep(2.0)  # a search the time limit will stop
        return real(conn, postings, node, scope, **options)

    monkeypatch.setattr(images, "search", search)
    url = archive.served.api_url + "/search/images"
    quick = {"q": "id:5", "filter_id": archive.everything}
    httpx.get(url, params=quick)  # its posting lists read once, as a running server has them
    finished: list[float] = []  # when each slow search's answer came

    def slow_search() -> None:
        httpx.get(url, params={"q": "slow"}, timeout=30)
        finished.append(time.perf_counter())

    slow = [threading.Thread(target=slow_search) for _ in range(8)]
    for thread in slow:
        thread.start()
    started.wait(timeout=10)  # all eight are holding a connection now
    answer = httpx.get(url, params=quick)
    answered = time.perf_counter()
    for thread in slow:
        thread.join()
    # Behind the slow ones it would be answered after one of them; at once, before any. An order, not
    # a time (took < 1 s): a loaded machine slows every request alike.
    assert answer.status_code == 200 and not any(at < answered for at in finished), (answered, finished)


def copy_database(source, target) -> None:
    """A whole copy of a database in WAL mode (a plain file copy would miss what the WAL holds)."""
    with sqlite3.connect(source) as conn, sqlite3.connect(target) as copy:
        conn.backup(copy)


def test_the_database_deleted_or_replaced_under_the_server_is_noticed(archive, tmp_path):
    served_file = tmp_path / "served.db"
    copy_database(archive.config.database, served_file)
    with LoopbackServer(create_serve_app(Board(served_file), None)) as served:
        url = served.api_url + "/search/tags"
        before = httpx.get(url, params={"q": "*"}).json()["total"]
        served_file.unlink()
        gone = httpx.get(url, params={"q": "*"})
        assert gone.status_code == 503 and "was deleted while being served" in gone.json()["error"]
        other = tmp_path / "other.db"
        copy_database(archive.config.database, other)
        conn = sqlite3.connect(other)
        conn.execute("DELETE FROM tags WHERE id IN (SELECT id FROM tags LIMIT 3)")
        conn.commit()
        conn.close()
        other.rename(served_file)  # a copy moved into place: served from now on
        assert httpx.get(url, params={"q": "*"}).json()["total"] == before - 3
        images_now = httpx.get(served.api_url + "/search/images", params={"q": "*", "filter_id": archive.everything})
        assert images_now.status_code == 200


def test_a_burst_of_huge_reverse_searches_gives_the_memory_back(archive, tmp_path):
    path = write_config(archive.config, tmp_path / "mirror.toml")
    with serving(path) as (url, process):
        out = io.BytesIO()
        Image.new("RGBA", (8000, 6000), (200, 100, 50, 128)).save(out, "PNG", compress_level=1)
        huge = out.getvalue()
        answers = []

        def search() -> None:
            files = {"image[image]": ("huge.png", huge, "image/png")}
            answers.append(httpx.post(url + "/search/reverse", files=files, timeout=120).status_code)

        threads = [threading.Thread(target=search) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert answers == [200] * 4
        with open(f"/proc/{process.pid}/status") as status:
            rss = int(re.search(r"VmRSS:\s+(\d+) kB", status.read()).group(1)) // 1024
        assert rss < 200, f"mirror serve holds {rss} MB after the burst"
