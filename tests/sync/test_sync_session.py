"""A rerun of a killed `mirror sync` goes on from the resource it was killed in (mirror/sync/session.py)."""

from __future__ import annotations

import subprocess
from datetime import datetime, timedelta, timezone

from mirror.dates import utc_text
from mirror.store import open_database
from mirror.store.state import load_cursor, save_cursor
from mirror.sync import session

from ..support.configs import site_config, sync
from ..support.killing import kill_when, sync_command

RESOURCES = ("images", "tags", "filters", "profiles")


def killed_after_tags(site, tmp_path):
    """A full sync of RESOURCES killed once tags finished: its config and command."""
    config = site_config(site, tmp_path, polite={"requests_per_second": 20},
                         **{name: {"enabled": True} for name in RESOURCES[1:]})
    command = sync_command(config, tmp_path / "m.toml")
    kill_when(command, config.database, lambda db: "tags" in session.finished_since(db, 0))
    site.clear_requests()
    return config, command


def searched(site, what: str) -> list:
    return [r for r in site.requests if r.path.endswith(f"/search/{what}")]


def test_a_rerun_does_not_ask_again_what_the_killed_run_finished(site, tmp_path):
    config, command = killed_after_tags(site, tmp_path)

    done = subprocess.run(command, capture_output=True, text=True, timeout=60)

    assert done.returncode == 0, done.stderr
    assert "images: finished by the interrupted run, not asked again" in done.stdout
    assert not searched(site, "images") and not searched(site, "tags")
    assert [r for r in site.requests if "/profiles/" in r.path]  # where it was killed, it goes on
    assert load_cursor(open_database(config.database), session.STATE_NAME) == {}  # the session is over
    site.clear_requests()
    sync(config, RESOURCES)  # the next run starts afresh: it asks what changed
    assert len(searched(site, "images")) == 1


def test_a_session_too_old_is_not_resumed(site, tmp_path):
    config, _ = killed_after_tags(site, tmp_path)
    db = open_database(config.database)
    old = load_cursor(db, session.STATE_NAME)
    then = datetime.now(timezone.utc) - session.RESUME_WITHIN - timedelta(minutes=1)
    save_cursor(db, session.STATE_NAME, {**old, "started_at": utc_text(then)})

    sync(config, RESOURCES)

    assert len(searched(site, "images")) == 1 and searched(site, "tags")
