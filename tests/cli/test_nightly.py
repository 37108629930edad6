"""A nightly job that reports itself (issue 30): --quiet, --json, timestamped lines and a header,
the metrics file, the health-check pings, and `verify --sample`, each through the real CLI
against the local site."""

from __future__ import annotations

import json
import os
import re
import socketserver
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from mirror.commands.healthcheck import Pinger
from mirror.localsite.board.editor import BoardEditor
from mirror.localsite.http.server import SiteServer

from ..support.configs import changed, site_config, site_images, write_config
from ..support.pings import Pings

STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ ")
API_KEY = "nightly-secret-key-123"


@pytest.fixture(scope="module")
def small_site():
    with SiteServer(BoardEditor.generate(seed=5, images=40)) as server:
        yield server


@pytest.fixture
def site(small_site):
    small_site.set_faults("")
    return small_site


def mirror(config_path: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """`mirror -c CONFIG ARGS` in its own process, its output through pipes as under cron."""
    return subprocess.run([sys.executable, "-m", "mirror.cli", "-c", str(config_path), *args], check=False,
                          capture_output=True, text=True, timeout=120, env=env)


def nightly_config(site, tmp_path: Path, **report) -> Path:
    config = site_config(site, tmp_path, download={"enabled": True, "requests_per_second": 500,
                                                   "partial_dir": str(tmp_path / "partial")})
    config = changed(config, report=report) if report else config
    return write_config(config, tmp_path / "mirror.toml")


def test_a_clean_night_with_quiet_prints_nothing_and_exits_0(site, tmp_path):
    config = nightly_config(site, tmp_path)
    first = mirror(config, "sync", "--quiet")
    again = mirror(config, "sync", "--quiet")
    verified = mirror(config, "verify", "--quiet")
    for run in (first, again, verified):
        assert (run.returncode, run.stdout, run.stderr) == (0, "", "")


def test_quiet_still_prints_warnings(site, tmp_path):
    config = nightly_config(site, tmp_path)
    assert mirror(config, "sync", "--quiet").returncode == 0
    kept = next((tmp_path / "files" / "full").rglob("*.*"))
    kept.unlink()
    run = mirror(config, "verify", "--quiet")
    assert run.returncode == 6 and run.stdout == ""
    (warning,) = run.stderr.splitlines()
    assert STAMP.match(warning) and "missing: image" in warning and str(kept) in warning


def test_lines_to_a_pipe_carry_a_utc_time_and_a_run_starts_with_a_header(site, tmp_path):
    config = nightly_config(site, tmp_path)
    run = mirror(config, "sync", "images")
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines and all(STAMP.match(line) for line in lines)
    header = STAMP.sub("", lines[0])
    assert header.startswith("mirror 0.1.0 sync: ")
    assert f"config {config}" in header and f"database {tmp_path / 'mirror.db'}" in header
    assert f"sync images from {site.url}" in header and "then download (thumb, full" in header
    assert any(STAMP.sub("", line).startswith("images: 40 fetched") for line in lines[1:])


def test_json_describes_each_run_as_one_object_on_stdout(site, tmp_path):
    config = nightly_config(site, tmp_path)
    synced = mirror(config, "sync", "--json")
    assert synced.returncode == 0, synced.stderr
    run = json.loads(synced.stdout)
    assert run["command"] == "sync" and run["exit_code"] == 0 and run["error"] is None
    assert run["resources"]["images"]["new"] == 40 and run["resources"]["images"]["fetched"] == 40
    assert run["downloads"]["downloaded"] > 0 and run["downloads"]["bytes"] > 0
    assert run["files"]["kept"] == run["downloads"]["downloaded"] and run["files"]["pending"] == 0
    assert run["requests"] >= run["resources"]["images"]["requests"] + run["downloads"]["requests"]
    assert run["duration_seconds"] >= 0 and run["started_at"] <= run["finished_at"]
    assert "images: 40 fetched" in synced.stderr  # the summary lines stay out of stdout

    downloaded = json.loads(mirror(config, "download", "--json").stdout)
    assert downloaded["command"] == "download" and downloaded["downloads"]["downloaded"] == 0
    verified = json.loads(mirror(config, "verify", "--json").stdout)
    assert verified["verify"] == {"checked": run["files"]["kept"], "sample": None, "missing": [], "corrupt": [],
                                  "repaired": None, "not_repaired": 0}
    assert run["checks"]["never_verified"] == run["files"]["kept"] and verified["checks"]["never_verified"] == 0
    assert verified["checks"]["last_verified"] >= verified["started_at"]


def test_json_of_a_failed_run_carries_its_exit_code_and_error(site, tmp_path):
    config = nightly_config(site, tmp_path)
    site.set_faults("down")
    path = write_config(changed(site_config(site, tmp_path, polite={"give_up_after": 2}), report={}), config)
    failed = mirror(path, "sync", "--json")
    assert failed.returncode == 3
    run = json.loads(failed.stdout)
    assert run["exit_code"] == 3 and "gave up" in run["error"] and run["retries"] >= 2


def metrics_of(path: Path) -> dict[tuple[str, frozenset], float]:
    families = text_string_to_metric_families(path.read_text())
    return {(sample.name, frozenset(sample.labels.items())): sample.value
            for family in families for sample in family.samples}


def test_the_metrics_file_holds_each_commands_last_run(site, tmp_path):
    metrics = tmp_path / "textfile" / "mirror.prom"
    metrics.parent.mkdir()
    config = nightly_config(site, tmp_path, metrics_file=str(metrics))
    site.set_faults("ratelimit")
    assert mirror(config, "sync").returncode == 0
    site.set_faults("")
    assert mirror(config, "verify").returncode == 0

    found = metrics_of(metrics)
    sync, verify = frozenset({("command", "sync")}), frozenset({("command", "verify")})
    assert found["mirror_run_exit_code", sync] == 0 and found["mirror_run_exit_code", verify] == 0
    assert found["mirror_run_records_new", sync | {("resource", "images")}] == 40
    assert found["mirror_run_records_changed", sync | {("resource", "images")}] == 0
    assert found["mirror_run_rate_limited", sync] >= 1 and found["mirror_run_retries", sync] >= 1
    assert found["mirror_run_downloaded_bytes", sync] > 0
    kept = found["mirror_files", frozenset({("state", "kept")})]
    assert kept == found["mirror_run_downloaded_files", sync] and found["mirror_files", frozenset({("state", "pending")})] == 0
    assert found["mirror_run_damaged_files", verify] == 0
    assert found["mirror_files_never_verified", frozenset()] == 0  # the verify re-hashed every file
    assert found["mirror_files_oldest_check_timestamp_seconds", frozenset()] >= found[
        "mirror_run_start_timestamp_seconds", sync] - 1
    assert found["mirror_run_start_timestamp_seconds", sync] <= found["mirror_run_end_timestamp_seconds", sync]
    assert found["mirror_run_end_timestamp_seconds", sync] <= found["mirror_run_start_timestamp_seconds", verify]
    assert [p.name for p in metrics.parent.iterdir()] == ["mirror.prom"]  # no temporary file left


def test_an_unwritable_metrics_file_warns_and_the_run_goes_on(site, tmp_path):
    config = nightly_config(site, tmp_path, metrics_file=str(tmp_path / "no such folder" / "mirror.prom"))
    run = mirror(config, "sync", "--quiet")
    assert run.returncode == 0 and run.stdout == ""
    (warning,) = run.stderr.splitlines()
    assert "metrics: cannot write" in warning and "the run goes on" in warning


def special_files(tmp_path: Path) -> dict[str, Path]:
    """Paths that are not metrics files: a FIFO, a link to /dev/zero, a folder, a 5 MB file."""
    fifo, zero, folder, big = (tmp_path / name for name in ("fifo.prom", "zero.prom", "folder.prom", "big.prom"))
    os.mkfifo(fifo)
    zero.symlink_to("/dev/zero")
    folder.mkdir()
    big.write_bytes(b"# not a metrics file\n" * 250_000)
    return {"a FIFO": fifo, "a character device": zero, "a folder": folder, "more than 4 MB": big}


@pytest.mark.parametrize("kind", ["a FIFO", "a character device", "a folder"])
def test_a_metrics_path_that_is_not_a_file_is_one_config_error(kind, tmp_path):
    path = special_files(tmp_path)[kind]
    config = tmp_path / "mirror.toml"
    config.write_text(f'[store]\ndatabase = "{tmp_path / "mirror.db"}"\n[report]\nmetrics_file = "{path}"\n')
    run = mirror(config, "verify", "--quiet")  # no request: nothing kept yet
    assert run.returncode == 2 and run.stdout == ""
    (line,) = run.stderr.splitlines()
    assert "[report] metrics_file" in line and f"is {kind}, not a regular file" in line, line


# write_metrics in a child bounded in memory and time: /dev/zero read to the end would take every byte
# the machine has before the MemoryError.
WRITE_METRICS = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (2**30, 2**30))
from mirror.commands.metrics import write_metrics
from mirror.commands.outcome import RunOutcome
try:
    write_metrics(sys.argv[1], RunOutcome("verify", "0", None, "mirror.db", "verify"))
except OSError as e:
    print(e)
"""


def test_a_metrics_path_that_became_something_else_since_the_check_is_left_alone_at_once(tmp_path):
    for kind, path in special_files(tmp_path).items():
        before = path.lstat()
        started = time.monotonic()
        done = subprocess.run([sys.executable, "-c", WRITE_METRICS, str(path)], capture_output=True, text=True,
                              timeout=60)
        assert done.returncode == 0 and time.monotonic() - started < 30, (kind, done.stderr[-500:])
        assert kind in done.stdout, (kind, done.stdout)
        after = path.lstat()
        assert (after.st_ino, after.st_mode, after.st_size) == (before.st_ino, before.st_mode, before.st_size), kind
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.prom", "fifo.prom", "folder.prom", "zero.prom"]


@pytest.fixture
def pings():
    service = Pings()
    yield service
    service.close()


def test_a_run_pings_start_then_success(site, tmp_path, pings):
    config = nightly_config(site, tmp_path, healthcheck_url=pings.url)
    run = mirror(config, "sync", "--quiet", env=dict(os.environ, MIRROR_API_KEY=API_KEY))
    assert (run.returncode, run.stdout, run.stderr) == (0, "", "")
    assert [(method, path) for method, path, _ in pings.pings] == [("POST", "/ping/3f1c-check/start"),
                                                                 ("POST", "/ping/3f1c-check")]
    assert json.loads(pings.pings[1][2])["resources"]["images"]["new"] == 40
    assert all(API_KEY not in path + body for _, path, body in pings.pings)


def test_a_failed_run_pings_its_exit_code(site, tmp_path, pings):
    path = write_config(changed(site_config(site, tmp_path, polite={"give_up_after": 2}),
                                report={"healthcheck_url": pings.url + "/"}), tmp_path / "mirror.toml")
    site.set_faults("down")
    run = mirror(path, "sync", "--quiet", env=dict(os.environ, MIRROR_API_KEY=API_KEY))
    assert run.returncode == 3
    assert [path for _, path, _ in pings.pings] == ["/ping/3f1c-check/start", "/ping/3f1c-check/3"]
    assert json.loads(pings.pings[1][2])["exit_code"] == 3
    assert all(API_KEY not in path + body for _, path, body in pings.pings)


def test_a_failing_ping_is_one_warning_and_never_fails_the_run(site, tmp_path):
    service = Pings(status=500)
    try:
        config = nightly_config(site, tmp_path, healthcheck_url=service.url)
        run = mirror(config, "sync", "--quiet")
    finally:
        service.close()
    assert run.returncode == 0 and run.stdout == ""
    warnings = run.stderr.splitlines()
    assert len(warnings) == 2 and all("health check: the ping to http://127.0.0.1:" in w for w in warnings)
    assert all("HTTP 500" in w and "3f1c-check" not in w for w in warnings)  # the check's path is its secret


class Trickle:
    """A health-check host on 127.0.0.1 that reads the ping, then answers one byte every half second
    for as long as the client listens (a minute at most)."""

    def __init__(self) -> None:
        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                self.request.recv(65536)
                for byte in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"x" * 120:
                    try:
                        self.request.sendall(bytes([byte]))
                    except OSError:
                        return
                    time.sleep(0.5)

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/ping/3f1c-check"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_a_host_trickling_its_answer_is_given_up_at_the_timeout_and_the_run_goes_on(tmp_path):
    timeout = 2.0
    host = Trickle()
    try:
        config = tmp_path / "mirror.toml"
        config.write_text(f'[store]\ndatabase = "{tmp_path / "mirror.db"}"\n'
                          f'[report]\nhealthcheck_url = "{host.url}"\nhealthcheck_timeout = {timeout}\n')
        started = time.monotonic()
        run = subprocess.run([sys.executable, "-m", "mirror.cli", "-c", str(config), "verify", "--quiet"],
                             capture_output=True, text=True, timeout=100)
        took = time.monotonic() - started
    finally:
        host.close()
    assert run.returncode == 0 and run.stdout == "", run.stderr
    warnings = run.stderr.splitlines()
    assert len(warnings) == 2 and all("health check: the ping to http://127.0.0.1:" in w and f"within {timeout:g} s"
                                      in w and "3f1c-check" not in w for w in warnings), warnings
    assert 2 * timeout <= took < 2 * timeout + 30, f"the run took {took:.1f} s with two pings of {timeout} s"


def slice_of(db_path: Path, parts: int) -> dict[int, int]:
    """Kept files per slice (image id modulo ``parts``, plus one), and how many were re-hashed."""
    import sqlite3

    with sqlite3.connect(db_path) as conn:
        return dict(conn.execute(f"SELECT image_id % {parts} + 1, count(verified_at) FROM downloads "
                                 "WHERE status = 'done' GROUP BY 1"))


def test_verify_sample_checks_one_slice_a_night_and_auto_goes_round_every_slice(site, tmp_path):
    config = nightly_config(site, tmp_path)
    kept = json.loads(mirror(config, "sync", "--json").stdout)["files"]["kept"]
    time.sleep(1.05)  # after the downloads' second
    one = json.loads(mirror(config, "verify", "--sample", "2/3", "--json").stdout)["verify"]
    checked = slice_of(tmp_path / "mirror.db", 3)
    assert one["sample"] == "2/3" and checked[1] == checked[3] == 0 and checked[2] == one["checked"] > 0

    nights = []
    for _ in range(3):
        time.sleep(1.05)  # checks are dated to the second, as the site dates things: nights are hours apart
        nights.append(json.loads(mirror(config, "verify", "--sample", "auto/3", "--json").stdout)["verify"])
    assert [night["sample"] for night in nights] == ["1/3", "3/3", "2/3"]  # the slice checked longest ago first
    assert sum(night["checked"] for night in nights) == kept  # every file once in three nights
    assert set(slice_of(tmp_path / "mirror.db", 1).values()) == {kept}

    status = mirror(config, "status")
    assert "never re-hashed by verify" in status.stdout
    assert json.loads(mirror(config, "status", "--json").stdout)["checks"]["never_verified"] == 0


@pytest.mark.parametrize("sample", ["0/3", "4/3", "3", "a/3", "1/0", "1/99999999999999999999", "auto/9223372036854775808",
                                    "1/1000000000001"])
def test_verify_refuses_a_sample_that_is_not_k_of_n_in_one_line(sample, tmp_path):
    run = mirror(tmp_path / "none.toml", "verify", "--sample", sample)
    assert run.returncode == 2 and run.stdout == "", run.stderr
    (line,) = run.stderr.splitlines()
    assert line.startswith("Error: --sample") and sample in line


def test_a_missing_file_in_the_slice_is_found_and_one_outside_it_is_not(site, tmp_path):
    config = nightly_config(site, tmp_path)
    assert mirror(config, "sync", "--quiet").returncode == 0
    lost = next((tmp_path / "files" / "full").rglob("*.*"))
    image_id = int(lost.stem)
    lost.unlink()
    other = f"{(image_id + 1) % 2 + 1}/2"
    assert mirror(config, "verify", "--sample", other, "--quiet").returncode == 0
    found = mirror(config, "verify", "--sample", f"{image_id % 2 + 1}/2", "--quiet")
    assert found.returncode == 6 and f"missing: image {image_id} full" in found.stderr


def test_status_says_where_each_crawler_stands_in_words_and_as_json(site, tmp_path):
    config = nightly_config(site, tmp_path)
    assert mirror(config, "sync", "--quiet").returncode == 0
    shown = mirror(config, "status").stdout.splitlines()
    stands = shown[shown.index("Where each crawler stands:") + 1:shown.index("Last runs:") - 1]
    images = next(line for line in stands if line.split()[0] == "images")
    high = max(record["id"] for record in site_images(site))
    assert f"every image up to id {high} mirrored" in images and "{" not in images
    assert all(len(line) < 250 and '"high_water"' not in line for line in stands)

    status = json.loads(mirror(config, "status", "--json").stdout)
    assert status["exists"] is True and status["records"]["images"] == 40
    assert status["cursors"]["images"]["cursor"]["high_water"] == high
    assert status["cursors"]["images"]["says"] == images.split(None, 1)[1]
    assert status["downloads"]["files_to_download"] == 0 and status["checks"]["never_verified"] > 0
    assert {run["resource"] for run in status["last_runs"]} >= {"images"}


def test_the_error_line_of_a_run_in_a_log_carries_its_time_too(site, tmp_path):
    path = write_config(site_config(site, tmp_path, polite={"give_up_after": 2}), tmp_path / "mirror.toml")
    site.set_faults("down")
    run = mirror(path, "sync", "--quiet")
    assert run.returncode == 3
    error = run.stderr.splitlines()[-1]
    assert STAMP.match(error) and STAMP.sub("", error).startswith("Error: gave up on ")


def test_status_reads_a_mirror_made_before_files_had_a_check_time(site, tmp_path):
    """status migrates nothing, so a mirror an older version made has no downloads.verified_at yet."""
    import sqlite3

    config = nightly_config(site, tmp_path)
    assert mirror(config, "sync", "--quiet").returncode == 0
    with sqlite3.connect(tmp_path / "mirror.db") as conn:
        kept = conn.execute("SELECT count(*) FROM downloads WHERE status = 'done'").fetchone()[0]
        conn.execute("ALTER TABLE downloads DROP COLUMN verified_at")
        conn.execute("DELETE FROM _sqlite_migrations WHERE name = '0026_downloads_verified_at'")
    conn.close()
    status = mirror(config, "status", "--json")
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["checks"]["never_verified"] == kept
    assert mirror(config, "verify", "--sample", "auto/2", "--quiet").returncode == 0  # a writing run migrates it
    with sqlite3.connect(tmp_path / "mirror.db") as conn:
        assert conn.execute("SELECT count(verified_at) FROM downloads").fetchone()[0] > 0
    conn.close()


def test_a_password_in_the_health_check_url_is_never_printed(site, tmp_path):
    """The ping's warning named the host with its userinfo, password and all (issue 41)."""
    service = Pings(status=500)
    try:
        url = service.url.replace("http://", "http://hc:pa55w0rd-9@", 1)
        run = mirror(nightly_config(site, tmp_path, healthcheck_url=url), "sync", "--quiet")
    finally:
        service.close()
    assert run.returncode == 0
    warnings = run.stderr.splitlines()
    assert len(warnings) == 2 and all("the ping to http://hc:***@127.0.0.1:" in w for w in warnings)
    assert "pa55w0rd" not in run.stdout + run.stderr


def test_a_ping_url_httpx_refuses_is_one_warning_not_a_crash():
    """httpx.InvalidURL is no HTTPError: a control character the config check did not stop (a
    config made in code) crashed the run before it started (issue 41)."""
    warned = []
    pinger = Pinger("https://hc-ping.com/uuid\r\nX-Evil: 1", timeout=1, user_agent="tests", warn=warned.append)
    pinger.start()
    pinger.end(3, "{}")
    assert len(warned) == 2
    assert all(w.startswith("health check: the ping to https://hc-ping.com failed (") for w in warned)
