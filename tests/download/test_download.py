"""Downloads end to end against the local site: only ready files, each once, verified, resumable.

The core tests run twice: into a local folder, and into S3 (a moto server on 127.0.0.1).
"""

from __future__ import annotations

import asyncio
import errno
import hashlib
import io
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import urlsplit

import fsspec
import httpx
import pytest
from click.testing import CliRunner

from mirror.api.polite import RetryableFailure
from mirror.cli import cli
from mirror.commands import runs
from mirror.download import StorageFailure
from mirror.download.fetch import Fetcher, FileFailed, Job, check_redirect
from mirror.download.storage import RecentFiles, Storage
from mirror.errors import EXIT_DAMAGED, EXIT_STORE
from mirror.localsite.board.editor import BoardEditor
from mirror.localsite.http.server import SiteServer
from mirror.progress import Reporter
from mirror.store import open_database
from mirror.store.downloads import counts
from mirror.wiring import open_storage

from ..support.configs import changed, site_config, site_images, sync, write_config
from ..support.moto import AWS_ENV, moto_s3

# The file host's pacing for tests: fast, with quick retries (the real limits are tested elsewhere).
FAST_FILES = {"requests_per_second": 500, "concurrency": 4}


@pytest.fixture
def site(request):
    # Fewer images where files go to the moto S3 server, which answers each request in some 20 ms
    # and a kept file and its checks take a dozen: the same cases, a third of the files.
    on_s3 = getattr(request.node, "callspec", None) and request.node.callspec.params.get("files_url") == "s3"
    board = BoardEditor.generate(seed=4, images=24 if on_s3 else 60)
    ready = [i for i, image in sorted(board.images.items()) if not image["hidden_from_users"]]
    board.edit_image(ready[3], thumbnails_generated=False, processed=False)
    board.hide_image(ready[5], "Rule #1")
    board.merge_image(ready[7], ready[8])
    with SiteServer(board) as server:
        yield server


@pytest.fixture(scope="module")
def s3_server(tmp_path_factory):
    """A moto S3 server on a free loopback port, for this module's tests, and its access log."""
    log = tmp_path_factory.mktemp("moto") / "access.log"
    with moto_s3(log) as endpoint:
        yield endpoint, log


@pytest.fixture(scope="module")
def s3_endpoint(s3_server):
    return s3_server[0]


@pytest.fixture(params=["local", "s3"])
def files_url(request, tmp_path):
    """Where files are kept: a local folder, or a fresh bucket on the moto server."""
    if request.param == "local":
        return {"files": str(tmp_path / "files")}
    endpoint = request.getfixturevalue("s3_endpoint")
    bucket = f"files-{os.urandom(4).hex()}"
    fsspec.filesystem("s3", endpoint_url=endpoint).mkdir(bucket)
    return {"files": f"s3://{bucket}/mirror", "endpoint_url": endpoint}


def configure(site, tmp_path, store=None, polite=None, api_key=None, **download):
    download = {**FAST_FILES, "partial_dir": str(tmp_path / "partial"), **download}
    config = site_config(site, tmp_path, polite=polite, api_key=api_key, download=download)
    return changed(config, store=store or {"files": str(tmp_path / "files")})


def image_of(path: str) -> int:
    """The image id in a file URL path: ``/img/view/Y/M/D/{id}.png`` or ``/img/Y/M/D/{id}/thumb.png``."""
    return int(re.search(r"/(\d+)(?:/[a-z_]+)?\.[a-z0-9]+$", path).group(1))


def file_requests(site) -> list:
    return [r for r in site.requests if r.path.startswith("/img/")]


def ready_files(site, representations=("thumb", "full")) -> dict[tuple[int, str], tuple[dict, str]]:
    """(image id, representation) of every file that should be kept -> (record, URL path).

    Keeping ``full`` keeps each image's original: for an SVG image (whose ``full`` is a PNG
    rendering) that is also the SVG, kept as ``svg`` from the view URL ending in ``.svg``.
    """
    wanted = {}
    for record in site_images(site):
        if record.get("hidden_from_users") or not record["thumbnails_generated"]:
            continue
        for name in representations:
            wanted[(record["id"], name)] = (record, urlsplit(record["representations"][name]).path)
        if "full" in representations and record["format"] == "svg":
            full = urlsplit(record["representations"]["full"]).path
            wanted[(record["id"], "svg")] = (record, full.removesuffix(".png") + ".svg")
    return wanted


def original_of(record: dict) -> str:
    """The representation ``sha512_hash`` describes."""
    return "svg" if record["format"] == "svg" else "full"


def urls(files: dict) -> set[str]:
    return {path for _, path in files.values()}


def kept_bytes(config, db, image_id, representation) -> bytes:
    row = db["downloads"].get((image_id, representation))
    fs, root = fsspec.core.url_to_fs(config.store.files, **_options(config))
    return fs.cat_file(f"{root.rstrip('/')}/{row['path']}")


def _options(config):
    endpoint = config.store.endpoint_url
    return {"endpoint_url": endpoint} if endpoint else {}


def download_under(site, config, faults: str):
    """Sync, then download while the site misbehaves as ``faults`` says (a fault profile), with the
    request log cleared first; the faults are off again afterwards. Returns (report, db)."""
    sync(config)
    db = open_database(config.database)
    site.clear_requests()
    site.set_faults(faults)
    try:
        return asyncio.run(runs.download(config, db)), db
    finally:
        site.set_faults("")


def assert_everything_kept_and_verified(config, db, site, representations=("thumb", "full")):
    wanted = ready_files(site, representations)
    done = {(r["image_id"], r["representation"]): r for r in db["downloads"].rows_where("status = 'done'")}
    assert set(done) == set(wanted)
    with httpx.Client() as http:  # one client: each new one loads the CA bundle again (40 ms)
        for (image_id, name), (record, path) in wanted.items():
            body = kept_bytes(config, db, image_id, name)
            assert hashlib.sha512(body).hexdigest() == done[(image_id, name)]["sha512"]
            assert done[(image_id, name)]["original"] == (name == original_of(record))
            if name == original_of(record):
                assert hashlib.sha512(body).hexdigest() == record["sha512_hash"]
            else:
                assert body == http.get(site.url + path).content
    report = asyncio.run(runs.verify(config, db))
    assert report.damaged == 0 and report.fetched == len(wanted)


# --- the core: exactly the ready files, each once; a second run fetches nothing -----------------

def test_exactly_the_ready_files_are_fetched_each_once(site, tmp_path, files_url):
    config = configure(site, tmp_path, files_url, enabled=True)
    reports, db = _sync_and_download(config)
    fetched = Counter(r.path for r in file_requests(site))
    wanted = ready_files(site)
    assert set(fetched) == urls(wanted)
    assert set(fetched.values()) == {1}
    assert reports[-1].downloaded == len(wanted) == reports[-1].fetched
    assert_everything_kept_and_verified(config, db, site)
    # Not ready, hidden and merged images: never requested, never planned.
    skipped = {r["id"] for r in site_images(site) if r.get("hidden_from_users") or not r["thumbnails_generated"]}
    assert len(skipped) >= 3
    assert not {image_of(path) for path in fetched} & skipped
    assert db.execute("SELECT count(*) FROM downloads WHERE image_id IN ({})".format(
        ",".join(map(str, skipped)))).fetchone()[0] == 0
    # Paths come from trusted parts only.
    for row in db["downloads"].rows:
        image_id, name = row["image_id"], row["representation"]
        assert row["path"].startswith(f"{name}/{image_id // 1000}/{image_id}.")
    site.clear_requests()
    again = asyncio.run(runs.download(config, db))
    assert file_requests(site) == [] and again.downloaded == 0 and again.requests == 0


@pytest.mark.parametrize("files_url", ["s3"], indirect=True)
def test_a_file_uploaded_to_an_object_store_costs_one_request(site, tmp_path, files_url, s3_server):
    """A kept file is read again at once (its intensities, its fingerprint, what an original says
    of itself): from the bytes just uploaded, where each read cost the store a HEAD and a GET."""
    config = configure(site, tmp_path, files_url, enabled=False)
    _, db = _sync_and_download(config)
    log, bucket = s3_server[1], urlsplit(files_url["files"]).netloc
    start = len(log.read_text().splitlines())
    report = asyncio.run(runs.download(config, db))
    answered = [asked for asked in map(_asked, log.read_text().splitlines()[start:]) if asked[1].startswith(f"/{bucket}")]
    objects = [asked for asked in answered if asked[1].startswith(f"/{bucket}/")]
    assert report.downloaded == len(ready_files(site)) > 20
    assert sum(verb == "PUT" for verb, _, _ in objects) == report.fetched
    assert [asked for asked in objects if asked[0] == "GET" or asked[::2] == ("HEAD", "200")] == []
    # Whether a file is there already (kept by a run stopped before it recorded it): a listing
    # of each folder, once (s3fs lists the parent of one not there yet), not a HEAD and a listing
    # of each file.
    folders = {row[0].rpartition("/")[0] for row in db.execute("SELECT path FROM downloads WHERE status = 'done'")}
    assert len(answered) <= report.fetched + 2 * len(folders)


def test_a_file_read_from_the_bytes_uploaded_is_the_file_kept(s3_endpoint, tmp_path):
    bucket = f"files-{os.urandom(4).hex()}"
    fsspec.filesystem("s3", endpoint_url=s3_endpoint).mkdir(bucket)
    storage = Storage(f"s3://{bucket}/m", options={"endpoint_url": s3_endpoint}, staging=tmp_path)
    first, second = os.urandom(3000), os.urandom(5000)
    for data in (first, second):  # the second replaces the first under the same name
        part = storage.part("full/0/1.png")
        part.write_bytes(data)
        storage.publish(part, "full/0/1.png", "copy/0/1.png")
    assert storage.read("full/0/1.png") == storage.read("copy/0/1.png") == second
    assert Storage(storage.url, options={"endpoint_url": s3_endpoint}).read("full/0/1.png") == second
    storage.remove("full/0/1.png")
    assert storage.read("full/0/1.png") is None


def test_the_files_remembered_are_the_latest_within_the_limit():
    recent = RecentFiles(limit=10)
    recent.remember("a", b"123456")
    recent.remember("b", b"123")
    recent.remember("c", b"1234")
    assert (recent.get("a"), recent.get("b"), recent.get("c")) == (None, b"123", b"1234")
    recent.remember("b", b"12345678")
    assert (recent.get("b"), recent.get("c")) == (b"12345678", None)


def test_a_record_flipping_to_ready_is_picked_up_by_the_next_sync(site, tmp_path):
    config = configure(site, tmp_path, enabled=True)
    waiting = next(r["id"] for r in site_images(site) if r.get("thumbnails_generated") is False)
    _, db = _sync_and_download(config)
    assert waiting not in {image_of(r.path) for r in file_requests(site)}
    site.clear_requests()
    site.editor.edit_image(waiting, thumbnails_generated=True)
    deleted = next(r["image_id"] for r in db["downloads"].rows)
    site.editor.hide_image(deleted)
    reports, db = _sync_and_download(config)
    fetched = [r.path for r in file_requests(site)]
    assert len(fetched) == 2 and {image_of(path) for path in fetched} == {waiting}
    assert reports[-1].downloaded == 2
    # The files kept for an image deleted since stay kept (and are not asked for again).
    kept = list(db["downloads"].rows_where("image_id = ?", [deleted]))
    assert len(kept) == 2 and all(r["status"] == "done" for r in kept)
    assert all((tmp_path / "files" / r["path"]).exists() for r in kept)


def test_a_file_the_site_replaced_is_fetched_again(site, tmp_path):
    config = configure(site, tmp_path, enabled=True, representations=["full"])
    _, db = _sync_and_download(config)
    image_id = next(r["image_id"] for r in db["downloads"].rows)
    old = db["downloads"].get((image_id, "full"))["sha512"]
    image = site.editor.replace_file(image_id, "replaced")
    site.clear_requests()
    reports, db = _sync_and_download(config)
    assert [image_of(r.path) for r in file_requests(site)] == [image_id] and reports[-1].downloaded == 1
    row = db["downloads"].get((image_id, "full"))
    assert row["sha512"] == image["sha512_hash"] != old and row["status"] == "done"
    assert hashlib.sha512(kept_bytes(config, db, image_id, "full")).hexdigest() == image["sha512_hash"]


def test_a_mismatch_from_a_file_replaced_since_the_sync_is_settled_by_the_fresh_record(site, tmp_path):
    config = configure(site, tmp_path, representations=["full"])
    sync(config)
    db = open_database(config.database)
    image_id = next(r["id"] for r in site_images(site) if r.get("thumbnails_generated"))
    image = site.editor.replace_file(image_id, "replaced")
    site.clear_requests()
    report = asyncio.run(runs.download(config, db))
    assert report.failed == 0 and len(file_requests(site)) == report.downloaded  # no retry was needed
    assert [r.path for r in site.requests if r.path.startswith("/api/")] == [f"/api/v1/json/images/{image_id}"]
    assert db["downloads"].get((image_id, "full"))["sha512"] == image["sha512_hash"]
    assert db["images"].get(image_id)["sha512_hash"] == image["sha512_hash"]  # the fresh record is kept


def test_the_summary_counts_every_request_the_run_sent_the_records_fetched_again_too(site, tmp_path):
    """Files that do not match their records cost a request to the API each (the record fetched
    again): the summary line and the report count them, as the site's log and ``--json`` do."""
    config = configure(site, tmp_path, representations=["full"])
    sync(config)
    db = open_database(config.database)
    replaced = [r["id"] for r in site_images(site) if r.get("thumbnails_generated")][:3]
    for image_id in replaced:
        site.editor.replace_file(image_id, "replaced")
    site.clear_requests()
    reporter = Reporter(interactive=False, out=io.StringIO())
    report = asyncio.run(runs.download(config, db, reporter))
    rechecks = [r for r in site.requests if r.path.startswith("/api/")]
    assert len(rechecks) == len(replaced) and report.failed == 0
    assert report.requests == len(site.requests) == len(file_requests(site)) + len(replaced)
    assert reporter.out.getvalue().rstrip().endswith(f"; {len(site.requests)} requests")


def test_corrupt_bodies_are_caught_rechecked_and_retried(site, tmp_path, files_url):
    config = configure(site, tmp_path, files_url, representations=["full"])
    report, db = download_under(site, config, "corrupt:4")
    wanted = ready_files(site, ["full"])
    assert report.downloaded == len(wanted) and report.failed == 0
    corrupted = len(file_requests(site)) - len(wanted)
    assert corrupted >= len(wanted) // 5  # every 4th request was corrupted, then retried
    # Before calling a mismatch corruption, the record was fetched again (once per file).
    rechecks = Counter(r.path for r in site.requests if r.path.startswith("/api/v1/json/images/"))
    assert rechecks and set(rechecks.values()) == {1}
    site.set_faults("")
    assert_everything_kept_and_verified(config, db, site, ["full"])


def test_html_pages_and_halved_bodies_are_never_kept_as_thumbnails(site, tmp_path):
    """A thumbnail has no hash in its record: an HTML page with status 200, or half a file with a
    Content-Length to match, is caught by its format and fetched again."""
    config = configure(site, tmp_path, representations=["thumb"])
    report, db = download_under(site, config, "badfiles:3")
    wanted = ready_files(site, ["thumb"])
    assert report.failed == 0 and report.downloaded == len({path for _, path in wanted.values()})
    assert len(file_requests(site)) >= report.downloaded * 4 // 3  # every 3rd answer was a lie, then retried
    assert_everything_kept_and_verified(config, db, site, ["thumb"])


def test_svg_images_keep_the_svg_as_original_and_png_renderings(site, tmp_path):
    """An SVG image's `full` and sizes are PNG renderings; its original is the SVG at the view
    URL ending in .svg, checked against sha512_hash. None fails, none costs a retry."""
    config = configure(site, tmp_path, representations=["thumb", "full"])
    svgs = [r for r in site_images(site) if not r.get("hidden_from_users") and r["format"] == "svg"
            and r["thumbnails_generated"]]
    assert svgs
    sync(config)
    db = open_database(config.database)
    site.clear_requests()
    report = asyncio.run(runs.download(config, db))
    assert report.failed == 0 and "originals" in report.summary()
    for record in svgs:
        svg, full = db["downloads"].get((record["id"], "svg")), db["downloads"].get((record["id"], "full"))
        assert svg["status"] == full["status"] == "done" and svg["original"] == 1 and full["original"] == 0
        assert svg["sha512"] == record["sha512_hash"] and svg["path"].endswith(".svg")
        assert kept_bytes(config, db, record["id"], "svg").lstrip().startswith(b"<?xml")
        assert kept_bytes(config, db, record["id"], "full").startswith(b"\x89PNG")
        asked = Counter(r.path for r in file_requests(site) if image_of(r.path) == record["id"])
        assert set(asked.values()) == {1}  # no retry, no recheck
    assert not [r for r in site.requests if r.path.startswith("/api/")]
    assert_everything_kept_and_verified(config, db, site)


def test_truncated_bodies_and_dropped_connections_resume_with_range(site, tmp_path):
    config = configure(site, tmp_path)
    report, db = download_under(site, config, "drops:3")
    statuses = Counter(r.status for r in file_requests(site))
    assert statuses[206] > 0  # a cut-short body was resumed, not fetched again from the start
    assert report.failed == 0
    assert_everything_kept_and_verified(config, db, site)
    assert not list((tmp_path / "partial").rglob("*.part")) and not list((tmp_path / "files").rglob("*.part"))
    assert not list((tmp_path / "files").rglob("*.validator"))


# --- a resume names the file its .part began with (If-Range) -------------------------------------

def cut_thumbnails(site, tmp_path, files_url) -> tuple:
    """Thumbnails cut short mid-body and not retried: (config, db, {part: (image id, URL path)}).

    Every 4th file request is a truncated body (``drops:2`` alternates a dropped connection and
    a truncated body), and with no retries each leaves its ``.part`` (and its validator) behind.
    """
    config = configure(site, tmp_path, files_url, polite={"max_retries": 0}, representations=["thumb"])
    _, db = download_under(site, config, "drops:2")
    wanted = {record["id"]: path for record, path in ready_files(site, ["thumb"]).values()}
    parts = {}
    for part in open_storage(config).staging.rglob("*.part"):
        if part.stat().st_size:  # only parts with bytes to resume
            image_id = int(part.name.split(".")[0])
            parts[part] = (image_id, wanted[image_id])
    assert len(parts) >= 3 and counts(db)["failed"] >= len(parts)
    return config, db, parts


def staged_files(config) -> list[Path]:
    return [path for path in open_storage(config).staging.rglob("*") if path.is_file()]


def record_file_exchanges(monkeypatch) -> dict:
    """URL path -> (request headers, response) of every file request sent from now on."""
    exchanges = {}
    real_send = httpx.AsyncClient.send

    async def send(self, request, **kwargs):
        response = await real_send(self, request, **kwargs)
        if request.url.path.startswith("/img/"):
            exchanges[request.url.path] = (request.headers, response)
        return response

    monkeypatch.setattr(httpx.AsyncClient, "send", send)
    return exchanges


def test_a_thumbnail_regenerated_after_a_cut_is_fetched_whole_not_mixed(site, tmp_path, files_url, monkeypatch):
    config, db, parts = cut_thumbnails(site, tmp_path, files_url)
    part, (image_id, path) = next(iter(parts.items()))
    head, old = part.read_bytes(), httpx.get(site.url + path)
    assert old.content.startswith(head) and len(head) < len(old.content)
    assert Path(f"{part}.validator").read_text() == old.headers["etag"]
    site.editor.replace_file(image_id, "regenerated")  # the site regenerates the thumbnail: new bytes at the same URL
    new = httpx.get(site.url + path).content
    assert new != old.content and head + new[len(head):] != new  # a mix would be caught
    exchanges = record_file_exchanges(monkeypatch)
    report = asyncio.run(runs.download(config, db, retry_failed=True))
    assert report.failed == 0
    assert kept_bytes(config, db, image_id, "thumb") == new
    assert db["downloads"].get((image_id, "thumb"))["sha512"] == hashlib.sha512(new).hexdigest()
    sent, response = exchanges[path]
    assert sent["range"] == f"bytes={len(head)}-" and sent.get("if-range") == old.headers["etag"]
    assert response.status_code == 200  # the site saw the validator was stale and sent the new file whole
    assert not staged_files(config)  # no .part, no validator left


def test_an_unchanged_file_resumes_with_only_its_tail(site, tmp_path, files_url, monkeypatch):
    config, db, parts = cut_thumbnails(site, tmp_path, files_url)
    heads = {path: part.read_bytes() for part, (_, path) in parts.items()}
    blind = next(iter(parts))  # without a validator (the server sent none) a part resumes with Range alone
    Path(f"{blind}.validator").unlink()
    exchanges = record_file_exchanges(monkeypatch)
    report = asyncio.run(runs.download(config, db, retry_failed=True))
    assert report.failed == 0
    for part, (image_id, path) in parts.items():
        sent, response = exchanges[path]
        whole = httpx.get(site.url + path)
        assert sent["range"] == f"bytes={len(heads[path])}-"
        assert sent.get("if-range") == (None if part == blind else whole.headers["etag"])
        assert response.status_code == 206
        size = len(whole.content)
        assert response.headers["content-range"] == f"bytes {len(heads[path])}-{size - 1}/{size}"  # the tail only
        assert kept_bytes(config, db, image_id, "thumb") == whole.content
    assert_everything_kept_and_verified(config, db, site, ["thumb"])
    assert not staged_files(config)
    fs, root = fsspec.core.url_to_fs(config.store.files, **_options(config))
    assert not [name for name in fs.find(root) if name.endswith((".part", ".validator"))]


def test_a_part_that_cannot_be_resumed_is_dropped_with_its_validator(site, tmp_path):
    config, db, parts = cut_thumbnails(site, tmp_path, None)
    image_id, _ = next(iter(parts.values()))
    site.editor.hide_image(image_id)  # its file now answers 404: nothing left to resume
    report = asyncio.run(runs.download(config, db, retry_failed=True))
    assert report.failed == 1 and db["downloads"].get((image_id, "thumb"))["status"] == "failed"
    assert not staged_files(config)


# --- redirects: followed within the file host's origin only -----------------------------------------

def test_a_redirect_to_another_site_is_not_followed(site, tmp_path, monkeypatch):
    key = next(iter(site.editor.api_keys))
    config = configure(site, tmp_path, api_key=key, representations=["full"])
    sync(config)
    db = open_database(config.database)
    exchanges = record_file_exchanges(monkeypatch)
    with SiteServer(site.editor) as elsewhere:  # it has the very same files, yet is another origin
        site.set_faults(f"redirect:{elsewhere.url}")
        report = asyncio.run(runs.download(config, db))
        assert elsewhere.requests == []
    rows = list(db["downloads"].rows)
    assert report.failed == len(rows) == report.expected > 0 and report.downloaded == 0
    for row in rows:
        moved_to = elsewhere.url + urlsplit(row["url"]).path
        assert row["status"] == "failed" and row["reason"] == (
            f"image {row['image_id']} {row['representation']}: the file host redirected to another site ({moved_to}); not followed")
    assert Counter(r.status for r in file_requests(site)) == {302: len(rows)}  # one request each, no retry
    # The key goes to the API only: never in a file request, a stored reason or a URL.
    sent_to_files = [str(sent.raw) + str(response.request.url) for sent, response in exchanges.values()]
    assert sent_to_files and not [sent for sent in sent_to_files if key in sent]
    assert key not in "\n".join(json.dumps(row) for row in db["downloads"].rows)
    site.set_faults("")
    again = asyncio.run(runs.download(config, db, retry_failed=True))  # the files were never lost
    assert again.failed == 0 and again.downloaded == len(rows)


def test_a_redirect_within_the_file_host_is_followed_and_paced(site, tmp_path):
    config = configure(site, tmp_path, representations=["thumb"])
    sync(config)
    db = open_database(config.database)
    site.set_faults(f"redirect:{site.url}")  # each file's first request answers 302 to itself
    site.clear_requests()
    report = asyncio.run(runs.download(config, db))
    wanted = ready_files(site, ["thumb"])
    assert report.failed == 0 and report.downloaded == len(wanted)
    assert Counter(r.status for r in file_requests(site)) == {302: len(wanted), 200: len(wanted)}
    assert report.requests == 2 * len(wanted)  # every hop took its own slot in the pacing budget
    site.set_faults("")
    assert_everything_kept_and_verified(config, db, site, ["thumb"])


def test_a_redirect_never_leaves_the_origin_or_downgrades_to_http():
    job = Job(12, "full", "https://derpicdn.net/img/view/2012/1/2/12.png", "full/0/12.png")
    follow = httpx.URL("https://derpicdn.net/img/2012/1/2/12/full.png")
    assert check_redirect(job, follow, hops=1) is None
    for elsewhere in ("http://derpicdn.net/img/2012/1/2/12/full.png",  # a downgrade to plain http
                      "https://derpicdn.net:8443/img/12.png", "https://tracker.example/img/12.png"):
        with pytest.raises(FileFailed, match=re.escape(f"another site ({elsewhere}); not followed")):
            check_redirect(job, httpx.URL(elsewhere), hops=1)
    with pytest.raises(FileFailed, match="redirected more than 5 times"):
        check_redirect(job, follow, hops=6)


# --- a file that never finishes: cut off at download.file_deadline --------------------------------

def test_a_file_trickled_byte_by_byte_is_cut_off_at_the_deadline_and_resumed_later(site, tmp_path):
    config = configure(site, tmp_path, polite={"max_retries": 1}, representations=["thumb"], file_deadline=1.0)
    sync(config)
    db = open_database(config.database)
    wanted = {record["id"]: path for record, path in ready_files(site, ["thumb"]).values()}
    # A deadline of 1 s gets some 36 bytes an attempt (two attempts stay short of the smallest
    # thumbnail, 115 bytes); at 0.5 s a loaded machine could take the whole of it to send none.
    slow = {image_id: path for image_id, path in wanted.items() if image_id % 20 == 0}
    assert 0 < len(slow) < len(wanted)
    site.set_faults("trickle:20")  # their files come 4 bytes every 0.1 s: about 2.5 s for one
    site.clear_requests()
    report = asyncio.run(runs.download(config, db))
    site.set_faults("")
    assert report.failed == len(slow) and report.downloaded == len(wanted) - len(slow)  # the run went on
    staging = open_storage(config).staging
    for image_id, path in slow.items():
        row = db["downloads"].get((image_id, "thumb"))
        assert row["status"] == "failed" and row["attempts"] == 2
        assert "after 2 attempts" in row["reason"] and "longer than download.file_deadline (1 s)" in row["reason"]
        statuses = [r.status for r in file_requests(site) if r.path == path]
        assert statuses == [200, 206]  # the second attempt resumed where the first was cut off
        head = next(staging.glob(f"thumb/*/{image_id}.*.part")).read_bytes()
        whole = httpx.get(site.url + path).content
        assert 0 < len(head) < len(whole) and whole.startswith(head)  # kept, to resume
    site.clear_requests()
    again = asyncio.run(runs.download(config, db, retry_failed=True))
    assert again.failed == 0 and again.downloaded == len(slow)
    assert {r.status for r in file_requests(site)} == {206}
    assert_everything_kept_and_verified(config, db, site, ["thumb"])


def test_a_file_kept_before_a_kill_is_adopted_and_its_validator_dropped(site, tmp_path, files_url):
    """Killed between publishing a file and removing its validator (and so before recording it):
    the rerun adopts the file without a request, and leaves nothing in the staging area."""
    config = configure(site, tmp_path, files_url, representations=["thumb"])
    sync(config)
    db = open_database(config.database)
    asyncio.run(runs.download(config, db))
    row = next(db["downloads"].rows_where("status = 'done'", order_by="image_id"))
    db["downloads"].update((row["image_id"], "thumb"), {"status": "pending"})
    Path(f"{open_storage(config).part(row['path'])}.validator").write_text('"an etag"')
    site.clear_requests()

    report = asyncio.run(runs.download(config, db))

    assert report.adopted == 1 and not file_requests(site)
    assert db["downloads"].get((row["image_id"], "thumb"))["status"] == "done"
    assert not staged_files(config)


def test_a_part_holding_the_whole_file_is_kept_without_fetching_it_again(site, tmp_path):
    """Killed after a file's last byte was written but before it was published: the rerun's
    resume is answered 416 with the file's length, and the .part is checked and kept as it is."""
    config = configure(site, tmp_path, representations=["thumb", "full"])
    sync(config)
    db = open_database(config.database)
    asyncio.run(runs.download(config, db))
    storage = open_storage(config)
    for representation in ("thumb", "full"):  # a thumbnail checked by format, an original by hash
        row = next(db["downloads"].rows_where("status = 'done' AND representation = ?", [representation],
                                              order_by="image_id"))
        part = storage.part(row["path"])
        os.replace(tmp_path / "files" / row["path"], part)
        etag = httpx.head(site.url + urlsplit(row["url"]).path).headers["etag"]
        Path(f"{part}.validator").write_text(etag)
        db["downloads"].update((row["image_id"], representation), {"status": "pending"})
        site.clear_requests()

        report = asyncio.run(runs.download(config, db))

        assert [r.status for r in file_requests(site)] == [416]
        assert report.downloaded == 1 and report.failed == 0
        assert db["downloads"].get((row["image_id"], representation))["status"] == "done"
        assert (tmp_path / "files" / row["path"]).read_bytes() == httpx.get(row["url"]).content
        assert not staged_files(config)


# --- a SIGKILL mid-way, then a rerun ------------------------------------------------------------------

def test_sigkill_during_downloads_then_rerun(site, tmp_path):
    representations = ["thumb", "small", "medium", "full"]
    config = configure(site, tmp_path, representations=representations, concurrency=2)
    sync(config)
    db = open_database(config.database)
    path = write_config(config, tmp_path / "mirror.toml")
    wanted = ready_files(site, representations)
    site.set_faults("slow:0.04")
    site.clear_requests()
    process = subprocess.Popen([sys.executable, "-m", "mirror.cli", "-c", str(path), "download"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 20
    while counts(db)["done"] < len(wanted) // 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait()
    done_before = {r["path"] for r in db["downloads"].rows_where("status = 'done'")}
    on_disk = {str(p.relative_to(tmp_path / "files")) for p in (tmp_path / "files").rglob("*") if p.is_file()}
    assert 0 < len(done_before) < len(wanted)
    assert done_before <= on_disk  # recorded only once published
    kept = {}
    for kept_path in on_disk - {p for p in on_disk if p.startswith(".partial/")}:
        name, _, file_name = kept_path.split("/")
        kept[(int(Path(file_name).stem), name)] = kept_path
    with httpx.Client() as http:
        for key, kept_path in kept.items():  # every file under a final name is whole
            assert (tmp_path / "files" / kept_path).read_bytes() == http.get(site.url + wanted[key][1]).content
    # A URL is complete when every file it serves is kept; the rest was in flight or not started.
    incomplete = {path for key, (_, path) in wanted.items() if key not in kept}
    site.set_faults("")
    site.clear_requests()
    result = subprocess.run([sys.executable, "-m", "mirror.cli", "-c", str(path), "download"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    refetched = Counter(r.path for r in file_requests(site))
    assert set(refetched) == incomplete and set(refetched.values()) == {1}
    assert_everything_kept_and_verified(config, db, site, ["thumb", "small", "medium", "full"])


# --- verify ---------------------------------------------------------------------------------------

def test_verify_finds_missing_and_corrupt_files_and_repair_fixes_them(site, tmp_path, files_url):
    config = configure(site, tmp_path, files_url, enabled=True)
    _, db = _sync_and_download(config)
    fs, root = fsspec.core.url_to_fs(config.store.files, **_options(config))
    rows = list(db["downloads"].rows_where("status = 'done'", order_by="image_id, representation"))
    missing, corrupt = rows[0], next(r for r in rows[1:] if r["representation"] == "thumb")
    fs.rm_file(f"{root.rstrip('/')}/{missing['path']}")
    fs.pipe_file(f"{root.rstrip('/')}/{corrupt['path']}", b"bit rot")
    path = write_config(config, tmp_path / "mirror.toml")
    runner = CliRunner()
    result = runner.invoke(cli, ["-c", str(path), "verify"], env=_aws_env())
    assert result.exit_code == EXIT_DAMAGED
    assert "1 missing, 1 corrupt" in result.output and missing["path"] in result.output
    site.clear_requests()
    result = runner.invoke(cli, ["-c", str(path), "verify", "--repair"], env=_aws_env())
    assert result.exit_code == 0, result.output
    fetched = {r.path for r in file_requests(site)}
    assert len(fetched) == 2
    assert_everything_kept_and_verified(config, db, site)


def test_a_thumbnail_kept_from_an_html_page_is_found_by_verify(site, tmp_path):
    """A file kept by an older version from an error page: its recorded sha512 is that of the page,
    so only the format check can tell; repair fetches the real file."""
    config = configure(site, tmp_path, enabled=True)
    _, db = _sync_and_download(config)
    fake = next(db["downloads"].rows_where("status = 'done' AND original = 0 AND path LIKE '%.png'"))
    page = b"<!DOCTYPE html><html><body>Service Unavailable</body></html>"
    (Path(config.store.files) / fake["path"]).write_bytes(page)
    db["downloads"].update((fake["image_id"], fake["representation"]),
                           {"sha512": hashlib.sha512(page).hexdigest(), "bytes": len(page)})
    path = write_config(config, tmp_path / "mirror.toml")
    result = CliRunner().invoke(cli, ["-c", str(path), "verify"])
    assert result.exit_code == EXIT_DAMAGED and "0 missing, 1 corrupt" in result.output
    assert fake["path"] in result.output
    result = CliRunner().invoke(cli, ["-c", str(path), "verify", "--repair"])
    assert result.exit_code == 0, result.output
    assert_everything_kept_and_verified(config, db, site)


def test_repairing_a_file_of_an_image_hidden_since_keeps_its_record_and_says_so(site, tmp_path):
    config = configure(site, tmp_path, enabled=True)
    _, db = _sync_and_download(config)
    lost = next(db["downloads"].rows_where("status = 'done' AND representation = 'thumb'"))
    (Path(config.store.files) / lost["path"]).unlink()
    site.editor.hide_image(lost["image_id"])
    sync(config)  # the mirror learns the image is hidden: its files are not offered any more
    path = write_config(config, tmp_path / "mirror.toml")
    result = CliRunner().invoke(cli, ["-c", str(path), "verify", "--repair"])
    assert result.exit_code == EXIT_DAMAGED
    assert "1 missing" in result.output and "1 not repaired" in result.output
    row = db["downloads"].get((lost["image_id"], "thumb"))
    assert row["status"] == "failed" and row["path"] == lost["path"] and row["sha512"] == lost["sha512"]


# --- errors -----------------------------------------------------------------------------------------

def test_a_404_marks_that_file_failed_and_the_rest_continues(site, tmp_path):
    config = configure(site, tmp_path)
    sync(config)
    db = open_database(config.database)
    gone = next(r["id"] for r in site_images(site) if r.get("thumbnails_generated"))
    site.editor.hide_image(gone)  # hidden after our sync: its files now answer 404
    report = asyncio.run(runs.download(config, db))
    failed = list(db["downloads"].rows_where("status = 'failed'"))
    assert {r["image_id"] for r in failed} == {gone} and len(failed) == 2 and report.failed == 2
    assert all("404" in r["reason"] and "no such file" in r["reason"] for r in failed)
    assert report.downloaded == len(ready_files(site)) and counts(db)["pending"] == 0
    assert not any(p.name.startswith(f"{gone}.") for p in (tmp_path / "files").rglob("*"))
    site.clear_requests()
    asyncio.run(runs.download(config, db))
    assert file_requests(site) == []  # failed files wait for --retry-failed


@pytest.mark.parametrize("code, words", [(errno.ENOSPC, "no space left"), (errno.EACCES, "permission denied")])
def test_a_full_or_unwritable_disk_stops_cleanly(site, tmp_path, monkeypatch, code, words):
    config = configure(site, tmp_path, concurrency=1)
    sync(config)
    db = open_database(config.database)
    import aiofiles

    real_open, writes = aiofiles.open, []

    def failing_open(path, mode="r", *args, **kwargs):
        writes.append(path)
        if len(writes) == 6:
            raise OSError(code, os.strerror(code), str(path))
        return real_open(path, mode, *args, **kwargs)

    monkeypatch.setattr("mirror.download.fetch.aiofiles.open", failing_open)
    with pytest.raises(StorageFailure) as raised:
        asyncio.run(runs.download(config, db))
    message = str(raised.value)
    assert words in message and Path(writes[5]).name in message and "run `mirror download` again" in message
    assert counts(db)["done"] == 5
    assert not list((tmp_path / "files" / ".partial").rglob("*.part"))
    assert len([p for p in (tmp_path / "files").rglob("*") if p.is_file()]) == 5
    monkeypatch.setattr("mirror.download.fetch.aiofiles.open", failing_open)
    writes.clear()
    result = CliRunner().invoke(cli, ["-c", str(write_config(config, tmp_path / "m.toml")), "download"])
    assert result.exit_code == EXIT_STORE and words in result.output


def test_the_api_key_never_reaches_stored_urls_or_output(site, tmp_path, monkeypatch):
    key = next(iter(site.editor.api_keys))
    monkeypatch.setenv("MIRROR_API_KEY", key)
    config = configure(site, tmp_path, representations=["full"], enabled=True)
    config_path = write_config(config, tmp_path / "mirror.toml")
    site.set_faults("corrupt:3")  # mismatches make the downloader fetch records (with the key)
    result = CliRunner().invoke(cli, ["-c", str(config_path), "sync"], env={"MIRROR_API_KEY": key})
    assert result.exit_code == 0, result.output
    db = open_database(config.database)
    assert counts(db)["done"] > 0
    dump = "\n".join(json.dumps(row) for row in db["downloads"].rows)
    assert key not in dump and key not in result.output
    assert any(r.path.startswith("/api/v1/json/images/") for r in site.requests)


def test_status_shows_download_counts(site, tmp_path):
    config = configure(site, tmp_path, enabled=False)
    sync(config)
    path = write_config(config, tmp_path / "mirror.toml")
    before = CliRunner().invoke(cli, ["-c", str(path), "status"]).output
    ready = len(ready_files(site))
    assert _counted(before, "files to download") == ready
    assert _counted(before, "images waiting for thumbnails") >= 1
    CliRunner().invoke(cli, ["-c", str(path), "download"])
    after = CliRunner().invoke(cli, ["-c", str(path), "status"]).output
    originals = sum(name == original_of(record) for (_, name), (record, _) in ready_files(site).items())
    assert 0 < originals < ready
    assert _counted(after, "files to download") == 0
    assert _counted(after, "originals kept (checked by sha512)") == originals
    assert _counted(after, "thumbnails and renderings kept") == ready - originals


def _counted(output: str, label: str) -> int:
    line = next(line for line in output.splitlines() if line.strip().startswith(label))
    return int(line.split()[-1].replace(",", ""))


def _sync_and_download(config):
    db = open_database(config.database)
    return asyncio.run(runs.sync(config, db, ["images"])), db


def _asked(line: str) -> tuple[str, str, str]:
    """(verb, path, status) of a line of moto's access log (its verbs may come in colour codes)."""
    verb, path, status = re.search(r'"(?:\x1b\[[\d;]*m)*([A-Z]+) (\S+) [^"]*" (\d+)', line).groups()
    return verb, path, status


def _aws_env():
    return {k: os.environ[k] for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY") if k in os.environ}


def test_a_tail_of_another_file_is_never_appended(tmp_path):
    """A server that ignores If-Range answers 206 with the tail of the file it has now: its ETag
    gives it away, and the .part starts over rather than gluing that tail to the old head."""
    part = tmp_path / "1.png.part"
    part.write_bytes(b"old head")
    request = httpx.Request("GET", "https://files.example/1.png")

    def tail(etag: str) -> httpx.Response:
        return httpx.Response(206, headers={"ETag": etag, "Content-Range": "bytes 8-9/10"}, request=request)

    job = SimpleNamespace()
    assert Fetcher._write_mode(tail('"same"'), job, part, 8, 8, '"same"') == "ab"
    assert part.exists()
    with pytest.raises(RetryableFailure, match="starting over"):
        Fetcher._write_mode(tail('"regenerated"'), job, part, 8, 8, '"same"')
    assert not part.exists()


def test_a_files_store_that_cannot_be_opened_or_written_is_exit_5_naming_it(site, tmp_path, s3_endpoint, monkeypatch):
    """An FTP server that is not there, and S3 without credentials: each crashed with a traceback."""
    config = configure(site, tmp_path, store={"files": "ftp://127.0.0.1:9/files"})
    sync(config)
    result = CliRunner().invoke(cli, ["-c", str(write_config(config, tmp_path / "ftp.toml")), "download"])
    assert result.exit_code == EXIT_STORE, result.output
    assert "cannot open store.files 'ftp://127.0.0.1:9/files'" in result.output and "Traceback" not in result.output

    # S3 without credentials or a reachable endpoint (no network here): botocore's own errors.
    config = configure(site, tmp_path, store={"files": "s3://a-bucket/m"})
    for name in AWS_ENV:
        monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    result = CliRunner().invoke(cli, ["-c", str(write_config(config, tmp_path / "s3.toml")), "download"])
    assert result.exit_code == EXIT_STORE, result.output
    assert "store.files" in result.output and "Traceback" not in result.output


def test_a_file_too_large_to_fingerprint_is_said_once_per_run(tmp_path, monkeypatch):
    """A thumbnail past its box is kept unread: the run says so in one line, not once as it is
    kept and again when the run's end looks for images without a fingerprint."""
    from io import BytesIO

    from PIL import Image

    from mirror.localsite.files.img import FileSource

    board = BoardEditor.generate(seed=3, images=4, with_pictures=True)
    victim = next(i for i, image in sorted(board.images.items()) if image["format"] == "png"
                  and not image["hidden_from_users"] and image["thumbnails_generated"])
    oversized = BytesIO()
    Image.new("RGB", (600, 600), "white").save(oversized, "PNG")  # past the thumb's 250x250 box
    real_data = FileSource.data
    monkeypatch.setattr(FileSource, "data", lambda self, image, variant, ext: oversized.getvalue()
                        if image["id"] == victim and variant.partition(".")[0] == "thumb" else real_data(self, image, variant, ext))
    with SiteServer(board) as server:
        config = configure(server, tmp_path, representations=["thumb"])
        sync(config)
        result = CliRunner().invoke(cli, ["-c", str(write_config(config, tmp_path / "m.toml")), "download"])
    assert result.exit_code == 0, result.output
    said = [line for line in result.output.splitlines() if "not fingerprinted" in line]
    assert len(said) == 1 and f"image {victim} thumb: kept, but not fingerprinted" in said[0], result.output


def test_each_image_is_fingerprinted_once_from_its_best_kept_file(tmp_path, monkeypatch):
    """An image's files are fetched full first, thumbnail next: reading a fingerprint from the
    full picture, to replace it with the thumbnail's a moment later, cost most of a demo's
    download time. Each image's fingerprint is read once, from its thumbnail."""
    from mirror.download import fingerprints
    from mirror.philomena import SIZE_BOXES

    read = []
    real = fingerprints.fingerprint_of
    monkeypatch.setattr(fingerprints, "fingerprint_of", lambda data, box=None: (read.append(box), real(data, box))[1])
    board = BoardEditor.generate(seed=3, images=6, with_pictures=True)
    with SiteServer(board) as server:
        config = configure(server, tmp_path)
        sync(config)
        db = open_database(config.database)
        asyncio.run(runs.download(config, db))
    sources = Counter(row[0] for row in db.execute("SELECT source_representation FROM image_hashes "
                                                   "GROUP BY image_id"))
    assert sources and set(sources) == {"thumb"}, sources
    assert read == [SIZE_BOXES["thumb"]] * len(read) and len(read) == sum(sources.values()), read


def test_a_large_run_reads_fingerprints_on_worker_processes_with_the_same_values(tmp_path, monkeypatch):
    """From fingerprints.POOL_FROM files, fingerprints are read on processes of their own (on a
    thread they took turns with the run's HTTP work for one core): none is read in the run's own
    process, and each is the one a thread reads."""
    from mirror.download import fingerprints

    board = BoardEditor.generate(seed=3, images=6, with_pictures=True)
    kept = {}
    with SiteServer(board) as server:
        for how in ("thread", "processes"):
            config = configure(server, tmp_path / how)
            sync(config)
            db = open_database(config.database)
            if how == "processes":
                monkeypatch.setattr(fingerprints, "POOL_FROM", 0)
                monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
                monkeypatch.setattr(fingerprints, "fingerprint_of", lambda *a: pytest.fail("read in the run's process"))
            asyncio.run(runs.download(config, db))
            kept[how] = [db.execute(f"SELECT {columns} ORDER BY 1, 2, 3").fetchall() for columns in (
                "image_id, view, kind, value, source_representation, version FROM image_hashes",
                "* FROM image_sketches", "* FROM image_crops")]
    assert all(kept["thread"]) and kept["processes"] == kept["thread"]


def test_a_killed_fingerprint_worker_is_replaced_and_a_file_that_kills_two_is_kept_unfingerprinted(tmp_path,
                                                                                                   monkeypatch):
    """What the OOM killer does to a worker reading a huge picture: the run starts a fresh pool and
    goes on; a file that kills a worker twice is kept, marked "not fingerprinted" with the reason,
    and not read again by the next run."""
    from mirror.download import fingerprints

    from ..support import poisoned_workers

    board = BoardEditor.generate(seed=3, images=8, with_pictures=True)
    with SiteServer(board) as server:
        config = configure(server, tmp_path, representations=["thumb"])
        sync(config)
        shown = [i for i, image in sorted(board.images.items()) if not image["hidden_from_users"]
                 and image["thumbnails_generated"] and image["format"] in ("png", "jpeg")]
        thumbs = {i: hashlib.sha256(httpx.get(httpx.get(f"{server.api_url}/images/{i}").json()["image"]
                                              ["representations"]["thumb"]).content).hexdigest() for i in shown}
        killer = shown[0]
        unlucky = next(i for i in shown if thumbs[i] != thumbs[killer])  # a board may show one picture twice
        shown = [i for i in shown if thumbs[i] != thumbs[killer] or i == killer]
        (tmp_path / "marks").mkdir()
        monkeypatch.setenv(poisoned_workers.ALWAYS, thumbs[killer])
        monkeypatch.setenv(poisoned_workers.ONCE, thumbs[unlucky])
        monkeypatch.setenv(poisoned_workers.MARKS, str(tmp_path / "marks"))
        monkeypatch.setattr(fingerprints, "worker_pool", poisoned_workers.poisoned_pool)
        monkeypatch.setattr(fingerprints, "POOL_FROM", 0)
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
        path = write_config(config, tmp_path / "m.toml")
        result = CliRunner().invoke(cli, ["-c", str(path), "download"])
        assert result.exit_code == 0, result.output
        assert "Traceback" not in result.output and "BrokenProcessPool" not in result.output
        said = [line for line in result.output.splitlines() if "not fingerprinted" in line]
        assert len(said) == 1 and f"image {killer} thumb: kept, but not fingerprinted" in said[0], result.output
        assert "killed" in said[0]
        db = open_database(config.database)
        fingerprinted = {row[0] for row in db.execute("SELECT DISTINCT image_id FROM image_hashes")}
        assert unlucky in fingerprinted and killer not in fingerprinted
        assert set(shown) - {killer} <= fingerprinted
        assert db.execute("SELECT status, reason FROM downloads WHERE image_id = ? AND representation = 'thumb'",
                          [killer]).fetchone()[0] == "done"
        assert "not fingerprinted" in db.execute("SELECT reason FROM downloads WHERE image_id = ? "
                                                 "AND representation = 'thumb'", [killer]).fetchone()[0]
        kills = (tmp_path / "marks" / thumbs[killer]).stat().st_size
        again = CliRunner().invoke(cli, ["-c", str(path), "download"])
        assert again.exit_code == 0 and "not fingerprinted" not in again.output, again.output
        assert (tmp_path / "marks" / thumbs[killer]).stat().st_size == kills >= 2  # not read again
