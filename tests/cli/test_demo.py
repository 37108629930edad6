"""`mirror demo` (issue 40): a line for each step, the port asked for, planted copies for the
duplicates finder, closing lines saying what to try, and pictures drawn once into a cache."""

from __future__ import annotations

import sqlite3
import tomllib

from click.testing import CliRunner

from mirror.cli import cli
from mirror.localsite.files import drawn, pictures

from ..support.ports import a_closed_port


def test_the_demo_says_each_step_listens_where_asked_plants_copies_and_says_what_to_try(tmp_path, monkeypatch):
    cache = tmp_path / "pictures"
    monkeypatch.setenv("MIRROR_PICTURE_CACHE", str(cache))
    port = a_closed_port()
    result = CliRunner().invoke(cli, ["demo", "--images", "12", "--data", str(tmp_path / "data"),
                                      "--port", str(port)])
    assert result.exit_code == 0, result.output
    out = result.output
    for step in ("[1/4] Generating", "[2/4] Local site running", "[3/4] Syncing", "[4/4] Downloading"):
        assert step in out
    assert f"http://127.0.0.1:{port}" in out
    assert not (tmp_path / "data" / "mirror.db-wal").exists(), "the demo left its database open"
    assert "drawn once on 2 processes, about" in out and str(cache) in out
    db = sqlite3.connect(tmp_path / "data" / "mirror.db")
    planted = db.execute("SELECT id FROM images WHERE description LIKE 'A copy of image #%'").fetchall()
    assert len(planted) == 4
    kept = db.execute(f"SELECT count(DISTINCT image_id) FROM downloads WHERE status = 'done' AND image_id IN "
                      f"({', '.join(str(row[0]) for row in planted)})").fetchone()[0]
    assert kept == 4
    for shown in ("browse --open", "/-/booru?q=", "/-/duplicates", " changes", "planted copies: #"):
        assert shown in out
    assert any(cache.rglob("*")), "nothing was kept in the picture cache"
    # The local site has no limit of its own on searches: held to Derpibooru's 20 in 10 s, the
    # sync's walks waited some 25 s in all between searches.
    polite = tomllib.loads((tmp_path / "data" / "mirror.toml").read_text())["polite"]
    assert polite["searches_per_10s"] >= 10 * polite["requests_per_second"], polite


def test_a_second_demo_reads_its_pictures_from_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MIRROR_PICTURE_CACHE", str(tmp_path / "pictures"))
    calls = []
    real = drawn.drawn

    def counting(draw, *arguments):
        calls.append(arguments)
        return real(lambda: (calls.append("drew"), draw())[1], *arguments)

    monkeypatch.setattr("mirror.localsite.files.pictures.drawn", counting)
    monkeypatch.setattr("mirror.localsite.files.img.drawn", counting)
    kept = []
    for run in ("first", "second"):
        pictures.picture.cache_clear()  # what this process remembers is not what the next demo would
        result = CliRunner().invoke(cli, ["demo", "--images", "6", "--data", str(tmp_path / run)])
        assert result.exit_code == 0, result.output
        kept.append(sorted((tmp_path / "pictures").rglob("*")))
        drew, calls[:] = calls.count("drew"), []
    assert kept[0], "the first demo kept no pictures"
    assert drew == 0 and kept[1] == kept[0], "the second demo drew pictures again"
    assert "read from the cache of an earlier run" in result.output


def test_a_taken_port_is_said_in_one_line_before_anything_is_drawn(tmp_path):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = CliRunner().invoke(cli, ["demo", "--data", str(tmp_path / "data"), "--port", str(port)])
    assert result.exit_code != 0
    assert str(port) in result.output and "Generating" not in result.output


def test_a_second_demo_into_the_same_mirror_adds_no_changes_a_real_site_would_not_make(tmp_path, monkeypatch):
    """Its planted copies are uploaded again at the same moments: no ``created_at`` or
    ``first_seen_at`` "changes" head `mirror changes`, which the demo tells people to run."""
    monkeypatch.setenv("MIRROR_PICTURE_CACHE", str(tmp_path / "pictures"))
    for _ in range(2):
        result = CliRunner().invoke(cli, ["demo", "--images", "12", "--data", str(tmp_path / "data")])
        assert result.exit_code == 0, result.output
    db = sqlite3.connect(tmp_path / "data" / "mirror.db")
    changed = db.execute("SELECT resource, record_key, event, changes FROM history WHERE event NOT IN "
                         "('first_seen', 'counters')").fetchall()
    assert changed == []
