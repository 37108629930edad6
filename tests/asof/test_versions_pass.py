"""Every version of a record comes from one pass back through its history (issue 50, point 4).

An image whose tags the site changed hundreds of times (a dump's deep tag history, written by the
store's own writer of the site's changes): :func:`mirror.asof.versions_of` reads all its versions
with a handful of SQL statements, however many versions there are (one :func:`record_as_of` a
version made it thousands on the whole board), and each version is what ``/as-of/`` answers at
the moment it began.
"""

from __future__ import annotations

import json
from datetime import timedelta

from mirror.asof import Moment, record_as_of, versions_of
from mirror.dates import utc_text
from mirror.store import open_database
from mirror.store.history import SiteChange, save_site_changes
from mirror.store.specs import SPECS
from mirror.store.writer import RecordWriter

from .test_records_as_of import START, TAGS, Site

CHANGES = 300


def deep_history(tmp_path):
    """A mirror with one image, then ``CHANGES`` of the site's own changes of its tags, a minute apart."""
    db = open_database(tmp_path / "mirror.db")
    RecordWriter(db, SPECS["tags"], "").save(TAGS)
    site = Site()
    site.upload(utc_text(START))
    RecordWriter(db, SPECS["images"], "").save(list(site.answers().values()))
    changes = [SiteChange(1, utc_text(START + timedelta(minutes=1 + n)), 7, "site_tags",
                          tags=(("+-"[n % 2], TAGS[n % 9]["id"], TAGS[n % 9]["name"]),)) for n in range(CHANGES)]
    with db.conn:
        save_site_changes(db, None, changes)
    return db


def test_every_version_comes_from_one_pass_and_is_the_as_of_answer(tmp_path):
    db = deep_history(tmp_path)
    row = dict(zip(("raw", "stub", "hidden_from_users", "mirrored_at"), db.execute(
        "SELECT raw, stub, hidden_from_users, mirrored_at FROM images WHERE id = 1").fetchone()))
    statements = []
    db.conn.set_trace_callback(statements.append)
    versions = list(versions_of(db.conn, "images", "1", row))
    db.conn.set_trace_callback(None)

    assert len(versions) > CHANGES // 2  # a tag added and taken off again is a version each way
    assert len(statements) <= 4, (len(statements), statements[:8])
    began = [v.began for v in versions if v.began is not None]
    assert began == sorted(began, reverse=True)  # newest first
    assert versions[0].today
    for version in versions[1:]:
        if version.began is None:
            continue
        served = record_as_of(db.conn, "images", "1", row, Moment(version.began))
        assert served is not None and served.record == version.then.record, version.began
        assert json.loads(version.then.row(row)["raw"]) == version.then.record
    db.conn.close()
