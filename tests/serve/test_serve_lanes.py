"""A crowd of expensive requests on `mirror serve` (real uvicorn on 127.0.0.1, concurrent httpx
clients) never holds up a cheap one: cheap searches and small reverse searches have a lane of
their own, and the expensive lane's queue is bounded (503 with Retry-After past it)."""

from __future__ import annotations

import io
import threading
import time

import httpx
from PIL import Image
from starlette.datastructures import QueryParams

from mirror.search import images
from mirror.serve.lanes import search_cost

from ..support.browsing import serving
from ..support.configs import write_config

CROWD = 100  # expensive clients at once, each sending again once answered (after Retry-After if told)


def test_a_cheap_search_answers_within_a_second_under_a_crowd_of_wildcard_searches(archive, monkeypatch):
    """A quarter of 200 clients sending a medium wildcard search kept `q=id:20` waiting 14-16 s."""
    real = images.search

    def search(conn, postings, node, scope, **options):
        if "wildcard" in repr(node):
            time.sleep(1.0)  # a wildcard search on a large board
        return real(conn, postings, node, scope, **options)

    monkeypatch.setattr(images, "search", search)
    url = archive.served.api_url + "/search/images"
    assert httpx.get(url, params={"q": "id:20", "filter_id": archive.everything}).status_code == 200
    stop = threading.Event()
    statuses: list[int] = []

    def crowd() -> None:
        with httpx.Client(timeout=60) as client:
            while not stop.is_set():
                answer = client.get(url, params={"q": "s*", "filter_id": archive.everything})
                statuses.append(answer.status_code)
                if answer.status_code == 503:
                    stop.wait(float(answer.headers["retry-after"]))

    clients = [threading.Thread(target=crowd) for _ in range(CROWD)]
    for client in clients:
        client.start()
    try:
        time.sleep(2.0)  # the crowd in full flow
        waits = []
        for _ in range(5):
            began = time.perf_counter()
            answer = httpx.get(url, params={"q": "id:20", "filter_id": archive.everything}, timeout=60)
            waits.append(time.perf_counter() - began)
            assert answer.status_code == 200 and answer.json()["total"] == 1
    finally:
        stop.set()
        for client in clients:
            client.join()
    # Held up, it waits for the crowd's searches of a second each (14-16 s before the lanes); 3 s
    # leaves room for a machine at load 10, where a plain search can take a second.
    assert max(waits) < 3.0, [f"{w:.2f}" for w in waits]
    assert 200 in statuses and set(statuses) <= {200, 503}  # the crowd is served or told to come back


def test_a_busy_answer_says_when_to_come_back(archive, monkeypatch):
    release = threading.Event()
    real = images.search

    def search(conn, postings, node, scope, **options):
        release.wait(timeout=20)
        return real(conn, postings, node, scope, **options)

    monkeypatch.setattr(images, "search", search)
    url = archive.served.api_url + "/search/images"
    answers: list[httpx.Response] = []
    clients = [threading.Thread(target=lambda: answers.append(httpx.get(url, params={"q": "s*"}, timeout=30)))
               for _ in range(10)]
    for client in clients:
        client.start()
    time.sleep(1.0)
    refused = httpx.get(url, params={"q": "p*"}, timeout=30)
    release.set()
    for client in clients:
        client.join()
    assert refused.status_code == 503 and refused.headers["retry-after"].isdigit()
    assert "busy" in refused.json()["error"]
    assert [a.status_code for a in answers] == [200] * 10


def test_a_normal_reverse_search_is_not_held_up_by_four_huge_ones(archive, tmp_path):
    """Four reverse-search bombs in a row kept a normal reverse search waiting 40 s."""
    path = write_config(archive.config, tmp_path / "mirror.toml")
    out = io.BytesIO()
    Image.new("RGBA", (8000, 6000), (200, 100, 50, 128)).save(out, "PNG", compress_level=1)
    huge = out.getvalue()
    small = io.BytesIO()
    Image.new("RGB", (300, 200), (10, 200, 30)).save(small, "PNG")
    with serving(path) as (url, _):
        answers: list[int] = []
        finished: list[float] = []  # when each bomb's answer came

        def search(data: bytes) -> None:
            files = {"image[image]": ("huge.png", data, "image/png")}
            answers.append(httpx.post(url + "/search/reverse", files=files, timeout=120).status_code)
            finished.append(time.perf_counter())

        bombs = [threading.Thread(target=search, args=(huge,)) for _ in range(4)]
        for bomb in bombs:
            bomb.start()
        time.sleep(0.5)  # the first bomb is being decoded, the others wait their turn
        sent = time.perf_counter()
        normal = httpx.post(url + "/search/reverse", files={"image[image]": ("q.png", small.getvalue(), "image/png")},
                            timeout=120)
        answered = time.perf_counter()
        for bomb in bombs:
            bomb.join()
    # Held up, it is answered after the bombs still waiting when it was sent; beside them, before the
    # second of those is done. An order, not a time: a loaded machine slows both alike (took < 1 s
    # failed there), and a quick one decodes a bomb in 0.65 s (two were done before a 1.5 s wait ended).
    waiting = [at for at in finished if at > sent]
    assert len(waiting) >= 2, (sent, finished)
    assert normal.status_code == 200 and sum(at < answered for at in waiting) <= 1, (sent, answered, finished)
    assert answers == [200] * 4


def test_a_random_order_takes_the_cheap_lane_and_wildcards_and_deep_pages_the_expensive_one():
    """A random order scores every id at once (tests/search/test_bitmap_search.py checks its pages
    against SQL's), so a crowd of them is no reason to shed it with 503 as a wildcard search is."""
    path = "/api/v1/json/search/images"
    assert not search_cost(path, QueryParams("q=safe&sf=random"))
    assert not search_cost(path, QueryParams("q=safe&sf=random:42&sd=asc"))
    assert search_cost(path, QueryParams("q=saf*"))
    assert search_cost(path, QueryParams("q=safe&page=5000"))
