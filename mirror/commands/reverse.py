"""``mirror reverse``: which images look like this file, asked of the site or of the archive.

``--local`` computes the file's intensities here and searches ``image_intensities`` with the
site's rule (:mod:`mirror.search.reverse`), offline and read-only; otherwise the file goes to the
site's ``POST /search/reverse``. Either way each match is shown with its artists and source, as
the site's usage rules ask wherever an image is shown.
"""

from __future__ import annotations

import json
import shlex
import sqlite3
import time
from pathlib import Path
from typing import Any

import httpx

from ..api import PhilomenaClient, SiteUnavailable
from ..api.client import Upload, user_agent
from ..errors import EXIT_USAGE, MirrorError
from ..imaging import MediaError, intensities_of
from ..philomena import MAX_FILE_SIZE
from ..search.reverse import DEFAULT_DISTANCE, MAX_DISTANCE, PAGE_SIZE, ReverseQuery, find_matches

__all__ = ["read_source", "search_site", "search_archive", "describe_matches", "record_line", "SourceError"]

# How long fetching a URL for --local or --similar may take in all.
FETCH_DEADLINE = 60.0


class SourceError(MirrorError):
    """The file or URL to search with (or upload) cannot be read."""

    exit_code = EXIT_USAGE


def read_source(source: str, *, fetch: bool = False) -> Upload:
    """A local file's bytes, or a URL: passed on for the site to fetch, or fetched here (``fetch``).

    A file larger than the site takes is refused before it is read (or fetched in full)."""
    if source.startswith(("http://", "https://")):
        return _fetched(source) if fetch else Upload(url=source)
    path = Path(source)
    if not path.is_file():
        raise SourceError(f"{source}: no such file (give a file or an http(s) URL)")
    _check_size(source, path.stat().st_size)
    return Upload(path.read_bytes(), path.name)


def _fetched(url: str) -> Upload:
    """The file at ``url``, whole within :data:`FETCH_DEADLINE` (each read's own timeout does not
    stop a server that sends a byte now and then, forever)."""
    deadline = time.monotonic() + FETCH_DEADLINE
    try:
        with httpx.stream("GET", url, headers={"User-Agent": user_agent()}, timeout=30.0,
                          follow_redirects=True) as response:
            if response.status_code != 200:
                raise SourceError(f"cannot fetch {url}: the server answered {response.status_code}")
            declared = response.headers.get("content-length", "")
            _check_size(url, int(declared) if declared.isdigit() else 0)
            body = bytearray()
            for chunk in response.iter_bytes():
                body += chunk
                _check_size(url, len(body))
                if time.monotonic() > deadline:
                    raise SourceError(f"cannot fetch {url}: it took longer than {FETCH_DEADLINE:g} s "
                                      f"({len(body):,} bytes so far); download it yourself and give the file")
            return Upload(bytes(body), Path(response.url.path).name or "image")
    except httpx.HTTPError as e:
        raise SourceError(f"cannot fetch {url}: {type(e).__name__}") from None


def _check_size(source: str, size: int) -> None:
    if size > MAX_FILE_SIZE:
        raise SourceError(f"{source} is larger than {MAX_FILE_SIZE / 2**20:.0f} MiB, the most the site takes "
                          "for an image")


async def search_site(client: PhilomenaClient, file: Upload, distance: float | None, source: str
                      ) -> tuple[list[dict[str, Any]], int]:
    """The site's matches and its total. A site that cannot be asked now points at the archive,
    which answers the same question offline."""
    try:
        page = await client.reverse_search(file, distance=distance)
    except SiteUnavailable as e:
        raise type(e)(f"{e.reason or e}, so the site's reverse search cannot be asked now; search the archive "
                      f"offline instead: mirror reverse --local {shlex.quote(source)}", url=e.url, status=e.status,
                      reason=e.reason) from None
    return page.records, page.total or len(page.records)


def search_archive(conn: sqlite3.Connection, data: bytes, distance: float | None) -> tuple[list[dict[str, Any]], int]:
    """The archive's matches for ``data`` (records as kept, each with its ``_score``) and the total."""
    if conn.execute("SELECT NOT EXISTS (SELECT 1 FROM image_intensities)").fetchone()[0]:
        raise SourceError("the archive has no intensities to compare with: --local compares with the site's "
                          "own, which `mirror sync` keeps with each image record (and `mirror verify` reads "
                          "kept files for images without them); run `mirror sync` first")
    try:
        values, aspect = intensities_of(data)
    except MediaError as e:
        raise SourceError(f"cannot search with this file: {e}") from None
    query = ReverseQuery(values.as_tuple(), aspect, DEFAULT_DISTANCE if distance is None else distance)
    matches, total = find_matches(conn, query, PAGE_SIZE)
    records = []
    for match in matches:
        row = conn.execute("SELECT coalesce(stub, raw) FROM images WHERE id = ?", [match.image_id]).fetchone()
        record = json.loads(row[0]) if row and row[0] else {"id": match.image_id}
        records.append({**record, "_score": match.score})
    return records, total


def describe_matches(records: list[dict[str, Any]], total: int, distance: float | None = None) -> str:
    """One line per match: id, artists, source and page (or why it is hidden); with none, what to try."""
    if not records:
        used = DEFAULT_DISTANCE if distance is None else distance
        if used >= MAX_DISTANCE:
            return f"no match, even at distance {used:g} (the widest the site allows)"
        return (f"no match within distance {used:g}; a small or much re-encoded copy can differ by more: "
                f"try --distance {min(MAX_DISTANCE, max(0.5, used * 2)):g} (at most {MAX_DISTANCE:g})")
    lines = [f"{total} match{'es' if total != 1 else ''}" + (f" (first {len(records)} shown)" if total > len(records) else "")]
    for record in records:
        lines.append(record_line(record))
    return "\n".join(lines)


def record_line(record: dict[str, Any]) -> str:
    """An image found, on one line: its id, artists, source and page (or why it is hidden)."""
    if record.get("hidden_from_users"):
        why = record.get("deletion_reason") or (f"merged into {record['duplicate_of']}" if record.get("duplicate_of") else "hidden")
        return f"  {record['id']}: hidden on the site ({why})"
    artists = ", ".join(t[7:] for t in record.get("tags") or [] if t.startswith("artist:")) or "artist unknown"
    source = record.get("source_url") or "no source"
    return f"  {record['id']}: by {artists}; source {source}; {record.get('view_url') or ''}".rstrip("; ")
