"""A file host is configuration, not a change of the record.

A dump imported before the site's URL is set names the files below the default host (the real
site's CDN); the sync that follows, configured for the site, receives the same records naming
the site's own ``/img`` (those it receives again: the ones that changed since the dump, and the
newest). With the same files under both roots, nothing changed: the history keeps
no "view_url edited", no "representations edited".
"""

from __future__ import annotations

import asyncio

from mirror.commands.import_dump import run_import
from mirror.config import make_config
from mirror.localsite.board.editor import BoardEditor
from mirror.localsite.http.server import SiteServer
from mirror.store import open_database

from ..support.configs import site_config, sync
from ..support.dumps import make_dump, needs_postgres

pytestmark = needs_postgres


def test_a_dump_imported_before_the_sites_url_is_set_leaves_the_first_sync_nothing_to_record(tmp_path):
    editor = BoardEditor.generate(seed=3, images=40)
    with SiteServer(editor) as site:
        dump = make_dump(editor, tmp_path)
        config = site_config(site, tmp_path)
        unset = make_config({"store": {"database": str(config.database), "files": str(tmp_path / "files")}})
        db = open_database(config.database)
        asyncio.run(run_import(unset, db, str(dump)))
        hosts = {url.partition("/view/")[0] for (url,) in db.execute("SELECT view_url FROM images")}
        assert hosts == {"https://derpicdn.net/img"}  # the default board's file host
        imported = db.execute("SELECT max(id) FROM history").fetchone()[0]
        sync(config)
        resent = db.execute("SELECT count(*) FROM images WHERE view_url LIKE ?", [f"{site.url}/img/view/%"]).fetchone()[0]
        assert resent > 0  # records the sync received again, naming the site's own files
        kept = db.execute("SELECT record_key, event, changes FROM history WHERE id > ? AND resource = 'images' "
                          "AND event != 'first_seen'", [imported]).fetchall()
        assert kept == []
