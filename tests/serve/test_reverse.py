"""Reverse search: on the site and its rules, through the client and the CLI, offline against the
archive, and the limits on what a request may send."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from click.testing import CliRunner
from PIL import Image

from mirror.cli import cli
from mirror.imaging import intensities_of_picture
from mirror.localsite.files.pictures import picture
from mirror.localsite.http.server import LoopbackServer
from mirror.philomena import MAX_FILE_SIZE
from mirror.store import open_database
from mirror.store.intensities import save_intensities

from ..support.configs import site_config, sync, write_config
from ..support.uploads import Overlap, at_once, key_of, png


def test_reverse_search_on_the_site_and_its_rules(upload_site, tmp_path):
    target = upload_site.editor.images[sorted(upload_site.editor.images)[3]]
    original = upload_site.editor.image_file(target, "full", target["format"])
    config = site_config(upload_site, tmp_path)
    path = write_config(config, tmp_path / "mirror.toml")
    (tmp_path / "q.bin").write_bytes(original)
    found = CliRunner().invoke(cli, ["-c", str(path), "reverse", str(tmp_path / "q.bin")])
    if target["intensities"] is not None:
        assert found.exit_code == 0 and f"  {target['id']}: " in found.output.splitlines()[1]
    files = {"image[image]": ("q", original, "application/octet-stream")}
    for params in ({"distance": "2"}, {"limit": "0"}, {"limit": "x"}):
        assert httpx.post(upload_site.api_url + "/search/reverse", data=params, files=files).json() == {
            "images": [], "interactions": [], "total": 0}
    assert httpx.post(upload_site.api_url + "/search/reverse", files={"image[image]": ("q", b"junk", "x")}).status_code == 200
    wide = httpx.post(upload_site.api_url + "/search/reverse", data={"distance": "1", "limit": "1"}, files=files).json()
    assert len(wide["images"]) == min(wide["total"], 50) and wide["total"] >= 1


def test_an_archive_with_no_files_finds_the_original_by_the_sites_own_intensities(upload_site, tmp_path):
    """Most archivists keep thumbnails or nothing, yet every record carries the site's intensities:
    `--local` searches those, and `mirror serve` answers exactly as the site does."""
    from mirror.serve.app import create_serve_app
    from mirror.serve.board import Board

    config = site_config(upload_site, tmp_path)  # images only: no downloads at all
    _, db = sync(config)
    assert db["downloads"].count == 0 and db["image_intensities"].count > 0
    assert {row["computed_from"] for row in db["image_intensities"].rows} == {"record"}
    path = write_config(config, tmp_path / "mirror.toml")
    editor = upload_site.editor
    for image_id in sorted(editor.images)[:12]:
        target = editor.images[image_id]
        if target["intensities"] is None or target["hidden_from_users"]:
            continue
        original = editor.image_file(target, "full", target["format"])
        (tmp_path / "q.bin").write_bytes(original)
        found = CliRunner().invoke(cli, ["-c", str(path), "reverse", str(tmp_path / "q.bin"), "--local"])
        assert found.exit_code == 0 and found.output.splitlines()[1].startswith(f"  {image_id}: "), found.output
        files = {"image[image]": ("q", original, "application/octet-stream")}
        with LoopbackServer(create_serve_app(Board(config.database), None)) as served:
            for distance in ("0.25", "1"):
                ours = httpx.post(served.api_url + "/search/reverse", data={"distance": distance}, files=files).json()
                theirs = httpx.post(upload_site.api_url + "/search/reverse", data={"distance": distance},
                                    files=files).json()
                assert ours["total"] == theirs["total"] and ours["total"] >= 1
                assert [i["id"] for i in ours["images"]] == [i["id"] for i in theirs["images"]]


def test_intensities_read_from_an_svg_give_way_to_its_kept_rendering(tmp_path):
    """A run killed after keeping an SVG's original (and reading it) but before reading its PNG
    rendering must end with the rendering's intensities, as a run that was never killed does."""
    from mirror.download.intensities import backfill_intensities
    from mirror.download.storage import Storage
    from mirror.store import open_database
    from mirror.store.intensities import save_intensities

    db = open_database(tmp_path / "mirror.db")
    db["images"].insert({"id": 7, "format": "svg", "aspect_ratio": 1.0, "raw_full": "{}",
                         "mirrored_at": "2026-01-01T00:00:00Z"})
    files = tmp_path / "files"
    for representation, ext, fmt in (("svg", "svg", "svg"), ("full", "png", "png")):
        path = f"{representation}/0/7.{ext}"
        (files / path).parent.mkdir(parents=True, exist_ok=True)
        (files / path).write_bytes(picture("k", fmt, 64, 64, "#7"))
        db["downloads"].insert({"image_id": 7, "representation": representation, "status": "done", "path": path,
                                "attempts": 0, "updated_at": "2026-01-01T00:00:00Z"})
    save_intensities(db, 7, (1.0, 2.0, 3.0, 4.0), 1.0, "svg")  # what the killed run read first
    asyncio.run(backfill_intensities(db, Storage(str(files))))
    row = db["image_intensities"].get(7)
    expected = intensities_of_picture(Image.open(files / "full/0/7.png"))
    assert row["computed_from"] == "full"
    assert (row["nw"], row["ne"], row["sw"], row["se"]) == pytest.approx(expected.as_tuple())


def test_local_reverse_says_what_to_try_when_nothing_is_found(upload_site, tmp_path):
    config = site_config(upload_site, tmp_path)
    path = write_config(config, tmp_path / "mirror.toml")
    query = tmp_path / "black.png"
    Image.new("RGB", (60, 40)).save(query)

    def reverse(*extra: str):
        return CliRunner().invoke(cli, ["-c", str(path), "reverse", str(query), "--local", *extra])

    db = open_database(config.database)
    empty = reverse()
    assert empty.exit_code != 0 and "no intensities to compare with" in empty.output
    save_intensities(db, 1, (1.0, 1.0, 1.0, 1.0), 1.5, "full")  # one corner-level off the black query
    near = reverse()
    assert near.exit_code == 0 and "no match within distance 0.25" in near.output and "--distance 0.5" in near.output
    assert "try --distance 0.6" in reverse("--distance", "0.3").output
    assert reverse("--distance", "0.5").output.startswith("1 match")
    save_intensities(db, 1, (200.0, 1.0, 1.0, 1.0), 1.5, "full")
    assert "even at distance 1 (the widest the site allows)" in reverse("--distance", "1").output


def test_a_file_larger_than_the_site_takes_is_refused_before_it_is_read_or_sent(upload_site, tmp_path):
    from starlette.responses import StreamingResponse

    config = site_config(upload_site, tmp_path, api_key=key_of(upload_site))
    path = write_config(config, tmp_path / "mirror.toml")
    huge = tmp_path / "huge.png"
    with huge.open("wb") as f:  # sparse: no disk used
        f.truncate(MAX_FILE_SIZE + 1)
    upload_site.clear_requests()
    for command in (["upload", str(huge), "--tags", "safe, pony, solo"], ["reverse", str(huge)],
                    ["reverse", str(huge), "--local"]):
        result = CliRunner().invoke(cli, ["-c", str(path), *command], env={"MIRROR_API_KEY": key_of(upload_site)})
        assert result.exit_code == 2 and "larger than 125 MiB, the most the site takes" in result.output, command
    assert not upload_site.requests

    async def streamed(scope, receive, send):  # 200 MiB, without saying so up front
        async def chunks():
            for _ in range(200):
                yield b"\0" * 2**20
        await StreamingResponse(chunks())(scope, receive, send)

    with LoopbackServer(streamed) as server:
        result = CliRunner().invoke(cli, ["-c", str(path), "reverse", server.url + "/big.png", "--local"])
    assert result.exit_code == 2 and "larger than 125 MiB" in result.output


def test_a_body_over_130_mib_is_refused_as_the_proxy_refuses_it(upload_site):
    """413, on the declared length before any of it is read, or once a body without one goes over."""
    import socket
    from urllib.parse import urlsplit

    from mirror.serve.http import BODY_LIMIT

    def chunks():  # one file part, larger than the limit
        yield b'--x\r\nContent-Disposition: form-data; name="image[image]"; filename="q"\r\n\r\n'
        for _ in range(BODY_LIMIT // 2**20 + 2):
            yield b"\0" * 2**20

    headers = {"content-type": "multipart/form-data; boundary=x"}
    streamed = httpx.post(upload_site.api_url + "/search/reverse", content=chunks(), headers=headers, timeout=60)
    assert streamed.status_code == 413
    address = urlsplit(upload_site.url)
    with socket.create_connection((address.hostname, address.port), timeout=10) as raw:
        raw.sendall(f"POST /api/v1/json/images HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=x\r\n"
                    f"Content-Length: {BODY_LIMIT + 1}\r\n\r\n".encode())
        assert raw.recv(100).startswith(b"HTTP/1.1 413 ")  # answered with no byte of the body sent
    small = httpx.post(upload_site.api_url + "/search/reverse", files={"image[image]": ("q", png("fits"), "image/png")})
    assert small.status_code == 200


def test_only_a_few_requests_at_a_time_hold_their_file_in_memory(upload_site, monkeypatch):
    """A burst of searches (or uploads) waits its turn with the bodies still spooled to disk: two
    large files at a time, a few small ones (in a lane of their own, see test_serve_lanes)."""
    from mirror.serve import params, reverse

    overlap, real = Overlap(), reverse.file_of

    async def counted(*args):
        with overlap:
            await asyncio.sleep(0.3)
            return await real(*args)

    monkeypatch.setattr(reverse, "file_of", counted)
    answers = []
    files = {"image[image]": ("q", png("burst"), "image/png")}
    at_once(6, lambda: answers.append(httpx.post(upload_site.api_url + "/search/reverse", files=files, timeout=30).status_code))
    assert answers == [200] * 6 and 1 <= overlap.most <= params.SMALL_AT_ONCE < 6
