"""What a newcomer sees when the site is not there or not a Philomena site: one line naming the
host and port and what to check, and a word while the run waits to retry (issue 30)."""

from __future__ import annotations

import re
import sqlite3
import ssl
import time

import httpx
import pytest
from click.testing import CliRunner
from starlette.applications import Starlette
from starlette.responses import HTMLResponse, RedirectResponse
from starlette.routing import Route

from mirror.api.client import describe_transport_error
from mirror.cli import cli
from mirror.errors import EXIT_REJECTED, EXIT_UNAVAILABLE, EXIT_USAGE
from mirror.localsite.http.server import LoopbackServer

from ..support.ports import a_closed_port

QUICK = "[polite]\nrequests_per_second = 100\nbackoff = 0.01\nmax_retries = 2\ngive_up_after = 3\n"
# The politeness a user has: a run that retried would take half a minute, so a quick end shows it did not.
DEFAULT_POLITENESS = ""


def config_file(tmp_path, base_url: str, site: str = "", polite: str = QUICK) -> str:
    path = tmp_path / "mirror.toml"
    path.write_text(f'[site]\nbase_url = "{base_url}"\n{site}{polite}[store]\ndatabase = "{tmp_path / "m.db"}"\n')
    return str(path)


def last_line(result) -> str:
    """The run's error line, without the UTC time a line to a log starts with."""
    return re.sub(r"^\S+Z ", "", result.stderr.splitlines()[-1])


def a_web_site(status: int) -> Starlette:
    """A site that is not Philomena: every address answers a web page."""
    async def page(request):
        return HTMLResponse("<!DOCTYPE html><html><body>Welcome to my blog</body></html>", status_code=status)

    return Starlette(routes=[Route("/{path:path}", page)])


def test_a_site_that_refuses_connections_is_named_with_its_port_and_what_to_check(tmp_path):
    port = a_closed_port()
    result = CliRunner().invoke(cli, ["-c", config_file(tmp_path, f"http://127.0.0.1:{port}"), "sync"])
    assert result.exit_code == EXIT_UNAVAILABLE
    error = result.stderr.splitlines()[-1]
    assert f"cannot connect to 127.0.0.1:{port} (connection refused)" in error
    assert "check site.base_url and your network" in error and "Everything fetched so far is kept" in error
    assert "Traceback" not in result.output
    assert f"cannot connect to 127.0.0.1:{port} (connection refused); retrying in" in result.stderr


def test_while_the_site_is_down_each_wait_is_said_even_under_quiet(site, tmp_path):
    site.set_faults("down")
    result = CliRunner().invoke(cli, ["-c", config_file(tmp_path, site.url), "sync", "--quiet"])
    assert result.exit_code == EXIT_UNAVAILABLE
    waits = [line for line in result.stderr.splitlines() if "retrying in" in line]
    assert len(waits) == 2  # max_retries = 2; the third failure in a row gives up
    assert re.fullmatch(r"\S+ the site answered 503 Service Unavailable; retrying in \d+ s \(attempt 2 of 3\)", waits[0])
    assert waits[1].endswith("(attempt 3 of 3)")
    assert result.stdout == ""


@pytest.mark.parametrize("status", [404, 200])
def test_an_address_that_is_not_a_philomena_api_says_so_at_once(tmp_path, status):
    """Philomena's API answers a 404 in JSON (or empty), and its proxy sends HTML only with 429
    and 5xx, so a web page is another site, a captive portal or a wrong path: asking again changes
    nothing. Before issue 36 the 200 page was retried for 35 s and ended with 3, not the 4 of docs/use.md."""
    with LoopbackServer(a_web_site(status)) as blog:
        started = time.monotonic()
        result = CliRunner().invoke(cli, ["-c", config_file(tmp_path, blog.url, polite=DEFAULT_POLITENESS), "sync"])
        took = time.monotonic() - started
    error = last_line(result)
    assert result.exit_code == EXIT_REJECTED, result.output
    assert error.startswith(f"Error: GET {blog.url}/api/v1/json/search/images?")
    assert error.endswith(f"was answered with an HTML page ({status}), not Philomena's JSON API: check that "
                          f"site.base_url ({blog.url}) is the site's own address")
    assert "retrying" not in result.stderr and took < 10  # one request: at 1 a second, retries took 35 s
    assert "not found" not in error


@pytest.mark.parametrize("fault", ["down", "down:404"])
def test_a_first_sync_the_site_fails_leaves_no_mirror_and_status_says_there_is_none(site, tmp_path, fault):
    """Its own run's row (failed) and the sync's session were kept in a mirror of no record, which
    `mirror status` showed as a mirror of zeros, where a site that refused the connection left none."""
    site.set_faults(fault)
    config = config_file(tmp_path, site.url)
    result = CliRunner().invoke(cli, ["-c", config, "sync"])
    assert result.exit_code in (EXIT_UNAVAILABLE, EXIT_REJECTED), result.output
    assert sorted(path.name for path in tmp_path.iterdir()) == ["mirror.toml"]  # no database, WAL or lock file
    status = CliRunner().invoke(cli, ["-c", config, "status"])
    assert status.output == f"No mirror yet at {tmp_path / 'm.db'}; run `mirror sync` to start one.\n"


def test_https_to_a_server_that_speaks_plain_http_says_so_and_exits_2_at_once(tmp_path):
    """It said "operation not permitted" (OpenSSL's errno read as the system's) after 35 s of
    retries, and exited 3, "run again later" (issue 36)."""
    with LoopbackServer(a_web_site(200)) as plain:
        started = time.monotonic()
        result = CliRunner().invoke(cli, ["-c", config_file(tmp_path, f"https://127.0.0.1:{plain.port}",
                                                            polite=DEFAULT_POLITENESS), "sync"])
        took = time.monotonic() - started
    assert result.exit_code == EXIT_USAGE, result.output
    assert last_line(result) == (f"Error: site.base_url (https://127.0.0.1:{plain.port}) says https://, but the "
                                 f"server at 127.0.0.1:{plain.port} speaks plain HTTP: use http:// for it: set "
                                 f'site.base_url = "http://127.0.0.1:{plain.port}"')
    assert "retrying" not in result.stderr and "not permitted" not in result.output and took < 10


def test_a_404_on_the_first_request_names_the_whole_url_and_site_base_url(site, tmp_path):
    wrong = site.url + "/booru"
    result = CliRunner().invoke(cli, ["-c", config_file(tmp_path, wrong, polite=DEFAULT_POLITENESS), "sync"])
    assert result.exit_code == EXIT_REJECTED, result.output
    error = last_line(result)
    assert error.startswith(f"Error: GET {wrong}/api/v1/json/search/images?q=")
    assert error.endswith(f": not found (404), and it was the run's first request, so site.base_url ({wrong}) is "
                          "likely wrong: give the site's own address (the mirror adds /api/v1/json to it)")
    assert len(site.requests) == 1


def test_an_address_that_redirects_names_where_to(tmp_path):
    async def moved(request):
        return RedirectResponse(f"https://www.example.org{request.url.path}?{request.url.query}", status_code=301)

    with LoopbackServer(Starlette(routes=[Route("/{path:path}", moved)])) as old:
        result = CliRunner().invoke(cli, ["-c", config_file(tmp_path, old.url), "sync"])
    assert result.exit_code == EXIT_REJECTED
    error = last_line(result)
    assert f"Error: {old.url} answered GET /api/v1/json/search/images?" in error
    assert error.endswith('with a redirect (301) to https://www.example.org: set site.base_url = '
                          '"https://www.example.org" if that is the site')


def test_reverse_search_against_a_dead_site_suggests_the_archive(tmp_path):
    picture = tmp_path / "my picture.png"
    picture.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(64))
    port = a_closed_port()
    result = CliRunner().invoke(cli, ["-c", config_file(tmp_path, f"http://127.0.0.1:{port}"), "reverse",
                                      str(picture)])
    assert result.exit_code == EXIT_UNAVAILABLE
    assert result.stderr.splitlines()[-1] == (
        f"Error: cannot connect to 127.0.0.1:{port} (connection refused), so the site's reverse search cannot be "
        f"asked now; search the archive offline instead: mirror reverse --local '{picture}'")


def site_total(site, **params) -> int:
    return httpx.get(site.api_url + "/search/images", params={"q": "*", "per_page": 1, "del": "1", **params}).json()["total"]


def test_a_sync_without_a_filter_says_how_many_images_the_sites_filter_hid_and_how_to_get_them(site, tmp_path):
    everything = site.editor.everything_filter_id
    shown, counted = site_total(site), site_total(site, filter_id=everything)
    assert counted > shown  # the local site's Default filter hides some, as the real one does
    result = CliRunner().invoke(cli, ["-c", config_file(tmp_path, site.url), "sync"])
    assert result.exit_code == 0, result.output
    note = (f"the site's filter hid {counted - shown} of the {counted} images it counts for images.query, since no "
            f'site.filter_id is set; to mirror them too, set filter_id = {everything} in [site] (its "Everything" '
            "filter, which hides nothing)")
    assert note in result.stdout
    db = sqlite3.connect(tmp_path / "m.db")
    assert db.execute("SELECT count(*) FROM images").fetchone()[0] == shown
    assert note in db.execute("SELECT message FROM sync_runs WHERE resource = 'images'").fetchone()[0]


def test_with_a_filter_set_nothing_more_is_asked_or_said(site, tmp_path):
    path = config_file(tmp_path, site.url, f"filter_id = {site.editor.default_filter_id}\n")
    result = CliRunner().invoke(cli, ["-c", path, "sync"])
    assert result.exit_code == 0, result.output
    assert "filter hid" not in result.stdout
    assert not [r for r in site.requests if r.path.endswith("/filters/system")]


def test_a_tls_failure_is_named_by_openssls_reason_not_its_errno_read_as_the_systems():
    """OpenSSL's errno 1 was read as EPERM: "cannot connect to HOST:443 (operation not permitted)"."""
    refused = ssl.SSLCertVerificationError(1, "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed")
    refused.reason = "CERTIFICATE_VERIFY_FAILED"
    error = httpx.ConnectError("certificate verify failed", request=httpx.Request("GET", "https://booru.example/"))
    error.__cause__ = refused
    said = describe_transport_error(error)
    assert said == "the TLS handshake with booru.example:443 failed (certificate_verify_failed)"
