"""contrib/systemd: the nightly service and its timer, and the follower's service, say what docs/nightly.md and mirror.errors say.

Read strictly (one key once per section, nothing outside a section), their command is one the CLI
accepts, their exit statuses are documented ones mapped sensibly, and where `systemd-analyze`
runs, systemd itself finds nothing wrong with them.
"""

from __future__ import annotations

import configparser
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from mirror import errors
from mirror.cli import cli

from ..support import docs

UNITS = Path(__file__).resolve().parents[2] / "contrib" / "systemd"
DOCUMENTED = {getattr(errors, name) for name in errors.__all__ if name.startswith("EXIT_")}


def unit(name: str) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(strict=True, interpolation=None, empty_lines_in_values=False,
                                       comment_prefixes=("#", ";"), inline_comment_prefixes=None)
    parser.optionxform = str  # systemd's keys are case-sensitive
    parser.read_string((UNITS / name).read_text(), source=name)
    return parser


def statuses(value: str) -> set[int]:
    return {int(word) for word in value.split()}


def test_the_service_runs_one_sync_of_the_mirror_in_its_folder():
    service = unit("booru-mirror.service")["Service"]
    program, *arguments = shlex.split(service["ExecStart"])
    assert program == service["WorkingDirectory"] + "/.venv/bin/mirror"  # the README's install line puts it there
    assert arguments == ["sync"]
    assert CliRunner().invoke(cli, [*arguments, "--help"]).exit_code == 0
    assert service["Type"] == "oneshot" and service["TimeoutStartSec"] == "infinity"
    assert service["User"] == "booru-mirror"
    assert service["ProtectSystem"] == "strict"
    assert service["WorkingDirectory"] in service["ReadWritePaths"].split()  # the database and files live there


def test_the_exit_codes_mapped_are_the_documented_ones():
    service = unit("booru-mirror.service")["Service"]
    success, prevent = statuses(service["SuccessExitStatus"]), statuses(service["RestartPreventExitStatus"])
    assert success | prevent <= DOCUMENTED
    assert success == {errors.EXIT_BUSY}  # last night's run still going is no failure
    assert service["Restart"] == "on-failure"
    assert errors.EXIT_UNAVAILABLE not in prevent  # a site that was down is tried again later
    assert prevent == DOCUMENTED - {0, errors.EXIT_UNAVAILABLE, errors.EXIT_BUSY}


def test_the_timer_runs_daily_catching_up_missed_nights_with_a_random_delay():
    timer = unit("booru-mirror.timer")
    assert timer["Timer"]["OnCalendar"].startswith("*-*-* ")
    assert timer["Timer"]["Persistent"] == "true"
    assert timer["Timer"]["RandomizedDelaySec"]
    assert timer["Install"]["WantedBy"] == "timers.target"


def test_the_follower_runs_mirror_follow_for_good_beside_the_nightly_service():
    service = unit("booru-mirror-follow.service")
    nightly = unit("booru-mirror.service")["Service"]
    program, *arguments = shlex.split(service["Service"]["ExecStart"])
    assert program == nightly["WorkingDirectory"] + "/.venv/bin/mirror" and arguments == ["follow"]
    assert CliRunner().invoke(cli, [*arguments, "--help"]).exit_code == 0
    assert service["Service"]["Type"] == "exec" and service["Install"]["WantedBy"] == "multi-user.target"
    for key in ("User", "WorkingDirectory", "ReadWritePaths", "EnvironmentFile", "ProtectSystem"):
        assert service["Service"][key] == nightly[key], key  # the same mirror, the same account


def test_the_follower_restarts_unless_a_restart_would_fail_the_same_way():
    service = unit("booru-mirror-follow.service")["Service"]
    prevent = statuses(service["RestartPreventExitStatus"])
    assert service["Restart"] == "on-failure" and prevent <= DOCUMENTED
    assert prevent == {errors.EXIT_USAGE, errors.EXIT_STORE, errors.EXIT_BUSY, errors.EXIT_NO_FIREHOSE}


def _verify_works() -> bool:
    if shutil.which("systemd-analyze") is None:
        return False
    probe = subprocess.run(["systemd-analyze", "--version"], capture_output=True, timeout=30)
    return probe.returncode == 0


@pytest.mark.skipif(not _verify_works(), reason="systemd-analyze is not installed or does not run here")
def test_systemd_analyze_verifies_both_units(tmp_path):
    """With ExecStart pointed at this checkout's `mirror`, which verify requires to exist."""
    installed = Path(sys.executable).parent / "mirror"
    service = (UNITS / "booru-mirror.service").read_text()
    (tmp_path / "booru-mirror.service").write_text(service.replace("/srv/mirror/.venv/bin/mirror", str(installed)))
    shutil.copy(UNITS / "booru-mirror.timer", tmp_path / "booru-mirror.timer")
    follower = (UNITS / "booru-mirror-follow.service").read_text()
    (tmp_path / "booru-mirror-follow.service").write_text(follower.replace("/srv/mirror/.venv/bin/mirror", str(installed)))
    result = subprocess.run(
        ["systemd-analyze", "verify", str(tmp_path / "booru-mirror.service"), str(tmp_path / "booru-mirror.timer"),
         str(tmp_path / "booru-mirror-follow.service")],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "booru-mirror" not in result.stderr, result.stderr  # no warning about either unit


@pytest.mark.parametrize("name", ["booru-mirror.service", "booru-mirror.timer", "booru-mirror-follow.service"])
def test_the_units_documentation_is_a_page_and_section_that_exist(name):
    """`systemctl help booru-mirror` opens it: the repository's page on the forge, at its section."""
    url = unit(name)["Unit"]["Documentation"]
    prefix = "https://github.com/booru-mirror/booru-mirror/blob/main/"
    assert url.startswith(prefix), url
    assert docs.link_resolves(docs.ROOT / "README.md", url.removeprefix(prefix)), url
