"""`mirror browse` and `mirror serve` run as a user runs them (the command, on a free loopback port),
and what a browser shows of the image cards on a page."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


@contextmanager
def browsing(config_path: Path, preexec_fn: Callable[[], None] | None = None,
             args: tuple[str, ...] = ()) -> Iterator[str]:
    """The address `mirror browse -c CONFIG --port 0 [ARGS]` answers at, while it runs (``preexec_fn`` runs in
    the child before it starts: to run it as another user, say)."""
    process = subprocess.Popen([sys.executable, "-m", "mirror.cli", "-c", str(config_path), "browse", "--port", "0",
                                *args],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, preexec_fn=preexec_fn,
                               cwd=None if preexec_fn is None else "/")
    try:
        line = process.stdout.readline()
        found = re.search(r"(http://127\.0\.0\.1:\d+/)", line)
        assert found, line
        yield found.group(1)
    finally:
        process.terminate()
        process.wait(timeout=10)


@contextmanager
def serving(config_path: Path, preexec_fn: Callable[[], None] | None = None,
            args: tuple[str, ...] = ()) -> Iterator[tuple[str, subprocess.Popen]]:
    """The API address `mirror serve -c CONFIG --port 0 [ARGS]` answers at, and its process (its output
    readable line by line), while it runs (``preexec_fn`` as for :func:`browsing`)."""
    process = subprocess.Popen([sys.executable, "-m", "mirror.cli", "-c", str(config_path), "serve", "--port", "0",
                                *args],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, preexec_fn=preexec_fn,
                               cwd=None if preexec_fn is None else "/")
    try:
        found = None
        while found is None:
            line = process.stdout.readline()
            assert line, "mirror serve ended without saying where it listens"
            found = re.search(r"http://\S+/api/v1/json", line)
        yield found.group(0), process
    finally:
        process.terminate()
        process.wait(timeout=10)


def shown_images(page) -> list[dict]:
    """Every image card on the page: its id, its thumbnail's natural width, its caption and the
    links in it, and in a grid the box it is drawn in (its size on the page and its title)."""
    page.wait_for_load_state("networkidle")
    return page.evaluate("""() => [...document.querySelectorAll('figure.booru-image')].map(f => {
        const img = f.querySelector('img.booru-thumb'), box = f.querySelector('a.booru-box');
        const drawn = box ? box.getBoundingClientRect() : null;
        return {id: Number(f.dataset.imageId), width: img ? img.naturalWidth : null,
                caption: f.querySelector('figcaption').innerText,
                links: [...f.querySelectorAll('figcaption a')].map(a => a.href),
                box: drawn ? [Math.round(drawn.width), Math.round(drawn.height)] : null,
                title: box ? box.title : null, href: box ? box.getAttribute('href') : null};
    })""")


COUNTS = re.compile(r"^\u2191(-?[\d,]+|\?)\s*\u2605([\d,]+|\?)\s*\u275d([\d,]+|\?)$")  # ? where the site sent none


def assert_boxed_in_the_browser(cards: list[dict], db) -> None:
    """A grid as the site's: every thumbnail in a box of one size (250 x 250), its counts under it and
    nothing else (the attribution is on the image's page, and in the box's title), linked there."""
    assert cards
    for card in cards:
        assert card["box"] == [250, 250], card
        assert COUNTS.match(card["caption"].strip()) and not card["links"], card
        assert card["href"].startswith(f"/-/image/{card['id']}"), card
        image = db["images"].get(card["id"])
        artists = [t[len("artist:"):] for t in json.loads(image["tags"] or "[]") if t.startswith("artist:")]
        assert card["title"].startswith(f"#{card['id']}") and all(a in card["title"] for a in artists), card


def assert_attributed_in_the_browser(cards: list[dict], db, base: str) -> None:
    for card in cards:
        image = db["images"].get(card["id"])
        artists = [t[len("artist:"):] for t in json.loads(image["tags"] or "[]") if t.startswith("artist:")]
        assert all(artist in card["caption"] for artist in artists) and (artists or "artist unknown" in card["caption"])
        assert (image["source_url"] in card["links"]) if image["source_url"] else "no source given" in card["caption"]
        assert f"{base}/images/{card['id']}" in card["links"]


async def browse_client(config: Any) -> Any:
    """Datasette's in-process client for the mirror ``config`` names, started as `mirror browse` starts it."""
    from mirror.browse.app import make_datasette

    datasette = make_datasette(config.database, base_url=config.site.base_url, files=config.store.files)
    await datasette.invoke_startup()
    return datasette.client
