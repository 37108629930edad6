"""Fetching a dump by URL (`mirror import-dump URL`): end to end over HTTP, from the local site's
`/dumps/{name}` (Starlette's FileResponse: Range, ETag, If-Range), through its fault layer.

Any bytes do as the dump: the fetcher neither knows nor cares that it is a pg_dump archive.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
import time
from pathlib import Path

import httpx
import pytest

from mirror.api.client import http_client
from mirror.api.errors import SiteUnavailable
from mirror.api.polite import Politeness
from mirror.dump.archive import DumpError
from mirror.dump.fetch import Stall, check_sha256, dump_path, fetch_dump
from mirror.localsite.board.editor import BoardEditor
from mirror.localsite.http.server import SiteServer

from ..support.file_host import FileHost

SIZE = 300_000


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    with SiteServer(BoardEditor.generate(seed=2, images=3), dumps_dir=tmp_path_factory.mktemp("served")) as server:
        yield server


@pytest.fixture
def served(site) -> Path:
    """The folder the site serves `/dumps/` from, with faults off and the request log empty."""
    site.set_faults("")
    site.clear_requests()
    return Path(site.app.state.dumps_dir)


def content(seed: int, size: int = SIZE) -> bytes:
    return random.Random(seed).randbytes(size)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def publish(served: Path, name: str, data: bytes) -> str:
    """Put ``data`` on the site as ``/dumps/name``; return its SHA-256."""
    (served / name).write_bytes(data)
    return sha256(data)


async def fetch(site, name: str, folder: Path, *, politeness: Politeness | None = None, **options):
    """Fetch ``/dumps/name`` into ``folder``; return the path and the headers of each request sent."""
    sent: list[httpx.Headers] = []

    async def note(request: httpx.Request) -> None:
        sent.append(request.headers)

    async with http_client(timeout=10, contact="", max_connections=2, event_hooks={"request": [note]}) as http:
        path = await fetch_dump(f"{site.url}/dumps/{name}", folder, http,
                                politeness or Politeness(100, backoff=0.01), **options)
    return path, sent


async def fetch_from(host: FileHost, folder: Path, **options) -> Path:
    """Fetch ``/board.pgdump`` from a bare file host into ``folder``, with one retry."""
    async with http_client(timeout=10, contact="", max_connections=1) as http:
        return await fetch_dump(f"{host.url}/board.pgdump", folder, http,
                                Politeness(100, backoff=0.01, max_retries=1), **options)


def statuses(site) -> list[int]:
    return [r.status for r in site.requests if r.path.startswith("/dumps/")]


async def cut_short(site, name: str, folder: Path) -> Path:
    """A first run whose connection is dropped, then cut halfway through the body: it gives up
    (SiteUnavailable, one line) and keeps the half it got in ``<name>.part``."""
    site.set_faults("drops:1")  # the 1st request is dropped before any answer, the 2nd half way through
    with pytest.raises(SiteUnavailable, match="cut short|closed|incomplete|Protocol"):
        await fetch(site, name, folder, politeness=Politeness(100, backoff=0.01, max_retries=1))
    site.set_faults("")
    site.clear_requests()
    part = folder / f"{name}.part"
    assert part.stat().st_size == SIZE // 2
    assert not (folder / name).exists()
    return part


async def test_a_whole_dump_is_fetched_checked_and_kept_under_its_name(site, served, tmp_path):
    data = content(1)
    digest = publish(served, "board_2026_08_13.pgdump", data)
    seen, lines = [], []
    path, sent = await fetch(site, "board_2026_08_13.pgdump", tmp_path, sha256=digest.upper(),
                             progress=lambda done, total: seen.append((done, total)), line=lines.append,
                             stall=Stall(60, 10_000))  # the default rule leaves a fast host alone
    assert path == tmp_path / "board_2026_08_13.pgdump"
    assert path.read_bytes() == data
    assert sorted(p.name for p in tmp_path.iterdir()) == ["board_2026_08_13.pgdump"]  # no .part, no validator
    assert statuses(site) == [200] and "range" not in sent[0]
    assert seen[0] == (0, SIZE) and seen[-1] == (SIZE, SIZE)
    [closing] = lines
    assert closing.startswith("downloaded board_2026_08_13.pgdump: 300.0 KB in ") and " s, " in closing
    assert closing.endswith(", SHA-256 matches")

    # Kept and matching: not fetched again, with or without the SHA-256, and said so.
    lines.clear()
    assert (await fetch(site, "board_2026_08_13.pgdump", tmp_path, sha256=digest, line=lines.append))[0] == path
    assert (await fetch(site, "board_2026_08_13.pgdump", tmp_path, line=lines.append))[0] == path
    assert statuses(site) == [200]
    assert lines == [f"{path} is already downloaded: not fetched again, SHA-256 matches",
                     f"{path} is already downloaded: not fetched again"]


async def test_a_dump_that_does_not_match_its_sha256_is_removed_with_one_clear_line(site, served, tmp_path):
    publish(served, "wrong.pgdump", content(2))
    expected = "0" * 64
    with pytest.raises(DumpError) as raised:
        await fetch(site, "wrong.pgdump", tmp_path, sha256=expected)
    message = str(raised.value)
    assert message == (f"the dump at {site.url}/dumps/wrong.pgdump does not match its SHA-256 "
                       f"(expected {expected}, got {sha256(content(2))}); it was removed: fetch it again")
    assert "\n" not in message and raised.value.exit_code == 2
    assert list(tmp_path.iterdir()) == []


async def test_a_download_cut_short_is_resumed_asking_only_for_the_rest(site, served, tmp_path):
    data = content(3)
    digest = publish(served, "resumed.pgdump", data)
    part = await cut_short(site, "resumed.pgdump", tmp_path)
    assert part.with_name(part.name + ".validator").exists()  # the ETag, for If-Range

    lines = []
    path, sent = await fetch(site, "resumed.pgdump", tmp_path, sha256=digest, line=lines.append)
    assert [h.get("range") for h in sent] == [f"bytes={SIZE // 2}-"]
    assert lines[0] == f"resumed at {SIZE // 2} bytes (150.0 KB of 300.0 KB): asking only for the rest"
    assert "(resumed at 150000 bytes: 150.0 KB this run)" in lines[1] and lines[1].endswith("SHA-256 matches")
    assert sent[0].get("if-range")
    assert statuses(site) == [206]
    assert path.read_bytes() == data  # hashed from the first byte of the part: the SHA-256 matched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["resumed.pgdump"]


async def test_a_dump_changed_on_the_server_between_runs_starts_over(site, served, tmp_path):
    publish(served, "changed.pgdump", content(4))
    await cut_short(site, "changed.pgdump", tmp_path)
    new = content(5, SIZE + 1000)
    digest = publish(served, "changed.pgdump", new)  # another size and mtime: another ETag

    path, sent = await fetch(site, "changed.pgdump", tmp_path, sha256=digest)
    assert sent[0].get("range") == f"bytes={SIZE // 2}-" and sent[0].get("if-range")
    assert statuses(site) == [200]  # If-Range no longer matched: the whole new file, not a tail
    assert path.read_bytes() == new


async def test_a_part_already_whole_is_verified_and_published_without_a_body(site, served, tmp_path):
    data = content(6)
    digest = publish(served, "whole.pgdump", data)
    (tmp_path / "whole.pgdump.part").write_bytes(data)  # a run stopped before the rename
    path, sent = await fetch(site, "whole.pgdump", tmp_path, sha256=digest)
    assert statuses(site) == [416] and sent[0].get("range") == f"bytes={SIZE}-"
    assert path.read_bytes() == data and not (tmp_path / "whole.pgdump.part").exists()


async def test_a_503_with_retry_after_is_waited_for(site, served, tmp_path):
    data = content(7, 10_000)
    digest = publish(served, "busy.pgdump", data)
    site.set_faults("busy:1/1")  # the first request: 503, Retry-After: 1
    path, _ = await fetch(site, "busy.pgdump", tmp_path, sha256=digest)
    assert path.read_bytes() == data
    first, second = [r for r in site.requests if r.path == "/dumps/busy.pgdump"]
    assert (first.status, second.status) == (503, 200)
    assert second.time - first.time >= 1.0


async def test_what_cannot_be_fetched_as_asked_is_refused_in_one_line(site, served, tmp_path):
    with pytest.raises(DumpError, match="no such dump"):
        await fetch(site, "missing.pgdump", tmp_path)
    assert statuses(site) == [404]
    async with httpx.AsyncClient() as http:
        with pytest.raises(DumpError, match=r"https://"):
            await fetch_dump("http://files.example.org/dump.pgdump", tmp_path, http, Politeness(100))
        with pytest.raises(DumpError, match="64 hexadecimal"):
            await fetch_dump(f"{site.url}/dumps/x.pgdump", tmp_path, http, Politeness(100), sha256="abc")
    assert statuses(site) == [404]  # neither reached the site
    assert list(tmp_path.iterdir()) == []


def test_the_file_is_named_by_the_urls_last_segment_alone(tmp_path):
    assert dump_path("https://files.derpicdn.net/derpibooru_public_dump_2026_08_13.pgdump?x=1", tmp_path) \
        == tmp_path / "derpibooru_public_dump_2026_08_13.pgdump"
    assert dump_path("https://h.example/d/..%2F..%2Fetc%2Fpasswd", tmp_path) == tmp_path / ".._.._etc_passwd"
    assert dump_path("https://h.example/d/a%20b", tmp_path) == tmp_path / "a_b"
    for url in ("https://h.example/", "https://h.example", "https://h.example/d/..", "https://h.example/d/%2e%2e",
                "https://h.example/d/."):
        with pytest.raises(DumpError, match="names no file"):
            dump_path(url, tmp_path)


def test_check_sha256_of_a_local_file(tmp_path):
    path = tmp_path / "local.pgdump"
    data = content(8, 3 << 20)  # more than one chunk
    path.write_bytes(data)
    check_sha256(path, sha256(data))
    check_sha256(path, f" {sha256(data).upper()} ")
    with pytest.raises(DumpError) as raised:
        check_sha256(path, "1" * 64)
    assert str(raised.value).startswith(f"{path} does not match its SHA-256 (expected {'1' * 64}, got {sha256(data)})")
    with pytest.raises(DumpError, match="64 hexadecimal"):
        check_sha256(path, "not a hash")
    with pytest.raises(DumpError, match="cannot read"):
        check_sha256(tmp_path / "absent.pgdump", sha256(data))
    assert path.read_bytes() == data  # a local file is never removed


async def test_a_kept_file_that_does_not_match_is_reported_not_removed(site, served, tmp_path):
    (tmp_path / "kept.pgdump").write_bytes(b"something else")
    with pytest.raises(DumpError, match="already there but does not match"):
        await fetch(site, "kept.pgdump", tmp_path, sha256="2" * 64)
    assert (tmp_path / "kept.pgdump").read_bytes() == b"something else"
    assert statuses(site) == []


async def test_a_body_shorter_than_its_content_length_is_kept_as_a_part_and_resumed_without_a_sha256(tmp_path):
    data = content(9)
    with FileHost(data, cut=2) as host:  # both attempts of the first run: half of what Content-Length says
        with pytest.raises(SiteUnavailable, match="incomplete|cut short|closed"):
            await fetch_from(host, tmp_path)
        assert sorted(p.name for p in tmp_path.iterdir()) == ["board.pgdump.part"]  # never under its final name
        kept = (tmp_path / "board.pgdump.part").stat().st_size
        assert kept == SIZE // 2 + (SIZE - SIZE // 2) // 2  # the second attempt resumed the first's half
        lines = []
        path = await fetch_from(host, tmp_path, line=lines.append)
        assert host.ranges == [None, f"bytes={SIZE // 2}-", f"bytes={kept}-"]
    assert path.read_bytes() == data and sorted(p.name for p in tmp_path.iterdir()) == ["board.pgdump"]
    assert lines[0].startswith(f"resumed at {kept} bytes") and lines[-1].endswith("so it was not checked")


@pytest.mark.parametrize("trickle, stall, said", [
    ((20, 0.05), Stall(1, 1000), "bytes came in 1 s, under download.dump_min_rate (1000 bytes/s over"),
    ((20, 3.0), Stall(1), "not one byte came in 1 s (download.dump_stall_seconds)"),
])
async def test_a_host_that_trickles_or_stalls_is_cut_off_and_its_part_kept(tmp_path, trickle, stall, said):
    data = content(10)
    started = time.monotonic()
    with FileHost(data, trickle=trickle) as host:  # 400 bytes/s; 20 bytes then 3 s of nothing
        with pytest.raises(SiteUnavailable) as raised:
            await fetch_from(host, tmp_path, stall=stall)
        assert host.ranges[0] is None and host.ranges[1].startswith("bytes=")  # the retry resumed
    assert time.monotonic() - started < 30  # two attempts of about a second each, not 750 s of trickle
    assert "the transfer stalled: " in str(raised.value) and said in str(raised.value)
    assert 0 < (tmp_path / "board.pgdump.part").stat().st_size < SIZE


@pytest.mark.parametrize("trickle, stall, said", [
    ((0, 60.0), Stall(2), "not one byte came in 2 s (download.dump_stall_seconds)"),
    ((1, 1.0), Stall(2, 100), "bytes came in 2 s, under download.dump_min_rate (100 bytes/s over"),
])
async def test_a_host_slow_from_its_first_byte_is_cut_off_within_the_stall_window(tmp_path, trickle, stall, said):
    started = time.monotonic()
    with FileHost(content(11), trickle=trickle) as host:  # silent, or 1 byte a second, from the start
        with pytest.raises(SiteUnavailable) as raised:
            await asyncio.wait_for(fetch_from(host, tmp_path, stall=stall), 30)
        assert len(host.ranges) == 2  # both attempts were abandoned, each at its first window's end
    assert time.monotonic() - started < 2 * 2 + 4  # two windows of 2 s, plus slack
    assert "the transfer stalled: " in str(raised.value) and said in str(raised.value)
