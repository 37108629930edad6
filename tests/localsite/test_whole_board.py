"""The whole board's dump, written without PostgreSQL: Derpibooru's shapes at 10,000 images, a
real archive (PostgreSQL restores it, the mirror's reader and `mirror import-dump` read it), the
same bytes for the same parameters."""

from __future__ import annotations

import re
import sqlite3
import subprocess
from collections import Counter, defaultdict
from datetime import datetime

import numpy as np
import pytest
from click.testing import CliRunner

from mirror.cli import cli
from mirror.dump.archive import Archive, BadRow
from mirror.localsite.dump.board_tables import AWKWARD
from mirror.localsite.dump.tables import LAYOUTS
from mirror.localsite.dump.whole_board import cached_dump, cached_summary, summary_lines, write_whole_board

from ..support.dumps import needs_postgres, pg_restore, table_names

IMAGES = 10_000
DUMPED = "2026-08-13 04:00:00"


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    """The 10,000-image dump, its summary, and its tables as the mirror's reader reads them."""
    out = tmp_path_factory.mktemp("whole") / "board.pgdump"
    summary = write_whole_board(out, IMAGES, seed=7)
    archive = Archive.open(out)
    tables = {name: list(archive.rows(name)) for name in archive.tables}
    return {"path": out, "summary": summary, "tables": tables,
            "columns": {name: entry.columns for name, entry in archive.tables.items()}}


def column(board, table: str, name: str) -> list:
    place = board["columns"][table].index(name)
    return [row[place] for row in board["tables"][table]]


def taggings(board) -> dict[int, set[int]]:
    today: dict[int, set[int]] = defaultdict(set)
    for image_id, tag_id in board["tables"]["image_taggings"]:
        today[int(image_id)].add(int(tag_id))
    return today


def change_rows(board) -> dict[int, list[tuple[str, int, int, bool]]]:
    """Each image's tag-change rows: (time, change id, tag, added), oldest first."""
    batches = {int(i): (int(image), at) for i, image, at, _ in board["tables"]["tag_changes"]}
    out: dict[int, list] = defaultdict(list)
    for change, tag, added in board["tables"]["tag_change_tags"]:
        image, at = batches[int(change)]
        out[image].append((at, int(change), int(tag), added == "t"))
    return {image: sorted(rows) for image, rows in out.items()}


def test_tags_per_image_have_derpibooru_percentiles_and_safe_is_on_two_images_in_three(board):
    counts = np.array(list(Counter(int(i) for i, _ in board["tables"]["image_taggings"]).values()))
    assert len(counts) == IMAGES
    for q, target, tolerance in ((50, 16, 2), (75, 23, 3), (90, 33, 4), (99, 58, 8)):
        assert abs(np.percentile(counts, q) - target) <= tolerance, (q, np.percentile(counts, q))
    assert 17 <= counts.mean() <= 21
    ratings = {int(i) for i, category in zip(column(board, "tags", "id"), column(board, "tags", "category"))
               if category == "rating"}
    names = dict(zip(map(int, column(board, "tags", "id")), column(board, "tags", "name")))
    rated = Counter(int(i) for i, tag in board["tables"]["image_taggings"] if int(tag) in ratings)
    assert set(rated.values()) == {1} and len(rated) == IMAGES
    safe = sum(1 for _, tag in board["tables"]["image_taggings"] if names[int(tag)] == "safe")
    assert abs(safe / IMAGES - 0.64) <= 0.03
    female = sum(1 for _, tag in board["tables"]["image_taggings"] if names[int(tag)] == "female")
    assert abs(female / IMAGES - 0.495) <= 0.03
    shown = board["summary"]["tags_per_image"]
    assert shown["p50"] == np.percentile(counts, 50) and shown["p99.9"] == np.percentile(counts, 99.9)


def test_each_tags_image_count_is_its_taggings(board):
    used = Counter(int(tag) for _, tag in board["tables"]["image_taggings"])
    counts = {int(i): int(n) for i, n in zip(column(board, "tags", "id"), column(board, "tags", "image_count"))}
    assert counts == {tag_id: used.get(tag_id, 0) for tag_id in counts}
    aliased = {int(tag) for tag, _ in board["tables"]["tag_aliases"]}
    assert aliased and all(counts[tag] == 0 for tag in aliased)
    assert len(set(column(board, "tags", "name"))) == len(counts) == len(set(column(board, "tags", "slug")))


def test_tag_changes_are_concentrated_and_several_tags_a_batch(board):
    rows = change_rows(board)
    per_image = np.array([len(rows.get(int(i), [])) for i in column(board, "images", "id")])
    assert 0.5 < (per_image == 0).mean() < 0.7  # most images have none
    top = np.sort(per_image)[-IMAGES // 100:]
    assert top.sum() / per_image.sum() > 0.2  # the top 1% hold a large share
    assert 8 <= per_image.mean() <= 15  # 35-45M rows for 3.5M images, in proportion
    batches = len(board["tables"]["tag_changes"])
    assert 2.2 <= per_image.sum() / batches <= 3.2 and 3 <= batches / IMAGES <= 6


def test_replaying_the_changes_backwards_from_todays_tags_always_finds_what_it_undoes(board):
    """The importer rebuilds each image's tags at upload from today's by undoing its changes,
    newest first: a change that added a tag finds it there; one that removed it does not."""
    today, created = taggings(board), dict(zip(map(int, column(board, "images", "id")),
                                               column(board, "images", "created_at")))
    undone = 0
    for image, rows in change_rows(board).items():
        tags = set(today[image])
        for at, _, tag, added in reversed(rows):
            assert created[image] < at <= DUMPED
            if added:
                assert tag in tags, (image, at, tag)
                tags.remove(tag)
            else:
                assert tag not in tags, (image, at, tag)
                tags.add(tag)
            undone += 1
    assert undone == len(board["tables"]["tag_change_tags"])
    batch_tags = Counter((change, tag) for change, tag, _ in board["tables"]["tag_change_tags"])
    assert max(batch_tags.values()) == 1  # a tag at most once in a batch


def test_images_have_gaps_in_their_ids_and_uploads_growing_over_fourteen_years(board):
    ids = list(map(int, column(board, "images", "id")))
    created, updated = column(board, "images", "created_at"), column(board, "images", "updated_at")
    assert ids == sorted(ids) and ids[-1] > len(ids) * 1.03
    assert created == sorted(created) and all(u >= c for c, u in zip(created, updated))
    years = Counter(int(c[:4]) for c in created)
    assert min(years) == 2012 and max(years) == 2026 and years[2025] > 1.5 * years[2013]
    hidden = {int(i) for i, flag in zip(ids, column(board, "images", "hidden_from_users")) if flag == "t"}
    listed = {int(row[0]) for table in ("image_hides", "image_duplicates") for row in board["tables"][table]}
    assert hidden == listed and 0.02 < len(hidden) / len(ids) < 0.05
    assert all(re.fullmatch(r"[0-9a-f]{128}", h) for h in column(board, "images", "image_sha512_hash"))
    descriptions = column(board, "images", "description")
    assert 0.2 < sum(bool(d) for d in descriptions) / len(ids) < 0.5
    assert AWKWARD in descriptions and None in descriptions  # every escape, and NULL, read back exactly
    comments = Counter(int(i) for i in column(board, "comments", "image_id"))
    assert {int(i): int(n) for i, n in zip(ids, column(board, "images", "comment_count")) if int(n)} == comments
    faves = Counter(int(i) for i in column(board, "image_faves", "image_id"))
    assert {int(i): int(n) for i, n in zip(ids, column(board, "images", "favorites")) if int(n)} == faves


def test_the_project_reader_reads_every_table_with_the_2026_layout(board):
    layout = {t.name: tuple(c.name for c in t.columns) for t in LAYOUTS["2026"]}
    assert board["columns"] == layout
    for name, rows in board["tables"].items():
        assert len(rows) == board["summary"]["rows"][name], name
        assert not any(isinstance(row, BadRow) or len(row) != len(layout[name]) for row in rows), name


@needs_postgres
def test_postgresql_lists_the_archive_and_restores_every_row(board):
    from mirror.localsite.dump.postgres import running_postgres

    listed = pg_restore("-l", board["path"])
    assert "Compression: gzip" in listed and "Dump Version: 1.16-0" in listed
    assert table_names(board["path"]) == set(board["summary"]["rows"])
    with running_postgres() as server:
        server.feed(["DROP SCHEMA public;\n"])  # the archive creates it, as pg_dump's of the site's do
        server.run("pg_restore", "--no-owner", "--exit-on-error", str(board["path"]))
        query = " UNION ALL ".join(f"SELECT '{name}', count(*) FROM public.{name}" for name in board["summary"]["rows"])
        done = subprocess.run(server.client("psql", "-X", "-At", "-F", "\t", "-c", query), capture_output=True,
                              text=True, check=True)
    restored = {name: int(count) for name, count in (line.split("\t") for line in done.stdout.splitlines())}
    assert restored == board["summary"]["rows"]


def toc(path) -> dict[tuple[str, str], dict]:
    """Every entry of an archive's table of contents, all its fields, by kind and name."""
    from mirror.dump.archive import _Reader

    with open(path, "rb") as handle:
        reader = _Reader(handle, path)
        handle.read(8)
        reader.int_size, reader.offset_size = reader.byte(), reader.byte()
        reader.byte(), reader.byte()
        [reader.int() for _ in range(7)]
        reader.str(), reader.str(), reader.str()
        entries = {}
        for _ in range(reader.int()):
            names = ("id", "had_dumper", "table_oid", "oid", "tag", "desc", "section", "defn", "drop", "copy",
                     "namespace", "tablespace", "table_am", "relkind", "owner", "with_oids")
            kinds = "iissssissssssiss"
            entry = {name: reader.int() if kind == "i" else reader.str() for name, kind in zip(names, kinds)}
            entry["deps"] = len(list(iter(reader.str, None)))
            entry["offset"] = reader.offset()[0]
            entries[entry["desc"], entry["tag"]] = entry
    return entries


@needs_postgres
def test_the_table_of_contents_is_the_one_pg_dump_writes_for_the_same_tables(board, tmp_path):
    """Held entry by entry, field by field, against the wheel's own pg_dump of the 2026 layout
    (dump ids and catalog oids aside: they are the server's numbering)."""
    from mirror.localsite.board.editor import BoardEditor

    from ..support.dumps import make_dump

    editor = BoardEditor.generate(seed=2, images=5, folder=tmp_path)
    try:
        real = toc(make_dump(editor, tmp_path))
    finally:
        editor.close()
    ours = toc(board["path"])
    same = {"ENCODING", "STDSTRINGS", "SEARCHPATH", "SCHEMA", "TABLE", "TABLE DATA"}
    assert {key for key in real if key[0] in same} == {key for key in ours if key[0] in same}
    for key, entry in real.items():
        if key[0] in same or key == ("COMMENT", "SCHEMA public"):
            fields = {k: v for k, v in entry.items() if k not in ("id", "table_oid", "oid")}
            assert {k: ours[key][k] for k in fields} == fields, key


def test_mirror_import_dump_holds_its_images_tags_and_tag_changes(board, tmp_path):
    env = {"MIRROR_DATABASE": str(tmp_path / "mirror.db"), "MIRROR_BASE_URL": "http://127.0.0.1:9"}
    result = CliRunner().invoke(cli, ["import-dump", str(board["path"])], env=env)
    assert result.exit_code == 0, result.output
    rows = board["summary"]["rows"]
    with sqlite3.connect(tmp_path / "mirror.db") as db:
        count = lambda query: db.execute(query).fetchone()[0]  # noqa: E731
        assert count("SELECT count(*) FROM images") == rows["images"]
        assert count("SELECT count(*) FROM tags") == rows["tags"]
        assert count("SELECT count(*) FROM history WHERE event = 'site_tags'") == rows["tag_changes"]
        assert count("SELECT count(*) FROM image_tag_changes") == rows["tag_change_tags"]
        assert count("SELECT count(*) FROM rejects") == 0
        awkward = column(board, "images", "description").count(AWKWARD)
        assert db.execute("SELECT count(*) FROM images WHERE raw ->> '$.description' = ?", [AWKWARD]).fetchone()[0] \
            == awkward > 0


def test_the_same_parameters_give_the_same_bytes_in_one_process_or_two(tmp_path):
    one = write_whole_board(tmp_path / "one.pgdump", 2_000, seed=3, processes=1)
    two = write_whole_board(tmp_path / "two.pgdump", 2_000, seed=3, processes=2)
    other = write_whole_board(tmp_path / "other.pgdump", 2_000, seed=4, processes=2)
    assert (tmp_path / "one.pgdump").read_bytes() == (tmp_path / "two.pgdump").read_bytes()
    assert (tmp_path / "one.pgdump").read_bytes() != (tmp_path / "other.pgdump").read_bytes()
    assert one["rows"] == two["rows"] and one["tags_per_image"] == two["tags_per_image"]
    assert other["rows"] != one["rows"]


def test_a_cached_dump_is_written_once_and_never_left_half_written(tmp_path):
    path = cached_dump(2_000, 5, tmp_path / "cache")
    written = path.stat().st_mtime_ns
    assert cached_dump(2_000, 5, tmp_path / "cache") == path and path.stat().st_mtime_ns == written
    assert {p.name for p in path.parent.iterdir()} == {path.name, path.with_suffix(".json").name}
    summary = cached_summary(path)
    assert summary["images"] == 2_000 and summary["file_bytes"] == path.stat().st_size
    assert Archive.open(path).created == datetime.fromisoformat(DUMPED + "+00:00")


def test_a_run_that_fails_part_way_leaves_no_file_behind(tmp_path, monkeypatch):
    from mirror.localsite.dump import board_tables

    def broken(board):
        yield b"1\tKa\n"
        raise OSError("no space left on device")

    monkeypatch.setitem(board_tables.TABLES, "users", broken)
    with pytest.raises(OSError, match="no space left"):
        cached_dump(1_000, 5, tmp_path / "cache", processes=1)
    assert list((tmp_path / "cache").iterdir()) == []


def test_the_summary_prints_counts_and_shapes_and_so_does_mirror_site(tmp_path, board):
    lines = summary_lines(board["summary"])
    tags = board["summary"]["tags_per_image"]
    assert f"p50 {tags['p50']:g}" in lines[2] and f"p99.9 {tags['p99.9']:g}" in lines[2] and "safe on" in lines[2]
    assert f"{board['summary']['rows']['tag_change_tags']:,} tag rows" in lines[3] and "the largest" in lines[3]
    out = tmp_path / "site.pgdump"
    result = CliRunner().invoke(cli, ["site", "--dump", str(out), "--shape", "derpibooru", "--images", "1000"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"Wrote {out} in ") and "board: 1,000 images" in result.output
    assert "tags per image: p50" in result.output and Archive.open(out).tables.keys() == board["columns"].keys()
