"""``mirror demo``: the whole pipeline against the local site, with no network and no config."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

from ..config import Config, make_config
from ..localsite.board.editor import BoardEditor
from ..localsite.http.server import SiteServer
from ..progress import Reporter
from ..store import open_database, run_lock
from ..sync.runner import ORDER
from .runs import sync
from .status import counts


def run_demo(*, image_count: int = 500, data_dir: str = "data", echo: Callable[[str], None] = print) -> None:
    """Serve a generated board on a free loopback port, mirror it into ``data_dir``, report."""
    started = time.monotonic()
    database = Path(data_dir) / "mirror.db"
    board = BoardEditor.generate(seed=1, images=image_count, with_pictures=True)  # pictures worth browsing
    with SiteServer(board) as site:
        echo(f"Local site running at {site.url} with {image_count} generated images.")
        config = make_config({
            # The "Everything" filter hides nothing, as an archivist would configure it.
            "site": {"base_url": site.url, "user_agent": "mirror-demo", "filter_id": board.everything_filter_id},
            # The local site is ours to load; a real site gets the default of 1 request/s.
            "polite": {"requests_per_second": 100},
            "store": {"database": str(database), "files": str(Path(data_dir) / "files")},
            "download": {"enabled": True, "requests_per_second": 400, "concurrency": 4},
            **{name: {"enabled": True} for name in ORDER},
        })
        with run_lock(database):
            db = open_database(database)
            with Reporter() as reporter:
                asyncio.run(sync(config, db, reporter=reporter))
    echo("")
    for label, value in counts(db).items():
        echo(f"  {label:<34} {value:>8,}")
    example = db.execute(
        "SELECT tags.name FROM tags JOIN image_tags ON image_tags.tag_id = tags.id "
        "GROUP BY tags.id ORDER BY count(*) DESC LIMIT 1").fetchone()
    if example:
        hits = [row["id"] for row in db["images"].search(example[0], quote=True, order_by="score desc", limit=5)]
        total = db.execute("SELECT count(*) FROM images_fts WHERE images_fts MATCH ?", [f'"{example[0]}"']).fetchone()[0]
        echo(f"\nFull-text search for \"{example[0]}\" finds {total} images; the top scored: {hits}")
        echo(f"  sqlite3 {database} \"SELECT id FROM images_fts WHERE images_fts MATCH 'pony' LIMIT 5\"")
    files = db.execute("SELECT count(*), coalesce(sum(bytes), 0) FROM downloads WHERE status = 'done'").fetchone()
    echo(f"\n{files[0]:,} files ({files[1] / 1e6:.1f} MB) downloaded and verified into {config.store.files}.")
    settings = _write_settings(Path(data_dir), config)
    echo(f"Done in {time.monotonic() - started:.1f} s. The mirror is {database}.")
    echo(f"Browse it, pictures and all: mirror -c {settings} browse --open")
    echo(f"Serve its JSON API to other tools: mirror -c {settings} serve")
    echo(f"What the next syncs change is kept: mirror -c {settings} changes; "
         f"near-duplicates: mirror -c {settings} duplicates")


def _write_settings(data_dir: Path, config: Config) -> Path:
    """The demo's config, for the commands that browse or serve its mirror afterwards."""
    path = data_dir / "mirror.toml"
    path.write_text(config.to_toml())
    return path
