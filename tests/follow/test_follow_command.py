"""`mirror follow` as a service: SIGTERM stops it with its state saved, it runs beside the nightly
sync (its own lock, not the runs' lock), one follower per mirror, and a site that refuses the
firehose ends it at once with exit code 9."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys


from prometheus_client.parser import text_string_to_metric_families

from mirror.commands import follow as follow_command
from mirror.errors import EXIT_BUSY, EXIT_NO_FIREHOSE
from mirror.follow import FollowReport
from mirror.store import open_database, run_lock
from mirror.store.state import load_cursor

from ..support.configs import changed, write_config
from ..support.pings import Pings
from ..support.waiting import wait_for


def mirror(config_path, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "mirror.cli", "-c", str(config_path), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def caught_up(config) -> dict | None:
    db = open_database(config.database)
    try:
        cursor = load_cursor(db, "follow")
    finally:
        db.close()
    return cursor if "high_water" in cursor else None


def test_sigterm_stops_the_follower_with_its_state_saved_beside_a_sync_and_one_follower_only(config, site, tmp_path):
    path = write_config(config, tmp_path / "mirror.toml")
    with run_lock(config.database):  # the nightly run's lock, held: the follower runs all the same
        follower = mirror(path, "follow", "--json")
        cursor = wait_for(lambda: follower.poll() is not None or caught_up(config))
        assert follower.poll() is None, follower.communicate()
    second, nightly = mirror(path, "follow"), mirror(path, "sync", "images", "--quiet")
    _, second_err = second.communicate(timeout=30)
    assert second.returncode == EXIT_BUSY and "already followed" in second_err
    _, nightly_err = nightly.communicate(timeout=60)
    assert nightly.returncode == 0, nightly_err  # the nightly sync beside the follower

    site.editor.edit_image(2, tags=["safe", "before the stop"])
    db = open_database(config.database)
    wait_for(lambda: "before the stop" in db.execute("SELECT raw FROM images WHERE id = 2").fetchone()[0])
    follower.send_signal(signal.SIGTERM)
    out, err = follower.communicate(timeout=30)
    assert follower.returncode == 0, err
    report = json.loads(out)
    assert report["events"]["image:update"] >= 1 and report["connected"] is False
    assert report["stopped_because"] == "stopped"
    saved = load_cursor(db, "follow")
    assert saved["sure_until"] >= cursor["sure_until"] and saved["counts"]["events"] == report["events_total"]
    (status, message) = db.execute("SELECT status, message FROM sync_runs WHERE resource = 'follow' "
                                   "ORDER BY id DESC LIMIT 1").fetchone()
    assert (status, message) == ("stopped", "interrupted")
    assert "stopped; everything received is stored" in err
    db.close()


def test_a_site_that_refuses_the_firehose_ends_it_in_one_line_with_exit_code_9(config, site, tmp_path):
    site.set_faults("wsrefuse")
    done = subprocess.run([sys.executable, "-m", "mirror.cli", "-c", str(write_config(config, tmp_path / "m.toml")),
                           "follow", "--quiet"], capture_output=True, text=True, timeout=60)
    assert done.returncode == EXIT_NO_FIREHOSE
    errors = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(errors) == 1 and "HTTP 403" in errors[0] and "mirror sync" in errors[0], done.stderr


async def test_it_rewrites_its_metrics_file_and_pings_the_health_check_while_connected(config, tmp_path, monkeypatch):
    pings = Pings()
    monkeypatch.setattr(follow_command, "REPORT_EVERY", 0.1)
    config = changed(config, report={"metrics_file": str(tmp_path / "mirror.prom"), "healthcheck_url": pings.url})
    report = FollowReport(connected=True, sure_until="2026-11-28T09:00:00Z", reconnects=2)
    report.events["image:update"] = 5
    reporting = asyncio.create_task(follow_command._reporting(config, report, lambda line: None))
    try:
        await asyncio.sleep(0.6)
        report.connected = False
        sent = len(pings.pings)
        await asyncio.sleep(0.3)
    finally:
        reporting.cancel()
        pings.close()
    assert sent >= 2 and len(pings.pings) == sent  # a ping a period while connected, none after
    assert all(method == "POST" and path == "/ping/3f1c-check" and "5 image:update" in body
               for method, path, body in pings.pings)
    metrics = {(s.name, tuple(s.labels.values())): s.value
               for family in text_string_to_metric_families((tmp_path / "mirror-follow.prom").read_text())
               for s in family.samples}
    assert metrics[("mirror_follow_events", ("image:update",))] == 5
    assert metrics[("mirror_follow_reconnects", ())] == 2 and metrics[("mirror_follow_connected", ())] == 0
    assert metrics[("mirror_follow_sure_until_timestamp_seconds", ())] == 1795856400
    assert not (tmp_path / "mirror.prom").exists()  # the nightly job's own file is left to it


def test_a_follower_killed_outright_while_edits_flow_misses_nothing_once_started_again(config, site, tmp_path):
    path = write_config(config, tmp_path / "mirror.toml")
    follower = mirror(path, "follow", "--quiet")
    wait_for(lambda: follower.poll() is not None or caught_up(config))
    for n in range(6):  # some arrive while it runs, some while it is dead
        site.editor.edit_image(2 + n, description=f"edit {n}")
        if n == 2:
            follower.send_signal(signal.SIGKILL)
            follower.wait(timeout=10)
    restarted = mirror(path, "follow", "--quiet")
    db = open_database(config.database)
    try:
        wait_for(lambda: all(json.loads(db.execute("SELECT raw FROM images WHERE id = ?", [2 + n]).fetchone()[0])
                             ["description"] == f"edit {n}" for n in range(6)))
    finally:
        restarted.send_signal(signal.SIGTERM)
        restarted.communicate(timeout=30)
        db.close()
    assert restarted.returncode == 0
