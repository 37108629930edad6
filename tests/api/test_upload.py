"""`mirror upload` and the client's upload: a key needed before anything is sent, one line per
rejected field, an answer lost never posted twice, and the upload synced and downloaded once processed."""

from __future__ import annotations

import asyncio
import io

import pytest
from click.testing import CliRunner
from PIL import Image

from mirror.api import KeyRequired
from mirror.api.client import PhilomenaClient, Upload
from mirror.api.errors import UploadRejected
from mirror.api.polite import Politeness
from mirror.api.upload import upload_fields, upload_image
from mirror.cli import cli
from mirror.commands import runs
from mirror.localsite.board.editor import BoardEditor
from mirror.localsite.http.app import create_app
from mirror.localsite.http.server import LoopbackServer

from ..support.configs import site_config, sync, write_config
from ..support.uploads import key_of, png


def client_for(url: str, key: str | None) -> PhilomenaClient:
    return PhilomenaClient(url, api_key=key, politeness=Politeness(200, backoff=0.01, max_retries=3))


async def _upload(client, data: bytes, tags="safe, pony, solo"):
    async with client:
        return await upload_image(client, Upload(data, "x.png"), upload_fields(tags, sources=("https://example.com/s",)))


def test_no_key_is_a_clear_error_before_any_request(upload_site):
    upload_site.clear_requests()
    with pytest.raises(KeyRequired, match="MIRROR_API_KEY"):
        asyncio.run(_upload(client_for(upload_site.url, None), png("nokey")))
    assert upload_site.requests == []


def test_rejections_are_one_line_per_field(upload_site):
    with pytest.raises(UploadRejected) as caught:
        asyncio.run(_upload(client_for(upload_site.url, key_of(upload_site)), b"not a picture", tags="solo"))
    message = str(caught.value)
    assert "--tags: must contain at least one rating tag; must contain at least 3 tags" in message
    assert "file: (text/plain) is invalid" in message
    assert key_of(upload_site) not in message


class LoseAnswers:
    """Loses the answer to the first ``n`` uploads (a 500 after, or instead of, storing them)."""

    def __init__(self, app, n: int, *, land: bool) -> None:
        self.app, self.left, self.land, self.posts = app, n, land, 0

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope["method"] == "POST" and scope["path"].endswith("/images"):
            self.posts += 1
            if self.left > 0:
                self.left -= 1
                if self.land:
                    async def discard(message):
                        pass
                    await self.app(scope, receive, discard)
                await send({"type": "http.response.start", "status": 502, "headers": []})
                await send({"type": "http.response.body", "body": b""})
                return
        await self.app(scope, receive, send)


@pytest.mark.parametrize("landed", [True, False])
def test_a_lost_answer_is_checked_by_hash_and_never_posted_twice(landed):
    board = BoardEditor.generate(seed=12, images=20)
    app = LoseAnswers(create_app(board), 1, land=landed)
    before = len(board.images)
    with LoopbackServer(app) as server:
        result = asyncio.run(_upload(client_for(server.url, next(iter(board.api_keys))), png(f"lost-{landed}")))
    assert len(board.images) == before + 1
    assert result.already_there is landed
    assert app.posts == (1 if landed else 2)


def test_upload_then_sync_then_gated_download(upload_site, tmp_path, monkeypatch):
    config = site_config(upload_site, tmp_path, api_key=key_of(upload_site),
                         download={"enabled": True, "requests_per_second": 500, "partial_dir": str(tmp_path / "p")})
    path = write_config(config, tmp_path / "mirror.toml")
    runner = CliRunner()
    data = png("gated", 200, 150)
    (tmp_path / "up.png").write_bytes(data)
    # Processed when the test says, not 1.5 s later: a loaded box took longer than that to sync.
    monkeypatch.setattr(upload_site.editor, "processing_delay", 3600)
    done = runner.invoke(cli, ["-c", str(path), "upload", str(tmp_path / "up.png"), "--tags", "safe, pony, solo",
                               "--source", "https://example.com/gated"], env={"MIRROR_API_KEY": key_of(upload_site)})
    assert done.exit_code == 0, done.output
    image_id = int(done.output.split("image ")[1].split(";")[0])
    _, db = sync(config)
    assert db["images"].get(image_id)["thumbnails_generated"] == 0  # the sync downloaded: not this one
    assert not list(db["downloads"].rows_where("image_id = ?", [image_id]))
    upload_site.editor.edit_image(image_id, thumbnails_generated=True)  # the site's processing ends
    _, db = sync(config)
    asyncio.run(runs.download(config, db))
    kept = {r["representation"]: r for r in db["downloads"].rows_where("image_id = ?", [image_id])}
    assert kept["full"]["status"] == "done" and (tmp_path / "files" / kept["full"]["path"]).read_bytes() == data
    row = db["image_intensities"].get(image_id)
    assert row["computed_from"] == "record"  # the site's own values, from its processed record
    # Found offline in the archive, from a copy re-encoded without loss (a lossy one can move the
    # corners of a picture this small past the default distance by the site's own rule, as on the
    # site: whether it does depends on where the drawing's edges fall).
    copy = tmp_path / "copy.png"
    Image.open(io.BytesIO(data)).convert("RGB").save(copy, "PNG", compress_level=9)
    found = runner.invoke(cli, ["-c", str(path), "reverse", str(copy), "--local"])
    assert found.exit_code == 0, found.output
    assert found.output.splitlines()[1].startswith(f"  {image_id}: by ")
