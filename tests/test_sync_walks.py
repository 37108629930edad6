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

from .conftest import site_config, sync
from .killing import sync_command

STOPPED = "so as not to loop; everything before is kept"
# The sections that make each crawler walk everything, so that its first page is a full one.
WALKS = {"images": {}, "comments": {"scope": "all"}, "posts": {"enabled": True}, "forums": {"audit_pages_per_run": 0}}


def run_cli(config, tmp_path, resource: str) -> subprocess.CompletedProcess:
    """``mirror sync <resource>`` in a fresh interpreter; a walk that loops runs into the timeout."""
    command = sync_command(config, tmp_path / f"{resource}.toml", resource)
    return subprocess.run(command, capture_output=True, text=True, timeout=20)


def last_run(db) -> tuple[str, str]:
    return db.execute("SELECT status, message FROM sync_runs ORDER BY id DESC LIMIT 1").fetchone()


@pytest.mark.parametrize("huge", [2**63 - 1, 2**64 + 5])
def test_an_id_out_of_range_is_rejected_and_never_moves_the_cursor(site, tmp_path, huge):
    config = site_config(site, tmp_path)
    site.set_faults(f"badids:{huge}/200")  # the images with ids 0 and 200
    done = run_cli(config, tmp_path, "images")
    assert done.returncode == 0, done.stderr
    db = open_database(config.database)
    real = sorted(site.dataset.images)
    assert db.execute("SELECT count(*) FROM images").fetchone()[0] == len(real) - 2
    assert sorted(json.loads(r[0])["id"] for r in db.execute("SELECT raw FROM rejects")) == [huge, huge]
    assert load_cursor(db, "images")["high_water"] == real[-1]

    site.set_faults("")
    added = site.dataset.add_images(5)
    report, db = sync(config)
    assert report.new == 5 and set(added) <= {r[0] for r in db.execute("SELECT id FROM images")}
