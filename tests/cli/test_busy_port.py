"""A port another program holds: `mirror serve`, `browse` and `site` say so in one line and exit 8
(not uvicorn's traceback and the 3 that reads as "site unavailable")."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from mirror.errors import EXIT_PORT_BUSY
from mirror.store import open_database

MIRROR = str(Path(sys.executable).parent / "mirror")


@pytest.fixture
def held_port():
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    yield holder.getsockname()[1]
    holder.close()


@pytest.mark.parametrize("command", [["site", "--images", "5"], ["serve"], ["browse"]])
def test_a_busy_port_is_one_line_and_its_own_exit_status(command, held_port, tmp_path):
    open_database(tmp_path / "mirror.db").conn.close()  # serve and browse want a mirror before they listen
    result = subprocess.run([MIRROR, *command, "--port", str(held_port)], cwd=tmp_path, capture_output=True,
                            text=True, timeout=120, env={"MIRROR_DATABASE": str(tmp_path / "mirror.db"),
                                                         "PATH": "/usr/bin:/bin"})
    assert result.returncode == EXIT_PORT_BUSY, result.stderr
    assert result.stderr == (f"Error: port {held_port} on 127.0.0.1 is in use by another program; "
                             "choose another with --port\n")
    assert "Generating" not in result.stdout  # the site takes its port before it makes a board


def test_an_address_not_of_this_machine_is_said_as_such(tmp_path):
    result = subprocess.run([MIRROR, "site", "--images", "5", "--host", "192.0.2.1", "--port", "0"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == EXIT_PORT_BUSY
    assert result.stderr == "Error: cannot listen on 192.0.2.1: it is not an address of this machine; " \
                            "choose another with --host\n"
