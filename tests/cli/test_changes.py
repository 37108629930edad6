"""`mirror changes` for people, on a mirror of the local site: a first sync says a handful of lines
(its records summed up per resource); after a night with a deletion, a merge and a retag those three
come first; --event, --resource and --id image:5 select; tags and users are named; a value it does
not know is one line and exit 2."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from mirror.cli import cli
from mirror.commands.changes import describe
from mirror.localsite.board.editor import BoardEditor
from mirror.localsite.http.server import SiteServer
from mirror.store.history_read import Change

from ..support.configs import RESOURCES, site_config, sync, write_config

EVERYTHING = dict(tags={"enabled": True, "scope": "all", "refresh_per_run": 5000},
                  profiles={"enabled": True}, comments={"enabled": True, "scope": "all"})


@pytest.fixture(scope="module")
def night(tmp_path_factory):
    """A mirror after its first sync, and after a night with a deletion, a merge and a retag."""
    tmp = tmp_path_factory.mktemp("changes")
    with SiteServer(BoardEditor.generate(seed=5, images=40)) as site:
        editor = site.editor
        config = site_config(site, tmp, **EVERYTHING)
        path = write_config(config, tmp / "mirror.toml")
        sync(config, RESOURCES)
        first = run(path, "--since", "1h")
        shown = [i for i, im in sorted(editor.images.items()) if not im["hidden_from_users"]]
        deleted, merged, into, retagged = shown[3], shown[5], shown[6], shown[8]
        old = editor.images[retagged]["tags"]
        dropped = next(t for t in old if ":" not in t and t not in ("safe", "suggestive", "questionable", "explicit"))
        editor.edit_image(retagged, tags=[t for t in old if t != dropped] + ["brand new tag"])
        editor.hide_image(deleted, "Rule #2")
        editor.merge_image(merged, into)
        sync(config, RESOURCES)
        _, db = sync(config, ())
        yield {"path": path, "first": first, "db": db, "deleted": deleted, "merged": merged, "into": into,
               "retagged": retagged, "dropped": dropped}


def run(path, *args: str, code: int = 0):
    result = CliRunner().invoke(cli, ["-c", str(path), "changes", *args])
    assert result.exit_code == code, result.output
    return result


def test_a_first_sync_is_a_handful_of_lines_one_per_resource(night):
    lines = night["first"].output.splitlines()
    db = night["db"]
    assert 3 <= len(lines) <= 9, lines
    # the first sync filled empty tables: its sightings are a count, not a history row each, and
    # --event first_seen would only say the count again
    assert all(line.endswith(" first seen") for line in lines), lines
    first = db.execute("SELECT count FROM history_first_seen WHERE resource = 'images' AND counted = 1").fetchone()[0]
    assert first and any(f"  {first} images first seen" in line for line in lines)


def test_after_a_night_the_deletion_the_merge_and_the_retag_come_first(night):
    lines = run(night["path"], "--since", "1h").output.splitlines()
    # with them, the comments of the deleted and the merged image, hidden with it
    hidden_with = [line for line in lines if re.fullmatch(r"comment \d+ hidden", line[18:])]
    heads = {line[18:] for line in lines[:3 + len(hidden_with)]} - {line[18:] for line in hidden_with}
    assert len(heads) == 3
    assert f"image {night['deleted']} deleted: Rule #2" in heads
    assert f"image {night['merged']} merged into {night['into']}" in heads
    retag = next(line for line in heads if line.startswith(f"image {night['retagged']}: tags "))
    assert f"-{night['dropped']}" in retag and "+brand new tag" in retag  # tags by name
    summaries = [n for n, line in enumerate(lines) if line.endswith(" first seen")
                 or line.endswith(" first seen (--event first_seen lists them)")]
    assert summaries and summaries == list(range(summaries[0], len(lines)))  # the summaries last
    assert not any(line[18:].startswith("tag ") and line[18:22] == "tag " and line[22:].split(":")[0].isdigit()
                   for line in lines), "tags are named, not numbered"
    dropped = night["db"].execute("SELECT id FROM tags WHERE name = ?", [night["dropped"]]).fetchone()[0]
    assert any(line[18:].startswith(f"tag {night['dropped']}: images ") for line in lines)
    assert not any(f"tag {dropped}:" in line for line in lines)


def test_event_and_resource_filters_repeat_or_take_comma_lists(night):
    path = night["path"]
    deleted = run(path, "--since", "1h", "--event", "deleted").output.splitlines()
    assert [line[18:] for line in deleted] == [f"image {night['deleted']} deleted: Rule #2"]
    both = run(path, "--since", "1h", "--event", "deleted,merged").output.splitlines()
    assert run(path, "--since", "1h", "--event", "deleted", "--event", "merged").output.splitlines() == both
    assert len(both) == 2
    firsts = run(path, "--since", "1h", "--event", "first_seen", "--resource", "images").output.splitlines()
    rows = night["db"].execute("SELECT count(*) FROM history WHERE resource = 'images' AND event = 'first_seen'")
    counted = night["db"].execute("SELECT count FROM history_first_seen WHERE resource = 'images' AND counted = 1")
    # a line for each image first seen one by one, and one for those the first sync counted
    assert len(firsts) == rows.fetchone()[0] + 1 and all(line.endswith("first seen") for line in firsts)
    assert firsts[-1][18:] == f"{counted.fetchone()[0]:,} images first seen"
    tags = run(path, "--since", "1h", "--resource", "tags", "--event", "counters").output.splitlines()
    assert tags and all(line[18:].startswith("tag ") for line in tags)
    unknown = run(path, "--event", "exploded", code=2).output.strip()
    assert len(unknown.splitlines()) == 1 and "exploded" in unknown and "deleted" in unknown and "first_seen" in unknown
    unknown = run(path, "--resource", "images,photos", code=2).output.strip()
    assert len(unknown.splitlines()) == 1 and "photos" in unknown and "galleries" in unknown


def test_id_names_its_resource(night):
    path, image = night["path"], night["retagged"]
    one = run(path, "--since", "1h", "--id", f"image:{image}").output.splitlines()
    assert [line[18:].split(":")[0] for line in one] == [f"image {image}", f"image {image} first seen"]
    assert run(path, "--since", "1h", "--id", str(image), "--resource", "images").output.splitlines() == one
    bare = run(path, "--id", str(image), code=2).output.strip()
    assert len(bare.splitlines()) == 1 and f"image:{image}" in bare
    assert "not a resource" in run(path, "--id", f"picture:{image}", code=2).output
    records = json.loads(run(path, "--since", "1h", "--id", f"image:{image}", "--json").output)
    assert [r["event"] for r in records] == ["changed", "first_seen"] and records[0]["id"] == image
    assert "brand new tag" in records[0]["tags_added"] and records[0]["changes"] is not None


def test_json_lists_every_change_the_filters_select(night):
    records = json.loads(run(night["path"], "--since", "1h", "--json").output)
    total = night["db"].execute("SELECT count(*) FROM history").fetchone()[0]
    assert len(records) == total
    tag = next(r for r in records if r["resource"] == "tags" and r["event"] == "counters")
    assert tag["name"] and tag["summary"].startswith(f"tag {tag['name']}: ")
    refused = run(night["path"], "--json", "--event", "nothing_here", code=2).output
    assert refused.startswith("Error: --event nothing_here")
    assert json.loads(run(night["path"], "--since", "1h", "--json", "--event", "shown").output) == []


def test_json_streams_a_history_larger_than_its_memory(tmp_path):
    """`--json` writes each change as it reads it: 160 MB of history come out through well under
    160 MB of memory (it held the whole list, then the whole text: 3 GB for 300 MB)."""
    import os
    import subprocess
    import sys

    from mirror.store import open_database

    db = open_database(tmp_path / "mirror.db")
    text = "x" * 10_000
    with db.conn:
        db.conn.executemany(
            "INSERT INTO history (resource, record_key, run_id, seen_at, event, changes) VALUES (?, ?, ?, ?, ?, ?)",
            (("images", str(i), None, "2026-11-20T00:00:00Z", "changed",
              json.dumps({"description": [text, f"{text} {i}"]})) for i in range(8000)))
    db.close()
    config = tmp_path / "mirror.toml"
    config.write_text(f'[store]\ndatabase = "{tmp_path / "mirror.db"}"\nfiles = "{tmp_path / "files"}"\n')
    out = tmp_path / "changes.json"
    # Started from a small interpreter that reports its child's peak: a child forked from this test
    # process starts with this process's memory counted as its own peak (the whole suite's, here).
    measure = ("import resource, subprocess, sys; code = subprocess.run(sys.argv[1:]).returncode; "
               "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); sys.exit(code)")
    with out.open("wb") as sink:
        child = subprocess.run([sys.executable, "-c", measure, sys.executable, "-m", "mirror.cli", "-c", str(config),
                                "changes", "--since", "2026-11-01", "--json"], stdout=sink, stderr=subprocess.PIPE)
    peak = int(child.stderr.split()[-1]) * 1024
    size = out.stat().st_size
    assert child.returncode == 0 and size > 160_000_000
    assert peak < 0.75 * size, f"peak {peak // 2**20} MB for {size // 2**20} MB of JSON"
    with out.open("rb") as written:
        assert written.read(2) == b"[\n" and written.seek(-3, os.SEEK_END) and written.read() == b"\n]\n"


@pytest.mark.parametrize("option", [("--since", "99999999999d"), ("--since", "999999999w"), ("--limit", str(2**66)),
                                    ("--limit", "0")])
def test_a_time_or_a_limit_out_of_range_is_one_line_naming_the_option(night, option):
    said = run(night["path"], *option, code=2).output.strip()
    assert len(said.splitlines()) == 1 and said.startswith(f"Error: {option[0]} {option[1]}:"), said


def huge_history(folder, text: str, changes: int = 10):
    """A mirror whose history holds ``changes`` edits of an image description of ``text``."""
    from mirror.store import open_database

    folder.mkdir()
    db = open_database(folder / "mirror.db")
    with db.conn:
        db.conn.executemany(
            "INSERT INTO history (resource, record_key, run_id, seen_at, event, changes) VALUES (?, ?, ?, ?, ?, ?)",
            (("images", str(i), None, "2026-11-20T00:00:00Z", "changed",
              json.dumps({"description": [text, f"{text} {i}"], "score": [i, i + 1]})) for i in range(changes)))
    db.close()
    config = folder / "mirror.toml"
    config.write_text(f'[store]\ndatabase = "{folder / "mirror.db"}"\nfiles = "{folder / "files"}"\n')
    return config


def test_lines_of_huge_edits_never_hold_the_huge_texts(tmp_path):
    """Ten edits of an 8 MiB description are ten short lines, printed through little more memory
    than ten edits of a short one (each change was read whole, old and new, and decoded: 827 MB)."""
    import sys

    from ..support.memory import run_measured

    lines = {}
    peaks = {}
    for name, text in (("short", "a description"), ("huge", "x" * 8 * 2**20)):
        config = huge_history(tmp_path / name, text)
        done, peaks[name] = run_measured([sys.executable, "-m", "mirror.cli", "-c", str(config), "changes",
                                          "--since", "2026-11-01"])
        assert done.returncode == 0, done.stderr
        lines[name] = done.stdout.splitlines()
    assert len(lines["huge"]) == 10 and all("description edited; score" in line for line in lines["huge"])
    assert peaks["huge"] - peaks["short"] < 160, peaks  # one change is 16 MiB of text, ten 160
    done, _ = run_measured([sys.executable, "-m", "mirror.cli", "-c", str(tmp_path / "huge" / "mirror.toml"),
                            "changes", "--since", "2026-11-01", "--json"])
    descriptions = [change["changes"]["description"] for change in json.loads(done.stdout)]
    assert len(descriptions) == 10 and all(len(new) > len(old) == 8 * 2**20 for old, new in descriptions)


def test_a_float_that_changed_is_shown_to_two_places_as_a_reader_compares_it():
    change = Change(1, "2026-11-28T00:00:00Z", "images", "12", "changed", None,
                    {"wilson_score": [0.42974154645109525, 0.9371902640405398], "score": [3, 40]})
    line = describe(change)
    assert "wilson_score 0.43 -> 0.94" in line and "score 3 -> 40" in line
    assert "0.4297" not in line
