"""Records' histories read a chunk at a time give the very versions read record by record.

The first export reads the history of thousands of records at once (:func:`histories_of`) and
hands each its rows; serve's ``/as-of/`` reads one record's with its own queries. Over random
nights of edits, hides, merges and uploads (the first night's sightings kept only as the run's
count), and the site's own tag changes from a dump, every version of every image must be the same
either way: when it began, when the mirror knew it, and the record then.
"""

from __future__ import annotations

from datetime import timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mirror.asof import versions_of
from mirror.asof.histories import histories_of
from mirror.dates import utc_text
from mirror.store.history import SiteChange, save_site_changes
from mirror.store.specs import SPECS
from mirror.store.writer import RecordWriter

from .test_records_as_of import START, TAGS, empty_mirror, fresh_mirror, nights, play  # noqa: F401 (a fixture)

site_tag_changes = st.lists(st.tuples(st.integers(0, 5), st.integers(0, 8), st.sampled_from("+-"),
                                      st.integers(-30, 30 * 24)), max_size=8)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(nights=nights, dump=site_tag_changes)
def test_versions_from_a_chunks_histories_are_those_read_one_by_one(nights, dump, empty_mirror, tmp_path,
                                                                    monkeypatch):
    db = fresh_mirror(empty_mirror, tmp_path, nights)
    RecordWriter(db, SPECS["tags"], "").save(TAGS)
    site, _ = play(nights, "daily", db, monkeypatch,
                   lambda db, records: RecordWriter(db, SPECS["images"], "").save(records))
    images = [n for n in sorted(site.images) if n in {row[0] for row in db.execute("SELECT id FROM images")}]
    changes = [SiteChange(images[which % len(images)], utc_text(START + timedelta(hours=hours)), 7, "site_tags",
                          tags=((change, TAGS[tag]["id"], TAGS[tag]["name"]),))
               for which, tag, change, hours in dump if images]
    with db.conn:
        save_site_changes(db, None, changes)

    rows = {str(image_id): dict(zip(("raw", "stub", "hidden_from_users", "mirrored_at"), db.execute(
        "SELECT raw, stub, hidden_from_users, mirrored_at FROM images WHERE id = ?", [image_id]).fetchone()))
        for image_id in images}
    histories = histories_of(db.conn, "images", {key: row["mirrored_at"] for key, row in rows.items()})
    for key, row in rows.items():
        one_by_one = list(versions_of(db.conn, "images", key, row))
        chunked = list(versions_of(db.conn, "images", key, row, history=histories[key]))
        assert chunked == one_by_one, key
    db.conn.close()
