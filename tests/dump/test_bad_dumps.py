"""Damaged and unusual dumps: each gives one clear message, or its bad rows are kept as rejects,
and nothing else is lost. Every dump here is a real one (a real PostgreSQL and ``pg_dump``), its
tables changed before dumping or its bytes damaged after."""

from __future__ import annotations

import itertools
import json
import shutil
import tracemalloc

import pytest
from click.testing import CliRunner

from mirror.store.history import tag_name_sql
from mirror.cli import cli
from mirror.dump.archive import KEPT_OF_A_LONG_LINE, LONGEST_LINE, Archive, DumpError, copy_rows
from mirror.dump.staging import MOST_SET_ASIDE
from mirror.localsite.board.editor import BoardEditor
from mirror.localsite.dump.damaged import entry_count_place, offset_place, with_copy_statement, with_table_data
from mirror.localsite.dump.public import copy_line
from mirror.store import open_database

from ..support.dumps import make_dump, needs_postgres
from ..support.file_host import FileHost

pytestmark = needs_postgres


@pytest.fixture(scope="module")
def board():
    editor = BoardEditor.generate(seed=4, images=60)
    yield editor
    editor.close()


@pytest.fixture(scope="module")
def plain_dump(board, tmp_path_factory):
    """An uncompressed dump, whose COPY text lies in the file as it is."""
    return make_dump(board, tmp_path_factory.mktemp("plain"), compress=False,
                     then="UPDATE images SET image_name = 'NAMEMARK' || id || '.png';")


def import_dump(tmp_path, dump, *args):
    env = {"MIRROR_DATABASE": str(tmp_path / "mirror.db"), "MIRROR_BASE_URL": "http://127.0.0.1:9"}
    result = CliRunner().invoke(cli, ["import-dump", str(dump), *args], env=env)
    return result, tmp_path / "mirror.db"


def damaged(source, tmp_path, edit) -> object:
    path = tmp_path / "damaged.pgdump"
    data = bytearray(source.read_bytes())
    edit(data)
    path.write_bytes(bytes(data))
    return path


@pytest.mark.parametrize("edit, said", [
    (lambda d: d.__setitem__(slice(0, 5), b"GIF89"), "not a PostgreSQL custom-format dump"),
    (lambda d: d.__setitem__(11, 3), "compressed with zstd, which this version cannot read"),
    (lambda d: d.__setitem__(11, 2), "compressed with lz4"),
    (lambda d: d.__setitem__(slice(5, 7), bytes([1, 17])), "archive version 1.17.0 is not one this version reads"),
    (lambda d: d.__delitem__(slice(len(d) * 2 // 3, None)), "ends early"),
])
def test_a_dump_that_cannot_be_read_stops_with_one_line_and_exit_2(plain_dump, tmp_path, edit, said):
    result, _ = import_dump(tmp_path, damaged(plain_dump, tmp_path, edit))
    assert result.exit_code == 2, result.output
    assert said in result.output and result.output.count("\n") <= 30
    assert "Traceback" not in result.output


def test_a_gzip_file_is_named_as_such(plain_dump, tmp_path):
    import gzip

    path = tmp_path / "dump.pgdump.gz"
    path.write_bytes(gzip.compress(plain_dump.read_bytes()))
    result, _ = import_dump(tmp_path, path)
    assert result.exit_code == 2 and "a gzip file: gunzip it first" in result.output


def test_bytes_that_are_not_utf8_are_kept_as_a_reject_and_the_rest_imports(plain_dump, tmp_path):
    def spoil(data: bytearray) -> None:
        at = data.index(b"NAMEMARK7.png")
        data[at:at + 4] = b"\xff\xfe\xfd\xfc"

    result, db_path = import_dump(tmp_path, damaged(plain_dump, tmp_path, spoil))
    assert result.exit_code == 0, result.output
    db = open_database(db_path)
    assert db.execute("SELECT count(*) FROM images").fetchone()[0] == 59
    reason, raw = db.execute("SELECT reason, raw FROM rejects WHERE resource = 'dump:images'").fetchone()
    assert "not valid UTF-8" in reason and "\ufffd" in json.loads(raw)[17]


def test_extra_tables_and_columns_are_named_once_and_skipped(board, tmp_path):
    dump = make_dump(board, tmp_path, then="ALTER TABLE tags ADD COLUMN mood text DEFAULT 'calm'; "
                                           "CREATE TABLE polls (id bigint, title text); INSERT INTO polls VALUES (1, 'x');")
    result, db_path = import_dump(tmp_path, dump)
    assert result.exit_code == 0, result.output
    assert result.output.count("table polls: not part of a public dump this version knows; skipped") == 1
    assert result.output.count("table tags: columns mood not known to this version; skipped") == 1
    db = open_database(db_path)
    assert db.execute("SELECT count(*) FROM tags").fetchone()[0] == board.value("SELECT count(*) FROM tags")
    assert "mood" not in db.execute("SELECT raw FROM tags LIMIT 1").fetchone()[0]


def test_an_id_twice_keeps_the_last_row_and_the_other_as_a_reject(board, tmp_path):
    image = min(board.images)
    dump = make_dump(board, tmp_path, then=f"INSERT INTO images SELECT * FROM images WHERE id = {image}; "
                                           f"UPDATE images SET score = 12345 WHERE ctid = (SELECT max(ctid) "
                                           f"FROM images WHERE id = {image});")
    result, db_path = import_dump(tmp_path, dump)
    assert result.exit_code == 0, result.output
    db = open_database(db_path)
    assert db.execute("SELECT count(*) FROM images").fetchone()[0] == len(board.images)
    assert db.execute("SELECT score FROM images WHERE id = ?", [image]).fetchone()[0] == 12345
    (reason,) = db.execute("SELECT reason FROM rejects WHERE resource = 'dump:images'").fetchone()
    assert "twice" in reason


def test_a_null_where_the_site_allows_none_is_a_reject_not_a_lost_row(board, tmp_path):
    dump = make_dump(board, tmp_path, then="ALTER TABLE comments ALTER COLUMN image_id DROP NOT NULL; "
                                           "UPDATE comments SET image_id = NULL WHERE id = (SELECT min(id) FROM comments);")
    result, db_path = import_dump(tmp_path, dump)
    assert result.exit_code == 0, result.output
    db = open_database(db_path)
    reason, raw = db.execute("SELECT reason, raw FROM rejects WHERE resource = 'dump:comments'").fetchone()
    assert "image_id" in reason and json.loads(raw)["image_id"] is None
    assert "1 set aside" in result.output


def test_tabs_newlines_and_backslashes_come_through_exactly(board, tmp_path):
    image = min(board.images)
    text = "a\ttab\nnew line\\back\\nslash\r\n\\N"
    dump = make_dump(board, tmp_path, then=f"UPDATE images SET description = {_literal(text)} WHERE id = {image};")
    result, db_path = import_dump(tmp_path, dump)
    assert result.exit_code == 0, result.output
    db = open_database(db_path)
    description, raw = db.execute("SELECT description, raw FROM images WHERE id = ?", [image]).fetchone()
    assert description == text and json.loads(raw)["description"] == text


def test_the_2022_layout_imports_without_descriptions_and_with_its_one_table_tag_history(board, tmp_path):
    dump = make_dump(board, tmp_path, layout="2022")
    assert "description" not in Archive.open(dump).tables["images"].columns
    result, db_path = import_dump(tmp_path, dump)
    assert result.exit_code == 0, result.output
    db = open_database(db_path)
    assert db.execute("SELECT count(*) FROM images").fetchone()[0] == len(board.images)
    assert db.execute("SELECT count(*) FROM images WHERE json_type(raw, '$.description') IS NOT NULL").fetchone()[0] == 0
    site_tags = db.execute("SELECT count(*) FROM image_tag_changes c JOIN history h ON h.id = c.history_id "
                           f"WHERE h.event = 'site_tags' AND {tag_name_sql('c')} IS NOT NULL").fetchone()[0]
    assert site_tags == board.value("SELECT count(*) FROM image_tags")


@pytest.mark.parametrize("first, then", [("2026", "2022"), ("2022", "2026")])
def test_the_sites_tag_changes_are_kept_once_across_its_renumbering(board, tmp_path, first, then):
    """The site regrouped its tag changes under new ids in 2025: a dump of either layout after
    the other adds none of the changes a second time."""
    def site_tags(db):
        return sorted(db.execute("SELECT c.image_id, c.tag_id, c.change, c.seen_at FROM image_tag_changes c "
                                 "JOIN history h ON h.id = c.history_id WHERE h.event = 'site_tags'").fetchall())

    result, db_path = import_dump(tmp_path, make_dump(board, tmp_path, f"{first}.pgdump", layout=first))
    assert result.exit_code == 0, result.output
    once = site_tags(open_database(db_path))
    assert once
    result, _ = import_dump(tmp_path, make_dump(board, tmp_path, f"{then}.pgdump", layout=then))
    assert result.exit_code == 0, result.output
    assert site_tags(open_database(db_path)) == once


def test_a_pipe_written_dump_without_offsets_reads_the_same(plain_dump, tmp_path):
    """pg_dump writing to a pipe leaves every data offset unset: tables are found by walking the data."""
    archive = Archive.open(plain_dump)
    rows = list(archive.rows("images"))
    for table in archive.tables.values():
        object.__setattr__(table, "offset", None)
    assert list(archive.rows("images")) == rows and len(rows) == 60
    with pytest.raises(DumpError):
        list(Archive.open(damaged(plain_dump, tmp_path, lambda d: d.__delitem__(slice(len(d) - 40, None))))
             .rows("users"))


def _literal(text: str) -> str:
    return "E'" + text.replace("\\", "\\\\").replace("'", "\\'").replace("\t", "\\t").replace("\n", "\\n") \
        .replace("\r", "\\r") + "'"


def test_a_file_that_does_not_match_its_sha256_is_not_imported(plain_dump, tmp_path):
    copy = tmp_path / "copy.pgdump"
    shutil.copy(plain_dump, copy)
    result, _ = import_dump(tmp_path, copy, "--sha256", "0" * 64)
    assert result.exit_code == 2 and "SHA-256" in result.output


def test_a_downloaded_dump_found_damaged_names_the_file_to_remove_for_a_fresh_fetch(plain_dump, tmp_path):
    data = plain_dump.read_bytes()
    with FileHost(data[: len(data) * 2 // 3]) as host:  # whole as far as the host says, cut short all the same
        result, _ = import_dump(tmp_path, f"{host.url}/board.pgdump")
    kept = tmp_path / "board.pgdump"
    error = result.output.splitlines()[-1]
    assert result.exit_code == 2 and error.startswith("Error: ") and "ends early" in error, result.output
    assert error.endswith(f"; to download it anew, remove {kept} and run again")
    assert kept.exists()


# --- hostile dumps: damaged headers, inflating data, broken column lists (issue 41) ---------------

def spoilt(plain_dump, tmp_path, where, value: bytes):
    """The dump with ``value`` written at ``where(dump)``."""
    def edit(data: bytearray) -> None:
        at = where(plain_dump)
        data[at:at + len(value)] = value
    return damaged(plain_dump, tmp_path, edit)


@pytest.mark.parametrize("where, value, said", [
    (lambda dump: 33, bytes([0x30]), "its header gives no real date (year"),
    (lambda dump: 8, bytes([200]), "its header gives an integer size of 200 bytes"),
    (lambda dump: offset_place(dump, "images"), bytes([2]) + b"\xff" * 8,
     "the dump ends early or is damaged: table images's data is said to start at byte 18,446,744,073,709,551,615"),
    (lambda dump: entry_count_place(dump), bytes([1]), "its table of contents counts -"),
], ids=["month 0x30", "int size 200", "offset 2^64-1", "negative entry count"])
def test_a_damaged_header_or_table_of_contents_is_one_line_and_exit_2(plain_dump, tmp_path, where, value, said):
    path = spoilt(plain_dump, tmp_path, where, value)
    result, db_path = import_dump(tmp_path, path)
    assert result.exit_code == 2, result.output
    assert result.output == f"Error: {path}: {said}" + result.output.split(said, 1)[1]
    assert result.output.count("\n") == 1 and "fetch it again and check its SHA-256" in result.output


def error_line(result) -> str:
    """The one line saying why the import stopped: the last it printed, and no traceback."""
    lines = result.output.splitlines()
    assert [line for line in lines if line.startswith("Error:")] == lines[-1:], result.output
    assert "Traceback" not in result.output
    return lines[-1]


def with_rows(plain_dump, tmp_path, table: str, change, *more: bytes):
    """The dump with ``table``'s rows, each passed through ``change``, then ``more`` raw COPY text."""
    rows = [change(list(row)) for row in Archive.open(plain_dump).rows(table)]
    return with_table_data(plain_dump, tmp_path / "hostile.pgdump", table,
                           [*(copy_line(row).encode() for row in rows), *more])


def test_a_line_past_the_longest_is_set_aside_cut_short_and_the_rest_imports(plain_dump, tmp_path):
    hostile = with_rows(plain_dump, tmp_path, "users", lambda row: row,
                        *(b"\0" * (1 << 20) for _ in range((LONGEST_LINE >> 20) + 4)), b"\n")
    result, db_path = import_dump(tmp_path, hostile)
    assert result.exit_code == 0, result.output
    db = open_database(db_path)
    assert db.execute("SELECT count(*) FROM users").fetchone()[0] == len(list(Archive.open(plain_dump).rows("users")))
    reason, raw = db.execute("SELECT reason, raw FROM rejects WHERE resource = 'dump:users'").fetchone()
    assert f"a line of {LONGEST_LINE + (4 << 20):,} bytes, longer than the longest" in reason
    assert json.loads(raw) == ["\0" * KEPT_OF_A_LONG_LINE]


def test_a_table_of_more_bad_rows_than_the_bound_is_called_damaged(plain_dump, tmp_path):
    hostile = with_rows(plain_dump, tmp_path, "users", lambda row: row, b"\n" * (MOST_SET_ASIDE * 20))
    result, _ = import_dump(tmp_path, hostile)
    assert result.exit_code == 2, result.output
    said = error_line(result)
    assert said.startswith(f"Error: {hostile}: table users: more than {MOST_SET_ASIDE:,} rows")
    assert "1 values where the table has 2 columns" in said and "the dump is damaged" in said


@pytest.mark.parametrize("columns, said", [
    ("(id, id)", "its column list names id twice"),
    ("(" + ", ".join(f"c{i}" for i in range(3000)) + ")", "its column list has 3,000 columns"),
    ("()", "its column list has a column without a name"),
    ("", "its data names no columns"),
])
def test_a_broken_column_list_is_a_damaged_dump(plain_dump, tmp_path, columns, said):
    path = with_copy_statement(plain_dump, tmp_path / "columns.pgdump", "users",
                               f"COPY public.users {columns} FROM stdin;\n")
    result, _ = import_dump(tmp_path, path)
    assert result.exit_code == 2, result.output
    assert error_line(result).startswith(f"Error: {path}: table users: {said}")


def test_an_id_that_is_no_whole_number_is_set_aside_not_converted(plain_dump, tmp_path):
    kept = max(int(row[0]) for row in Archive.open(plain_dump).rows("images"))
    hostile = with_rows(plain_dump, tmp_path, "images",
                        lambda row: ["1e5" if row[0] == str(kept) else row[0], *row[1:]])
    result, db_path = import_dump(tmp_path, hostile)
    assert result.exit_code == 0, result.output
    db = open_database(db_path)
    assert db.execute("SELECT max(id), count(*) FROM images").fetchone() == (kept - 1, 59)
    reason, raw = db.execute("SELECT reason, raw FROM rejects WHERE resource = 'dump:images'").fetchone()
    assert reason == "id: not a whole number where the table needs one" and json.loads(raw)[0] == "1e5"


def test_names_in_the_dump_cannot_drive_the_terminal(board, tmp_path):
    dump = make_dump(board, tmp_path, then='CREATE TABLE "polls\x1b[2J" (id bigint); '
                                           'ALTER TABLE tags ADD COLUMN "mood\x1b]0;owned\x07" text;')
    result, _ = import_dump(tmp_path, dump)
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.output and "\x07" not in result.output
    assert "table polls\\x1b[2J: not part of a public dump" in result.output
    assert "table tags: columns mood\\x1b]0;owned\\x07 not known" in result.output


def test_a_long_line_is_read_in_flat_memory():
    """A line three times the longest read, in 64 KiB chunks: never held whole, nor copied over and
    over (it was joined to each next chunk and split again: 144 MB at its peak, and quadratic time)."""
    line = (b"x" * (1 << 16) for _ in range(3 * LONGEST_LINE >> 16))
    tracemalloc.start()
    try:
        rows = list(copy_rows(itertools.chain(line, [b"\n1\t2\n"])))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert rows[1:] == [["1", "2"]] and len(rows[0][0]) == KEPT_OF_A_LONG_LINE
    assert peak < 2.5 * LONGEST_LINE


def test_an_import_the_disk_cannot_hold_is_refused_before_anything_is_written(plain_dump, tmp_path):
    huge = tmp_path / "huge.pgdump"  # the real dump's header and tables, then sparse zeros: a quarter of the disk
    shutil.copyfile(plain_dump, huge)
    with huge.open("r+b") as handle:
        handle.truncate(shutil.disk_usage(tmp_path).free // 4)
    result, db_path = import_dump(tmp_path, huge)
    assert result.exit_code == 5, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "not enough disk for the import" in lines[0], result.output
    assert "free in" in lines[0] and "nothing was written" in lines[0]
    assert open_database(db_path).execute("SELECT count(*) FROM images").fetchone()[0] == 0
    assert not (tmp_path / "mirror.db.dump-staging").exists()


def test_an_import_says_how_much_disk_it_needs_before_it_starts(plain_dump, tmp_path):
    result, _ = import_dump(tmp_path, plain_dump)
    assert result.exit_code == 0, result.output
    first = result.output.splitlines()[0]
    assert "the import needs about" in first and "are free" in first


@pytest.mark.parametrize("table, columns, missing", [
    ("users", "(name)", "id"),
    ("tags", "(id, name)", "slug"),
])
def test_a_column_list_without_a_column_the_importer_reads_names_the_table_and_column(plain_dump, tmp_path, table,
                                                                                       columns, missing):
    """A damaged COPY statement that drops ``id`` (or a tag's ``slug``): the dump lacks a column the
    import reads, which is the dump's fault (exit 2), not the database's ("no such column", exit 5)."""
    path = with_copy_statement(plain_dump, tmp_path / "columns.pgdump", table,
                               f"COPY public.{table} {columns} FROM stdin;\n")
    result, _ = import_dump(tmp_path, path)
    assert result.exit_code == 2, result.output
    said = error_line(result)
    assert said.startswith(f"Error: {path}: table {table}: ") and f"no column {missing}" in said, said


def test_an_import_past_the_estimate_is_allowed_with_ignore_space(plain_dump, tmp_path):
    huge = tmp_path / "huge.pgdump"
    shutil.copyfile(plain_dump, huge)
    with huge.open("r+b") as handle:
        handle.truncate(shutil.disk_usage(tmp_path).free // 4)
    result, _ = import_dump(tmp_path, huge, "--ignore-space")
    assert "not enough disk" not in result.output
    assert "the import needs about" in result.output.splitlines()[0]
