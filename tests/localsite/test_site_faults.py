"""Fault profiles of the local site: what a client meets from a struggling site and its proxy."""

from __future__ import annotations

import time

import httpx
import pytest

from mirror.localsite.board.editor import BoardEditor
from mirror.localsite.http.faults import FaultProfile, FaultState
from mirror.localsite.http.server import SiteServer


@pytest.fixture(scope="module")
def site():
    with SiteServer(BoardEditor.generate(seed=5, images=40)) as server:
        yield server


@pytest.fixture
def http(site):
    site.set_faults("")
    site.clear_requests()
    with httpx.Client(base_url=site.url, timeout=10) as client:
        yield client
    site.set_faults("")


IMAGE = "/api/v1/json/images/1"


def test_parse_profiles():
    assert FaultProfile.parse("") == FaultProfile()
    assert FaultProfile.parse("ratelimit") == FaultProfile(ratelimit=(30, 5.0))
    assert FaultProfile.parse("ratelimit:10/2, flaky") == FaultProfile(ratelimit=(10, 2.0), flaky=(7, 2))
    assert FaultProfile.parse("slow:0.05,drops:3,down:502") == FaultProfile(slow=0.05, drops=3, down=502)
    assert str(FaultProfile.parse("ratelimit:10/2,slow")) == "ratelimit:10/2,slow:0.2"
    assert FaultProfile.parse("repeat,vanish,badids") == FaultProfile(repeat=True, vanish=10, badids=("missing", 1))
    assert str(FaultProfile.parse("badids:18446744073709551621/7")) == "badids:18446744073709551621/7"
    assert FaultProfile.parse("redirect:http://127.0.0.1:9/,trickle") == FaultProfile(redirect="http://127.0.0.1:9",
                                                                                       trickle=5)
    assert str(FaultProfile.parse("trickle:20,redirect:http://127.0.0.1:9")) == "redirect:http://127.0.0.1:9,trickle:20"
    for bad in ("bogus", "slow:fast", "ratelimit:x/y", "repeat:2", "badids:huge", "badids:null/0", "redirect",
                "redirect:/img", "trickle:x"):
        with pytest.raises(ValueError):
            FaultProfile.parse(bad)


def test_ratelimit_answers_html_429_with_retry_after(site, http):
    site.set_faults("ratelimit:5/2")
    statuses = [http.get(IMAGE).status_code for _ in range(5)]
    assert statuses == [200] * 5
    limited = http.get(IMAGE)
    assert limited.status_code == 429
    assert limited.headers["content-type"].startswith("text/html")
    assert "Philomena - Downtime" in limited.text
    assert limited.headers["retry-after"] in ("1", "2")
    # files are limited too, the control API never is
    assert http.get("/img/2012/1/2/1/thumb.png").status_code == 429
    assert http.get("/_control/requests").status_code == 200
    time.sleep(int(limited.headers["retry-after"]) + 0.05)
    assert http.get(IMAGE).status_code == 200
    logged = [r.status for r in site.requests]
    assert logged.count(429) == 2 and logged[:5] == [200] * 5


def test_ratelimit_window_slides():
    now = [0.0]
    state = FaultState(FaultProfile.parse("ratelimit:3/5"), clock=lambda: now[0])
    for t in (0.0, 1.0, 2.0):
        now[0] = t
        assert state.decide("a") is None
    now[0] = 2.5
    fault = state.decide("a")
    assert (fault.status, fault.retry_after) == (429, 3)  # the 0.0 slot frees at 5.0
    assert state.decide("b") is None  # per client
    now[0] = 5.0
    assert state.decide("a") is None


def test_flaky_bursts_are_deterministic(site, http):
    site.set_faults("flaky")
    first = [(r.status_code, r.headers.get("retry-after")) for r in (http.get(IMAGE) for _ in range(16))]
    site.set_faults("flaky")
    again = [(r.status_code, r.headers.get("retry-after")) for r in (http.get(IMAGE) for _ in range(16))]
    assert first == again
    failures = [i for i, (status, _) in enumerate(first, start=1) if status != 200]
    assert failures == [7, 8, 14, 15]
    assert {status for status, _ in first} == {200, 500, 502, 503}
    assert all(retry == "1" for status, retry in first if status == 503)
    assert all(retry is None for status, retry in first if status in (500, 502))


def test_drops_close_connections_and_truncate_bodies(site, http):
    site.set_faults("drops:2")
    errors = []
    for _ in range(6):
        try:
            assert http.get(IMAGE).status_code == 200
        except httpx.RemoteProtocolError as error:
            errors.append(str(error))
    assert len(errors) == 3
    assert any("without sending a response" in e for e in errors)
    assert any("incomplete" in e or "complete message body" in e for e in errors)
    statuses = [r.status for r in site.requests]
    assert 0 in statuses  # dropped before any response
    # the server is still healthy afterwards
    site.set_faults("")
    assert http.get(IMAGE).status_code == 200


def test_truncated_file_download(site, http):
    url = http.get(IMAGE).json()["image"]["representations"]["full"]
    site.set_faults("drops:1")  # every request: dropped, truncated, dropped, ...
    with pytest.raises(httpx.RemoteProtocolError, match="without sending a response"):
        http.get(url)
    with pytest.raises(httpx.RemoteProtocolError, match="complete message body"):
        http.get(url)


def test_slow_delays_api_and_files(site, http):
    site.set_faults("slow:0.5")  # long enough that a loaded machine answers an undelayed request sooner
    started = time.monotonic()
    assert http.get(IMAGE).status_code == 200
    assert time.monotonic() - started >= 0.5
    site.set_faults("")
    image = http.get(IMAGE).json()["image"]
    site.set_faults("slow:0.5")
    started = time.monotonic()
    assert http.get(image["representations"]["full"]).status_code == 200
    assert time.monotonic() - started >= 0.5
    started = time.monotonic()
    http.get("/_control/requests")
    assert time.monotonic() - started < 0.5


def test_down_answers_html_without_retry_after(site, http):
    site.set_faults("down")
    response = http.get(IMAGE)
    assert response.status_code == 503
    assert "retry-after" not in response.headers
    assert "Philomena - Downtime" in response.text
    site.set_faults("down:502")
    assert http.get("/api/v1/json/search/images", params={"q": "*"}).status_code == 502
    assert http.post("/_control/faults", json={"spec": ""}).json() == {"faults": ""}
    assert http.get(IMAGE).status_code == 200


def test_combined_profile_rate_limits_first(site, http):
    site.set_faults("ratelimit:2/5,down")
    assert [http.get(IMAGE).status_code for _ in range(3)] == [503, 503, 429]


SEARCH = "/api/v1/json/search/images"


def search(http, page: int, **params) -> dict:
    return http.get(SEARCH, params={"q": "*", "sf": "id", "sd": "asc", "per_page": 10, "page": page,
                                    **params}).json()


def test_repeat_serves_a_path_s_first_list_answer_forever(site, http):
    first = search(http, 1)
    site.set_faults("repeat")
    assert search(http, 2) == search(http, 3) == search(http, 1, q="id.gt:5") != first
    assert http.get(IMAGE).json()["image"]["id"] == 1  # other answers are served as they are


def test_badids_spoil_the_ids_of_the_records_picked(site, http):
    served = search(http, 1)["images"]
    fifth = served[4]["id"]
    for spec, expected in (("badids", None), ("badids:null", None), ("badids:string", str(fifth)),
                           ("badids:negative", -fifth - 1), (f"badids:{2**64 + 5}", 2**64 + 5)):
        site.set_faults(spec)
        spoilt = next(r for r in search(http, 1)["images"] if r["created_at"] == served[4]["created_at"])
        assert spoilt.get("id") == expected and ("id" in spoilt) == (spec != "badids")
    site.set_faults("badids:null/4")
    assert [r["id"] for r in search(http, 1)["images"]] == [r["id"] if r["id"] % 4 else None for r in served]


def test_vanish_leaves_records_out_while_total_counts_them(site, http):
    served = search(http, 1)
    site.set_faults("vanish:3")
    page = search(http, 1)
    assert page["total"] == served["total"]
    assert [r["id"] for r in page["images"]] == [r["id"] for r in served["images"] if r["id"] % 3]
def test_redirect_sends_the_first_request_for_each_file_elsewhere(site, http):
    url = http.get(IMAGE).json()["image"]["representations"]["full"]
    path = httpx.URL(url).path
    site.set_faults("redirect:http://127.0.0.1:9/")
    moved = http.get(url)
    assert moved.status_code == 302 and moved.headers["location"] == "http://127.0.0.1:9" + path
    assert http.get(url).status_code == 200  # only the first request for a file is redirected
    assert http.get(IMAGE).status_code == 200  # API answers are never redirected
    site.set_faults(f"redirect:{site.url}")  # within the site: following it gets the file
    followed = http.get(url, follow_redirects=True)
    assert followed.status_code == 200 and [r.status_code for r in followed.history] == [302]


def test_trickle_sends_the_files_of_every_nth_image_a_few_bytes_at_a_time(site, http):
    image = http.get(IMAGE).json()["image"]  # image 1
    whole = http.get(image["representations"]["thumb"]).content
    site.set_faults("trickle:1")
    started = time.monotonic()
    chunks = []
    with http.stream("GET", image["representations"]["thumb"]) as response:
        chunks = list(response.iter_raw())
    assert b"".join(chunks) == whole and max(map(len, chunks)) <= 4
    assert time.monotonic() - started >= 0.1 * (len(whole) // 4)
    started = time.monotonic()
    site.set_faults("trickle:2")  # image 1 is not trickled, nor is the API
    assert http.get(image["representations"]["thumb"]).content == whole
    assert http.get(IMAGE).status_code == 200
    assert time.monotonic() - started < 0.1 * (len(whole) // 4) / 2  # well under what a trickle takes
