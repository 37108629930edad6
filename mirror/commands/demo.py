"""``mirror demo``: the whole pipeline against the local site, with no network and no config.

It is a new user's first command, so it says what each step is doing as it starts (with how long
a long one takes), and ends with what to open and try. Its pictures are drawn once and kept in a
cache folder (:mod:`mirror.localsite.files.drawn`): a later demo reads them instead.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

from sqlite_utils import Database

from ..config import Config, make_config
from ..listening import listen
from ..localsite.board.copies import Planted, plant_copies
from ..localsite.board.editor import BoardEditor
from ..localsite.files.drawn import cache_folder
from ..localsite.files.predraw import predraw
from ..localsite.http.server import SiteServer
from ..progress import Reporter
from ..store import open_database, run_lock
from ..sync.runner import ORDER
from .runs import download, sync
from .status import counts

Echo = Callable[[str], None]

# From the CPU time measured (issue 40), for a quiet 2-core machine: what a first demo's drawing
# costs an image (a third less since its PNG paintings have a palette: issue 53), and the files a
# download keeps a second; for the estimates the steps print.
DRAW_SECONDS_PER_IMAGE = 0.08
FILES_PER_SECOND = 20
BROWSE = "http://127.0.0.1:8001"  # where `mirror browse` listens by default
DEMO_RATE = 100  # requests a second to the demo's own local site


def run_demo(*, image_count: int = 250, data_dir: str = "data", port: int = 0, echo: Echo = print) -> None:
    """Serve a generated board on a loopback port (``port``, 0 for a free one), mirror it into
    ``data_dir``, download its files, and say what to try next."""
    started = time.monotonic()
    database = Path(data_dir) / "mirror.db"
    listen("127.0.0.1", port).close()  # a port already taken is said at once, before any drawing
    board = _generate(image_count, echo)
    planted = plant_copies(board)
    with SiteServer(board, port=port) as site:
        echo(f"[2/4] Local site running at {site.url} with {image_count} generated images "
             f"and {len(planted)} altered copies of image {planted[0].source_id if planted else '-'}.")
        settings = _settings(site.url, board.everything_filter_id, data_dir)
        with run_lock(database):
            db = open_database(database)
            with Reporter() as reporter:
                echo("[3/4] Syncing every resource (images, tags, comments, galleries, forums, posts, filters, "
                     "profiles)...")
                asyncio.run(sync(make_config({**settings, "download": {"enabled": False}}), db, reporter=reporter))
                config = make_config(settings)
                pending = db.execute("SELECT count(*) FROM images WHERE thumbnails_generated").fetchone()[0] * len(
                    config.download.representations)
                echo(f"[4/4] Downloading and verifying about {pending:,} files "
                     f"({', '.join(config.download.representations)}; about {_seconds(pending / FILES_PER_SECOND)})...")
                asyncio.run(download(config, db, reporter=reporter))
    try:
        _report(db, config, planted, started, echo)
    finally:
        db.close()  # the WAL written back: the mirror is one file again


def _generate(image_count: int, echo: Echo) -> BoardEditor:
    """The board, with its pictures: drawn on a first run, read from the cache folder after."""
    folder = cache_folder()
    cached = folder is not None and folder.is_dir() and any(folder.iterdir())
    when = ("read from the cache of an earlier run" if cached
            else f"drawn once on 2 processes, about {_seconds(image_count * DRAW_SECONDS_PER_IMAGE)}")
    kept = f"; kept in {folder}" if folder is not None else ""
    echo(f"[1/4] Generating a board of {image_count} images with pictures ({when}{kept})...")
    step = time.monotonic()
    if not cached:
        predraw(seed=1, images=image_count, workers=2)  # on both cores; the board then reads them
    board = BoardEditor.generate(seed=1, images=image_count, with_pictures=True)  # pictures worth browsing
    echo(f"      done in {time.monotonic() - step:.1f} s.")
    return board


def _settings(url: str, everything: int, data_dir: str) -> dict[str, dict[str, object]]:
    return {
        # The "Everything" filter hides nothing, as an archivist would configure it.
        "site": {"base_url": url, "user_agent": "mirror-demo", "filter_id": everything},
        # The local site is ours to load; a real site gets the default of 1 request/s. It has no
        # limit of its own on searches either: at Derpibooru's 20 in 10 s, the walks' searches
        # waited some 25 s, most of the sync.
        "polite": {"requests_per_second": DEMO_RATE, "searches_per_10s": DEMO_RATE * 10},
        "store": {"database": str(Path(data_dir) / "mirror.db"), "files": str(Path(data_dir) / "files")},
        "download": {"enabled": True, "requests_per_second": 400, "concurrency": 4},
        **{name: {"enabled": True} for name in ORDER},
    }


def _report(db: Database, config: Config, planted: list[Planted], started: float, echo: Echo) -> None:
    """The counts, then what to open and try, each with the command or address that shows it."""
    echo("")
    for label, value in counts(db).items():
        echo(f"  {label:<34} {value:>8,}")
    files = db.execute("SELECT count(*), coalesce(sum(bytes), 0) FROM downloads WHERE status = 'done'").fetchone()
    echo(f"\n{files[0]:,} files ({files[1] / 1e6:.1f} MB) downloaded and verified into {config.store.files}.")
    database = config.store.database
    settings = Path(database).parent / "mirror.toml"
    settings.write_text(config.to_toml())  # for the commands that browse or serve the mirror afterwards
    echo(f"Done in {time.monotonic() - started:.1f} s. The mirror is {database}.\n")
    echo("Open and try:")
    echo(f"  mirror -c {settings} browse --open")
    echo(f"      browse it, pictures and all, at {BROWSE}/")
    tag = _a_common_tag(db)
    if tag:
        echo(f"  {BROWSE}/-/booru?q={tag.replace(' ', '+')}")
        echo("      a search in the site's own language (tags, score.gt:10, created_at.lte:..., AND, OR, NOT)")
    if planted:
        copies = ", ".join(f"#{p.image_id} {p.how}" for p in planted)
        echo(f"  {BROWSE}/-/duplicates   (or: mirror -c {settings} duplicates)")
        echo(f"      near-duplicates: image #{planted[0].source_id} and its planted copies: {copies}")
    echo(f"  mirror -c {settings} changes")
    echo("      what each later sync changed (edits, hides, merges) is kept: run the demo's site and sync again")
    echo(f"  mirror -c {settings} serve")
    echo("      its JSON API, as the site's, for other tools")


def _a_common_tag(db: Database) -> str | None:
    row = db.execute("SELECT tags.name FROM tags JOIN image_tags ON image_tags.tag_id = tags.id "
                     "GROUP BY tags.id ORDER BY count(*) DESC LIMIT 1").fetchone()
    return row[0] if row else None


def _seconds(seconds: float) -> str:
    return f"{max(5, round(seconds / 5) * 5):.0f} s"
