"""An export whose destination fails: a password in ``store.endpoint_url``, an S3 endpoint that
cannot be reached after a killed export, an endpoint whose errors carry colour codes and URLs.
Each ends in one line and the exit status of the README's table, through the CLI, over real
sockets on 127.0.0.1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from http.server import BaseHTTPRequestHandler

import pytest

from mirror.localsite.board.editor import BoardEditor
from mirror.localsite.http.server import SiteServer
from mirror.store import open_database
from mirror.store.export_state import save_export_cursor

from ..support.configs import changed, site_config, write_config
from ..support.moto import AWS_ENV
from ..support.ports import a_closed_port
from ..support.raw_servers import handler_server, silent_server
from .test_killed import copy_of

SECRET = "hunter2-not-for-logs"
DEST = "s3://bucket/board"


def mirror(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mirror.cli", *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **AWS_ENV})


def export_to(exported, tmp_path, endpoint: str, *args: str, database=None, timeout: float = 120,
              **sections: dict) -> subprocess.CompletedProcess:
    """`mirror export s3://bucket/board ARGS` of a copy of the archive (or ``database``) through ``endpoint``."""
    database = database or copy_of(exported.db, tmp_path / "mirror.db")
    config = changed(exported.config, store={"database": str(database), "endpoint_url": endpoint}, **sections)
    return mirror("-c", str(write_config(config, tmp_path / "mirror.toml")), "export", DEST, *args, timeout=timeout)


def killed_export_to(db_path, dest: str) -> None:
    """The database as an export killed mid-batch leaves it: a pending batch for ``dest``."""
    db = open_database(db_path)
    save_export_cursor(db, {"dest": dest, "pending": {"batch": 1, "low": "", "high": "2026-01-01T00:00:00Z",
                                                      "after": {}, "upto": {}}})
    db.close()


def one_line(done: subprocess.CompletedProcess) -> str:
    assert "Traceback" not in done.stderr, done.stderr
    lines = [line for line in done.stderr.splitlines() if "Error: " in line]
    assert len(lines) == 1, done.stderr
    return lines[0]


def test_a_password_in_the_endpoint_url_is_refused_and_never_printed(exported, tmp_path):
    done = export_to(exported, tmp_path, f"http://keyid:{SECRET}@127.0.0.1:{a_closed_port()}", "--json")
    assert done.returncode == 2
    line = one_line(done)
    assert "[store] endpoint_url" in line and "AWS_SECRET_ACCESS_KEY" in line
    assert SECRET not in done.stdout + done.stderr


def test_an_unreachable_s3_endpoint_after_a_killed_export_is_exit_5_in_one_line(exported, tmp_path):
    db_path = copy_of(exported.db, tmp_path / "mirror.db")
    killed_export_to(db_path, DEST)
    done = export_to(exported, tmp_path, f"http://127.0.0.1:{a_closed_port()}", database=db_path)
    assert done.returncode == 5, done.stderr
    assert DEST in one_line(done)


def test_the_nightly_sync_with_an_unreachable_s3_endpoint_reports_its_other_steps_and_exits_5(tmp_path):
    with SiteServer(BoardEditor.generate(seed=2, images=10)) as site:
        config = site_config(site, tmp_path)
        assert mirror("-c", str(write_config(config, tmp_path / "mirror.toml")), "sync", "images").returncode == 0
        killed_export_to(config.database, DEST)
        site.editor.add_images(2)
        config = changed(config, export={"enabled": True, "dest": DEST},
                         store={"endpoint_url": f"http://127.0.0.1:{a_closed_port()}"})
        done = mirror("-c", str(write_config(config, tmp_path / "mirror.toml")), "sync", "images", "--json")
    assert done.returncode == 5, done.stderr
    one_line(done)
    run = json.loads(done.stdout)
    assert run["exit_code"] == 5 and run["export"] is None
    assert run["resources"]["images"]["new"] == 2  # the sync before the export is reported as done


class Hostile(BaseHTTPRequestHandler):
    """An S3 endpoint whose every answer is a 500 with colour codes and a URL with a password."""

    protocol_version = "HTTP/1.1"

    def _answer(self) -> None:
        body = (f"\x1b[31mboom\x1b[0m at http://keyid:{SECRET}@127.0.0.1/bucket \x07").encode()
        self.send_response(500)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_PUT = do_HEAD = do_POST = do_DELETE = _answer  # noqa: N815 (http.server's names)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


@pytest.fixture
def hostile_endpoint():
    with handler_server(Hostile) as url:
        yield url


def test_a_library_error_reaches_the_terminal_and_json_as_printable_redacted_text(exported, tmp_path,
                                                                                  hostile_endpoint):
    done = export_to(exported, tmp_path, hostile_endpoint, "--json")
    assert done.returncode == 5, done.stderr
    line = one_line(done)
    error = json.loads(done.stdout)["error"]
    for text in (line, error):
        assert text.isprintable() and "\x1b" not in text and "[31m" not in text
        assert SECRET not in text


@pytest.fixture
def silent_endpoint():
    with silent_server() as url:
        yield url


def test_a_silent_s3_endpoint_is_given_up_on_after_export_timeout_saying_it_waits(exported, tmp_path,
                                                                                   silent_endpoint):
    started = time.monotonic()
    done = export_to(exported, tmp_path, silent_endpoint, timeout=90, export={"timeout": 2.0})
    took = time.monotonic() - started
    assert done.returncode == 5, done.stderr
    assert took < 30, took  # botocore's defaults under s3fs held it (and the mirror's lock) for 425 s
    assert f"waiting for {DEST}" in done.stderr and "export.timeout" in one_line(done)
