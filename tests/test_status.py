"""`mirror status`: counts, cursors and the last run of each resource, plainly."""

from __future__ import annotations

from click.testing import CliRunner

from mirror.cli import cli

from .conftest import site_config, sync, write_config


def test_status_shows_counts_cursors_and_last_runs_per_resource(site, tmp_path):
    config = site_config(site, tmp_path, polite={"give_up_after": 2}, comments={"enabled": True})
    images, db = sync(config, ["images", "comments"])
    site.set_faults("down")
    failed = CliRunner().invoke(cli, ["-c", str(write_config(config, tmp_path / "m.toml")), "sync", "comments"])
    assert failed.exit_code == 3

    result = CliRunner().invoke(cli, ["-c", str(tmp_path / "m.toml"), "status"])

    assert result.exit_code == 0, result.stderr
    lines = result.output.splitlines()
    count = db.execute("SELECT count(*) FROM images").fetchone()[0]
    assert any(line.split()[:1] == ["images"] and line.split()[-1] == f"{count:,}" for line in lines)
    comments = db.execute("SELECT count(*) FROM comments").fetchone()[0]
    assert comments and any(line.split() == ["comments", f"{comments:,}"] for line in lines)
    cursors = lines[lines.index("Cursors:") + 1:lines.index("Last runs:")]
    assert {line.split()[0] for line in cursors if line.strip()} >= {"images", "comments"}
    runs = lines[lines.index("Last runs:") + 1:]
    images_run = next(line for line in runs if line.split()[0] == "images")
    comments_run = next(line for line in runs if line.split()[0] == "comments")
    assert "ok;" in images_run and f"{images.fetched} fetched" in images_run
    assert "failed (gave up" in comments_run


def test_status_without_a_mirror_says_how_to_start_one(tmp_path):
    config = tmp_path / "m.toml"
    config.write_text(f'[store]\ndatabase = "{tmp_path / "none.db"}"\n')
    result = CliRunner().invoke(cli, ["-c", str(config), "status"])
    assert result.exit_code == 0 and "run `mirror sync` to start one" in result.output
    assert not (tmp_path / "none.db").exists()
