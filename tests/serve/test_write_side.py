"""Uploads and reverse search: against the local site (as the real server answers them), through
the client and the CLI, and offline against the archive."""

from __future__ import annotations

import asyncio
import io
import threading

import httpx
import pytest
from click.testing import CliRunner
from PIL import Image

from mirror.api import KeyRequired
from mirror.api.client import PhilomenaClient, Upload
from mirror.api.errors import UploadRejected
from mirror.api.polite import Politeness
from mirror.api.upload import upload_fields, upload_image
from mirror.cli import cli
from mirror.download.run import run_downloads
from mirror.imaging import intensities_of, intensities_of_picture
from mirror.localsite.board.editor import BoardEditor
from mirror.localsite.files.pictures import picture
from mirror.localsite.http.app import create_app
from mirror.localsite.http.server import LoopbackServer, SiteServer
from mirror.localsite.http.upload_rules import CORRUPT
from mirror.philomena import MAX_FILE_SIZE
from mirror.store import open_database
from mirror.store.intensities import save_intensities

from ..support.configs import site_config, sync, write_config

BLANK = "can't be blank"


@pytest.fixture(scope="module")
def board():
    board = BoardEditor.generate(seed=11, images=40, with_pictures=True)
    board.processing_delay = 0.3
    board.tag_blacklist = ("forbidden thing",)
    with SiteServer(board) as server:
        yield server


def key_of(site) -> str:
    return next(iter(site.editor.api_keys))


def png(seed: str, width: int = 120, height: int = 90) -> bytes:
    return picture(seed, "png", width, height, seed)


def post(site, *, key=True, file: bytes | None = None, name="a.png", **fields) -> httpx.Response:
    data = {f"image[{k}]": v for k, v in fields.items()}
    if key:
        data["key"] = key_of(site)
    files = {"image[image]": (name, file, "application/octet-stream")} if file is not None else None
    return httpx.post(site.api_url + "/images", data=data, files=files)


# ------------------------------------------------------------------ intensities


def test_intensities_are_bt709_luma_per_quadrant_overlapping_on_odd_sides_on_black():
    image = Image.new("RGBA", (3, 3), (0, 0, 0, 255))
    image.putpixel((1, 1), (255, 255, 255, 255))  # the middle pixel belongs to every quadrant
    image.putpixel((0, 0), (255, 0, 0, 255))
    image.putpixel((2, 2), (0, 255, 0, 128))  # half transparent: composited on black in linear light
    got = intensities_of_picture(image)
    assert got.nw == pytest.approx((255 + 0.2126 * 255) / 4)
    assert got.ne == pytest.approx(255 / 4)
    assert got.se == pytest.approx((255 + 0.7152 * 186) / 4)  # the site's program: 97.0068


# What the site's image-intensities program reads from 5x5 PNGs of one value, with and without a
# gAMA chunk (read with the program built from its source): libpng composites partly transparent
# pixels in linear light, and corrects opaque ones only for a gAMA far from 1/2.2.
LIBPNG_READS = [
    (None, "L", 100, 100), (None, "L", 200, 200), (None, "LA", (100, 128), 74), (None, "LA", (200, 64), 106),
    (None, "RGBA", (200, 100, 50, 255), 117.65),
    (100000, "L", 100, 167), (100000, "L", 200, 228), (100000, "LA", (100, 128), 122),
    (100000, "LA", (200, 64), 122), (100000, "RGBA", (200, 100, 50, 255), 176.7196),
    (55555, "L", 100, 119), (55555, "LA", (100, 128), 87), (55555, "RGBA", (200, 100, 50, 255), 134.3796),
    (45000, "L", 100, 100), (45000, "LA", (100, 128), 72), (45000, "LA", (200, 64), 106),
    (20000, "L", 200, 147), (20000, "LA", (100, 128), 21), (20000, "LA", (200, 64), 78),
]


@pytest.mark.parametrize(("gamma", "mode", "value", "read"), LIBPNG_READS)
def test_a_png_is_read_as_libpng_hands_it_to_the_sites_program(gamma, mode, value, read):
    import struct

    from PIL import PngImagePlugin

    info = PngImagePlugin.PngInfo()
    if gamma is not None:
        info.add(b"gAMA", struct.pack(">I", gamma))
    out = io.BytesIO()
    Image.new(mode, (5, 5), value).save(out, "PNG", pnginfo=info)
    values, _ = intensities_of(out.getvalue())
    assert values.as_tuple() == pytest.approx([read] * 4, abs=1e-3)


RED, GREEN, BLUE, WHITE = (255, 0, 0), (0, 255, 0), (0, 0, 255), (255, 255, 255)


class Overlap:
    """Counts how many threads (or tasks) are inside ``with overlap:`` at once; ``most`` is the peak."""

    def __init__(self) -> None:
        self.inside = self.most = 0
        self._lock = threading.Lock()

    def __enter__(self) -> None:
        with self._lock:
            self.inside += 1
            self.most = max(self.most, self.inside)

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self.inside -= 1


def at_once(count: int, work) -> None:
    """Run ``work`` in ``count`` threads started together, and wait for them all."""
    threads = [threading.Thread(target=work) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def test_files_are_decoded_one_at_a_time(monkeypatch):
    """A picture the site accepts can take over a gigabyte decoded: four download workers (or
    reverse searches sent to `mirror serve`) must not hold four at once."""
    import time

    from mirror.imaging import intensities as module

    overlap, real = Overlap(), module.still_frame

    def counted(*args):
        with overlap:
            time.sleep(0.05)
            return real(*args)

    monkeypatch.setattr(module, "still_frame", counted)
    at_once(4, lambda: intensities_of(png("t")))
    assert overlap.most == 1


def luma(colour: tuple[int, int, int]) -> float:
    return sum(w * c for w, c in zip((0.2126, 0.7152, 0.0722), colour))


def animation(fmt: str, colours: list[tuple[int, int, int]], delay_ms: int, *, bt709: bool = False,
              size: tuple[int, int] = (33, 25)) -> bytes:
    """Solid-colour frames, each shown ``delay_ms`` (a WebM plays them at 1000/``delay_ms`` fps;
    with ``bt709`` it is VP9 encoded and tagged BT.709)."""
    frames = [Image.new("RGB", size, colour) for colour in colours]
    out = io.BytesIO()
    if fmt == "gif":
        frames[0].save(out, "GIF", save_all=True, append_images=frames[1:], duration=delay_ms, loop=0)
        return out.getvalue()
    import av
    container = av.open(out, mode="w", format="webm")
    stream = container.add_stream("libvpx-vp9" if bt709 else "libvpx", rate=1000 // delay_ms)
    (stream.width, stream.height), stream.pix_fmt = size, "yuv420p"
    if bt709:
        stream.codec_context.colorspace = av.video.reformatter.Colorspace.ITU709
    for frame in frames:
        yuv = av.VideoFrame.from_image(frame).reformat(format="yuv420p", dst_colorspace="ITU709" if bt709 else None)
        container.mux(stream.encode(yuv))
    container.mux(stream.encode())
    container.close()
    return out.getvalue()


def processed(site, image_id: int) -> dict:
    import time
    for _ in range(300):  # the board's processing delay, and a busy machine
        image = httpx.get(f"{site.api_url}/images/{image_id}").json()["image"]
        if image["intensities"] is not None:
            return image
        time.sleep(0.05)
    raise AssertionError(f"image {image_id} was never processed")


@pytest.mark.parametrize(("fmt", "colours", "delay_ms", "duration", "shown"), [
    # Half of 0.6 s is the boundary between the two frames: mediathumb keeps the earlier one.
    ("gif", [RED, BLUE], 300, 0.6, RED),
    # ffmpeg plays a GIF delay under 20 ms as 100 ms: 0.4 s in all, green showing at 0.2 s.
    ("gif", [RED, GREEN, BLUE, WHITE], 0, 0.4, GREEN),
    # 4 fps: the frame from 0.25 s to 0.5 s is the one showing at half the second.
    ("webm", [RED, GREEN, BLUE, WHITE], 250, 1.0, GREEN),
    # A still GIF lasts its frame's delay, as mediastat reports it (not a still PNG's 1/25 s).
    ("gif", [RED], 300, 0.3, RED),
    ("gif", [BLUE], 0, 0.1, BLUE),
])
def test_an_animation_is_read_at_the_frame_mediathumb_keeps_at_half_its_duration(board, fmt, colours, delay_ms,
                                                                                  duration, shown):
    uploaded = post(board, tag_input="safe, pony, solo", file=animation(fmt, colours, delay_ms), name=f"a.{fmt}")
    image = processed(board, uploaded.json()["image"]["id"])
    assert image["duration"] == pytest.approx(duration)
    assert list(image["intensities"].values()) == pytest.approx([luma(shown)] * 4, abs=3)


@pytest.mark.parametrize("width", [20, 100, 900])
def test_a_video_frame_is_read_to_its_last_column(width):
    """swscale's fast path to RGBA leaves the last columns of each row unset for some widths (these
    three among them: zeros, or whatever the memory held, so the same video read twice differed);
    to RGB it converts them all."""
    grey = (128, 128, 128)
    values, _ = intensities_of(animation("webm", [grey, grey], 500, size=(width, 16)))
    assert values.as_tuple() == pytest.approx([luma(grey)] * 4, abs=0.5)


def read_as_bt601(colour: tuple[int, int, int]) -> tuple[float, float, float]:
    """What a colour encoded with BT.709's matrix becomes when decoded with BT.601's."""
    r, g, b = (c / 255 for c in colour)
    y = 0.2126 * r + 0.7152 * g + 0.0722 * b
    cb, cr = (b - y) / (2 * (1 - 0.0722)), (r - y) / (2 * (1 - 0.2126))
    r, b = y + 2 * (1 - 0.299) * cr, y + 2 * (1 - 0.114) * cb
    g = (y - 0.299 * r - 0.114 * b) / 0.587
    return tuple(min(255.0, max(0.0, c * 255)) for c in (r, g, b))  # type: ignore[return-value]


def test_a_video_tagged_bt709_is_read_as_mediathumb_converts_it_at_bt601(board):
    """mediathumb's swscale call takes every video as BT.601: green encoded as BT.709 comes out
    with red and blue in it, which raises its luma by about 5."""
    data = animation("webm", [GREEN, GREEN], 250, bt709=True)
    image = processed(board, post(board, tag_input="safe, pony, solo", file=data, name="a.webm").json()["image"]["id"])
    assert luma(read_as_bt601(GREEN)) - luma(GREEN) > 4
    assert list(image["intensities"].values()) == pytest.approx([luma(read_as_bt601(GREEN))] * 4, abs=1.5)


def test_a_16_bit_grey_png_is_read_at_8_bits_as_libpng_rounds_it(board):
    for value, transparent in ((0x8000, None), (0x3000, None), (0x3000, 0x3000)):
        out = io.BytesIO()
        Image.new("I;16", (21, 11), value).save(out, "PNG", **({} if transparent is None else {"transparency": transparent}))
        image = processed(board, post(board, tag_input="safe, pony, solo", file=out.getvalue()).json()["image"]["id"])
        expected = 0 if value == transparent else (value * 255 + 32895) >> 16
        assert list(image["intensities"].values()) == pytest.approx([expected] * 4)


# ------------------------------------------------------------------ validation, message by message

def _tags(rejected: httpx.Response) -> list[str]:
    assert rejected.status_code == 400
    return rejected.json()["errors"].get("tag_input", [])


@pytest.mark.parametrize(("tags", "messages"), [
    ("solo", ["must contain at least one rating tag", "must contain at least 3 tags"]),
    ("safe, solo, forbidden thing", ["contains forbidden tag `forbidden thing'"]),
    ("safe, explicit, solo", ["may not contain any other rating if safe"]),
    ("explicit, suggestive, solo", ["may contain at most one sexual rating"]),
    ("grimdark, semi-grimdark, solo", ["may contain at most one grim rating"]),
    ("sfw, pony, solo", []),  # an alias of safe is a rating tag
])
def test_tag_rules_and_their_messages_newest_first(board, tags, messages):
    assert _tags(post(board, tag_input=tags)) == messages


def test_no_file_gives_every_analysis_field_blank_and_the_corrupt_message(board):
    errors = post(board, tag_input="safe, pony, solo").json()["errors"]
    assert errors["image"] == [CORRUPT, BLANK]
    for field in ("image_width", "image_height", "image_size", "image_orig_size", "image_format", "image_mime_type",
                  "image_aspect_ratio", "image_duration", "image_orig_sha512_hash", "image_sha512_hash",
                  "uploaded_image", "image_is_animated"):
        assert errors[field] == [BLANK]


def test_an_unsupported_type_is_named_on_image_mime_type(board):
    out = io.BytesIO()
    Image.new("RGB", (10, 10)).save(out, "WEBP")
    errors = post(board, tag_input="safe, pony, solo", file=out.getvalue(), name="a.webp").json()["errors"]
    assert errors["image_mime_type"] == ["(image/webp) is invalid"]
    assert errors["image"] == [CORRUPT] and errors["image_format"] == [BLANK]


def test_text_limits_sources_and_name(board):
    errors = post(board, tag_input="safe, pony, solo", file=png("limits"), name="n" * 256 + ".png",
                  description="x" * 50_001, source_url="ftp://nope",
                  **{f"sources][{i}][source": f"https://example.com/{i}" for i in range(16)}).json()["errors"]
    assert errors["description"] == ["should be at most 50000 byte(s)"]
    assert errors["source_url"] == ["has invalid format"]
    assert errors["sources"] == ["should have at most 15 item(s)"]
    assert errors["image_name"] == ["should be at most 255 byte(s)"]
    bad = post(board, tag_input="safe, pony, solo", file=png("limits"),
               **{"sources][0][source": "nope", "sources][1][source": "https://example.com/" + "x" * 250})
    assert bad.json()["errors"]["sources"] == [{"source": ["has invalid format"]},
                                               {"source": ["should be at most 255 character(s)"]}]


def test_dimensions_too_large_and_corrupt_contents(board, monkeypatch):
    from mirror.imaging import Analysis
    from mirror.localsite.http import uploads

    monkeypatch.setattr(uploads, "analyze", lambda data: Analysis("image/png", "png", 32000, 32000, 0.04))
    assert post(board, tag_input="safe, pony, solo", file=b"big").json()["errors"] == {
        "image": ["dimensions are too large to process"]}
    monkeypatch.setattr(uploads, "analyze", lambda data: Analysis("image/png", "png", 10, 10, 0.04))
    monkeypatch.setattr("mirror.localsite.http.upload_rules.MAX_SIZE", 2)
    assert post(board, tag_input="safe, pony, solo", file=b"big").json()["errors"] == {
        "image_size": ["must be less than or equal to 2"]}


def test_no_key_is_401_empty_and_a_duplicate_names_the_image(board):
    refused = post(board, key=False, tag_input="safe, pony, solo", file=png("dup"))
    assert refused.status_code == 401 and refused.content == b""
    first = post(board, tag_input="safe, pony, solo", file=png("dup"))
    assert first.status_code == 200
    image = first.json()["image"]
    assert (image["processed"], image["thumbnails_generated"], image["intensities"]) == (False, False, None)
    again = post(board, tag_input="safe, pony, solo", file=png("dup"))
    assert again.json() == {"errors": {"image": [f"has already been uploaded: it's image {image['id']}"]}}


def test_a_url_upload_is_fetched_from_loopback_only(board):
    with LoopbackServer(_FileApp(png("by-url"))) as files:
        fetched = httpx.post(
            board.api_url + "/images", data={"key": key_of(board), "url": files.url + "/pic.png",
                                             "image[tag_input]": "safe, pony, solo"})
    assert fetched.status_code == 200 and fetched.json()["image"]["name"] == "pic.png"
    remote = httpx.post(board.api_url + "/images", data={"key": key_of(board), "url": "http://example.com/a.png",
                                                         "image[tag_input]": "safe, pony, solo"})
    assert remote.json()["errors"]["image"] == [CORRUPT, BLANK]


class _FileApp:
    def __init__(self, body: bytes) -> None:
        self.body = body

    async def __call__(self, scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"image/png")]})
        await send({"type": "http.response.body", "body": self.body})


# ------------------------------------------------------------------ the client and the CLI


def client_for(url: str, key: str | None) -> PhilomenaClient:
    return PhilomenaClient(url, api_key=key, politeness=Politeness(200, backoff=0.01, max_retries=3))


async def _upload(client, data: bytes, tags="safe, pony, solo"):
    async with client:
        return await upload_image(client, Upload(data, "x.png"), upload_fields(tags, sources=("https://example.com/s",)))


def test_no_key_is_a_clear_error_before_any_request(board):
    board.clear_requests()
    with pytest.raises(KeyRequired, match="MIRROR_API_KEY"):
        asyncio.run(_upload(client_for(board.url, None), png("nokey")))
    assert board.requests == []


def test_rejections_are_one_line_per_field(board):
    with pytest.raises(UploadRejected) as caught:
        asyncio.run(_upload(client_for(board.url, key_of(board)), b"not a picture", tags="solo"))
    message = str(caught.value)
    assert "--tags: must contain at least one rating tag; must contain at least 3 tags" in message
    assert "file: (text/plain) is invalid" in message
    assert key_of(board) not in message


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


def test_upload_then_sync_then_gated_download(board, tmp_path):
    config = site_config(board, tmp_path, api_key=key_of(board),
                         download={"enabled": True, "requests_per_second": 500, "partial_dir": str(tmp_path / "p")})
    path = write_config(config, tmp_path / "mirror.toml")
    runner = CliRunner()
    data = png("gated", 200, 150)
    (tmp_path / "up.png").write_bytes(data)
    board.editor.processing_delay = 1.5
    done = runner.invoke(cli, ["-c", str(path), "upload", str(tmp_path / "up.png"), "--tags", "safe, pony, solo",
                               "--source", "https://example.com/gated"], env={"MIRROR_API_KEY": key_of(board)})
    assert done.exit_code == 0, done.output
    image_id = int(done.output.split("image ")[1].split(";")[0])
    _, db = sync(config)
    assert db["images"].get(image_id)["thumbnails_generated"] == 0  # the sync downloaded: not this one
    assert not list(db["downloads"].rows_where("image_id = ?", [image_id]))
    import time
    time.sleep(1.7)
    _, db = sync(config)
    asyncio.run(run_downloads(config, db))
    kept = {r["representation"]: r for r in db["downloads"].rows_where("image_id = ?", [image_id])}
    assert kept["full"]["status"] == "done" and (tmp_path / "files" / kept["full"]["path"]).read_bytes() == data
    row = db["image_intensities"].get(image_id)
    assert row["computed_from"] == "full"
    # Found offline in the archive, from a smaller re-encoded copy.
    copy = tmp_path / "copy.jpg"
    Image.open(io.BytesIO(data)).convert("RGB").resize((100, 75)).save(copy, "JPEG", quality=80)
    found = runner.invoke(cli, ["-c", str(path), "reverse", str(copy), "--local"])
    assert found.exit_code == 0, found.output
    assert found.output.splitlines()[1].startswith(f"  {image_id}: by ")


def test_reverse_search_on_the_site_and_its_rules(board, tmp_path):
    target = board.editor.images[sorted(board.editor.images)[3]]
    original = board.editor.image_file(target, "full", target["format"])
    config = site_config(board, tmp_path)
    path = write_config(config, tmp_path / "mirror.toml")
    (tmp_path / "q.bin").write_bytes(original)
    found = CliRunner().invoke(cli, ["-c", str(path), "reverse", str(tmp_path / "q.bin")])
    if target["intensities"] is not None:
        assert found.exit_code == 0 and f"  {target['id']}: " in found.output.splitlines()[1]
    files = {"image[image]": ("q", original, "application/octet-stream")}
    for params in ({"distance": "2"}, {"limit": "0"}, {"limit": "x"}):
        assert httpx.post(board.api_url + "/search/reverse", data=params, files=files).json() == {
            "images": [], "interactions": [], "total": 0}
    assert httpx.post(board.api_url + "/search/reverse", files={"image[image]": ("q", b"junk", "x")}).status_code == 200
    wide = httpx.post(board.api_url + "/search/reverse", data={"distance": "1", "limit": "1"}, files=files).json()
    assert len(wide["images"]) == min(wide["total"], 50) and wide["total"] >= 1


def test_intensities_read_from_an_svg_give_way_to_its_kept_rendering(tmp_path):
    """A run killed after keeping an SVG's original (and reading it) but before reading its PNG
    rendering must end with the rendering's intensities, as a run that was never killed does."""
    from mirror.download.intensities import backfill_intensities
    from mirror.download.storage import Storage
    from mirror.store import open_database
    from mirror.store.intensities import save_intensities

    db = open_database(tmp_path / "mirror.db")
    db["images"].insert({"id": 7, "format": "svg", "aspect_ratio": 1.0, "raw": "{}",
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


def test_local_reverse_says_what_to_try_when_nothing_is_found(board, tmp_path):
    config = site_config(board, tmp_path)
    path = write_config(config, tmp_path / "mirror.toml")
    query = tmp_path / "black.png"
    Image.new("RGB", (60, 40)).save(query)

    def reverse(*extra: str):
        return CliRunner().invoke(cli, ["-c", str(path), "reverse", str(query), "--local", *extra])

    db = open_database(config.database)
    empty = reverse()
    assert empty.exit_code != 0 and "no kept pictures to compare with" in empty.output
    save_intensities(db, 1, (1.0, 1.0, 1.0, 1.0), 1.5, "full")  # one corner-level off the black query
    near = reverse()
    assert near.exit_code == 0 and "no match within distance 0.25" in near.output and "--distance 0.5" in near.output
    assert "try --distance 0.6" in reverse("--distance", "0.3").output
    assert reverse("--distance", "0.5").output.startswith("1 match")
    save_intensities(db, 1, (200.0, 1.0, 1.0, 1.0), 1.5, "full")
    assert "even at distance 1 (the widest the site allows)" in reverse("--distance", "1").output


def test_a_file_larger_than_the_site_takes_is_refused_before_it_is_read_or_sent(board, tmp_path):
    from starlette.responses import StreamingResponse

    config = site_config(board, tmp_path, api_key=key_of(board))
    path = write_config(config, tmp_path / "mirror.toml")
    huge = tmp_path / "huge.png"
    with huge.open("wb") as f:  # sparse: no disk used
        f.truncate(MAX_FILE_SIZE + 1)
    board.clear_requests()
    for command in (["upload", str(huge), "--tags", "safe, pony, solo"], ["reverse", str(huge)],
                    ["reverse", str(huge), "--local"]):
        result = CliRunner().invoke(cli, ["-c", str(path), *command], env={"MIRROR_API_KEY": key_of(board)})
        assert result.exit_code == 2 and "larger than 125 MiB, the most the site takes" in result.output, command
    assert not board.requests

    async def streamed(scope, receive, send):  # 200 MiB, without saying so up front
        async def chunks():
            for _ in range(200):
                yield b"\0" * 2**20
        await StreamingResponse(chunks())(scope, receive, send)

    with LoopbackServer(streamed) as server:
        result = CliRunner().invoke(cli, ["-c", str(path), "reverse", server.url + "/big.png", "--local"])
    assert result.exit_code == 2 and "larger than 125 MiB" in result.output


def test_a_body_over_130_mib_is_refused_as_the_proxy_refuses_it(board):
    """413, on the declared length before any of it is read, or once a body without one goes over."""
    import socket
    from urllib.parse import urlsplit

    from mirror.serve.http import BODY_LIMIT

    def chunks():  # one file part, larger than the limit
        yield b'--x\r\nContent-Disposition: form-data; name="image[image]"; filename="q"\r\n\r\n'
        for _ in range(BODY_LIMIT // 2**20 + 2):
            yield b"\0" * 2**20

    headers = {"content-type": "multipart/form-data; boundary=x"}
    streamed = httpx.post(board.api_url + "/search/reverse", content=chunks(), headers=headers, timeout=60)
    assert streamed.status_code == 413
    address = urlsplit(board.url)
    with socket.create_connection((address.hostname, address.port), timeout=10) as raw:
        raw.sendall(f"POST /api/v1/json/images HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=x\r\n"
                    f"Content-Length: {BODY_LIMIT + 1}\r\n\r\n".encode())
        assert raw.recv(100).startswith(b"HTTP/1.1 413 ")  # answered with no byte of the body sent
    small = httpx.post(board.api_url + "/search/reverse", files={"image[image]": ("q", png("fits"), "image/png")})
    assert small.status_code == 200


def test_only_two_requests_at_a_time_hold_their_file_in_memory(board, monkeypatch):
    """A burst of searches (or uploads) waits its turn with the bodies still spooled to disk."""
    from mirror.serve import params, reverse

    overlap, real = Overlap(), reverse.file_of

    async def counted(*args):
        with overlap:
            await asyncio.sleep(0.3)
            return await real(*args)

    monkeypatch.setattr(reverse, "file_of", counted)
    answers = []
    files = {"image[image]": ("q", png("burst"), "image/png")}
    at_once(6, lambda: answers.append(httpx.post(board.api_url + "/search/reverse", files=files, timeout=30).status_code))
    assert answers == [200] * 6 and 1 <= overlap.most <= params.FILES_AT_ONCE
