"""`mirror export` and the nightly job's export step, as cron runs them: exit codes, --json, the
metrics file; and the one line said when the export extra is missing."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

import polars as pl

from mirror.localsite.board.editor import BoardEditor
from mirror.localsite.http.server import SiteServer

from ..support.configs import changed, site_config, write_config
from .test_killed import copy_of


def mirror(*args: str, code: str | None = None) -> subprocess.CompletedProcess:
    command = [sys.executable, "-c", code, *args] if code else [sys.executable, "-m", "mirror.cli", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def test_the_nightly_sync_exports_after_it_syncs_and_counts_it(tmp_path):
    dest, metrics = tmp_path / "dest", tmp_path / "mirror.prom"
    with SiteServer(BoardEditor.generate(seed=2, images=20)) as site:
        config = site_config(site, tmp_path, export={"enabled": True, "dest": str(dest)},
                             report={"metrics_file": str(metrics)})
        done = mirror("-c", str(write_config(config, tmp_path / "mirror.toml")), "sync", "images", "--json")
    assert done.returncode == 0, done.stderr
    run = json.loads(done.stdout)
    images = pl.read_delta(str(dest / "images"))
    assert run["export"]["batch"] == 1 and run["export"]["tables"]["images"] == images.height == 20
    assert run["export"]["versions"] >= 20 and run["export"]["bytes"] > 0
    assert 'mirror_run_exported_versions{command="sync"}' in metrics.read_text()
    assert "export to" in run["plan"]


def test_export_without_the_extra_says_how_to_install_it(exported, tmp_path):
    config = changed(exported.config, store={"database": str(copy_of(exported.db, tmp_path / "mirror.db"))})
    path = write_config(config, tmp_path / "mirror.toml")
    blocked = "import sys; sys.modules['deltalake'] = None; from mirror.cli import cli; sys.argv[0] = 'mirror'; cli()"
    done = mirror("-c", str(path), "export", str(tmp_path / "dest"), code=blocked)
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert "pip install 'booru-mirror[export]'" in line
    assert not (tmp_path / "dest").exists()


def test_export_needs_a_dest(exported, tmp_path):
    config = changed(exported.config, store={"database": str(copy_of(exported.db, tmp_path / "mirror.db"))})
    done = mirror("-c", str(write_config(config, tmp_path / "mirror.toml")), "export")
    assert done.returncode == 2 and "[export] dest" in done.stderr


def test_a_dest_another_database_exported_to_is_refused(exported, tmp_path):
    other = changed(exported.config, store={"database": str(copy_of(exported.db, tmp_path / "other.db"))})
    assert mirror("-c", str(write_config(other, tmp_path / "other.toml")), "export", str(tmp_path / "one")).returncode == 0
    before = sorted(p.name for p in (tmp_path / "one" / "images").rglob("*"))
    config = changed(exported.config, store={"database": str(copy_of(exported.db, tmp_path / "mirror.db"))})
    done = mirror("-c", str(write_config(config, tmp_path / "mirror.toml")), "export", str(tmp_path / "one"))
    assert done.returncode == 5 and "already holds tables" in done.stderr
    assert sorted(p.name for p in (tmp_path / "one" / "images").rglob("*")) == before


def test_a_one_off_export_elsewhere_leaves_the_nightly_dest_going_on(exported, tmp_path):
    """The export's state is kept per DEST: an export to another folder once (a copy for a friend)
    neither forgets what the nightly DEST holds nor makes it refuse every night after."""
    nightly, elsewhere = tmp_path / "nightly", tmp_path / "elsewhere"
    db_path = copy_of(exported.db, tmp_path / "mirror.db")
    path = write_config(changed(exported.config, store={"database": str(db_path)}), tmp_path / "mirror.toml")
    assert mirror("-c", str(path), "export", str(nightly)).returncode == 0
    assert mirror("-c", str(path), "export", str(elsewhere)).returncode == 0
    first = pl.read_delta(str(nightly / "images")).height
    with sqlite3.connect(db_path) as db:
        edited = exported.done["edited"]
        db.execute("UPDATE images SET score = score + 1, mirrored_at = strftime('%Y-%m-%dT%H:%M:%SZ', 'now') "
                   "WHERE id = ?", [edited])
    done = mirror("-c", str(path), "export", str(nightly), "--json")
    assert done.returncode == 0, done.stderr
    run = json.loads(done.stdout)
    assert run["export"]["batch"] == 2 and run["export"]["tables"]["images"] == 1  # only what changed since
    assert pl.read_delta(str(nightly / "images")).height == first + 1
    again = json.loads(mirror("-c", str(path), "export", str(elsewhere), "--json").stdout)
    assert again["export"]["batch"] == 2 and again["export"]["tables"]["images"] == 1


def test_export_json_says_what_it_wrote_and_counts_no_files(exported, tmp_path):
    """An export touches no kept file: its run does not read every image to count them (seconds at a
    million images, most of a night's export)."""
    config = changed(exported.config, store={"database": str(copy_of(exported.db, tmp_path / "mirror.db"))})
    done = mirror("-c", str(write_config(config, tmp_path / "mirror.toml")), "export", str(tmp_path / "dest"),
                  "--json")
    assert done.returncode == 0, done.stderr
    run = json.loads(done.stdout)
    assert run["command"] == "export" and run["export"]["versions"] > 0 and run["files"] is None


def test_a_lone_surrogate_in_a_list_field_is_exported_as_u_fffd_and_holds_back_nothing(exported, tmp_path):
    """Sync keeps a tag ``"\\ud800"`` as its JSON escape; the export writes it as U+FFFD, as it does a
    description's, and the record's batch goes out whole."""
    db = sqlite3.connect(copy_of(exported.db, tmp_path / "mirror.db"))
    odd = exported.done["edited"]
    with db:
        db.execute("UPDATE images SET tags = ?, mirrored_at = strftime('%Y-%m-%dT%H:%M:%SZ', 'now') WHERE id = ?",
                   ['["\\ud800 lone", "safe"]', odd])
        shown = db.execute("SELECT count(*) FROM images").fetchone()[0]
    db.close()
    config = changed(exported.config, store={"database": str(tmp_path / "mirror.db")})
    done = mirror("-c", str(write_config(config, tmp_path / "mirror.toml")), "export", str(tmp_path / "dest"))
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    images = pl.read_delta(str(tmp_path / "dest" / "images"))
    assert images["id"].n_unique() == shown
    today = images.filter(pl.col("id") == odd).sort(["valid_from", "seen_at"], nulls_last=False)
    assert today["tags"].to_list()[-1] == ["\ufffd lone", "safe"]
