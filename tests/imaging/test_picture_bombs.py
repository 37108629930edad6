"""Picture bombs: a 108-megapixel PNG (fully transparent, so libpng's compositing path is taken)
through `mirror reverse --similar`, and served by the file host as every thumbnail of an image
through `mirror download`. Each runs as the CLI in a subprocess whose own peak memory is read;
the run goes on and says what it refused in one line."""

from __future__ import annotations

import struct
import sys
import zlib
from pathlib import Path

import pytest

from mirror.imaging.similar import KINDS, VERSION
from mirror.localsite.board.editor import BoardEditor
from mirror.localsite.files.img import FileSource
from mirror.localsite.http.server import SiteServer
from mirror.store import open_database
from mirror.store.similar import save_hashes

from ..support.configs import site_config, sync, write_config
from ..support.memory import run_measured as measured

WIDTH, HEIGHT = 12000, 9000  # 108 megapixels: within the site's bound, 432 MB decoded as RGBA
MIRROR = str(Path(sys.executable).with_name("mirror"))
PEAK_MB = 900  # what a run may take at most (it took 3.2 GB for reverse, 14 GB for downloads)


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


@pytest.fixture(scope="module")
def bomb() -> bytes:
    """A valid RGBA PNG of transparent black, some 400 KB: its zero rows compressed a row at a time."""
    packer = zlib.compressobj(9)
    row = bytes(1 + 4 * WIDTH)
    body = b"".join(packer.compress(row) for _ in range(HEIGHT)) + packer.flush()
    header = struct.pack(">IIBBBBB", WIDTH, HEIGHT, 8, 6, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header) + _chunk(b"IDAT", body) + _chunk(b"IEND", b"")


def run_measured(*args: str) -> tuple[int, str, int]:
    """(exit code, output, peak resident MB) of the CLI run in a subprocess."""
    done, peak_mb = measured([MIRROR, *args])
    return done.returncode, done.stdout + done.stderr, peak_mb


def test_reverse_similar_fingerprints_a_108_megapixel_png_within_bounded_memory(tmp_path, bomb):
    board = BoardEditor.generate(seed=3, images=6)
    with SiteServer(board) as site:
        config = site_config(site, tmp_path)
        _, db = sync(config)
    some_image = db.execute("SELECT min(id) FROM images").fetchone()[0]
    save_hashes(db, some_image, {kind: 0 for kind in KINDS}, "thumb", VERSION)
    path = write_config(config, tmp_path / "mirror.toml")
    query = tmp_path / "bomb.png"
    query.write_bytes(bomb)
    code, output, peak_mb = run_measured("-c", str(path), "reverse", str(query), "--similar")
    assert code == 0, output
    assert f"{some_image}:" in output and "(distance " in output  # a picture all black on black
    assert peak_mb < PEAK_MB, f"peak {peak_mb} MB"


def test_a_file_host_serving_it_as_every_thumbnail_is_refused_unread_and_the_run_goes_on(tmp_path, bomb,
                                                                                          monkeypatch):
    board = BoardEditor.generate(seed=3, images=12, with_pictures=True)  # the others have pictures to hash
    pngs = [i for i, image in sorted(board.images.items()) if image["format"] == "png"
            and not image["hidden_from_users"] and image["thumbnails_generated"]]
    victim = pngs[0]
    real_data = FileSource.data

    def served(self, image, variant, ext):
        if image["id"] == victim and variant not in ("full", "orig", "rendered"):
            return bomb
        return real_data(self, image, variant, ext)

    monkeypatch.setattr(FileSource, "data", served)
    sizes = ["thumb_tiny", "thumb_small", "thumb", "small", "medium", "large", "tall", "full"]
    with SiteServer(board) as site:
        config = site_config(site, tmp_path, download={"representations": sizes, "requests_per_second": 500,
                                                       "concurrency": 4})
        _, db = sync(config)
        path = write_config(config, tmp_path / "mirror.toml")
        code, output, peak_mb = run_measured("-c", str(path), "download")
    assert code == 0, output
    assert peak_mb < PEAK_MB, f"peak {peak_mb} MB"
    db = open_database(config.database)
    bombs = db.execute("SELECT count(*) FROM downloads WHERE image_id = ? AND status = 'done' AND bytes = ?",
                       [victim, len(bomb)]).fetchone()[0]
    assert bombs >= 1  # kept as the host served it: the file is the site's to answer for
    refused = [line for line in output.splitlines() if f"image {victim} " in line and "not fingerprinted" in line]
    assert refused and f"{WIDTH}x{HEIGHT} pixels, larger than its" in refused[0]
    others = db.execute("SELECT count(DISTINCT image_id) FROM image_hashes WHERE image_id != ?", [victim])
    assert others.fetchone()[0] >= len(pngs) - 1  # every other image fingerprinted: the run went on
