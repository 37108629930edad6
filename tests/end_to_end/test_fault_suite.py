"""The fault suite: every fault of the reliability issue, end to end through the CLI, in one table.

Each case makes the local site (its fault profiles) or a fault proxy in front of it
(:mod:`tests.fault_proxy`) misbehave in one way, runs ``mirror sync`` or ``mirror download`` as
cron would, and checks three things: the exit code, what the mirror said, and that nothing was
lost. Nothing lost means: every record the site served intact is stored exactly as served, the
broken ones are in ``rejects``, every file of an intact ready image is kept and verifies, and the
database passes ``PRAGMA integrity_check``; where the run stops early (or leaves files failed),
what it kept is all as served and the rerun once the fault clears completes the mirror.

The detailed tests of each fault live beside its fix (test_sync_walks, test_download,
test_politeness, test_store_errors, test_config); this table is the proof across all kinds at
once. With ``MIRROR_FAULT_REPORT`` set, every case writes what it saw there (JSON), which
``scripts/reliability_report.py`` turns into ``docs/reliability.md``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from click.testing import CliRunner, Result

from mirror.browse.app import make_datasette
from mirror.cli import cli
from mirror.commands import runs
from mirror.config import Config
from mirror.download.kinds import file_problem
from mirror.localsite.board.editor import BoardEditor
from mirror.localsite.http.faults import _spoilt
from mirror.localsite.http.server import LoopbackServer, SiteServer
from mirror.serve.app import create_serve_app
from mirror.serve.board import Board
from mirror.store import open_database
from mirror.store.records import to_json, valid_id
from mirror.wiring import open_storage

from ..support import fault_proxy as proxy_rules
from ..support.configs import RESOURCES, changed, mirror_config, site_config, site_images, sync, write_config
from ..support.disks import fill, mounted_tmpfs
from ..support.dumps import make_dump, needs_postgres
from ..support.fault_proxy import FaultProxy, Rule
from ..support.killing import assert_store_intact, mirror_state

# One worker runs every case (`pytest -n auto --dist loadfile`, or `loadgroup`): the ledger is a module's, and the
# report the lead regenerates docs/reliability.md from must hold every case, not one worker's half.
pytestmark = [pytest.mark.faults, pytest.mark.xdist_group("fault-suite")]

REPORT_ENV = "MIRROR_FAULT_REPORT"
FILES = {"representations": ["thumb"], "requests_per_second": 500, "concurrency": 4}
HUGE = "lorem ipsum " * 250_000  # 3 MB of text in one field
ODD_TEXT = "NUL \x00 inside, emoji 👩‍👩‍👧, right-to-left \u202eolleh\u202c, a lone surrogate \ud800, zero width \u200b"


# --- the site, the proxy, the ledger -----------------------------------------------------------------

@pytest.fixture(scope="module")
def site() -> Iterator[SiteServer]:
    """A small board (two pages of images), shared: each case only reads it."""
    with SiteServer(BoardEditor.generate(seed=3, images=60)) as server:
        yield server


@pytest.fixture(scope="module")
def proxy(site: SiteServer) -> Iterator[FaultProxy]:
    with FaultProxy(site.url) as server:
        yield server


@pytest.fixture(scope="module")
def ledger() -> Iterator[list[dict[str, Any]]]:
    """What each case saw, written as JSON to $MIRROR_FAULT_REPORT (when set) once the module is done."""
    rows: list[dict[str, Any]] = []
    yield rows
    if target := os.environ.get(REPORT_ENV):
        Path(target).write_text(json.dumps(rows, ensure_ascii=False, indent=1), encoding="utf-8")


@dataclass
class Run:
    """One case's mirror: the site, the proxy, the config (and its file) and anything held open."""

    site: SiteServer
    proxy: FaultProxy
    tmp_path: Path
    config: Config
    held: list[Any] = field(default_factory=list)

    @property
    def config_path(self) -> Path:
        return self.tmp_path / "mirror.toml"

    def records(self) -> list[dict[str, Any]]:
        """Every image record as the mirror is served it when nothing is wrong: from the proxy when the
        mirror talks to it (file URLs then name the proxy), else from the site."""
        through_proxy = self.config.site.base_url == self.proxy.url
        source = SimpleNamespace(api_url=self.proxy.api_url, editor=self.site.editor) if through_proxy else self.site
        return site_images(source)

    def mirror(self, *args: str) -> Result:
        return CliRunner().invoke(cli, ["-c", str(self.config_path), *args])


def as_is(record: dict[str, Any]) -> Any:
    return record


@dataclass(frozen=True)
class Case:
    """One fault kind: how it is made, the command that meets it, and what the mirror must do."""

    kind: str
    tried: str  # what the site did, in words
    fault: str | Callable[[Run], Rule] = ""  # a site fault profile, or the proxy rule to put in front
    command: tuple[str, ...] = ("sync",)
    code: int = 0
    says: str = ""  # in the output
    served: Callable[[dict[str, Any]], Any] = as_is  # a site record as the client got it (None: never sent)
    files: bool = False  # thumbnails are downloaded (by the sync, or by a download after a clean sync)
    options: dict[str, dict[str, Any]] = field(default_factory=dict)  # config sections to add to
    prepared: bool = False  # a clean sync first
    arrange: Callable[[Run], None] | None = None  # just before the faulted run
    release: Callable[[Run], None] | None = None  # the fault cleared (the config fixed, a lock let go)
    check: Callable[[Run], str] | None = None  # a case's own proof; says what it proved
    rerun: tuple[str, ...] | None = None  # after the fault clears, completes what the faulted run left


# --- what the faults do to records ------------------------------------------------------------------

def every(n: int, change: Callable[[dict[str, Any]], Any]) -> Callable[[dict[str, Any]], Any]:
    """``change`` applied to the full (not hidden) records whose id is a multiple of ``n``."""
    def served(record: dict[str, Any]) -> Any:
        return change(record) if record["id"] % n == 0 and "tags" in record else record

    return served


def wrong_types(record: dict[str, Any]) -> dict[str, Any]:
    return {**record, "score": str(record["score"]), "width": "wide", "tags": ", ".join(record["tags"]),
            "representations": list(record["representations"].values()), "intensities": [1, 2]}


def nulls(record: dict[str, Any]) -> dict[str, Any]:
    return {key: None for key in record} | {"id": record["id"]}


def without_zone(record: dict[str, Any]) -> dict[str, Any]:
    return {**record, **{key: record[key].removesuffix("Z") for key in ("created_at", "updated_at", "first_seen_at")}}


def odd_text(record: dict[str, Any]) -> dict[str, Any]:
    return {**record, "description": ODD_TEXT, "name": ODD_TEXT}


def one_name_short(record: dict[str, Any]) -> dict[str, Any]:
    """``tags`` one shorter than ``tag_ids``: paired in order, every later name lands on the wrong id."""
    return {**record, "tags": record["tags"][1:]}


def spoilt_ids(value: str, n: int = 7) -> Callable[[dict[str, Any]], Any]:
    """What the site's ``badids:VALUE/n`` profile sends."""
    return lambda record: _spoilt(record, value) if record["id"] % n == 0 else record


def vanished(n: int) -> Callable[[dict[str, Any]], Any]:
    return lambda record: None if record["id"] % n == 0 else record


# --- a case's own checks, and the arrangements around the faulted run ---------------------------------

def retry_after_honoured(run: Run) -> str:
    """Every API request after a 429/503 with Retry-After came at least that long after it."""
    api = sorted((s for s in run.proxy.seen if s.path.startswith("/api/")), key=lambda s: s.time)
    waits = [(later.time - asked.time, asked.retry_after) for asked, later in zip(api, api[1:])
             if asked.retry_after is not None]
    assert waits and all(waited >= wanted - 0.05 for waited, wanted in waits), waits
    return "retried after " + ", ".join(f"{waited:.2f} s (asked {wanted:.2f} s)" for waited, wanted in waits)


def the_site_says_json_utf_8(site: SiteServer) -> str:
    """The local site's own answers carry the real site's Content-Type, exactly (clients assert it)."""
    answer = httpx.get(f"{site.api_url}/search/images", params={"q": "*"})
    assert answer.headers["content-type"] == "application/json; charset=utf-8"
    return "the site itself says application/json; charset=utf-8"


def changes_kept_as_u_fffd(run: Run, served: Callable[[dict[str, Any]], Any]) -> str:
    """Each record changed to hold a lone surrogate has its change in the history, with U+FFFD there."""
    changed = {str(r["id"]) for r in run.records() if served(r) != r}
    with sqlite3.connect(run.config.database) as db:
        kept = dict(db.execute("SELECT record_key, changes FROM history WHERE event = 'changed'").fetchall())
    assert changed and set(kept) == changed
    assert all(json.loads(kept[key])["description"][1] == ODD_TEXT.replace("\ud800", "\ufffd") for key in changed)
    return f"{len(changed)} changes kept in the history, the surrogate as U+FFFD"


def asked_nothing(run: Run) -> str:
    assert run.site.requests == [], "the site was asked something"
    return "no request sent"


def misspell_base_url(run: Run) -> None:
    text = run.config_path.read_text().replace("base_url =", "base_urll =", 1)
    run.config_path.write_text(text)


def line_break_in_user_agent(run: Run) -> None:
    text = run.config_path.read_text().replace('user_agent = "tests"', 'user_agent = "tests\\r\\nX-Evil: 1"', 1)
    run.config_path.write_text(text)


def port_out_of_range(run: Run) -> None:
    text = re.sub(r'^base_url = .*$', 'base_url = "http://127.0.0.1:99999"', run.config_path.read_text(), count=1,
                  flags=re.M)
    run.config_path.write_text(text)


def https_to_plain_http(run: Run) -> None:
    run.config_path.write_text(run.config_path.read_text().replace('base_url = "http://', 'base_url = "https://', 1))


def api_path_pasted(run: Run) -> None:
    text = re.sub(r'^(base_url = ".*)"$', r'\1/api/v1/json"', run.config_path.read_text(), count=1, flags=re.M)
    run.config_path.write_text(text)


def files_on_an_ftp_server_not_there(run: Run) -> None:
    text = re.sub(r'^files = .*$', 'files = "ftp://127.0.0.1:9/files"', run.config_path.read_text(), count=1, flags=re.M)
    run.config_path.write_text(text)


def fix_config(run: Run) -> None:
    write_config(run.config, run.config_path)


def hold_write_lock(run: Run) -> None:
    other = sqlite3.connect(run.config.database, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another program's write transaction, left open
    run.held.append(other)


def let_go(run: Run) -> None:
    for other in run.held:
        other.execute("ROLLBACK")
        other.close()


FUTURE = "0099_from_the_future"


def from_the_future(run: Run) -> None:
    with sqlite3.connect(run.config.database) as db:
        db.execute("INSERT INTO _sqlite_migrations (migration_set, name, applied_at) "
                   "VALUES ('booru-mirror', ?, '2030-01-01')", [FUTURE])
    run.site.clear_requests()


def back_to_the_present(run: Run) -> None:
    with sqlite3.connect(run.config.database) as db:
        db.execute("DELETE FROM _sqlite_migrations WHERE name = ?", [FUTURE])


def through_proxy(rule: Callable[[], Rule]) -> Callable[[Run], Rule]:
    return lambda run: rule()


def first_api(count: int, answer: Callable[[], Any]) -> Callable[[Run], Rule]:
    return through_proxy(lambda: proxy_rules.on_first_api_requests(count, answer))


def records(change: Callable[[dict[str, Any]], Any]) -> Callable[[Run], Rule]:
    return through_proxy(lambda: proxy_rules.rewrite_records(change))


STOPPED = "so as not to loop; everything before is kept"
NO_RETRY = {"polite": {"max_retries": 0}}

CASES = [
    Case("429, Retry-After in seconds", "the first 2 API answers: 429 with Retry-After: 1",
         first_api(2, proxy_rules.status(429, "1")), check=retry_after_honoured),
    Case("429, Retry-After as an HTTP-date", "the first 2 API answers: 429 with Retry-After: <HTTP-date 2 s ahead>",
         first_api(2, proxy_rules.status(429, proxy_rules.http_date_in(2))), check=retry_after_honoured),
    Case("503, Retry-After in seconds", "the first 2 API answers: 503 with Retry-After: 1",
         first_api(2, proxy_rules.status(503, "1")), check=retry_after_honoured),
    Case("503, Retry-After as an HTTP-date", "the first 2 API answers: 503 with Retry-After: <HTTP-date 2 s ahead>",
         first_api(2, proxy_rules.status(503, proxy_rules.http_date_in(2))), check=retry_after_honoured),
    Case("500/502/504 burst", "the first 3 API answers: 500, 502, 504 (HTML)",
         through_proxy(lambda: _burst(500, 502, 504))),
    Case("5xx bursts on API and files", "profile `flaky:12/2`: every 12th request, API or file, starts 2 "
         "failures (503 with Retry-After: 1, 502, 500)", "flaky:12/2", files=True),
    Case("connection resets and truncated bodies", "profile `drops:4`: every 4th request, API or file, is "
         "dropped before any answer or cut halfway through its body", "drops:4", files=True),
    Case("truncated API body", "the first API answer: 200, its connection closed halfway through the "
         "Content-Length", first_api(1, proxy_rules.cut_json)),
    Case("timeout", "the first 2 API answers come after 5 s (polite.timeout = 1.5)",
         through_proxy(lambda: proxy_rules.stall(5.0, 2)), options={"polite": {"timeout": 1.5}}),
    Case("HTML with status 200 on an API URL", "the first API answer: 200 text/html (a web page, a captive portal; "
         "Philomena's proxy sends its pages with 429 and 5xx only)",
         first_api(1, proxy_rules.body(b"<!DOCTYPE html><html><body>Welcome</body></html>", "text/html")),
         code=4, says="with an HTML page (200), not Philomena's JSON API: check that site.base_url",
         check=asked_nothing, rerun=("sync",)),
    Case("invalid JSON", "the first 2 API answers: 200 application/json, `{\"images\": [{\"id\": 1},`",
         first_api(2, proxy_rules.body(b'{"images": [{"id": 1},', "application/json"))),
    Case("Content-Type not the site's", "API answers in turn say `application/json` (no charset), "
         "`application/json;charset=UTF-8`, `text/plain; charset=utf-8`, `text/html`",
         through_proxy(lambda: proxy_rules.content_types("application/json", "application/json;charset=UTF-8",
                                                         "text/plain; charset=utf-8", "text/html")),
         check=lambda run: the_site_says_json_utf_8(run.site)),
    Case("wrong types in records", "every 5th image: score \"12\", width \"wide\", tags one string, "
         "representations a list, intensities a list", records(every(5, wrong_types)),
         served=every(5, wrong_types), files=True),
    Case("nulls everywhere", "every 4th image: every field but id is null", records(every(4, nulls)),
         served=every(4, nulls), files=True),
    Case("huge strings", "every 20th image: a 3 MB description", records(every(20, lambda r: {**r, "description": HUGE})),
         served=every(20, lambda r: {**r, "description": HUGE})),
    Case("unicode and NUL in text", "every 3rd image: description and name with NUL, emoji, RTL marks, "
         "a lone surrogate", records(every(3, odd_text)), served=every(3, odd_text)),
    Case("tags and tag_ids out of step", "every 7th image: its tags list one shorter than its tag_ids (the first "
         "name left out)", records(every(7, one_name_short)), served=every(7, one_name_short),
         says="whose tags and tag_ids disagree"),
    Case("a lone surrogate in a changed field", "after a clean sync, every 3rd image comes again with a lone "
         "surrogate (and NUL, emoji, RTL marks) in its description and name", records(every(3, odd_text)),
         served=every(3, odd_text), prepared=True, options={"images": {"refresh_overlap": 10**9}},
         check=lambda run: changes_kept_as_u_fffd(run, every(3, odd_text))),
    Case("timestamps without a zone", "every image: created_at, updated_at, first_seen_at with no Z",
         records(every(1, without_zone)), served=every(1, without_zone)),
    Case("a page repeated forever", "profile `repeat`: the first page of each path, whatever is asked",
         "repeat", code=4, says=STOPPED, rerun=("sync",)),
    *(Case(f"id {label}", f"profile `badids:{value}/7`: every 7th record's id {label}", f"badids:{value}/7",
           served=spoilt_ids(value), says="kept in rejects")
      for label, value in (("missing", "missing"), ("null", "null"), ("a string", "string"),
                           ("negative", "negative"), ("2^63-1", str(2**63 - 1)), ("2^64+5", str(2**64 + 5)))),
    Case("records vanishing between pages", "profile `vanish:10`: every 10th record left out, still "
         "counted in total", "vanish:10", served=vanished(10), says="not seen (deleted or hidden during the walk?)"),
    Case("a file served as HTML, or cut short with a matching Content-Length", "profile `badfiles:3`: every 3rd "
         "file answer is an HTML page with status 200, or the first half of the file (alternately)",
         "badfiles:3", command=("download",), files=True, prepared=True),
    Case("cross-origin redirect", "profile `redirect:http://127.0.0.2:9`: each file's first answer is a 302 "
         "to another origin", "redirect:http://127.0.0.2:9", command=("download",), files=True, prepared=True,
         says="not followed", rerun=("download", "--retry-failed")),
    Case("a file trickled byte by byte", "profile `trickle:10`: files of every 10th image come 4 bytes "
         "per 0.1 s (download.file_deadline = 0.4)", "trickle:10", command=("download",), files=True,
         prepared=True, options={**NO_RETRY, "download": {"file_deadline": 0.4}},
         says="longer than download.file_deadline", rerun=("download", "--retry-failed")),
    Case("config typo", "`base_urll = ...` in [site]", arrange=misspell_base_url, release=fix_config, code=2,
         says="base_urll: unknown key (did you mean base_url?)", check=asked_nothing, rerun=("sync",)),
    Case("a line break in the user agent", "`user_agent = \"tests\\r\\nX-Evil: 1\"` in [site]",
         arrange=line_break_in_user_agent, release=fix_config, code=2, says="user_agent: must be one line of text",
         check=asked_nothing, rerun=("sync",)),
    Case("a port past 65535", "`base_url = \"http://127.0.0.1:99999\"` in [site]", arrange=port_out_of_range,
         release=fix_config, code=2, says="base_url: its port must be a number from 1 to 65535", check=asked_nothing,
         rerun=("sync",)),
    Case("https:// to a plain-HTTP site", "`base_url = \"https://...\"` in [site] for a site that speaks plain HTTP",
         arrange=https_to_plain_http, release=fix_config, code=2, says="says https://, but the server at 127.0.0.1:",
         check=asked_nothing, rerun=("sync",)),
    Case("the API's path in base_url", "`base_url = \"http://127.0.0.1:PORT/api/v1/json\"` in [site]",
         arrange=api_path_pasted, release=fix_config, code=2,
         says="base_url: ends with /api/v1/json, which the mirror adds itself; drop it", check=asked_nothing,
         rerun=("sync",)),
    Case("a time ago before the year 1", "`mirror changes --since 99999999999d` after a clean sync",
         command=("changes", "--since", "99999999999d"), prepared=True, code=2,
         says="--since 99999999999d: further back than the calendar goes", check=asked_nothing),
    Case("a limit past 2^63", "`mirror changes --limit 2^66` after a clean sync",
         command=("changes", "--limit", str(2**66)), prepared=True, code=2, says=f"--limit {2**66}: give a number",
         check=asked_nothing),
    Case("a files store that cannot be opened", "`files = \"ftp://127.0.0.1:9/files\"` in [store]: nothing listens",
         command=("download",), prepared=True, arrange=files_on_an_ftp_server_not_there, release=fix_config, code=5,
         says="cannot open store.files", rerun=("download",)),
    Case("busy database", "another program holds a write transaction (store.busy_timeout = 0.5)",
         options={"store": {"busy_timeout": 0.5}}, prepared=True, arrange=hold_write_lock, release=let_go,
         code=5, says="is locked by another program", rerun=("sync",)),
    Case("unknown schema", "the database records a migration this version does not know",
         prepared=True, arrange=from_the_future, release=back_to_the_present, code=5,
         says="newer version", check=asked_nothing, rerun=("sync",)),
]


def _burst(*codes: int) -> Rule:
    """The first API requests answer ``codes`` in turn (HTML pages)."""
    answers = iter(codes)
    return proxy_rules.on_first_api_requests(len(codes), lambda: proxy_rules.status(next(answers))())


# --- the table ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("case", CASES, ids=[case.kind for case in CASES])
def test_fault(case: Case, site: SiteServer, proxy: FaultProxy, tmp_path: Path, ledger: list) -> None:
    started = time.monotonic()
    run = make_run(case, site, proxy, tmp_path)
    if case.prepared:
        assert run.mirror("sync").exit_code == 0
    if case.arrange:
        case.arrange(run)
    try:
        result = faulted(run, case)
    finally:
        site.set_faults("")
        proxy.rule = None
        if case.release:
            case.release(run)
    said = excerpt(result, case.code)
    assert result.exit_code == case.code, result.output
    assert case.says in result.output and "Traceback" not in result.output
    proved = case.check(run) if case.check else ""
    lost = assert_nothing_lost(run, case, complete=case.rerun is None)
    if case.rerun is not None:
        again = run.mirror(*case.rerun)
        assert again.exit_code == 0, again.output
        after = assert_nothing_lost(run, case, complete=True, served=as_is).removeprefix("nothing: ")
        lost += f"; the rerun once the fault cleared: {after}"
    ledger.append(row(case.kind, case.tried, case.code, said, "; ".join(filter(None, [lost, proved])),
                      started, tmp_path, site, proxy))


def make_run(case: Case, site: SiteServer, proxy: FaultProxy, tmp_path: Path) -> Run:
    """A fresh mirror configured for ``case``: through the proxy when the fault is a proxy rule."""
    site.set_faults("")
    proxy.rule = None
    download = {**FILES, "partial_dir": str(tmp_path / "partial"), **case.options.get("download", {}),
                "enabled": case.files and "download" not in case.command}
    config = site_config(site, tmp_path, polite=case.options.get("polite"), download=download)
    config = changed(config, store=case.options.get("store", {}), images=case.options.get("images", {}))
    if callable(case.fault):
        config = changed(config, site={"base_url": proxy.url})
    run = Run(site, proxy, tmp_path, config)
    write_config(config, run.config_path)
    return run


def faulted(run: Run, case: Case) -> Result:
    """The command, run while the fault is on."""
    run.site.clear_requests()
    run.proxy.seen.clear()
    if callable(case.fault):
        run.proxy.rule = case.fault(run)
    elif case.fault:
        run.site.set_faults(case.fault)
    return run.mirror(*case.command)


# --- nothing lost --------------------------------------------------------------------------------------

def assert_nothing_lost(run: Run, case: Case, *, complete: bool,
                        served: Callable[[dict[str, Any]], Any] | None = None) -> str:
    """Every record served intact is stored as served (all of them when ``complete``), the broken
    ones are in rejects, the links and tag names come from intact records only, the files of intact
    ready images are kept and verify, and SQLite finds the database sound. Says what it found."""
    if not run.config.database.exists():
        assert not complete
        return "nothing: no database was created"
    assert_store_intact(run.config.database)
    records = run.records()
    sent = [s for s in map(served or case.served, records) if s is not None]
    intact = {r["id"]: r for r in sent if isinstance(r, dict) and valid_id(r.get("id"))}
    broken = sorted(to_json(r) for r in sent if not (isinstance(r, dict) and valid_id(r.get("id"))))
    db = open_database(run.config.database, migrate=False)
    try:
        stored = {row[0]: json.loads(row[1]) for row in db.execute("SELECT id, raw FROM images")}
        rejects = sorted(row[0] for row in db.execute("SELECT raw FROM rejects WHERE resource = 'images'"))
        assert set(stored) <= set(intact)
        assert [differences(stored[key], intact[key]) for key in stored if stored[key] != intact[key]][:2] == []
        assert set(rejects) <= set(broken)
        if complete:
            assert set(stored) == set(intact) and rejects == broken
        assert_tags_from_intact_records(db, stored)
        files = assert_files_kept(run, db, stored) if case.files and complete else ""
    finally:
        db.close()
    unsent = len(records) - len(sent)
    return (f"nothing: {len(stored)} of {len(intact)} records served with a valid id stored exactly as served"
            + (f", {len(rejects)} broken ones kept in rejects" if broken else "")
            + (f" ({unsent} never sent, reported)" if unsent else "") + files + "; integrity_check ok")


def differences(stored: dict[str, Any], served: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """The fields where a stored record differs from the served one: (stored, served), for a readable failure."""
    return {key: (stored.get(key), served.get(key)) for key in stored.keys() | served.keys()
            if stored.get(key) != served.get(key)}


def assert_tags_from_intact_records(db, stored: dict[int, dict[str, Any]]) -> None:
    """Each stored full record's links are its tag_ids, and every tag name is one an intact record gave
    (one whose tags and tag_ids are in step)."""
    names: dict[int, str] = {}
    for record in stored.values():
        if isinstance(record.get("tags"), list) and isinstance(record.get("tag_ids"), list):
            if len(record["tags"]) == len(record["tag_ids"]):  # else its names cannot be paired with ids
                names.update(zip(record["tag_ids"], record["tags"]))
            links = {r[0] for r in db.execute("SELECT tag_id FROM image_tags WHERE image_id = ?", [record["id"]])}
            assert links == set(record["tag_ids"]), record["id"]
    for tag_id, name in db.execute("SELECT id, name FROM tags"):
        assert names.get(tag_id) == name, (tag_id, name)


def assert_files_kept(run: Run, db, stored: dict[int, dict[str, Any]]) -> str:
    """Every thumbnail of a stored ready image is kept, and every kept file verifies."""
    ready = {key for key, r in stored.items() if r.get("thumbnails_generated") is True
             and r.get("hidden_from_users") is not True and isinstance(r.get("representations"), dict)}
    done = {row[0] for row in db.execute("SELECT image_id FROM downloads WHERE status = 'done'")}
    assert done == ready
    report = asyncio.run(runs.verify(run.config, db))
    assert report.damaged == 0 and report.fetched == len(ready)
    return f", {len(done)} of {len(ready)} thumbnails kept and verified"


# --- the report ---------------------------------------------------------------------------------------

STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ ")  # the UTC time a line to a pipe starts with


def excerpt(result: Result, code: int) -> str:
    """What the mirror said: the error line of a failed run, else its summary lines."""
    lines = [STAMP.sub("", line.strip()) for line in result.output.splitlines() if line.strip()]
    if code:
        return next((line for line in lines if line.startswith("Error:")), lines[-1] if lines else "")
    said = [line for line in lines if line.split(":")[0] in ("images", "downloads", "failed")]
    failed = [line for line in said if line.startswith("failed:")]
    return "; ".join([line for line in said if not line.startswith("failed:")] + failed[:1])


def row(kind: str, tried: str, code: int | str, said: str, lost: str, started: float, tmp_path: Path,
        *servers: Any) -> dict[str, Any]:
    """One line of the report, with this machine's paths and ports taken out."""
    def scrub(text: str) -> str:
        text = text.replace(str(tmp_path), "$TMP")
        for server in servers:
            text = text.replace(server.url, "http://127.0.0.1:PORT")
        return re.sub(r"\d+\.\d+ (files|KB|MB|B)/s", r"… \1/s", text)

    return {"kind": kind, "tried": tried, "exit": code, "said": scrub(said)[:400], "lost": scrub(lost),
            "seconds": round(time.monotonic() - started, 2)}


# --- a full disk, for real: the database, then the files, on a small tmpfs -------------------------------

def leave_free(disk: Path, free: int) -> Path:
    """Fill ``disk`` to the brim, then give back ``free`` bytes: room to start, not to finish."""
    fill(disk)
    filler = disk / "filler"
    os.truncate(filler, max(0, filler.stat().st_size - free))
    return filler


def undisturbed(site: SiteServer, tmp_path: Path, *command: str, **download: Any) -> dict[str, list]:
    """The end state of the same commands on a roomy disk."""
    config = site_config(site, tmp_path / "undisturbed", download={**FILES, **download})
    path = write_config(config, tmp_path / "undisturbed.toml")
    for args in (("sync",), command):
        if args:
            assert CliRunner().invoke(cli, ["-c", str(path), *args]).exit_code == 0
    return mirror_state(config.database, Path(config.store.files))


def assert_no_half_file(files: Path, db_path: Path) -> int:
    """Every file under a final name is whole: the one the database records as done (same sha512), or
    one published as the run stopped and not yet recorded (the next run adopts it), a whole file of its
    format. Returns how many there are."""
    db = sqlite3.connect(db_path)
    done = dict(db.execute("SELECT path, sha512 FROM downloads WHERE status = 'done'").fetchall())
    db.close()
    kept = {str(p.relative_to(files)): p for p in files.rglob("*") if p.is_file() and ".partial" not in p.parts}
    assert set(done) <= set(kept)
    for name, path in kept.items():
        if name in done:
            assert hashlib.sha512(path.read_bytes()).hexdigest() == done[name], name
        else:
            assert file_problem(path, path.suffix.lstrip(".")) is None, name
    return len(kept)


@pytest.fixture
def growing_site() -> Iterator[SiteServer]:
    """A site of its own: these tests add images to it."""
    with SiteServer(BoardEditor.generate(seed=8, images=40)) as server:
        yield server


def test_the_database_disk_fills_up_during_a_sync(growing_site: SiteServer, tmp_path: Path, ledger: list) -> None:
    started = time.monotonic()
    with mounted_tmpfs(tmp_path / "disk", "16m") as disk:
        config = changed(site_config(growing_site, disk), store={"files": str(tmp_path / "files")})
        path = write_config(config, tmp_path / "mirror.toml")
        assert CliRunner().invoke(cli, ["-c", str(path), "sync"]).exit_code == 0
        growing_site.editor.add_images(400)
        filler = leave_free(disk, 96_000)

        full = CliRunner().invoke(cli, ["-c", str(path), "sync"])

        assert full.exit_code == 5, full.output
        assert f"cannot write the database {config.database}: no space left on the device" in full.output
        assert "Traceback" not in full.output
        assert_store_intact(config.database)
        filler.unlink()
        again = CliRunner().invoke(cli, ["-c", str(path), "sync"])
        assert again.exit_code == 0, again.output
        assert_store_intact(config.database)
        state = mirror_state(config.database, tmp_path / "files")
    assert state == undisturbed(growing_site, tmp_path)
    ledger.append(row("disk full (database)", "the database's 16 MB tmpfs filled up (96 KB left) as a sync of "
                      "400 new images began", 5, excerpt(full, 5), "nothing: integrity_check ok after the "
                      "failed run; the rerun once space was freed ended equal to an undisturbed run",
                      started, tmp_path, growing_site))


def test_the_files_disk_fills_up_during_downloads(growing_site: SiteServer, tmp_path: Path, ledger: list) -> None:
    started = time.monotonic()
    with mounted_tmpfs(tmp_path / "disk", "2m") as disk:
        config = changed(site_config(growing_site, tmp_path, download={**FILES, "representations": ["thumb", "full"]}),
                         store={"files": str(disk / "files")})
        path = write_config(config, tmp_path / "mirror.toml")
        assert CliRunner().invoke(cli, ["-c", str(path), "sync"]).exit_code == 0
        filler = leave_free(disk, 200_000)

        full = CliRunner().invoke(cli, ["-c", str(path), "download"])

        assert full.exit_code == 5, full.output
        assert "no space left on the device" in full.output and "Traceback" not in full.output
        kept = assert_no_half_file(disk / "files", config.database)
        assert_store_intact(config.database)
        filler.unlink()
        assert CliRunner().invoke(cli, ["-c", str(path), "download"]).exit_code == 0
        state = mirror_state(config.database, disk / "files")
    assert state == undisturbed(growing_site, tmp_path, "download", representations=["thumb", "full"])
    ledger.append(row("disk full (files)", "the files' 2 MB tmpfs filled up (200 KB left) as `mirror download` "
                      "began", 5, excerpt(full, 5), f"nothing: {kept} files kept whole, none half-written under a "
                      "final name, integrity_check ok; the rerun once space was freed ended equal to an "
                      "undisturbed run", started, tmp_path, growing_site))


def test_the_disk_is_nearly_full_when_the_mirror_is_opened(site: SiteServer, tmp_path: Path, ledger: list) -> None:
    """SQLite cannot make the shared-memory file (32 KB) a WAL database is read through: it says
    "disk I/O error" (SQLITE_IOERR_SHMSIZE), which was printed as such."""
    started = time.monotonic()
    with mounted_tmpfs(tmp_path / "disk", "16m") as disk:
        config = changed(site_config(site, disk), store={"files": str(tmp_path / "files")})
        path = write_config(config, tmp_path / "mirror.toml")
        assert CliRunner().invoke(cli, ["-c", str(path), "sync"]).exit_code == 0
        filler = leave_free(disk, 30_000)

        full = CliRunner().invoke(cli, ["-c", str(path), "sync"])
        status = CliRunner().invoke(cli, ["-c", str(path), "status"])

        for said in (full, status):
            assert said.exit_code == 5, said.output
            assert f"cannot write the database {config.database}: no space left on the device. Nothing committed " \
                   "was lost; free some disk space and run again." in said.output
            assert "disk I/O error" not in said.output and "Traceback" not in said.output
        filler.unlink()
        assert_store_intact(config.database)
        again = CliRunner().invoke(cli, ["-c", str(path), "sync"])
        assert again.exit_code == 0, again.output
        state = mirror_state(config.database, tmp_path / "files")
    assert state == undisturbed(site, tmp_path)
    ledger.append(row("disk full (opening the mirror)", "the database's 16 MB tmpfs had 30 KB left, less than the "
                      "shared-memory file SQLite reads a WAL database through, as `mirror sync` and `mirror status` "
                      "opened it", 5, excerpt(full, 5), "nothing: integrity_check ok; the rerun once space was freed "
                      "ended equal to an undisturbed run", started, tmp_path, site))


@needs_postgres
def test_the_disk_fills_up_during_an_import_dump(tmp_path: Path, ledger: list) -> None:
    """SQLite rolls back by itself on a full disk; a ROLLBACK after it hid the real error behind
    "cannot rollback - no transaction is active"."""
    started = time.monotonic()
    board = BoardEditor.generate(seed=5, images=400)
    try:
        dump = make_dump(board, tmp_path)
    finally:
        board.close()

    def import_dump(database: Path) -> Result:
        env = {"MIRROR_DATABASE": str(database), "MIRROR_BASE_URL": "http://127.0.0.1:9"}
        # past the estimate said before it starts: what a disk that fills up anyway does
        return CliRunner().invoke(cli, ["import-dump", str(dump), "--ignore-space"], env=env)

    with mounted_tmpfs(tmp_path / "disk", "16m") as disk:
        database = disk / "mirror.db"
        open_database(database).close()  # a mirror already made
        filler = leave_free(disk, 150_000)  # room for the first tables' scratch copies, not the rest

        full = import_dump(database)

        assert full.exit_code == 5, full.output
        assert f"cannot write the dump's scratch copy {database}.dump-staging: no space left on the device" \
            in full.output
        assert "cannot rollback" not in full.output and "Traceback" not in full.output
        assert_store_intact(database)
        filler.unlink()
        again = import_dump(database)
        assert again.exit_code == 0, again.output
        state = mirror_state(database, tmp_path / "files")
    roomy = tmp_path / "roomy" / "mirror.db"
    assert import_dump(roomy).exit_code == 0
    assert state == mirror_state(roomy, tmp_path / "files")
    ledger.append(row("disk full (import-dump)", "the mirror's 16 MB tmpfs filled up (150 KB left) as `mirror "
                      "import-dump` copied the dump's tables", 5, excerpt(full, 5), "nothing: integrity_check ok "
                      "after the failed run; the rerun once space was freed ended equal to an import on a roomy disk",
                      started, tmp_path))


# --- a run stopped by SIGTERM (systemd, `timeout`) while the site is slow to answer ------------------------

def cpu_seconds(pid: int) -> float:
    """The CPU time a running process has spent so far (user and system), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_sigterm_during_a_slow_request(site: SiteServer, proxy: FaultProxy, tmp_path: Path, ledger: list) -> None:
    """It stopped in 0.4-1.7 s, nearly all of it the interpreter tearing down every module it had
    imported. Time on a loaded machine stretches; the CPU the process spends after the signal does
    not, so that is what is bounded (it was 0.19-0.25 s here, now about 0.05 s)."""
    started = time.monotonic()
    metrics = tmp_path / "mirror.prom"
    config = changed(site_config(site, tmp_path), report={"metrics_file": str(metrics)})
    path = write_config(config, tmp_path / "mirror.toml")
    assert CliRunner().invoke(cli, ["-c", str(path), "sync"]).exit_code == 0
    write_config(changed(config, site={"base_url": proxy.url}), path)
    asked = threading.Event()
    proxy.rule = proxy_rules.hang(asked)
    try:
        process = subprocess.Popen([sys.executable, "-m", "mirror.cli", "-c", str(path), "sync"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        assert asked.wait(60), "the sync never asked the site"
        spent = cpu_seconds(process.pid)
        signalled = time.monotonic()
        process.send_signal(signal.SIGTERM)
        stderr = process.stderr.read()
        _, status, usage = os.wait4(process.pid, 0)
        stopped_in = time.monotonic() - signalled
        process.returncode = os.waitstatus_to_exitcode(status)
    finally:
        proxy.rule = None
    after_signal = usage.ru_utime + usage.ru_stime - spent
    assert process.returncode == 1, stderr
    assert "Error: interrupted; everything stored so far is kept" in stderr and "Traceback" not in stderr
    assert after_signal < 0.15 and stopped_in < 10, (after_signal, stopped_in)
    with closing(sqlite3.connect(config.database)) as db:
        last = db.execute("SELECT status, message FROM sync_runs ORDER BY id DESC LIMIT 1").fetchone()
    assert last == ("failed", "interrupted")
    assert "mirror_run_exit_code{command=\"sync\"} 1" in metrics.read_text()
    assert not Path(f"{config.database}-wal").exists()  # closed, its WAL written back, before the exit
    assert_store_intact(config.database)
    ledger.append(row("SIGTERM during a slow request", "the site held the first API request of a sync "
                      "unanswered; SIGTERM (systemctl stop) came while the mirror waited for it", 1,
                      STAMP.sub("", stderr.strip().splitlines()[-1]),
                      f"nothing: the run's record (failed, interrupted) and metrics file written, the database "
                      f"closed and its WAL written back; integrity_check ok; stopped {stopped_in:.2f} s after the "
                      f"signal, {after_signal:.2f} s of CPU", started, tmp_path, site, proxy))


# --- a hostile client of mirror serve and mirror browse, and a database they may only read ---------------

PAST_2_63 = 2**66  # past SQLite's 64-bit integers
SERVER = "-"  # a server keeps running: no exit code


@pytest.fixture(scope="module")
def full_mirror(site: SiteServer, tmp_path_factory) -> Config:
    """Every resource of the site mirrored, with its files: what serve and browse answer from."""
    tmp = tmp_path_factory.mktemp("full-mirror")
    config = mirror_config(site, tmp, site.editor.everything_filter_id)
    sync(config, RESOURCES)
    return config


def statuses(answers: dict[str, int]) -> str:
    """``200 ×5, 404 ×3`` for what a set of requests got."""
    counts: dict[int, int] = {}
    for status in answers.values():
        counts[status] = counts.get(status, 0) + 1
    return ", ".join(f"{status} ×{count}" for status, count in sorted(counts.items()))


def test_hostile_requests_to_mirror_serve(full_mirror: Config, tmp_path: Path, ledger: list, capfd) -> None:
    started = time.monotonic()
    with sqlite3.connect(full_mirror.database) as db:
        forum, slug = db.execute("SELECT forum_short_name, slug FROM topics").fetchone()
    paths = [f"/search/images?q=gallery_id:{PAST_2_63}", f"/search/images?q=safe&sf=gallery_id:{PAST_2_63}",
             f"/forums/{forum}/topics/{slug}/posts?page={PAST_2_63}", "/search/images?q=description:aa%00",
             f"/search/tags?q=*&page={PAST_2_63}"]
    files = [f"/img/2012/2/24/{PAST_2_63}/thumb.png", f"/img/view/2012/2/24/{PAST_2_63}.png"]
    with LoopbackServer(create_serve_app(Board(full_mirror.database), open_storage(full_mirror))) as served:
        answers = {path: httpx.get(served.api_url + path, timeout=10).status_code for path in paths}
        answers |= {path: httpx.get(served.url + path, timeout=10).status_code for path in files}
    assert answers == {**{path: 200 for path in paths}, **{path: 404 for path in files}}
    assert "Traceback" not in "".join(capfd.readouterr())
    assert_store_intact(full_mirror.database)
    ledger.append(row("ids and pages past 2^63, a NUL in a query (mirror serve)",
                      "searches with gallery_id:2^66 (query and sf), a topic's posts and tags at page=2^66, "
                      "description:aa\\x00, files of image 2^66", SERVER, statuses(answers),
                      "nothing: no 500 or 503, no traceback in the log; integrity_check ok", started, tmp_path))


def test_hostile_requests_to_mirror_browse(full_mirror: Config, tmp_path: Path, ledger: list, capfd) -> None:
    started = time.monotonic()
    with sqlite3.connect(full_mirror.database) as db:
        tag, user, gallery = db.execute("SELECT (SELECT min(tag_id) FROM image_tags), (SELECT min(uploader_id) "
                                        "FROM images), (SELECT min(gallery_id) FROM gallery_images)").fetchone()
        forum, slug = db.execute("SELECT forum_short_name, slug FROM topics").fetchone()
    deep = [f"/-/tag/{tag}", f"/-/user/{user}", f"/-/gallery/{gallery}", f"/-/forum/{forum}",
            f"/-/topic/{forum}/{slug}", "/-/tags", "/-/galleries"]
    missing = ["/-/tag/999999999", "/-/forum/nosuch", "/-/forum/a/b", "/no/such/page"]

    async def ask() -> dict[str, int]:
        datasette = make_datasette(full_mirror.database, base_url=full_mirror.site.base_url,
                                   files=full_mirror.store.files)
        await datasette.invoke_startup()
        answers = {f"{path}?page={PAST_2_63}": (await datasette.client.get(f"{path}?page={PAST_2_63}")).status_code
                   for path in deep}
        return answers | {path: (await datasette.client.get(path)).status_code for path in missing}

    capfd.readouterr()
    answers = asyncio.run(ask())
    logged = "".join(capfd.readouterr())
    assert answers == {**{f"{path}?page={PAST_2_63}": 200 for path in deep}, **{path: 404 for path in missing}}
    assert logged.strip() == "", logged[:2000]
    ledger.append(row("pages past 2^63 and 404s (mirror browse)",
                      "page=2^66 on a tag's, user's, gallery's, forum's and topic's page and the tags and galleries "
                      "lists; a tag, a forum, a path with a / and a page it does not have", SERVER, statuses(answers),
                      "nothing: no 500; nothing written to the log (each 404 printed a 16 KB traceback)", started,
                      tmp_path))


def test_serve_and_browse_a_database_on_a_read_only_mount(full_mirror: Config, tmp_path: Path, ledger: list) -> None:
    started = time.monotonic()
    with mounted_tmpfs(tmp_path / "disk", "64m") as disk:
        with closing(sqlite3.connect(full_mirror.database)) as source, \
                closing(sqlite3.connect(disk / "mirror.db")) as copy:
            source.backup(copy)
        subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
        board = Board(disk / "mirror.db")
        with LoopbackServer(create_serve_app(board, open_storage(full_mirror))) as served:
            search = httpx.get(f"{served.api_url}/search/images", params={"q": "*"}, timeout=10)

        async def browse() -> int:
            datasette = make_datasette(disk / "mirror.db", base_url=full_mirror.site.base_url,
                                       files=full_mirror.store.files)
            await datasette.invoke_startup()
            return (await datasette.client.get("/-/tags")).status_code

        page = asyncio.run(browse())
        left = sorted(p.name for p in disk.iterdir())
    assert search.status_code == 200 and search.json()["total"] > 0 and page == 200 and left == ["mirror.db"]
    ledger.append(row("a database on a read-only mount (serve and browse)", "the mirror copied to a tmpfs "
                      "remounted read-only, then served and browsed", SERVER,
                      f"serve: a search {search.status_code} ({search.json()['total']} images); browse: /-/tags {page}",
                      "nothing: no -wal or -shm file could be made, none was needed", started, tmp_path))


# --- round five (issue 52): the calendar's edges, a long history, the export's failure paths -----------

def test_moments_at_the_calendars_edges(full_mirror: Config, tmp_path: Path, ledger: list, capfd) -> None:
    started = time.monotonic()
    with sqlite3.connect(full_mirror.database) as db:
        image = db.execute("SELECT min(id) FROM images WHERE hidden_from_users = 0").fetchone()[0]
    record = f"/api/v1/json/images/{image}"
    edges = ["00010101000000", "0001-01-01T00:00:00%2B05:00", "9999-12-31T23:00:00-05:00",
             "%D9%A2%D9%A0%D9%A2%D9%A5-%D9%A0%D9%A1-%D9%A0%D9%A5"]  # year 1; offsets past 1 and 9999; Arabic-Indic
    dates = {"Mon, 01 Jan 0001 00:00:00 GMT": "0001", f"Mon, 01 Jan {10**20} 00:00:00 GMT": "10^20"}
    capfd.readouterr()
    with LoopbackServer(create_serve_app(Board(full_mirror.database), open_storage(full_mirror))) as served:
        answers = {f"/as-of/{when}{path}": httpx.get(f"{served.url}/as-of/{when}{path}", timeout=30).status_code
                   for when in edges for path in (record, "/api/v1/json/search/images?q=*")}
        gates = {asked: httpx.get(served.url + record, headers={"Accept-Datetime": asked}, timeout=30)
                 for asked in dates}
        answers |= {f"Accept-Datetime {label}": gates[asked].status_code for asked, label in dates.items()}
        answers["/timemap/UNKNOWN"] = httpx.get(f"{served.url}/timemap/UNKNOWN{record}", timeout=30).status_code

    async def browse() -> dict[str, int]:
        datasette = make_datasette(full_mirror.database, base_url=full_mirror.site.base_url,
                                   files=full_mirror.store.files)
        await datasette.invoke_startup()
        return {f"browse /as-of/{when}/": (await datasette.client.get(f"/as-of/{when}/")).status_code for when in edges}

    answers |= asyncio.run(browse())
    logged = "".join(capfd.readouterr())
    assert 500 not in answers.values() and "Traceback" not in logged, (answers, logged[-2000:])
    assert gates["Mon, 01 Jan 0001 00:00:00 GMT"].status_code == 302  # before the first memento: the first
    assert gates[f"Mon, 01 Jan {10**20} 00:00:00 GMT"].status_code == 400
    ledger.append(row("moments at the calendar's edges (serve and browse)",
                      "a record, a search and the front page as of year 1, offsets past year 1 and 9999, Arabic-Indic "
                      "digits; Accept-Datetime of year 0001 and 10^20; /timemap/UNKNOWN/...", SERVER, statuses(answers),
                      "nothing: no 500, no traceback; year 0001 redirected to the first memento, the rest 400 in one line",
                      started, tmp_path))


def test_a_host_header_naming_another_site(full_mirror: Config, tmp_path: Path, ledger: list) -> None:
    started = time.monotonic()
    with sqlite3.connect(full_mirror.database) as db:
        image = db.execute("SELECT min(id) FROM images WHERE hidden_from_users = 0").fetchone()[0]
    record, evil = f"/api/v1/json/images/{image}", {"Host": "evil.example"}
    with LoopbackServer(create_serve_app(Board(full_mirror.database), open_storage(full_mirror))) as served:
        answers = {path: httpx.get(served.url + path, headers={**evil, **extra}, timeout=30) for path, extra in (
            (record, {"Accept-Datetime": "Sun, 05 Jan 2025 12:00:00 GMT"}), (record, {}),
            (f"/timemap/link{record}", {}), ("/api/v1/json/search/images?q=*", {}))}
    named = [path for path, answer in answers.items()
             if "evil.example" in answer.text + " ".join(answer.headers.values())]
    assert not named, named
    ledger.append(row("a Host header naming another site (mirror serve)", "Host: evil.example on a TimeGate (302), a "
                      "record, a TimeMap and a search", SERVER,
                      statuses({path: answer.status_code for path, answer in answers.items()}),
                      "nothing: no redirect, link or file URL names evil.example (they name the socket's address, or "
                      "--public-url)", started, tmp_path))


def test_a_record_with_tens_of_thousands_of_versions(full_mirror: Config, tmp_path: Path, ledger: list) -> None:
    from mirror.asof import Moment
    from mirror.dates import utc_text
    from mirror.store.history import SiteChange, save_site_changes
    from datetime import datetime, timedelta, timezone

    started = time.monotonic()
    path = copied(full_mirror.database, tmp_path / "mirror.db")
    db = open_database(path)
    image = db.execute("SELECT min(id) FROM images WHERE hidden_from_users = 0").fetchone()[0]
    start = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(days=2)
    versions = 40_000
    with db.conn:
        save_site_changes(db, None, [SiteChange(image, utc_text(start + timedelta(seconds=n)), 1, "site_tags",
                                                tags=(("+-"[n % 2], 987_654, "bot war"),)) for n in range(versions)])
    db.close()

    class StandardBoard(Board):  # SQLite's default limit of 32,766 variables (Debian's build allows 250,000)
        def _connect(self, file: Path) -> sqlite3.Connection:
            conn = super()._connect(file)
            conn.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 32_766)
            return conn

    def timed(get: Callable[[], httpx.Response]) -> tuple[int, float]:
        began = time.monotonic()
        return get().status_code, (time.monotonic() - began) * 1000

    middle = Moment(utc_text(start + timedelta(seconds=versions // 2)))
    with LoopbackServer(create_serve_app(StandardBoard(path), None)) as served:
        as_of = timed(lambda: httpx.get(f"{served.url}/as-of/{middle.digits}/api/v1/json/images/{image}", timeout=60))
        url, pages, slowest = f"{served.url}/timemap/link/api/v1/json/images/{image}", 0, 0.0
        while url:
            began = time.monotonic()
            answer = httpx.get(url, timeout=60)
            slowest, pages = max(slowest, (time.monotonic() - began) * 1000), pages + 1
            assert answer.status_code == 200
            following = re.search(r'<([^>]+)>; rel="next"', answer.text)
            url = following.group(1) if following else None

    async def history_page() -> tuple[int, float]:
        datasette = make_datasette(path, base_url=full_mirror.site.base_url, files=full_mirror.store.files)
        await datasette.invoke_startup()
        began = time.monotonic()
        page = await datasette.client.get(f"/-/image/{image}/history")
        return page.status_code, (time.monotonic() - began) * 1000

    page = asyncio.run(history_page())
    assert as_of[0] == 200 and page[0] == 200 and pages > 1
    ledger.append(row("a record with 40,000 versions (serve and browse)", "an image's tag added and removed 20,000 "
                      "times each (a bot's tag war; the site has an image with 75,260 tag changes), SQLite held to "
                      "its default 32,766 variables", SERVER,
                      f"as of a moment inside it: {as_of[0]} in {as_of[1]:.0f} ms; its TimeMap: {pages} pages linked "
                      f"by rel=\"next\", the slowest {slowest:.0f} ms; its history page: {page[0]} in {page[1]:.0f} ms",
                      "nothing: no 'too many SQL variables', no 503 calling it a replaced file; one page at a time",
                      started, tmp_path))


@pytest.fixture(scope="module")
def export_mirror(site: SiteServer, tmp_path_factory) -> Config:
    """A mirror of the site's images, to export (no files)."""
    tmp = tmp_path_factory.mktemp("export-mirror")
    config = site_config(site, tmp)
    sync(config, ("images", "tags"))
    return config


def copied(database: str | Path, path: Path) -> Path:
    """A whole copy of ``database`` (SQLite's backup) at ``path``."""
    with closing(sqlite3.connect(database)) as source, closing(sqlite3.connect(path)) as copy:
        source.backup(copy)
    return path


def export_run(config: Config, folder: Path, dest: str, before: Callable[[Path], None] | None = None,
               **store: Any) -> Result:
    """`mirror export DEST` over a copy of ``config``'s database in ``folder`` (made), ``before`` done
    to it first, ``store`` keys changed, ``export.timeout`` 2 s."""
    folder.mkdir()
    path = copied(config.database, folder / "mirror.db")
    if before is not None:
        before(path)
    config = changed(config, store={"database": str(path), **store}, export={"timeout": 2.0})
    return CliRunner().invoke(cli, ["-c", str(write_config(config, folder / "mirror.toml")), "export", dest])


def killed_export(path: Path, dest: str = "s3://bucket/board") -> None:
    """The database as an export killed mid-batch leaves it: a pending batch for ``dest``."""
    from mirror.store.export_state import save_export_cursor

    db = open_database(path)
    save_export_cursor(db, {"dest": dest, "pending": {"batch": 1, "low": "", "high": "2026-01-01T00:00:00Z",
                                                      "after": {}, "upto": {}}})
    db.close()


def a_lone_surrogate_in_a_tag(path: Path) -> None:
    with closing(sqlite3.connect(path)) as db, db:
        db.execute("UPDATE images SET tags = ? WHERE id = (SELECT min(id) FROM images WHERE tags IS NOT NULL)",
                   ['["\\ud800 lone", "safe"]'])


@pytest.fixture
def aws_env(monkeypatch) -> None:
    for key, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        monkeypatch.setenv(key, value)


def test_export_failure_paths(export_mirror: Config, tmp_path: Path, ledger: list, aws_env) -> None:
    from ..support.ports import a_closed_port
    from ..support.raw_servers import silent_server

    started, odd = time.monotonic(), tmp_path / "odd"
    done = export_run(export_mirror, odd, str(odd / "dest"), before=a_lone_surrogate_in_a_tag)
    assert done.exit_code == 0 and "Traceback" not in done.output, done.output
    ledger.append(row("a lone surrogate in a tag (mirror export)", "an image's tags hold \"\\ud800\" (sync keeps it as "
                      "its JSON escape)", 0, STAMP.sub("", done.output.strip().splitlines()[-1]),
                      "nothing: every record exported, the tag as U+FFFD (a UnicodeEncodeError failed every export)",
                      started, odd))

    started, where, closed = time.monotonic(), tmp_path / "password", a_closed_port()
    done = export_run(export_mirror, where, "s3://bucket/board", endpoint_url=f"http://keyid:hunter2@127.0.0.1:{closed}")
    assert done.exit_code == 2 and "hunter2" not in done.output, done.output
    ledger.append(row("a password in store.endpoint_url (mirror export)", "`endpoint_url = \"http://keyid:hunter2@...\"`"
                      " in [store]", 2, excerpt(done, 2).replace(str(closed), "PORT"), "nothing: refused before any request; the password printed "
                      "nowhere (delta-rs' errors quote the whole request URL)", started, where))

    started, where, closed = time.monotonic(), tmp_path / "unreachable", a_closed_port()
    done = export_run(export_mirror, where, "s3://bucket/board", before=killed_export,
                      endpoint_url=f"http://127.0.0.1:{closed}")
    assert done.exit_code == 5 and "Traceback" not in done.output, done.output
    ledger.append(row("an unreachable S3 endpoint after a killed export (mirror export)", "nothing listens at "
                      "store.endpoint_url; the last export was killed mid-batch", 5,
                      excerpt(done, 5).replace(str(closed), "PORT"),
                      "nothing: the pending batch kept for the next export (a botocore traceback, exit 1, before)",
                      started, where))

    started, where = time.monotonic(), tmp_path / "silent"
    with silent_server() as endpoint:
        done = export_run(export_mirror, where, "s3://bucket/board", endpoint_url=endpoint)
    port = endpoint.rsplit(":", 1)[1]
    took = time.monotonic() - started
    assert done.exit_code == 5 and took < 30 and "waiting for s3://bucket/board" in done.output, (took, done.output)
    ledger.append(row("a silent S3 endpoint (mirror export)", "store.endpoint_url takes every connection and never "
                      "answers (export.timeout = 2)", 5, excerpt(done, 5).replace(str(port), "PORT"),
                      f"nothing: a line once it waited 1 s, given up on in {took:.1f} s, the lock released (botocore's "
                      "defaults under s3fs held it 425 s without a word)", started, where))


@pytest.fixture(scope="module")
def picture_site() -> Iterator[SiteServer]:
    """A few images with real pictures, to fingerprint."""
    with SiteServer(BoardEditor.generate(seed=3, images=8, with_pictures=True)) as server:
        yield server


def test_a_fingerprint_worker_killed(picture_site: SiteServer, tmp_path: Path, ledger: list, monkeypatch) -> None:
    from mirror.download import fingerprints

    from ..support import poisoned_workers

    started, site = time.monotonic(), picture_site
    config = changed(site_config(site, tmp_path, download={**FILES, "enabled": True,
                                                           "partial_dir": str(tmp_path / "partial")}),
                     store={"files": str(tmp_path / "files")})
    sync(changed(config, download={"enabled": False}), ("images",))  # the files come with `mirror download`
    shown = [r for r in site_images(site) if not r.get("hidden_from_users") and r.get("thumbnails_generated")
             and r.get("format") in ("png", "jpeg")]
    thumb = hashlib.sha256(httpx.get(shown[0]["representations"]["thumb"], timeout=30).content).hexdigest()
    (tmp_path / "marks").mkdir()
    monkeypatch.setenv(poisoned_workers.ALWAYS, thumb)
    monkeypatch.setenv(poisoned_workers.ONCE, "")
    monkeypatch.setenv(poisoned_workers.MARKS, str(tmp_path / "marks"))
    monkeypatch.setattr(fingerprints, "worker_pool", poisoned_workers.poisoned_pool)
    monkeypatch.setattr(fingerprints, "POOL_FROM", 0)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    done = CliRunner().invoke(cli, ["-c", str(write_config(config, tmp_path / "mirror.toml")), "download"])
    assert done.exit_code == 0 and "Traceback" not in done.output, done.output
    said = [STAMP.sub("", line) for line in done.output.splitlines() if "not fingerprinted" in line]
    with sqlite3.connect(config.database) as db:
        fingerprinted = db.execute("SELECT count(DISTINCT image_id) FROM image_hashes").fetchone()[0]
        kept = db.execute("SELECT count(*) FROM downloads WHERE status = 'done'").fetchone()[0]
    assert said and fingerprinted > 0
    ledger.append(row("a fingerprint worker killed (the OOM killer)", "every worker reading one image's thumbnail is "
                      "SIGKILLed mid-file", 0, said[0], f"nothing: {kept} files kept; a fresh pool went on, "
                      f"{fingerprinted} images fingerprinted; the killer's file kept, marked not fingerprinted (a "
                      "BrokenProcessPool traceback, before)", started, tmp_path, site))


@needs_postgres
def test_a_copy_column_list_without_id(tmp_path: Path, ledger: list) -> None:
    from mirror.localsite.dump.damaged import with_copy_statement

    started = time.monotonic()
    board = BoardEditor.generate(seed=5, images=20)
    try:
        dump = make_dump(board, tmp_path, compress=False)
    finally:
        board.close()
    damaged = with_copy_statement(dump, tmp_path / "damaged.pgdump", "users", "COPY public.users (name) FROM stdin;\n")
    env = {"MIRROR_DATABASE": str(tmp_path / "mirror.db"), "MIRROR_BASE_URL": "http://127.0.0.1:9"}
    done = CliRunner().invoke(cli, ["import-dump", str(damaged)], env=env)
    assert done.exit_code == 2 and "no column id" in done.output, done.output
    ledger.append(row("a COPY column list without id (import-dump)", "the users table's COPY statement names `(name)` "
                      "only", 2, excerpt(done, 2), "nothing: stopped before writing; the dump named as damaged, not the "
                      "database (exit 5 \"no such column\", before)", started, tmp_path))


def test_a_dump_host_silent_from_its_first_byte(tmp_path: Path, ledger: list) -> None:
    from ..support.file_host import FileHost

    started = time.monotonic()
    with FileHost(os.urandom(100_000), trickle=(0, 60.0)) as host:
        env = {"MIRROR_DATABASE": str(tmp_path / "mirror.db"), "MIRROR_BASE_URL": "http://127.0.0.1:9"}
        config = tmp_path / "mirror.toml"
        config.write_text("[download]\ndump_stall_seconds = 2.0\n[polite]\nmax_retries = 1\nbackoff = 0.1\n")
        done = CliRunner().invoke(cli, ["-c", str(config), "import-dump", f"{host.url}/board.pgdump"], env=env)
    took = time.monotonic() - started
    assert done.exit_code == 3 and took < 20 and "stalled" in done.output, (took, done.output)
    ledger.append(row("a dump host silent from its first byte (import-dump URL)", "the host sends its headers, then "
                      "nothing (download.dump_stall_seconds = 2)", 3, excerpt(done, 3).replace(host.url, "http://127.0.0.1:PORT"),
                      f"nothing: each attempt abandoned at the window's end, {took:.1f} s in all, its part kept to "
                      "resume (the first window ended the machine's uptime later, before)", started, tmp_path))
