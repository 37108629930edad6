"""Walks against a site that answers wrong pages: `mirror sync` end to end, with the site's record faults.

A page that does not move a walk on must stop it with a clear message and exit 4 instead of
sending the same request forever; rejected records are kept once; ids out of range never move a
cursor; records the site counts but never sends are reported.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from mirror.store import open_database
from mirror.store.state import load_cursor

from ..support.configs import site_config, sync
from ..support.killing import sync_command

STOPPED = "so as not to loop; everything before is kept"
# The sections that make each crawler walk everything, so that its first page is a full one.
WALKS = {"images": {}, "comments": {"scope": "all"}, "posts": {"enabled": True}, "forums": {"audit_pages_per_run": 0},
         "tags": {"scope": "all", "refresh_per_run": 0}}


def run_cli(config, tmp_path, resource: str) -> subprocess.CompletedProcess:
    """``mirror sync <resource>`` in a fresh interpreter; a walk that loops runs into the timeout."""
    command = sync_command(config, tmp_path / f"{resource}.toml", resource)
    return subprocess.run(command, capture_output=True, text=True, timeout=20)


def last_run(db) -> tuple[str, str]:
    return db.execute("SELECT status, message FROM sync_runs ORDER BY id DESC LIMIT 1").fetchone()


@pytest.mark.parametrize("resource", list(WALKS))
def test_a_page_repeated_forever_stops_the_walk_with_a_clear_message(site, tmp_path, resource):
    config = site_config(site, tmp_path, **{resource: WALKS[resource]})
    if resource != "images":
        sync(config)  # the images the others follow, fetched from a healthy site
    site.set_faults("repeat")
    site.clear_requests()

    done = run_cli(config, tmp_path, resource)

    assert done.returncode == 4, done.stderr
    assert "again" in done.stderr and STOPPED in done.stderr and "Traceback" not in done.stderr
    status, message = last_run(open_database(config.database))
    assert status == "failed" and STOPPED in message
    assert len(site.requests) <= 40  # the repeat is seen at once, not after thousands of requests


@pytest.mark.parametrize("spoilt", ["missing", "null", "string", "negative"])
def test_records_whose_ids_do_not_advance_the_cursor_stop_the_walk_and_are_rejected_once(site, tmp_path, spoilt):
    config = site_config(site, tmp_path)
    site.set_faults(f"badids:{spoilt}")
    for _ in range(2):
        done = run_cli(config, tmp_path, "images")
        assert done.returncode == 4, done.stderr
        assert "do not advance the cursor" in done.stderr and STOPPED in done.stderr
    db = open_database(config.database)
    assert db["images"].count == 0
    assert db.execute("SELECT count(*), count(DISTINCT raw) FROM rejects").fetchone() == (50, 50)
    assert len(site.requests) == 2  # one page per run


@pytest.mark.parametrize("huge", [2**63 - 1, 2**64 + 5])
def test_an_id_out_of_range_is_rejected_and_never_moves_the_cursor(site, tmp_path, huge):
    config = site_config(site, tmp_path)
    site.set_faults(f"badids:{huge}/200")  # the images with ids 0 and 200
    done = run_cli(config, tmp_path, "images")
    assert done.returncode == 0, done.stderr
    db = open_database(config.database)
    real = sorted(site.editor.images)
    assert db.execute("SELECT count(*) FROM images").fetchone()[0] == len(real) - 2
    assert sorted(json.loads(r[0])["id"] for r in db.execute("SELECT raw FROM rejects")) == [huge, huge]
    assert load_cursor(db, "images")["high_water"] == real[-1]

    site.set_faults("")
    added = site.editor.add_images(5)
    report, db = sync(config)
    assert report.new == 5 and set(added) <= {r[0] for r in db.execute("SELECT id FROM images")}


def test_records_the_site_counts_but_never_sends_are_reported(site, tmp_path):
    config = site_config(site, tmp_path)
    site.set_faults("vanish:50")
    unseen = sum(1 for i in site.editor.images if i % 50 == 0)
    report, db = sync(config)
    expected = f"the site counted {len(site.editor.images)}: {unseen} not seen (deleted or hidden during the walk?)"
    assert report.fetched == len(site.editor.images) - unseen
    assert expected in report.summary()
    assert last_run(db) == ("ok", expected)
