"""A password the user put in a URL (base_url for a reverse proxy's basic auth, healthcheck_url,
store.files, a dump's address) reaches no line the mirror prints, no page and no row (issue 41):
it is masked (``user:***@``) wherever a URL is shown, and the client sends it only as basic auth."""

from __future__ import annotations

import base64
import json

from click.testing import CliRunner
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

from mirror.api import PhilomenaClient
from mirror.cli import cli
from mirror.errors import EXIT_REJECTED, EXIT_UNAVAILABLE, EXIT_USAGE
from mirror.localsite.http.server import LoopbackServer
from mirror.urls import redact

from ..support.ports import a_closed_port

SECRET = "hunter2-Pa55"


def with_password(url: str) -> str:
    return url.replace("http://", f"http://archivist:{SECRET}@", 1)


def config_file(tmp_path, base_url: str, extra: str = "") -> str:
    path = tmp_path / "mirror.toml"
    path.write_text(f'[site]\nbase_url = "{base_url}"\n[polite]\nrequests_per_second = 100\nbackoff = 0.01\n'
                    f'max_retries = 1\ngive_up_after = 2\n[store]\ndatabase = "{tmp_path / "m.db"}"\n{extra}')
    return str(path)


def written(tmp_path) -> bytes:
    """Every byte the run left in its folder: the database, its WAL, files."""
    return b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file() and p.name != "mirror.toml")


def test_a_password_in_base_url_is_masked_in_the_header_and_kept_out_of_the_database(site, tmp_path):
    result = CliRunner().invoke(cli, ["-c", config_file(tmp_path, with_password(site.url)), "sync", "--json"])
    assert result.exit_code == 0, result.output
    assert SECRET not in result.output
    assert f"sync images from {with_password(site.url).replace(SECRET, '***')}" in result.stderr  # the header
    assert json.loads(result.stdout)["exit_code"] == 0
    assert SECRET.encode() not in written(tmp_path)


def test_a_password_in_base_url_is_kept_out_of_error_lines(site, tmp_path):
    wrong_path = CliRunner().invoke(cli, ["-c", config_file(tmp_path, with_password(site.url) + "/booru"), "sync"])
    assert wrong_path.exit_code == EXIT_REJECTED and "not found (404)" in wrong_path.output
    down = CliRunner().invoke(cli, ["-c", config_file(tmp_path, f"http://u:{SECRET}@127.0.0.1:{a_closed_port()}"),
                                    "sync"])
    assert down.exit_code == EXIT_UNAVAILABLE and "cannot connect to 127.0.0.1" in down.output
    assert SECRET not in wrong_path.output + down.output


def test_a_password_in_a_dump_url_or_store_files_is_kept_out_of_its_error_line(tmp_path):
    dump = CliRunner().invoke(cli, ["-c", config_file(tmp_path, "https://derpibooru.org"), "import-dump",
                                    f"http://me:{SECRET}@dumps.example.org/derpibooru.pgdump"])
    assert dump.exit_code == EXIT_USAGE and "http://me:***@dumps.example.org" in dump.output
    files = CliRunner().invoke(cli, ["-c", config_file(tmp_path, "https://derpibooru.org",
                                                       f'files = "nosuch://key:{SECRET}@bucket/x"\n'), "status"])
    assert files.exit_code == EXIT_USAGE and "nosuch://key:***@bucket/x" in files.output
    assert SECRET not in dump.output + files.output


async def test_the_client_sends_base_urls_credentials_as_basic_auth_only():
    seen = []

    async def page(request):
        seen.append((request.headers.get("authorization"), str(request.url)))
        return JSONResponse({"images": [], "total": 0})

    with LoopbackServer(Starlette(routes=[Route("/{path:path}", page)])) as proxy:
        async with PhilomenaClient(with_password(proxy.url)) as client:
            await client.search_images("*")
            assert client.base_url == proxy.url
    expected = "Basic " + base64.b64encode(f"archivist:{SECRET}".encode()).decode()
    assert seen == [(expected, f"{proxy.url}/api/v1/json/search/images?q=%2A&page=1&per_page=50")]


def test_redact_masks_passwords_wherever_urls_sit_in_a_line_and_the_key_still():
    line = (f"cannot open https://me:{SECRET}@proxy.example/x: refused; s3://AKIA:{SECRET}/x@bucket/files; "
            "https://user@h.example/")
    assert redact(line) == ("cannot open https://me:***@proxy.example/x: refused; s3://AKIA:***@bucket/files; "
                            "https://user@h.example/")
    assert redact(f"https://me:{SECRET}@proxy.example/api/v1/json/search?q=safe&key=k3y") == (
        "https://me:***@proxy.example/api/v1/json/search?q=safe&key=***")
    # A [ with no ] is no URL to urllib (ValueError): it is masked all the same (issue 41).
    assert redact(f"http://me:{SECRET}@[::1/ping?key=k3y&x=1") == "http://me:***@[::1/ping?key=***&x=1"


def test_a_password_in_base_url_goes_into_no_browse_page(tmp_path):
    """Browse links each record to the site: the address without the password."""
    result = CliRunner().invoke(cli, ["-c", config_file(tmp_path, f"https://me:{SECRET}@proxy.example"), "browse",
                                      "--metadata"])
    assert result.exit_code == 0, result.output
    assert "https://proxy.example" in result.output and SECRET not in result.output
