"""`mirror reverse URL --local` fetches the URL within an overall deadline: a server that drips a
byte now and then (each read well within its timeout) cannot hold it forever."""

from __future__ import annotations

import time
from http.server import BaseHTTPRequestHandler

import pytest
from click.testing import CliRunner

from mirror.cli import cli
from mirror.commands import reverse

from ..support.raw_servers import handler_server


class Drip(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "image/png")
        self.send_header("Content-Length", "100000")
        self.end_headers()
        try:
            for _ in range(600):  # 30 s, then cut: a fetch without a deadline fails the time check
                self.wfile.write(b"\0")
                self.wfile.flush()
                time.sleep(0.05)
        except OSError:
            pass  # the client gave up

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def dripping():
    with handler_server(Drip) as url:
        yield f"{url}/slow.png"


def test_a_slow_drip_is_cut_off_at_the_deadline_with_one_line(dripping, monkeypatch, tmp_path):
    monkeypatch.setattr(reverse, "FETCH_DEADLINE", 1.0, raising=False)
    began = time.monotonic()
    config = tmp_path / "mirror.toml"
    config.write_text(f'[site]\nbase_url = "http://127.0.0.1:9"\n[store]\ndatabase = "{tmp_path / "m.db"}"\n')
    result = CliRunner().invoke(cli, ["-c", str(config), "reverse", dripping, "--local"])
    took = time.monotonic() - began
    assert took < 15, f"{took:.1f} s"  # the deadline's 1 s and the command's own start, on a loaded machine too
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "took longer than 1 s" in lines[0] and "Traceback" not in result.output
