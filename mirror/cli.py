"""The ``mirror`` command: parse, load config, call one function, print.

Exit codes (also in docs/use.md): 0 done; 1 unexpected error; 2 bad usage or config;
3 the site is unavailable or kept rate-limiting (everything fetched is kept; run again later);
4 the site rejected a request (bad query, key required, not found) or answered wrongly (a page
that does not move the walk on); 5 the database or the files
cannot be written (disk full, permissions, another program's write transaction, a missing bucket)
or must not be touched (a newer schema, another program's database); 6 `mirror verify` found
missing or corrupt files (`mirror verify --repair` fetches them again); 7 another run is writing
to the same mirror (this one did nothing); 8 `mirror serve`, `browse` or `site` cannot listen where
asked (the port is in use); 9 `mirror follow`: the site lets no client follow its firehose. Each error class carries its own code
(:mod:`mirror.errors` draws the tree); :func:`handle_errors` is the one place that applies it.
"""

from __future__ import annotations

import asyncio
import atexit
import gc
import json
import signal
import sqlite3
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import wraps
from typing import Any

import click

from .commands import runs
from .commands.monitor import Monitor, download_plan, export_plan, sync_plan, verify_plan
from .config import RESOURCES, load_config
from .download import Sample
from .errors import EXIT_DAMAGED, EXIT_ERROR, EXIT_STORE, EXIT_USAGE, MirrorError
from .progress import Reporter, stamped
from .store import DEFAULT_BUSY_TIMEOUT, database_errors, open_database, open_read_only, remove_unused, run_lock
from .store.upkeep import build as build_deferred
from .store.errors import store_error
from .urls import public_url_problem, split_credentials


# Set in ``ctx.meta`` by a run the Monitor watches: its error line is stamped like its other lines.
STAMPED_ERRORS = "mirror.stamped_errors"


def _fail(message: str, code: int) -> None:
    line = f"Error: {message}"
    ctx = click.get_current_context(silent=True)
    if ctx is not None and ctx.meta.get(STAMPED_ERRORS):
        line = stamped(line, sys.stderr)
    click.echo(line, err=True)
    sys.exit(code)


def _interrupt(signum: int, frame: Any) -> None:
    """Hand SIGTERM to whatever handles SIGINT now.

    Inside ``asyncio.run`` that handler cancels the main task, so the work stops at an ``await``
    and every ``finally`` runs; raising KeyboardInterrupt here instead could land between two
    statements of httpx's connection pool and leave its lock held, hanging the shutdown.
    """
    handler = signal.getsignal(signal.SIGINT)
    if not callable(handler):
        raise KeyboardInterrupt
    handler(signal.SIGINT, frame)


def _skip_the_teardown() -> None:
    """Let a stopped run leave at once: ``systemctl stop`` waits for it, and ends in SIGKILL past a limit.

    Tearing down every module the run imported took 0.4-1.7 s, nearly all of it the interpreter's
    last garbage collections over objects that hold nothing left to write: by then the run has
    closed its database (WAL written back), written its record and metrics file, and said why it
    stopped. Frozen at exit (after threads are joined, before those collections), they are left
    to the operating system; every other exit step (atexit handlers, flushing stdout and stderr)
    still runs. Called on the interrupt path only; inside a test runner it waits for that process's exit.
    """
    atexit.unregister(gc.freeze)  # once, however many runs a test process stops
    atexit.register(gc.freeze)


def _stop_cleanly_on_sigterm() -> None:
    """systemd and timeouts stop jobs with SIGTERM: treat it like Ctrl-C, with the same message."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _interrupt)


def handle_errors(command: Callable[..., Any]) -> Callable[..., Any]:
    """Turn the errors a user can hit into one clear line and a documented exit code."""

    @wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        _stop_cleanly_on_sigterm()
        try:
            return command(*args, **kwargs)
        except MirrorError as e:
            _fail(str(e), e.exit_code)
        except sqlite3.Error as e:  # one that no database_errors block named the file of
            _fail(str(store_error(e, "the database", DEFAULT_BUSY_TIMEOUT)), EXIT_STORE)
        except KeyboardInterrupt:
            _skip_the_teardown()
            _fail("interrupted; everything stored so far is kept and the next run resumes", EXIT_ERROR)

    return wrapper


@click.group(context_settings={"help_option_names": ["-h", "--help"]})  # every command's -h, as is usual
@click.option("-c", "--config", "config_path", type=click.Path(dir_okay=False), default=None,
              help="Config file (default: ./mirror.toml when present, else built-in defaults).")
@click.version_option(None, "-V", "--version", package_name="booru-mirror")
@click.pass_context
def cli(ctx: click.Context, config_path: str | None) -> None:
    """Keep an offline, queryable mirror of a Philomena image board."""
    ctx.obj = {"config_path": config_path}


def _config(ctx: click.Context):
    return load_config(ctx.obj["config_path"])


def exit_status(error: BaseException) -> int:
    """The exit code :func:`handle_errors` ends a run with when ``error`` stops it."""
    if isinstance(error, MirrorError):
        return error.exit_code
    if isinstance(error, sqlite3.Error):
        return EXIT_STORE
    if isinstance(error, SystemExit):
        return error.code if isinstance(error.code, int) else EXIT_ERROR
    return EXIT_ERROR


def _run(ctx: click.Context, work: Callable[..., Any], *args: Any, output: RunOutput | None = None,
         defers_upkeep: bool = False, **kwargs: Any) -> Any:
    """Run ``work(config, db, *args, reporter, **kwargs)`` with the progress display, holding the mirror's lock.

    First it builds what an unfinished first import left out (:mod:`mirror.store.upkeep`), unless
    the work is that import (``defers_upkeep``), which builds them at its own end.

    With ``output`` (sync, download, verify) the run also prints its header line, pings the
    health check, writes the metrics file and (``--json``) prints itself as one JSON object,
    however it ends; ``output.judge(result)`` gives the exit code of a run that raised nothing.
    """
    config = _config(ctx)
    busy_timeout = config.store.busy_timeout
    output = output or RunOutput()
    reporter = Reporter(quiet=output.quiet, out=sys.stderr if output.as_json else None)
    monitor = (Monitor(config, output.command, output.plan(config), reporter, count_files=output.count_files)
               if output.command else None)
    db, code, error = None, 0, None
    if monitor:
        ctx.meta[STAMPED_ERRORS] = True  # the error line goes to the same log as the run's lines
        monitor.start()
    try:
        new_folder = not config.database.parent.exists()
        with run_lock(config.database), database_errors(config.database, busy_timeout):
            created = not config.database.exists()
            db = open_database(config.database, busy_timeout=busy_timeout)
            try:
                with reporter:
                    if not defers_upkeep:  # what an unfinished first import left out (store.upkeep)
                        build_deferred(db, reporter.line)
                    result = asyncio.run(work(config, db, *args, reporter, **kwargs))
            except BaseException:
                if created and remove_unused(db, config.database, folder_too=new_folder):
                    db = None  # failed before its first write: no empty mirror is left behind
                raise
        code = output.judge(result)
        return result
    except BaseException as e:
        code, error = exit_status(e), str(e) or type(e).__name__
        if isinstance(e, KeyboardInterrupt):
            error = "interrupted"
        raise
    finally:
        if monitor:
            outcome = monitor.end(code, error, db)
            if output.as_json:
                click.echo(json.dumps(outcome.to_json(), ensure_ascii=False))
        if db is not None:
            db.close()  # now, not at the interpreter's exit: its WAL is written back before the run says it ended


@dataclass
class RunOutput:
    """How a writing command reports itself: its name, what it will do, --quiet, --json, its exit code."""

    command: str = ""
    plan: Callable[[Any], str] = lambda config: ""
    quiet: bool = False
    as_json: bool = False
    judge: Callable[[Any], int] = lambda result: 0
    count_files: bool = True  # the files pending, kept and failed, in --json and the metrics file


def _run_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """--quiet and --json, as sync, download and verify take them."""
    command = click.option("--json", "as_json", is_flag=True,
                           help="Print the run as one JSON object on stdout (keys in docs/nightly.md); "
                                "the summary lines go to stderr.")(command)
    return click.option("-q", "--quiet", is_flag=True,
                        help="Print only warnings and errors: nothing at all on a clean run.")(command)


@cli.command()
@click.argument("resources", nargs=-1, type=click.Choice(RESOURCES))
@_run_options
@click.pass_context
@handle_errors
def sync(ctx: click.Context, resources: tuple[str, ...], quiet: bool, as_json: bool) -> None:
    """Mirror every enabled resource, or the RESOURCES named."""
    _run(ctx, runs.sync, resources, output=RunOutput("sync", lambda config: sync_plan(config, resources), quiet,
                                                     as_json))


@cli.command()
@click.option("--json", "as_json", is_flag=True,
              help="When it stops, print what it did as one JSON object on stdout (keys in docs/follow.md).")
@click.option("-q", "--quiet", is_flag=True, help="Print only errors: no line per connection or catch-up.")
@click.pass_context
@handle_errors
def follow(ctx: click.Context, as_json: bool, quiet: bool) -> None:
    """Follow the site's firehose: each edit in the mirror as it happens, until stopped.

    Catches up what changed while it was away on every (re)connect. Runs beside the nightly sync.
    """
    from .commands.follow import run_follower

    run_follower(_config(ctx), as_json=as_json, quiet=quiet)


@cli.command()
@click.option("--retry-failed", is_flag=True, help="Try the files that failed before again.")
@_run_options
@click.pass_context
@handle_errors
def download(ctx: click.Context, retry_failed: bool, quiet: bool, as_json: bool) -> None:
    """Fetch the pending representations (images the site has finished processing)."""
    _run(ctx, runs.download, retry_failed=retry_failed,
         output=RunOutput("download", lambda config: download_plan(config, retry_failed), quiet, as_json))


def _sample(value: str | None) -> Sample | None:
    """``--sample``, checked here rather than by click so that a bad one is one line (click adds its usage)."""
    try:
        return Sample.parse(value) if value else None
    except ValueError as e:
        _fail(str(e), EXIT_USAGE)


def _verify_status(report: Any) -> int:
    return EXIT_DAMAGED if report.damaged and (report.repaired is None or report.unrepaired) else 0


@cli.command()
@click.option("--repair", is_flag=True, help="Fetch missing and corrupt files again.")
@click.option("--sample", "sample_text", metavar="K/N",
              help="Re-hash slice K of N of the kept files (images whose id modulo N is K-1); auto/N takes the "
                   "slice checked longest ago, so a nightly auto/30 checks every file once a month.")
@_run_options
@click.pass_context
@handle_errors
def verify(ctx: click.Context, repair: bool, sample_text: str | None, quiet: bool, as_json: bool) -> None:
    """Re-hash every kept file (or a slice); report (or --repair) the missing and corrupt ones."""
    sample = _sample(sample_text)
    report = _run(ctx, runs.verify, repair=repair, sample=sample,
                  output=RunOutput("verify", lambda config: verify_plan(sample, repair), quiet, as_json,
                                   _verify_status))
    if _verify_status(report):
        sys.exit(EXIT_DAMAGED)


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="The same as one JSON object (keys in docs/nightly.md).")
@click.pass_context
@handle_errors
def status(ctx: click.Context, as_json: bool) -> None:
    """Print counts, downloads, file checks, where each crawler stands and the last runs (reading only)."""
    from .commands.status import describe, status_json
    from .wiring import wanted_representations

    config = _config(ctx)
    if not config.database.exists():
        if as_json:
            click.echo(json.dumps({"database": str(config.database), "exists": False}))
            return
        click.echo(f"No mirror yet at {config.database}; run `mirror sync` to start one.")
        return
    busy_timeout = config.store.busy_timeout
    db = open_read_only(config.database, busy_timeout=busy_timeout)
    with database_errors(config.database, busy_timeout):
        if as_json:
            click.echo(json.dumps({**status_json(db, wanted_representations(config)), "exists": True},
                                  ensure_ascii=False))
        else:
            click.echo(describe(db, wanted_representations(config)))


@cli.command()
@click.option("--since", default="1d", show_default=True,
              help="How far back: 7d, 12h, 30m, 2w, or a date (2026-11-01).")
@click.option("--event", "events", multiple=True, metavar="EVENT",
              help="Only these events (repeat, or a comma list): deleted, merged, changed, first_seen...")
@click.option("--resource", "resources", multiple=True, metavar="RESOURCE",
              help="Only these resources (repeat, or a comma list): images, tags, users...")
@click.option("--id", "record_id", default=None,
              help="Only this record: image:5, tag:265, forum:art, topic:art/a-topic (or an id with one --resource).")
@click.option("--limit", type=int, default=None, help="At most this many, newest first.")
@click.option("--json", "as_json", is_flag=True, help="Objects with every old and new value, as JSON.")
@click.pass_context
@handle_errors
def changes(ctx: click.Context, since: str, events: tuple[str, ...], resources: tuple[str, ...],
            record_id: str | None, limit: int | None, as_json: bool) -> None:
    """What the syncs saw change, newest first, one line each; a first sync's records summed up (reading only)."""
    from .commands import changes as listing

    config = _config(ctx)
    if not config.database.exists():
        click.echo(f"No mirror yet at {config.database}; run `mirror sync` to start one.")
        return
    try:
        start, limit = listing.parse_since(since), listing.parse_limit(limit)
        wanted, tables = listing.parse_events(events), listing.parse_resources(resources)
        table, key = listing.parse_record(record_id, tables) if record_id is not None else (None, None)
    except ValueError as e:
        _fail(str(e), EXIT_USAGE)
    tables = (table,) if table else tables
    busy_timeout = config.store.busy_timeout
    db = open_read_only(config.database, busy_timeout=busy_timeout)
    shown = 0
    with database_errors(config.database, busy_timeout):
        if as_json:
            for chunk in listing.json_chunks(listing.changes(db, since=start, events=wanted, resources=tables,
                                                             key=key, limit=limit)):
                click.echo(chunk, nl=False)
            return
        for line in listing.lines(db, since=start, events=wanted, resources=tables, key=key, limit=limit):
            click.echo(line)
            shown += 1
    if not shown:
        click.echo(f"No change seen since {start}.", err=True)


@cli.command()
@click.argument("source")
@click.option("--tags", required=True, help='Comma-separated tags, a rating among them: "safe, pony, artist:me".')
@click.option("--source", "sources", multiple=True, help="Where the image comes from (repeat for more).")
@click.option("--description", default="", help="The image's description.")
@click.option("--anonymous", is_flag=True, help="Upload without your name on it.")
@click.pass_context
@handle_errors
def upload(ctx: click.Context, source: str, tags: str, sources: tuple[str, ...], description: str,
           anonymous: bool) -> None:
    """Upload SOURCE (a file, or a URL the site fetches) with the API key; never posted twice."""
    from .api.upload import upload_fields, upload_image
    from .commands.reverse import read_source
    from .wiring import make_client

    config = _config(ctx)
    if config.api_key is None:
        _fail("uploading needs an API key: set MIRROR_API_KEY (or site.api_key); nothing was sent", EXIT_USAGE)
    file = read_source(source)

    async def send():  # noqa: ANN202
        async with make_client(config) as client:
            return await upload_image(client, file, upload_fields(tags, description, sources, anonymous))

    result = asyncio.run(send())
    image = result.image
    if result.already_there:
        click.echo(f"already on the site as image {image['id']} (an earlier attempt landed; not sent again)")
    else:
        click.echo(f"uploaded as image {image['id']}; the site is processing it, and `mirror sync` downloads its "
                   "files once its thumbnails are generated")


SIMILAR_SCALE = ("(0: the same picture; copies mostly 0-12; recolours of one drawing 6-15 and up; an edit of a "
                 "part of a picture, its armour repainted, 15-25; unrelated pictures mostly 20 and up)")


@cli.command()
@click.argument("source")
@click.option("--distance", type=click.FloatRange(0, 1), default=None,
              help="How far each corner's brightness may differ, 0 to 1 (the site's default: 0.25).")
@click.option("--local", is_flag=True, help="Search the archive offline instead of asking the site.")
@click.option("--similar", is_flag=True,
              help="Search the archive offline by perceptual fingerprint: finds resized, re-encoded, cropped, "
                   "bordered and flattened copies the site's rule misses, nearest first with a distance on the "
                   f"scale of `mirror duplicates --distance` {SIMILAR_SCALE}.")
@click.pass_context
@handle_errors
def reverse(ctx: click.Context, source: str, distance: float | None, local: bool, similar: bool) -> None:
    """Find the images that look like SOURCE (a file or a URL), on the site or (--local) in the archive."""
    from .commands.reverse import describe_matches, read_source

    config = _config(ctx)
    file = read_source(source, fetch=local or similar)
    if similar:
        from .commands.similar import describe_similar, similar_to

        with _reading(config) as db:
            click.echo(describe_similar(similar_to(db, file.data or b"")))
        return
    if local:
        records, total = _search_local(config, file.data or b"", distance)
    else:
        records, total = _search_site(config, file, distance, source)
    click.echo(describe_matches(records, total, distance))


@cli.command()
@click.option("--distance", type=click.IntRange(0, 64), default=None,
              help="How far apart two images may be to be grouped (default 12), on the scale `mirror reverse "
                   f"--similar` prints {SIMILAR_SCALE}.")
@click.option("--json", "as_json", is_flag=True,
              help='The groups as JSON: {"distance": N, "groups": [{"ids": [...], "pairs": [{"a", "b", '
                   '"distance"}, ...]}]}, each group\'s pairs within the distance, nearest first.')
@click.pass_context
@handle_errors
def duplicates(ctx: click.Context, distance: int | None, as_json: bool) -> None:
    """Groups of near-duplicate images in the archive, by perceptual fingerprint, for a curator to review."""
    from .commands.similar import GROUP_DISTANCE, describe_groups, duplicate_groups

    config = _config(ctx)
    with _reading(config) as db:
        within = GROUP_DISTANCE if distance is None else distance
        click.echo(describe_groups(db, duplicate_groups(db, within), within, as_json))


@cli.command("export")
@click.argument("dest", required=False)
@click.option("--compact", is_flag=True,
              help="Then rewrite the tables' small files into large ones, deleting the replaced files older than "
                   "export.retention_hours.")
@_run_options
@click.pass_context
@handle_errors
def export_command(ctx: click.Context, dest: str | None, compact: bool, quiet: bool, as_json: bool) -> None:
    """Append what changed since the last export to Delta Lake tables in DEST (a folder or s3:// URL;
    default export.dest): one table per resource and for the history, one row per version."""
    config = _config(ctx)
    dest = dest or config.export.dest
    if not dest:
        _fail("export: no DEST given and [export] dest is not set; name a folder or an s3:// URL.", EXIT_USAGE)
    if not config.database.exists():
        _fail(f"No mirror yet at {config.database}; run `mirror sync` first, then export it.", EXIT_USAGE)
    _run(ctx, runs.export, dest=dest, compact=compact,
         output=RunOutput("export", lambda config: export_plan(dest, compact), quiet, as_json, count_files=False))


@cli.command()
@click.pass_context
@handle_errors
def checkpoints(ctx: click.Context) -> None:
    """Write the checkpoints of the tags' image lists the history calls for.

    The board as of a moment (serve's and browse's /as-of/) then undoes at most 2,000 changes of a
    tag, not every change since (docs/as-of.md). sync and import-dump write them at their end: run
    this after upgrading a mirror, or to see the build's progress. Only the missing are written.
    """
    if not _config(ctx).database.exists():
        _fail(f"No mirror yet at {_config(ctx).database}; run `mirror sync` or `mirror import-dump` first.", EXIT_USAGE)
    built = _run(ctx, runs.checkpoints)
    click.echo(built.summary() if built.checkpoints or built.uploads else "checkpoints: none missing")


@cli.command()
@click.pass_context
@handle_errors
def vacuum(ctx: click.Context) -> None:
    """Give the archive's free pages back to the disk.

    An upgrade that moves a table to a new layout leaves the pages it freed inside the file, for
    the archive to grow into; this writes the archive again without them (SQLite's VACUUM). It
    needs about the archive's size free twice over, and takes some minutes a GB; stopped, it loses
    nothing. `mirror status` says how much it would give back.
    """
    if not _config(ctx).database.exists():
        _fail(f"No mirror yet at {_config(ctx).database}; run `mirror sync` or `mirror import-dump` first.", EXIT_USAGE)
    click.echo(_run(ctx, runs.vacuum).summary())


@cli.command("import-dump")
@click.argument("source", metavar="FILE_OR_URL")
@click.option("--sha256", metavar="HEX", help="The SHA-256 the site lists for the dump: checked before importing.")
@click.option("--file-root", metavar="URL",
              help="Where the site's files are (default: as the mirror's records say; Derpibooru's CDN; BASE_URL/img).")
@click.option("--keep", is_flag=True,
              help="Keep a downloaded dump once imported (it is removed by default: some 5 GB the mirror no longer "
                   "needs). Until the import succeeds it stays beside the database, so a rerun does not fetch it "
                   "again.")
@click.option("--ignore-space", is_flag=True,
              help="Import even where the disk seems too small for it (the need is estimated from the dump's size, "
                   "as measured on boards of Derpibooru's shape; a full disk stops the import with nothing lost).")
@click.pass_context
@handle_errors
def import_dump(ctx: click.Context, source: str, sha256: str | None, file_root: str | None, keep: bool,
                ignore_space: bool) -> None:
    """Import the site's public database dump (a .pgdump file, or its URL), then sync only what changed.

    A whole board from its nightly dump instead of a million API requests; a killed import resumes
    where it stopped. A URL is downloaded beside the database (store.database's folder) with its
    progress shown, resumed from its .part after a cut, and removed once imported unless --keep.
    The dump lacks a few fields (first_seen_at, orig_size, duration, animated, processed,
    thumbnails_generated): the next sync fills them for records that change.
    """
    from .commands.import_dump import run_import
    from .dump.fetch import normalized_sha256
    from .dump.source import check_source

    check_source(source)  # before the lock and the database: a mistyped path creates nothing
    if sha256 is not None:
        normalized_sha256(sha256)
    _run(ctx, run_import, source, sha256=sha256, root=file_root, keep=keep, check_space=not ignore_space,
         defers_upkeep=True)


@contextmanager
def _reading(config: Any) -> Iterator[Any]:
    """The mirror's database opened for reading only, its errors said as the store says them."""
    if not config.database.exists():
        _fail(f"No mirror yet at {config.database}; run `mirror sync` and `mirror download` first.", EXIT_USAGE)
    busy_timeout = config.store.busy_timeout
    db = open_read_only(config.database, busy_timeout=busy_timeout)
    with database_errors(config.database, busy_timeout):
        yield db


def _search_local(config: Any, data: bytes, distance: float | None) -> tuple[list, int]:
    from .commands.reverse import search_archive

    with _reading(config) as db:
        return search_archive(db.conn, data, distance)


def _search_site(config: Any, file: Any, distance: float | None, source: str) -> tuple[list, int]:
    from .commands.reverse import search_site
    from .wiring import make_client

    async def ask():  # noqa: ANN202
        async with make_client(config) as client:
            return await search_site(client, file, distance, source)

    return asyncio.run(ask())


@cli.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8808, show_default=True, help="Port to listen on (0 picks a free one).")
@click.option("--db", "database", type=click.Path(dir_okay=False), default=None,
              help="The mirror database to serve (default: store.database of the config).")
@click.option("--as-of", "as_of", default=None, metavar="WHEN",
              help="Answer the plain API as the board was at WHEN (2025-01-05, 2025-01-05T12:00:00Z or "
                   "20250105120000), for clients that cannot ask /as-of/WHEN/ paths.")
@click.option("--public-url", "public_url", default=None, metavar="URL",
              help="The address clients reach the mirror at behind a proxy (https://mirror.example.org): "
                   "redirects, links and file URLs name it. Default: the address each request came in on "
                   "(never the request's Host header).")
@click.pass_context
@handle_errors
def serve(ctx: click.Context, host: str, port: int, database: str | None, as_of: str | None,
          public_url: str | None) -> None:
    """Answer the site's JSON API from the mirror, read-only, with its kept files; any record as it
    was at any moment under /as-of/WHEN/ (Memento, RFC 7089)."""
    from .asof import parse_moment
    from .serve.app import run_serve
    from .serve.board import Board
    from .wiring import open_storage

    try:
        moment = parse_moment(as_of) if as_of is not None else None
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--as-of") from None
    if public_url is not None and (problem := public_url_problem(public_url)):
        raise click.BadParameter(problem, param_hint="--public-url")
    config = _config(ctx)
    run_serve(Board(database or config.database), open_storage(config), host=host, port=port, echo=click.echo,
              moment=moment, public_url=public_url, site_url=split_credentials(config.site.base_url)[0])


@cli.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8001, show_default=True, help="Port to listen on (0 picks a free one).")
@click.option("--open", "open_browser", is_flag=True, help="Open it in a web browser.")
@click.option("--metadata", "print_metadata", is_flag=True,
              help="Print the Datasette metadata instead (for `datasette data/mirror.db -m metadata.json`).")
@click.option("--as-of", "as_of", default=None, metavar="WHEN",
              help="Start at the board as it was at WHEN (2025-01-05, 2025-01-05T12:00:00Z or 20250105120000): "
                   "its pages under /as-of/WHEN/, each linking to the same page today.")
@click.pass_context
@handle_errors
def browse(ctx: click.Context, host: str, port: int, open_browser: bool, print_metadata: bool,
           as_of: str | None) -> None:
    """Browse the mirror in Datasette: thumbnails, attribution, and the site's search syntax; any
    board page as it was at any moment under /as-of/WHEN/."""
    import json

    from .asof import parse_moment
    from .browse.app import browse_metadata, make_datasette, run_browse

    try:
        moment = parse_moment(as_of) if as_of is not None else None
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--as-of") from None
    config = _config(ctx)
    # Where links and thumbnails point; a password in base_url goes into no page.
    source = {"base_url": split_credentials(config.site.base_url)[0], "files": config.store.files}
    if print_metadata:
        click.echo(json.dumps(browse_metadata(config.database, **source), indent=2))
        return
    run_browse(make_datasette(config.database, **source), host=host, port=port, open_browser=open_browser,
               echo=click.echo, moment=moment)


def _dump_whole_board(dump_path: str | None, seed: int, image_count: int, layout: str, fixtures: str | None) -> None:
    """``mirror site --dump OUT --shape derpibooru``: the archive written, its counts and shapes printed."""
    if not dump_path or layout != "2026" or fixtures:
        _fail("--shape derpibooru writes a dump of the 2026 layout of a generated board: give --dump OUT, "
              "without --dump-layout 2022 or --fixtures", 2)
    from .localsite.dump.whole_board import whole_board_site

    click.echo(whole_board_site(dump_path, images=image_count, seed=seed))


@cli.command()
@click.option("--seed", default=1, show_default=True, help="Seed of the generated data set.")
@click.option("--images", "image_count", default=500, show_default=True, help="How many images to generate.")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8808, show_default=True, help="Port to listen on (0 picks a free one).")
@click.option("--faults", default="", help="Fault profile: a comma list of ratelimit, flaky, drops, corrupt, badfiles, "
              "slow, down, busy, repeat, badids, vanish, redirect, trickle (parameters in mirror/localsite/http/faults.py).")
@click.option("--fixtures", type=click.Path(exists=True, file_okay=False), default=None,
              help="Serve the recorded responses in this folder instead of generated data.")
@click.option("--processing-delay", default=0.5, show_default=True, type=click.FloatRange(0),
              help="Seconds before an upload is processed (thumbnails generated).")
@click.option("--dump", "dump_path", type=click.Path(dir_okay=False), default=None,
              help="Write the board as the site's public database dump (pg_dump -Fc) to this file, and exit.")
@click.option("--dump-layout", type=click.Choice(["2026", "2022"]), default="2026", show_default=True,
              help="The dump's layout: the site's tables as of 2026, or of 2022.")
@click.option("--shape", type=click.Choice(["board", "derpibooru"]), default="board", show_default=True,
              help="With --dump: the board the site serves (board), or a board of Derpibooru's shape drawn straight "
              "into the archive, without PostgreSQL, in minutes at the whole board's 3.5 million images "
              "(derpibooru; prints its counts and shapes).")
@click.option("--dumps-dir", type=click.Path(exists=True, file_okay=False), default=None,
              help="Serve the files in this folder under /dumps/NAME (with Range), as the site's file host serves "
              "its dumps.")
@click.option("--stand-ins", is_flag=True,
              help="Serve files of a few bytes instead of pictures (drawn artwork from Battle for Wesnoth for the "
                   "first 243 images, then shapes): quicker to download, nothing to look at.")
def site(seed: int, image_count: int, host: str, port: int, faults: str, fixtures: str | None,
         processing_delay: float, dump_path: str | None, dump_layout: str, shape: str, dumps_dir: str | None,
         stand_ins: bool) -> None:
    """Run the local Philomena-compatible site (for tests, demos and benchmarks).

    Besides the API under /api/v1/json and its firehose at /socket/websocket (each edit below sent
    as the real site sends it; docs/follow.md) it answers a control API, to change the board while it runs
    (JSON bodies; never rate limited, faulted or logged). With SITE its address:

    \b
      curl -d '{"n": 5}' SITE/_control/images/add           add images -> {"ids": [...]}
      curl -d '{"tags": ["safe", "pony"], "score": 10}' SITE/_control/images/ID/edit
                      set tags, score, description, thumbnails_generated or any other field
      curl -d '{"reason": "Rule #0"}' SITE/_control/images/ID/hide   hide (delete) an image
      curl -d '{"into": 12}' SITE/_control/images/ID/merge  merge an image into another
      curl -d '{"body": "Hi!"}' SITE/_control/images/ID/comments   comment on an image
      curl -d '{"body": "Edited."}' SITE/_control/comments/ID/edit   edit a comment
      curl -d '{"body": "A reply."}' SITE/_control/topics/ID/posts   reply to a topic
      curl -X POST SITE/_control/firehose/close             close every firehose connection
      curl -d '{"spec": "ratelimit,flaky"}' SITE/_control/faults     switch faults ("" for none)
      curl SITE/_control/requests                           every request seen, as JSON
      curl -X POST SITE/_control/requests/clear             forget them
    """
    if shape == "derpibooru":
        _dump_whole_board(dump_path, seed, image_count, dump_layout, fixtures)
        return
    if dump_path:
        from .localsite.dump import dump_site

        try:
            click.echo(dump_site(dump_path, seed=seed, images=image_count, fixtures=fixtures, layout=dump_layout,
                                 pictures=not stand_ins))
        except MirrorError as e:
            _fail(str(e), e.exit_code)
        return
    from .localsite.http.server import run_site

    _stop_cleanly_on_sigterm()  # so that the generated board is removed however the site is stopped
    try:
        run_site(seed=seed, images=image_count, host=host, port=port, faults=faults, fixtures=fixtures,
                 processing_delay=processing_delay, dumps_dir=dumps_dir, pictures=not stand_ins)
    except MirrorError as e:  # the port is taken
        _fail(str(e), e.exit_code)
    except KeyboardInterrupt:
        click.echo("Local site stopped.")


@cli.command()
@click.option("--images", "image_count", default=250, show_default=True, help="How many images the local site has.")
@click.option("--data", "data_dir", default="data", show_default=True, type=click.Path(file_okay=False),
              help="Where the demo mirror is written.")
@click.option("--port", default=0, show_default=True, type=click.IntRange(0, 65535),
              help="The loopback port the demo's local site listens on (0 picks a free one).")
@handle_errors
def demo(image_count: int, data_dir: str, port: int) -> None:
    """Run the local site on a loopback port, mirror it into DATA, and show the result."""
    from .commands.demo import run_demo

    run_demo(image_count=image_count, data_dir=data_dir, port=port, echo=click.echo)


if __name__ == "__main__":  # pragma: no cover
    cli()
