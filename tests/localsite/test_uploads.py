"""The local site takes uploads as the real server does (reference section 7): every validation
message, in the site's order, and URL uploads fetched from this machine only."""

from __future__ import annotations

import io

import httpx
import pytest
from PIL import Image

from mirror.localsite.http.server import LoopbackServer
from mirror.localsite.http.upload_rules import CORRUPT

from ..support.uploads import BLANK, key_of, png, post


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
def test_tag_rules_and_their_messages_newest_first(upload_site, tags, messages):
    assert _tags(post(upload_site, tag_input=tags)) == messages


def test_no_file_gives_every_analysis_field_blank_and_the_corrupt_message(upload_site):
    errors = post(upload_site, tag_input="safe, pony, solo").json()["errors"]
    assert errors["image"] == [CORRUPT, BLANK]
    for field in ("image_width", "image_height", "image_size", "image_orig_size", "image_format", "image_mime_type",
                  "image_aspect_ratio", "image_duration", "image_orig_sha512_hash", "image_sha512_hash",
                  "uploaded_image", "image_is_animated"):
        assert errors[field] == [BLANK]


def test_an_unsupported_type_is_named_on_image_mime_type(upload_site):
    out = io.BytesIO()
    Image.new("RGB", (10, 10)).save(out, "WEBP")
    errors = post(upload_site, tag_input="safe, pony, solo", file=out.getvalue(), name="a.webp").json()["errors"]
    assert errors["image_mime_type"] == ["(image/webp) is invalid"]
    assert errors["image"] == [CORRUPT] and errors["image_format"] == [BLANK]


def test_text_limits_sources_and_name(upload_site):
    errors = post(upload_site, tag_input="safe, pony, solo", file=png("limits"), name="n" * 256 + ".png",
                  description="x" * 50_001, source_url="ftp://nope",
                  **{f"sources][{i}][source": f"https://example.com/{i}" for i in range(16)}).json()["errors"]
    assert errors["description"] == ["should be at most 50000 byte(s)"]
    assert errors["source_url"] == ["has invalid format"]
    assert errors["sources"] == ["should have at most 15 item(s)"]
    assert errors["image_name"] == ["should be at most 255 byte(s)"]
    bad = post(upload_site, tag_input="safe, pony, solo", file=png("limits"),
               **{"sources][0][source": "nope", "sources][1][source": "https://example.com/" + "x" * 250})
    assert bad.json()["errors"]["sources"] == [{"source": ["has invalid format"]},
                                               {"source": ["should be at most 255 character(s)"]}]


def test_dimensions_too_large_and_corrupt_contents(upload_site, monkeypatch):
    from mirror.imaging import Analysis
    from mirror.localsite.http import uploads

    monkeypatch.setattr(uploads, "analyze", lambda data: Analysis("image/png", "png", 32000, 32000, 0.04))
    assert post(upload_site, tag_input="safe, pony, solo", file=b"big").json()["errors"] == {
        "image": ["dimensions are too large to process"]}
    monkeypatch.setattr(uploads, "analyze", lambda data: Analysis("image/png", "png", 10, 10, 0.04))
    monkeypatch.setattr("mirror.localsite.http.upload_rules.MAX_SIZE", 2)
    assert post(upload_site, tag_input="safe, pony, solo", file=b"big").json()["errors"] == {
        "image_size": ["must be less than or equal to 2"]}


def test_no_key_is_401_empty_and_a_duplicate_names_the_image(upload_site):
    refused = post(upload_site, key=False, tag_input="safe, pony, solo", file=png("dup"))
    assert refused.status_code == 401 and refused.content == b""
    first = post(upload_site, tag_input="safe, pony, solo", file=png("dup"))
    assert first.status_code == 200
    image = first.json()["image"]
    assert (image["processed"], image["thumbnails_generated"], image["intensities"]) == (False, False, None)
    again = post(upload_site, tag_input="safe, pony, solo", file=png("dup"))
    assert again.json() == {"errors": {"image": [f"has already been uploaded: it's image {image['id']}"]}}


def test_a_url_upload_is_fetched_from_loopback_only(upload_site):
    with LoopbackServer(_FileApp(png("by-url"))) as files:
        fetched = httpx.post(
            upload_site.api_url + "/images", data={"key": key_of(upload_site), "url": files.url + "/pic.png",
                                             "image[tag_input]": "safe, pony, solo"})
    assert fetched.status_code == 200 and fetched.json()["image"]["name"] == "pic.png"
    remote = httpx.post(upload_site.api_url + "/images", data={"key": key_of(upload_site), "url": "http://example.com/a.png",
                                                         "image[tag_input]": "safe, pony, solo"})
    assert remote.json()["errors"]["image"] == [CORRUPT, BLANK]


class _FileApp:
    def __init__(self, body: bytes) -> None:
        self.body = body

    async def __call__(self, scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"image/png")]})
        await send({"type": "http.response.body", "body": self.body})
