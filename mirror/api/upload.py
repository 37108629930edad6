"""``mirror upload``: send an image to the site once, and never post it twice.

An upload is not idempotent, so it is not retried blindly: when the answer is lost (a dropped
connection, a timeout, a 5xx), the site may or may not have stored it. Before trying again the
site is asked, by the file's hash (``orig_sha512_hash:H || sha512_hash:H``, hidden images
included), whether it landed; only if not is it sent again. A 429 or an anti-bot challenge was
refused before the upload was looked at, so that one is retried after the wait. A URL upload's
bytes are fetched by the site, so its hash is unknown here: a lost answer to one is reported,
not retried. (On a real site an upload by an unverified account is unapproved and invisible to
search until a moderator approves it; the check then finds nothing, so the message says to look
before uploading again.)
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from .client import API_PREFIX, PhilomenaClient, Record, Upload, _error_for, _json_object, _parse_json
from .errors import ApiError, KeyRequired, SiteUnavailable, UnexpectedResponse, UploadRejected, UploadUncertain
from .polite import RetryableFailure

__all__ = ["UploadResult", "upload_image", "describe_errors", "FIELD_NAMES"]

SHOWN = f"POST {API_PREFIX}/images"
NOT_LOOKED_AT = frozenset({429, 501})  # refused by the proxy or the anti-bot layer before the upload
# The site's error fields, as the user gave them on the command line.
FIELD_NAMES = {"tag_input": "--tags", "description": "--description", "sources": "--source",
               "source_url": "--source", "anonymous": "--anonymous"}


@dataclass
class UploadResult:
    image: Record
    already_there: bool = False  # a lost answer hid an upload that had landed: found by its hash


def upload_fields(tags: str, description: str = "", sources: tuple[str, ...] = (),
                  anonymous: bool = False) -> dict[str, str]:
    """The form fields of an upload, named as the site's form names them."""
    fields = {"image[tag_input]": tags, "image[description]": description,
              "image[anonymous]": "true" if anonymous else "false"}
    fields.update({f"image[sources][{i}][source]": url for i, url in enumerate(sources)})
    return fields


async def upload_image(client: PhilomenaClient, upload: Upload, fields: dict[str, str]) -> UploadResult:
    """Upload once; after a lost answer, check by hash whether it landed before sending again."""
    if not client.has_key:
        raise KeyRequired("uploading needs an API key: set MIRROR_API_KEY (or site.api_key); nothing was sent")
    sha512 = hashlib.sha512(upload.data).hexdigest() if upload.data is not None else None
    attempts = client.politeness.max_retries + 1
    for attempt in range(1, attempts + 1):
        try:
            response = await client.post_image(upload, fields)
            body = _parse_json(response, SHOWN) if response.status_code in (200, 400) else None
        except RetryableFailure as failure:
            client.politeness.failed(failure, SHOWN, attempt)
            if failure.status in NOT_LOOKED_AT:
                continue
            if sha512 is None:
                raise UploadUncertain(f"{SHOWN}: the answer was lost ({failure.reason}) and the site fetched the "
                                      "file itself, so whether it landed cannot be checked here; look on the site "
                                      "before uploading again", url=SHOWN, status=failure.status) from None
            found = await find_by_hash(client, sha512)
            if found is not None:
                return UploadResult(found, already_there=True)
            continue
        client.politeness.succeeded()
        return UploadResult(_outcome(response, body))
    raise SiteUnavailable(f"{SHOWN}: gave up after {attempts} attempts; the site was checked by the file's hash "
                          "after each lost answer and does not have it", url=SHOWN)


async def find_by_hash(client: PhilomenaClient, sha512: str) -> Record | None:
    """The site's image with these bytes (as uploaded or after optimisation), if it has one."""
    page = await client.search_images(f"orig_sha512_hash:{sha512} || sha512_hash:{sha512}", per_page=1,
                                      include_hidden=True)
    return page.records[0] if page.records else None


def _outcome(response: Any, body: Any) -> Record:
    status = response.status_code
    if status == 200:
        image = _json_object(body, SHOWN).get("image")
        if not isinstance(image, dict):
            raise UnexpectedResponse(f"{SHOWN} answered without an 'image' record", url=SHOWN, status=200)
        return image
    if status == 400 and isinstance(body, dict) and isinstance(body.get("errors"), dict):
        errors = body["errors"]
        raise UploadRejected(f"the site refused the upload:\n{describe_errors(errors)}", errors, url=SHOWN)
    if status == 401:
        raise KeyRequired(f"{SHOWN}: the site did not accept the API key (401); check MIRROR_API_KEY", url=SHOWN,
                          status=401)
    error: ApiError = _error_for(response, SHOWN)
    raise error


def describe_errors(errors: dict[str, Any]) -> str:
    """One line per thing the user gave: the file, --tags, --source, --description."""
    lines: dict[str, list[str]] = {}
    for field, messages in errors.items():
        name = FIELD_NAMES.get(field, "file")
        for message in _flatten(messages):
            if message not in lines.setdefault(name, []) and not (name == "file" and message == "can't be blank"):
                lines[name].append(message)
    if "file" in lines and not lines["file"]:
        lines["file"] = ["no file came with the upload"]
    return "\n".join(f"  {name}: {'; '.join(messages)}" for name, messages in lines.items() if messages)


def _flatten(messages: Any) -> list[str]:
    """Messages of a field; nested ones (``sources``: one map per source) with the source's place."""
    if isinstance(messages, str):
        return [messages]
    out: list[str] = []
    for index, item in enumerate(messages or []):
        if isinstance(item, dict):
            out += [f"source {index + 1} {m}" for value in item.values() for m in _flatten(value)]
        else:
            out.append(str(item))
    return out
