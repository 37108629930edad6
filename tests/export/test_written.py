"""A table's digests kept for the store, past a million records in a temporary file.

The whole board's first export writes 17.5 million faves and 10.5 million comments: their
digests, held until the table's commit is made, took 420 MB of the export's memory as arrays.
Past ``KEPT_IN_MEMORY`` records they go to a file, and come back in the order written, through a
file of their own when sent to another process, and as text when a key turns out to be no ids."""

from __future__ import annotations

import pickle

import pytest

from mirror.export import written as module
from mirror.export.written import Written


@pytest.fixture(autouse=True)
def small_memory(monkeypatch):
    monkeypatch.setattr(module, "KEPT_IN_MEMORY", 100)


def test_digests_past_memory_go_to_a_file_and_come_back_in_order():
    written = Written(ids=2)
    for n in range(250):
        written.add_ids((n, n + 1), f"[{n},{n + 1}]", n * 7)
    written.add("[5,6]", -1)
    assert written.spilled is not None and len(written.values) < 100  # most of them are in the file
    assert list(written.digests()) == [(f"[{n},{n + 1}]", n * 7) for n in range(250)] + [("[5,6]", -1)]


def test_a_helpers_digests_reach_the_writer_whole_after_its_own_through_a_file_it_deletes(tmp_path):
    helper, writer = Written(ids=1, folder=str(tmp_path)), Written(ids=1)
    for n in range(230):
        helper.add(str(1000 + n), n)
    for n in range(120):
        writer.add(str(n), -n)
    helper.rows, writer.rows = 230, 120
    state = pickle.dumps(helper)
    assert len(state) < 230 * 16  # the digests went in a file, not in the state
    handed = list(tmp_path.iterdir())
    assert len(handed) == 1 and handed[0].name.startswith(module.HANDED_PREFIX)
    helper.close()
    sent = pickle.loads(state)
    assert list(tmp_path.iterdir()) == []  # the receiver took it
    assert sent.spilled is not None and list(sent.digests()) == [(str(1000 + n), n) for n in range(230)]
    writer.extend(sent)
    sent.close()
    again = Written(ids=1, folder=str(tmp_path))
    for n in range(150):
        again.add(str(n), n)
    pickle.dumps(again)  # handed to an export killed before it took them: the next one deletes them
    again.close()
    assert module.remove_handed(str(tmp_path)) == 1 and list(tmp_path.iterdir()) == []
    assert writer.rows == 350
    assert list(writer.digests()) == [(str(n), -n) for n in range(120)] + [(str(1000 + n), n) for n in range(230)]


def test_a_key_that_is_no_ids_turns_every_key_to_text_and_loses_none():
    written = Written(ids=2)
    for n in range(150):
        written.add(f"[{n},1]", n)
    written.add_ids((7, "x"), '[7,"x"]', 99)
    assert written.ids == 0 and written.spilled is None
    digests = list(written.digests())
    assert digests[:150] == [(f"[{n},1]", n) for n in range(150)] and digests[-1] == ('[7,"x"]', 99)
    written.close()


def test_the_file_is_made_beside_the_archive_not_in_the_temporary_folder(tmp_path, monkeypatch):
    import sqlite3
    import tempfile

    made = []
    real = tempfile.TemporaryFile
    monkeypatch.setattr(tempfile, "TemporaryFile", lambda **options: made.append(options) or real(**options))
    conn = sqlite3.connect(tmp_path / "mirror.db")
    written = Written(ids=1, folder=module.folder_of(conn))
    for n in range(150):
        written.add(str(n), n)
    assert [options["dir"] for options in made] == [str(tmp_path)]
    assert module.folder_of(sqlite3.connect(":memory:")) is None
    written.close()
