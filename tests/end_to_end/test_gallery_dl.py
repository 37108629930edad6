"""gallery-dl, the most used downloader for Philomena sites, works on `mirror serve` unchanged.

It is configured as a custom Philomena instance whose root is the archive, downloads a tag
search's files and a gallery's files, and gets exactly the images the archive has for them,
byte for byte (each file's SHA-512 is the image's ``sha512_hash``). Nothing leaves the machine:
a request to any other host would go to a proxy where nothing listens, and its verbose log,
which names every connection it opens and every request it sends, is checked for them.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote_plus, urlsplit

from ..support.configs import Archive

GALLERY_DL = Path(sys.executable).with_name("gallery-dl")
# Where gallery-dl's requests to any host but 127.0.0.1 go: a port nothing listens on.
NOWHERE = "http://127.0.0.1:9"
# Each run is a few API pages and some dozens of small files; a hang is a failure, not a wait.
RUN_SECONDS = 60
# gallery-dl asks for 50 images a page and stops at a shorter page.
GALLERY_DL_PAGE = 50
# A visible image whose file the archive keeps (an unprocessed image has none to give).
KEPT = ("coalesce(i.hidden_from_users, 0) = 0 AND EXISTS (SELECT 1 FROM downloads d WHERE d.image_id = i.id "
        "AND d.representation = 'full' AND d.status = 'done')")


def gallery_dl_config(archive: Archive, target: Path, root: str = "") -> dict:
    """The archive as gallery-dl's one custom Philomena instance, nothing hidden, no pauses.

    Nothing else needs turning off: gallery-dl looks for updates only when run with ``-U``, and
    only the extractor whose pattern matches the URL runs, here the archive's instance."""
    return {
        "extractor": {
            "base-directory": str(target),  # its folders below are the extractor's own, named from the answers
            "filename": "{id}.{extension}",
            "sleep-request": 0,  # its Philomena default waits 0.5-1.5 s between API requests
            "retries": 0,
            "philomena": {
                # "svg" is left at its default: an SVG image's .svg original, not its PNG rendering.
                "booru-mirror": {"root": archive.served.url + root, "pattern": re.escape(_host(archive) + root),
                                 "filter_id": str(archive.everything)},
            },
        },
        "downloader": {"part": False, "retries": 0},
        "cache": {"file": None},  # no cache database in a home directory
    }


def _host(archive: Archive) -> str:
    return urlsplit(archive.served.url).netloc


def run_gallery_dl(archive: Archive, url: str, work: Path, root: str = "") -> tuple[dict[int, Path], str]:
    """Run gallery-dl on ``url``, network blocked: (image id -> downloaded file, its verbose log);
    ``root``: a path under the archive's origin (an ``/as-of/WHEN`` root)."""
    target, config = work / "files", work / "gallery-dl.json"
    config.write_text(json.dumps(gallery_dl_config(archive, target, root)))
    env = {name: value for name, value in os.environ.items() if not name.lower().endswith("_proxy")}
    env |= {"HTTP_PROXY": NOWHERE, "HTTPS_PROXY": NOWHERE, "ALL_PROXY": NOWHERE, "NO_PROXY": "127.0.0.1",
            "HOME": str(work)}
    result = subprocess.run([str(GALLERY_DL), "--config-ignore", "--config", str(config), "--verbose", url],
                            capture_output=True, text=True, env=env, timeout=RUN_SECONDS)
    log = result.stdout + result.stderr
    assert result.returncode == 0, log[-4000:]
    paths = [path for path in target.rglob("*") if path.is_file()]
    files = {int(path.stem): path for path in paths}
    assert len(files) == len(paths), paths  # one file an image
    return files, log


def requests_sent(log: str) -> list[tuple[str, str, int]]:
    """(origin, path, status) of every request gallery-dl sent, as urllib3 logs it."""
    return [(origin, urlsplit(target).path, int(status))
            for origin, target, status in re.findall(r'(https?://\S+) "GET (\S+) HTTP/[\d.]+" (\d+)', log)]


def assert_only_the_archive_answered(archive: Archive, log: str) -> set[str]:
    """Every connection and request went to the archive and was answered 200; the API paths asked."""
    assert set(re.findall(r"Starting new HTTPS? connection \(\d+\): (\S+)", log)) == {_host(archive)}, log[-4000:]
    sent = requests_sent(log)
    assert sent and {(origin, status) for origin, _, status in sent} == {(archive.served.url, 200)}, sent
    return {path for _, path, _ in sent if not path.startswith("/img/")}


def assert_files_are_the_images(archive: Archive, files: dict[int, Path], expected: set[int]) -> None:
    """The downloaded files are exactly ``expected``'s images, each with its stated SHA-512."""
    assert sorted(files) == sorted(expected)
    hashes = dict(archive.db.execute(
        f"SELECT id, sha512_hash FROM images WHERE id IN ({','.join('?' * len(expected))})", sorted(expected)))
    for image_id, path in files.items():
        assert hashlib.sha512(path.read_bytes()).hexdigest() == hashes[image_id], path.name


def svg_ids(archive: Archive, ids: set[int]) -> set[int]:
    return {row[0] for row in archive.db.execute("SELECT id FROM images WHERE format = 'svg'") if row[0] in ids}


def search_ids(archive: Archive, tag: str) -> set[int]:
    """What a search for ``tag`` returns through the Everything filter: every visible image carrying it."""
    return {row[0] for row in archive.db.execute(
        "SELECT i.id FROM images i JOIN image_tags it ON it.image_id = i.id JOIN tags t ON t.id = it.tag_id "
        "WHERE t.name = ? AND coalesce(i.hidden_from_users, 0) = 0", [tag])}


def tag_to_search(archive: Archive) -> str:
    """The tag on most images, all of them kept, with an SVG among them: a search of several pages."""
    return archive.db.execute(
        "SELECT t.name FROM tags t JOIN image_tags it ON it.tag_id = t.id JOIN images i ON i.id = it.image_id "
        "WHERE coalesce(i.hidden_from_users, 0) = 0 GROUP BY t.id "
        f"HAVING min({KEPT}) = 1 AND max(i.format = 'svg') = 1 ORDER BY count(*) DESC, t.name LIMIT 1").fetchone()[0]


def gallery_ids(archive: Archive, gallery_id: int) -> set[int]:
    return {row[0] for row in archive.db.execute("SELECT image_id FROM gallery_images WHERE gallery_id = ?",
                                                 [gallery_id])}


def gallery_to_fetch(archive: Archive) -> int:
    """The largest gallery whose images are all kept, with an SVG among them."""
    return archive.db.execute(
        "SELECT gi.gallery_id FROM gallery_images gi JOIN images i ON i.id = gi.image_id GROUP BY gi.gallery_id "
        f"HAVING min({KEPT}) = 1 AND max(i.format = 'svg') = 1 ORDER BY count(*) DESC, gi.gallery_id LIMIT 1"
    ).fetchone()[0]


def test_gallery_dl_downloads_a_tag_search_from_the_archive(archive, tmp_path):
    tag = tag_to_search(archive)
    expected = search_ids(archive, tag)
    assert len(expected) > GALLERY_DL_PAGE and svg_ids(archive, expected)  # paged, and an SVG original
    files, log = run_gallery_dl(archive, f"{archive.served.url}/search?q={quote_plus(tag)}", tmp_path)
    assert_files_are_the_images(archive, files, expected)
    assert {files[i].suffix for i in svg_ids(archive, expected)} == {".svg"}
    assert {path.parent.name for path in files.values()} == {tag}
    assert assert_only_the_archive_answered(archive, log) == {"/api/v1/json/search/images"}


def test_gallery_dl_downloads_a_gallery_from_the_archive(archive, tmp_path):
    gallery_id = gallery_to_fetch(archive)
    expected = gallery_ids(archive, gallery_id)
    assert len(expected) > 1 and svg_ids(archive, expected)
    files, log = run_gallery_dl(archive, f"{archive.served.url}/galleries/{gallery_id}", tmp_path)
    assert_files_are_the_images(archive, files, expected)
    title = archive.db["galleries"].get(gallery_id)["title"]
    assert {path.parent.name for path in files.values()} == {f"{gallery_id} {title}"}  # its metadata, found
    assert assert_only_the_archive_answered(archive, log) == {"/api/v1/json/search/galleries",
                                                              "/api/v1/json/search/images"}


def test_gallery_dl_downloads_a_search_as_of_a_moment_from_an_as_of_root(archive, tmp_path):
    """Pointed at ``/as-of/WHEN`` as its root, gallery-dl gets the search as the board answered it
    then: here, only the images uploaded by then."""
    tag = tag_to_search(archive)
    uploaded = dict(archive.db.execute(
        "SELECT id, substr(created_at, 1, 19) || 'Z' FROM images WHERE id IN (SELECT value FROM json_each(?))",
        [json.dumps(sorted(search_ids(archive, tag)))]))
    when = sorted(uploaded.values())[len(uploaded) // 2]
    moment = re.sub(r"\D", "", when)  # the 14 digits web archives use
    expected = {image_id for image_id, at in uploaded.items() if at <= when}
    assert 0 < len(expected) < len(uploaded)
    root = f"/as-of/{moment}"
    files, log = run_gallery_dl(archive, f"{archive.served.url}{root}/search?q={quote_plus(tag)}", tmp_path, root)
    assert_files_are_the_images(archive, files, expected)
    assert assert_only_the_archive_answered(archive, log) == {f"{root}/api/v1/json/search/images"}
