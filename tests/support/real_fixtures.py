"""The real recorded responses in tests/fixtures/real, found and unwrapped for tests."""

from __future__ import annotations

import json
from pathlib import Path

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"

# Wrapper key -> resource name, for whole response bodies.
WRAPPERS = {"images": "images", "image": "images", "tags": "tags", "comments": "comments", "posts": "posts",
            "topics": "topics", "forums": "forums", "galleries": "galleries", "filters": "filters",
            "user": "users"}


def fixture_files() -> list[Path]:
    return sorted(p for p in REAL.glob("*/*.json"))


def records_in(path: Path) -> tuple[str, list[dict]]:
    """(resource, records) of one fixture file, whether it is a wrapped body or a bare array."""
    body = json.loads(path.read_text())
    if isinstance(body, list):
        return path.stem, body
    for key, resource in WRAPPERS.items():
        if key in body:
            value = body[key]
            return resource, value if isinstance(value, list) else [value]
    raise ValueError(f"{path}: no known wrapper key in {sorted(body)}")


def image_records() -> list[tuple[Path, dict]]:
    out = []
    for path in fixture_files():
        resource, records = records_in(path)
        if resource == "images":
            out += [(path, r) for r in records]
    return out
