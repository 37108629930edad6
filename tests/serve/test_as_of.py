"""`mirror serve` answers any record as it was at a moment, under /as-of/WHEN/, with Memento.

A mirror of the local site is synced; what `mirror serve` answers then is noted; the site is edited
(a retag, a description, a hide, a merge, an upload, a comment edited) and synced again. Asked as of
the moment between the two syncs, the archive must answer exactly what it answered then.
"""

from __future__ import annotations

import re
import time

import httpx
import pytest

from mirror.asof import Moment, moment_of_http_date
from mirror.dates import utc_text
from mirror.localsite.board.editor import BoardEditor
from mirror.localsite.http.server import LoopbackServer, SiteServer
from mirror.serve.app import create_serve_app
from mirror.serve.board import Board

from ..support.configs import RESOURCES, mirror_config, sync


def answers(served: LoopbackServer, paths: list[str]) -> dict[str, tuple[int, object]]:
    with httpx.Client(base_url=served.url) as http:
        return {path: (r.status_code, r.json() if r.status_code == 200 else None)
                for path in paths for r in [http.get(path)]}


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("asof")
    editor = BoardEditor.generate(seed=12, images=60)
    with SiteServer(editor) as site:
        config = mirror_config(site, tmp, editor.everything_filter_id)
        sync(config, RESOURCES)
        visible = [i for i in sorted(editor.images) if not editor.images[i].get("hidden_from_users")]
        retagged, described, hidden, merged, target = visible[:5]
        comment = next(c for c in sorted(editor.comments) if editor.comments[c]["image_id"] in visible)
        paths = [f"/api/v1/json/images/{i}" for i in visible[:5]] + [f"/api/v1/json/comments/{comment}"]
        searches = [f"/api/v1/json/search/images?{query}" for query in (
            "q=*&per_page=50", "q=*&per_page=50&page=2", "q=tagged+later", "q=description:described",
            "q=safe&sf=score&sd=asc&per_page=50", "q=*&sf=updated_at&per_page=50",
            f"q=id.gte:{visible[0]}&sf=tag_count&per_page=50", "q=*&del=1&sf=id&sd=asc&per_page=50")]
        searches += ["/api/v1/json/search/comments?q=*&per_page=50", "/api/v1/json/search/comments?q=edited+later",
                     "/api/v1/json/search/tags?q=*&per_page=50", "/api/v1/json/search/tags?q=tagged+later",
                     "/api/v1/json/search/posts?q=*&per_page=50", "/api/v1/json/search/galleries?q=*&per_page=50",
                     "/api/v1/json/search/filters?q=*", "/api/v1/json/filters/system", "/api/v1/json/forums",
                     "/api/v1/json/images/featured"]
        with LoopbackServer(create_serve_app(Board(config.database), None, site_url=site.url)) as served:
            before = answers(served, paths + searches)
            moment = Moment(utc_text())
            time.sleep(1.1)  # the history keeps times to the second: the edits come after the moment
            editor.edit_image(retagged, tags=[*editor.images[retagged]["tags"], "tagged later"])
            editor.edit_image(described, description="described later")
            editor.hide_image(hidden, "Rule #2")
            editor.merge_image(merged, target)
            uploaded = editor.add_images(1)[0]
            editor.edit_comment(comment, body="edited later")
            sync(config, RESOURCES)
            after = answers(served, paths)
            after_searches = answers(served, searches)
            yield {"served": served, "moment": moment, "before": before, "after": after, "paths": paths,
                   "searches": searches, "after_searches": after_searches,
                   "uploaded": uploaded, "hidden": hidden, "merged": merged, "retagged": retagged,
                   "site": site.url}


def test_every_record_as_of_the_moment_is_what_was_answered_then(history):
    moment, served = history["moment"], history["served"]
    assert history["after"] != history["before"]  # the edits reached the mirror
    for spelling in (moment.digits, moment.text):
        as_of = answers(served, [f"/as-of/{spelling}{path}" for path in history["paths"]])
        assert list(as_of.values()) == [history["before"][path] for path in history["paths"]]


def test_every_search_and_list_as_of_the_moment_is_what_was_answered_then(history):
    moment, served = history["moment"], history["served"]
    changed = ("q=tagged+later", "q=description:described", "q=edited+later", "/search/tags?q=*&per_page=50")
    assert all(history["after_searches"][path] != history["before"][path] for path in history["searches"]
               if path.endswith(changed))
    as_of = answers(served, [f"/as-of/{moment.digits}{path}" for path in history["searches"]])
    for path, answer in zip(history["searches"], as_of.values()):
        assert answer == history["before"][path], path


def test_an_image_uploaded_later_is_not_found_and_a_hidden_one_was_whole(history):
    moment, served = history["moment"], history["served"]
    with httpx.Client(base_url=served.url) as http:
        assert http.get(f"/as-of/{moment.digits}/api/v1/json/images/{history['uploaded']}").status_code == 404
        assert http.get(f"/api/v1/json/images/{history['uploaded']}").status_code == 200
        for image_id in (history["hidden"], history["merged"]):
            then = http.get(f"/as-of/{moment.digits}/api/v1/json/images/{image_id}").json()["image"]
            now = http.get(f"/api/v1/json/images/{image_id}").json()["image"]
            assert then["hidden_from_users"] is False and then["tags"]
            assert now["hidden_from_users"] is True and "tags" not in now


def test_a_memento_says_when_its_version_began_and_links_to_the_original_timegate_and_timemap(history):
    moment, served = history["moment"], history["served"]
    path = f"/api/v1/json/images/{history['retagged']}"
    answer = httpx.get(f"{served.url}/as-of/{moment.digits}{path}")
    assert moment_of_http_date(answer.headers["memento-datetime"]) <= moment
    links = answer.headers["link"]
    original = f"{history['site']}{path}"  # the site's own URL: the mirror is an archive of it
    assert f'<{original}>; rel="original"' in links
    assert f'<{served.url}/timegate/{original}>; rel="timegate"' in links
    assert f'<{served.url}/timemap/link/{original}>; rel="timemap"' in links
    today = httpx.get(f"{served.url}{path}").headers
    assert "memento-datetime" not in today
    assert today["link"] == links and today["vary"] == "accept-datetime"  # the mirror's plain copy links the same


def _timemap_times(served, path):
    return [m["datetime"] for m in httpx.get(f"{served.url}/timemap/json{path}").json()["mementos"]["list"]]


def test_the_plain_url_and_the_aggregator_timegate_redirect_to_a_memento_the_timemap_lists(history):
    moment, served = history["moment"], history["served"]
    path = f"/api/v1/json/images/{history['retagged']}"
    times = _timemap_times(served, path)
    in_force = max(t for t in times if t <= moment.text)
    for gate_url in (f"{served.url}{path}", f"{served.url}/timegate/{history['site']}{path}"):
        gate = httpx.get(gate_url, headers={"Accept-Datetime": moment.http_date})
        assert gate.status_code == 302
        assert gate.headers["location"] == f"{served.url}/as-of/{Moment(in_force).digits}{path}"
        assert gate.headers["vary"] == "accept-datetime" and "memento-datetime" not in gate.headers
        assert re.search(f'rel="first [^"]*memento"; datetime="{Moment(times[0]).http_date}"', gate.headers["link"])
        followed = httpx.get(gate_url, headers={"Accept-Datetime": moment.http_date}, follow_redirects=True)
        assert followed.json() == history["before"][path][1]
        assert followed.headers["memento-datetime"] == Moment(in_force).http_date
        early = httpx.get(gate_url, headers={"Accept-Datetime": "Mon, 01 Jan 2001 00:00:00 GMT"})
        assert early.headers["location"] == f"{served.url}/as-of/{Moment(times[0]).digits}{path}"  # not a 404
        assert httpx.get(early.headers["location"]).status_code == 200
    newest = httpx.get(f"{served.url}/timegate/{history['site']}{path}")  # no Accept-Datetime: now
    assert newest.headers["location"] == f"{served.url}/as-of/{Moment(times[-1]).digits}{path}"
    bad = httpx.get(f"{served.url}{path}", headers={"Accept-Datetime": "last tuesday"})
    assert bad.status_code == 400 and "HTTP date" in bad.json()["error"]
    other = httpx.get(f"{served.url}/timegate/https://elsewhere.example{path}")
    assert other.status_code == 404 and "not a URL of the mirrored site" in other.json()["error"]


def test_the_timemap_lists_every_version(history):
    served, path = history["served"], f"/api/v1/json/images/{history['retagged']}"
    link = httpx.get(f"{served.url}/timemap/link{path}")
    assert link.headers["content-type"].startswith("application/link-format")
    mementos = [line for line in link.text.split(",\n") if "memento" in line]
    assert len(mementos) >= 3  # uploaded, first seen, retagged
    assert 'rel="first memento"' in mementos[0] and 'rel="last memento"' in mementos[-1]
    listed = httpx.get(f"{served.url}/timemap/json{path}").json()["mementos"]["list"]
    assert [m["uri"] in mementos[n] for n, m in enumerate(listed)] == [True] * len(mementos)
    newest = httpx.get(listed[-1]["uri"]).json()
    assert newest == history["after"][path][1]
    aggregated = httpx.get(f"{served.url}/timemap/link/{history['site']}{path}")
    assert aggregated.text == link.text.replace(f"/timemap/link{path}", f"/timemap/link/{history['site']}{path}")
    assert f'<{history["site"]}{path}>; rel="original"' in link.text


def test_a_moment_that_cannot_be_read_says_what_to_give(history):
    moment, served = history["moment"], history["served"]
    with httpx.Client(base_url=served.url) as http:
        bad = http.get(f"/as-of/yesterday/api/v1/json/images/{history['retagged']}")
        assert bad.status_code == 400 and "give a day" in bad.json()["error"]



def test_a_trend_and_a_diff_answer_in_one_request_what_the_searches_as_of_each_moment_answer(history):
    moment, served = history["moment"], history["served"]
    with httpx.Client(base_url=served.url) as http:
        for q in ("*", "tagged later", "safe || tagged later"):
            series = http.get("/as-of/trend", params={"q": q, "from": "2012-01-01", "every": "year"}).json()
            assert series["every"] == "year" and len(series["steps"]) >= 14
            for step in series["steps"][-3:]:
                asked = http.get(f"/as-of/{Moment(step['at']).digits}/api/v1/json/search/images", params={"q": q})
                assert step["total"] == asked.json()["total"], (q, step)
        found = http.get("/as-of/diff", params={"q": "tagged later", "from": moment.text}).json()
        assert [e["id"] for e in found["entered"]] == [history["retagged"]] and found["left"] == []
        assert (found["total_from"], found["total_to"]) == (0, 1)
        assert any("+tagged later" in change.get("tags", []) for change in found["entered"][0]["changes"])
        refused = http.get("/as-of/trend", params={"q": "*", "from": "2025-01-01", "every": "fortnight"})
        assert refused.status_code == 400 and "every" in refused.json()["error"]
        assert http.get("/as-of/diff", params={"q": "*"}).status_code == 400
