"""`mirror sync images` end to end against the local site on 127.0.0.1."""

from __future__ import annotations

import json
import math
import signal
import subprocess
import sys
import time

from mirror.store import open_database
from mirror.store.state import load_cursor
from mirror.sync.images import Walk

from ..support.configs import site_config, site_images, sync, write_config
from ..support.killing import kill_when, rerun, sync_command
from ..support.mirrored import assert_mirror_matches, mirrored

STATE_COLUMNS = "id, raw, stub, hidden_from_users, duplicate_of, deletion_reason, score, tags, updated_at"


def test_full_sync_mirrors_exactly_what_the_site_returns(site, tmp_path):
    config = site_config(site, tmp_path, images={"query": "safe || suggestive"})
    report, db = sync(config)
    records = assert_mirror_matches(db, site, "safe || suggestive")
    assert report.fetched == len(records) > 50
    assert report.requests == math.ceil((len(records) + 1) / 50)
    tag_names = {n for r in records for n in r.get("tags", [])}
    assert {row["name"] for row in db["tags"].rows} == tag_names
    hits = {r["id"] for r in db["images"].search("safe", quote=True, limit=1000)}
    assert hits and hits <= {r["id"] for r in records}


def test_second_sync_with_nothing_changed_costs_at_most_two_requests(site, tmp_path):
    config = site_config(site, tmp_path)
    sync(config)
    site.clear_requests()
    report, db = sync(config)
    assert len(site.requests) <= 2
    assert report.fetched == 0
    assert db["sync_runs"].count == 2


def test_changes_on_the_site_cost_requests_proportional_to_the_change(site, tmp_path):
    config = site_config(site, tmp_path)
    _, db = sync(config)
    before = mirrored(db)
    visible = [i for i, row in before.items() if row["hidden_from_users"] == 0]
    edited, hidden, merged = visible[:8], visible[8], visible[9]
    new_ids = site.editor.add_images(120)
    for image_id in edited[:4]:
        site.editor.edit_image(image_id, tags=["safe", "pony", "fresh paint"])
    for image_id in edited[4:]:
        site.editor.edit_image(image_id, score=9999)
    site.editor.hide_image(hidden, reason="Rule #1: no fun allowed")
    site.editor.merge_image(merged, into=visible[10])
    site.clear_requests()

    report, db = sync(config)

    assert len(site.requests) <= math.ceil(120 / 50) + math.ceil(10 / 50) + 2
    assert report.new == 120 and set(new_ids) <= set(mirrored(db))
    assert_mirror_matches(db, site)
    for image_id in (hidden, merged):  # the full record is kept, and marked
        row = db["images"].get(image_id)
        assert json.loads(row["raw"]) == json.loads(before[image_id]["raw"])
        assert row["tags"] == before[image_id]["tags"] and row["hidden_from_users"] == 1
    assert db["images"].get(hidden)["deletion_reason"] == "Rule #1: no fun allowed"
    assert db["images"].get(merged)["duplicate_of"] == visible[10]
    fresh = db.execute("SELECT tags.name FROM tags JOIN image_tags ON tag_id = tags.id WHERE image_id = ?",
                       [edited[0]]).fetchall()
    assert {"fresh paint"} <= {r[0] for r in fresh}


def test_a_changed_query_starts_a_fresh_walk_and_keeps_what_is_there(site, tmp_path):
    _, db = sync(site_config(site, tmp_path, images={"query": "safe"}))
    safe = set(mirrored(db))
    report, db = sync(site_config(site, tmp_path, images={"query": "explicit"}))
    explicit = {r["id"] for r in site_images(site, "explicit")}
    assert set(mirrored(db)) == safe | explicit and report.fetched == len(explicit)


def snapshot(db) -> dict:
    return {
        "images": [tuple(r) for r in db.execute(f"SELECT {STATE_COLUMNS} FROM images ORDER BY id")],
        "tags": [tuple(r) for r in db.execute("SELECT id, name FROM tags ORDER BY id")],
        "links": [tuple(r) for r in db.execute("SELECT * FROM image_tags ORDER BY image_id, tag_id")],
    }


def test_a_sync_killed_mid_walk_resumes_to_the_same_mirror(site, tmp_path):
    site.editor.add_images(250)  # about ten pages
    killed = site_config(site, tmp_path / "killed", polite={"requests_per_second": 8})
    command = sync_command(killed, tmp_path / "killed.toml", "images")
    kill_when(command, killed.database,
              lambda db: (load_cursor(db, "images").get("walk") or {}).get("after", -1) > 100)
    partial = open_database(killed.database).execute("SELECT count(*) FROM images").fetchone()[0]
    assert 0 < partial < len(site_images(site))

    rerun(command)
    _, whole = sync(site_config(site, tmp_path / "whole"))
    assert snapshot(open_database(killed.database)) == snapshot(whole)
    assert_mirror_matches(open_database(killed.database), site)


def wait_for_requests(site, count: int, timeout: float = 30) -> None:
    """Until the site has seen ``count`` requests: a sync in a subprocess is under way."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and len(site.requests) < count:
        time.sleep(0.02)


def test_sigterm_stops_with_a_clear_message_and_the_next_run_resumes(site, tmp_path):
    site.editor.add_images(250)
    config = site_config(site, tmp_path, polite={"requests_per_second": 8})
    command = [sys.executable, "-m", "mirror.cli", "-c", str(write_config(config, tmp_path / "m.toml")),
               "sync", "images"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_requests(site, 3)
    process.send_signal(signal.SIGTERM)  # what systemd and `timeout` send
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 1
    assert "interrupted; everything stored so far is kept" in stderr and "Traceback" not in stderr
    db = open_database(config.database)
    assert db.execute("SELECT status, message FROM sync_runs").fetchone() == ("failed", "interrupted")
    assert subprocess.run(command, capture_output=True, timeout=60).returncode == 0
    assert_mirror_matches(open_database(config.database), site)


def test_a_second_run_on_a_busy_mirror_does_nothing_and_says_why(site, tmp_path):
    site.editor.add_images(250)
    site.set_faults("slow:3")  # the first run walks for half a minute, longer than a loaded machine starts the second
    config = site_config(site, tmp_path)
    command = sync_command(config, tmp_path / "m.toml", "images")
    first = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_requests(site, 2)
    # The same database, with a query of its own so that any request it sent would show.
    marked = site_config(site, tmp_path, images={"query": "id.gte:0"})
    second = subprocess.run(sync_command(marked, tmp_path / "second.toml", "images"),
                            capture_output=True, text=True, timeout=60)
    assert first.poll() is None, "the first run should still be walking"
    site.set_faults("")
    assert second.returncode == 7
    assert f"is being written by mirror (pid {first.pid})" in second.stderr
    assert "this run did nothing" in second.stderr and "Traceback" not in second.stderr
    assert not [r for r in site.requests if "id.gte" in r.query]
    assert first.wait(timeout=60) == 0
    # The lock goes with the process: the next run starts normally.
    assert subprocess.run(command, capture_output=True, timeout=60).returncode == 0
    assert_mirror_matches(open_database(config.database), site)


def test_a_walk_saves_its_cursor_with_the_keys_and_order_it_always_had():
    saved = {"high_water": 120, "since": "2026-01-02T03:04:05Z", "after": 170, "started": "2026-01-03T00:00:00Z",
             "counted": 60, "unseen": 1, "previous": [60, 50]}
    assert json.dumps(Walk.from_json(saved).to_json()) == json.dumps(saved)
    fresh = Walk(high_water=None, since=None, started="2026-01-03T00:00:00Z")
    assert list(fresh.to_json()) == list(saved)


def test_updated_counts_only_the_records_whose_stored_content_changed(site, tmp_path):
    """A refresh re-reads every image the overlap covers; "updated" is the ones that differ from what
    was kept (the summary said every known record was updated), and a stub seen again is no change."""
    config = site_config(site, tmp_path, images={"refresh_overlap": 10**9})
    report, _ = sync(config)
    edited = sorted(site.editor.images)[7]
    site.editor.edit_image(edited, score=site.editor.images[edited]["score"] + 3)
    again, db = sync(config)
    assert again.fetched >= report.fetched - 1 and again.new == 0 and again.updated == 1
    assert "1 updated" in again.summary()
    assert db.execute("SELECT updated FROM sync_runs ORDER BY id DESC LIMIT 1").fetchone()[0] == 1
