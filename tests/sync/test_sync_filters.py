"""`mirror sync filters` end to end against the local site on 127.0.0.1."""

from __future__ import annotations

import httpx

from mirror.store.specs import FILTERS

from ..support.configs import site_config, sync
from ..support.mirrored import assert_rows_match


def key_of(site) -> str:
    return next(iter(site.editor.api_keys))


def served(site, path: str, key: str | None = None, **params) -> dict:
    with httpx.Client(base_url=site.api_url) as http:
        return http.get(path, params={**params, **({"key": key} if key else {})}).json()


def private_filter_of_someone_else(site) -> int:
    key_user = site.editor.api_keys[key_of(site)]
    return next(f["id"] for f in site.editor.filters.values()
                if not f["system"] and not f["public"] and f["user_id"] != key_user)


def public_filter(site) -> int:
    return next(f["id"] for f in site.editor.filters.values() if f["public"])


def paths(site) -> list[str]:
    return [r.path.removeprefix("/api/v1/json") for r in site.requests]


def test_without_a_key_system_and_configured_filters_are_kept_and_the_skip_is_reported(site, tmp_path):
    hidden, public = private_filter_of_someone_else(site), public_filter(site)
    report, db = sync(site_config(site, tmp_path, filters={"ids": [public, hidden]}), ["filters"])
    # The system list (4 filters, one page; the filter in use is one of them) and the two ids.
    assert paths(site) == ["/filters/system", f"/filters/{public}", f"/filters/{hidden}"] and report.requests == 3
    expected = {f["id"]: f for f in served(site, "/filters/system", per_page=50)["filters"]}
    expected[public] = served(site, f"/filters/{public}")["filter"]
    assert_rows_match(db, FILTERS, expected, site.url)
    assert any("need an API key" in note for note in report.notes)
    assert any(f"filter {hidden} was not found" in note for note in report.notes)
    run = list(db.query("SELECT * FROM sync_runs WHERE resource = 'filters'"))[-1]
    assert run["status"] == "ok" and "API key" in run["message"]
    assert run["filter_id"] == site.editor.everything_filter_id


def test_with_a_key_the_owners_filters_come_too_and_a_rename_is_picked_up(site, tmp_path):
    key = key_of(site)
    config = site_config(site, tmp_path, api_key=key)
    report, db = sync(config, ["filters"])
    assert paths(site) == ["/filters/system", "/filters/user"] and report.requests == 2
    expected = {f["id"]: f for f in served(site, "/filters/system", per_page=50)["filters"]}
    own = served(site, "/filters/user", key, per_page=50)["filters"]
    assert own
    expected.update((f["id"], f) for f in own)
    assert_rows_match(db, FILTERS, expected, site.url)
    assert not report.notes and report.new == len(expected)

    site.clear_requests()
    report, _ = sync(config, ["filters"])
    assert len(site.requests) == report.requests == 2  # nothing changed: the same two requests
    assert report.new == report.updated == 0

    site.editor.edit_filter(own[0]["id"], name="Renamed filter")
    site.editor.add_filter(site.editor.api_keys[key], "A new one")
    site.clear_requests()
    report, db = sync(config, ["filters"])
    assert len(site.requests) == 2 and report.updated == 1 and report.new == 1
    assert db["filters"].get(own[0]["id"])["name"] == "Renamed filter"
    assert key not in "".join(str(tuple(r)) for r in db.execute("SELECT * FROM sync_runs"))


def test_the_repeating_last_page_of_the_filter_lists_never_loops(site, tmp_path):
    key = key_of(site)
    owner = site.editor.api_keys[key]
    for i in range(60):
        site.editor.add_filter(owner, f"Bulk filter {i}")
    # Past the end, the site repeats the last page rather than answering an empty one.
    last = served(site, "/filters/user", key, per_page=50, page=2)["filters"]
    assert last and served(site, "/filters/user", key, per_page=50, page=3)["filters"] == last
    site.clear_requests()
    report, db = sync(site_config(site, tmp_path, api_key=key), ["filters"])
    assert paths(site) == ["/filters/system", "/filters/user", "/filters/user"] and report.requests == 3
    assert db.execute("SELECT count(*) FROM filters WHERE user_id = ?", [owner]).fetchone()[0] == \
        served(site, "/filters/user", key)["total"]


def test_a_key_the_site_refuses_is_reported_not_fatal(site, tmp_path):
    report, db = sync(site_config(site, tmp_path, api_key="not-a-valid-key"), ["filters"])
    assert paths(site) == ["/filters/system", "/filters/user"]
    assert any("did not accept the API key" in note for note in report.notes)
    assert "not-a-valid-key" not in "".join(report.notes) + report.summary()
    assert db["filters"].count == len(served(site, "/filters/system")["filters"])
