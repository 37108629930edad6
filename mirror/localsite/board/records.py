"""Small helpers shared by the generator, the board editor and the renderer: dates, slugs, tag naming."""

from __future__ import annotations

import hashlib
import math
import re
from datetime import datetime, timezone

NAMESPACES = (
    "artist", "art pack", "ask", "blog", "colorist", "comic", "commissioner", "editor", "fanfic",
    "oc", "parent", "parents", "photographer", "series", "species", "spoiler", "video",
)
NAMESPACE_CATEGORIES = {
    "artist": "origin", "colorist": "origin", "editor": "origin", "photographer": "origin",
    "oc": "oc", "spoiler": "spoiler",
    "art pack": "content-fanmade", "comic": "content-fanmade", "fanfic": "content-fanmade",
    "series": "content-fanmade", "video": "content-fanmade",
}
RATINGS = ("safe", "suggestive", "questionable", "explicit", "semi-grimdark", "grimdark", "grotesque")


def iso(dt: datetime) -> str:
    """ISO 8601 the way Elixir's `DateTime.to_iso8601` prints a `:utc_datetime`."""
    return dt.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_iso(value: str) -> datetime:
    """Inverse of `iso`; also accepts fractional seconds and offsets seen in fixtures."""
    return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(timezone.utc)


def utc_now() -> datetime:
    return datetime.now(timezone.utc).replace(microsecond=0)


def split_namespace(name: str) -> tuple[str | None, str]:
    """`artist:foo` -> ("artist", "foo"); names without a known namespace have none."""
    prefix, sep, rest = name.partition(":")
    if sep and prefix in NAMESPACES and rest:
        return prefix, rest
    return None, name



def wilson_score(upvotes: int, downvotes: int) -> float | int:
    """Lower bound of the Wilson interval at z=2.57583, or the integer 0 with no upvotes."""
    if upvotes <= 0:
        return 0
    n = float(upvotes + downvotes)
    p_hat = upvotes / n
    z, z2 = 2.57583, 6.634900189
    return (p_hat + z2 / (2 * n) - z * math.sqrt((p_hat * (1 - p_hat) + z2 / (4 * n)) / n)) / (1 + z2 / n)


def background_pony(object_id: int, who: object) -> str:
    """`Background Pony #XXXX`: stable per object and author, like the real (salted) PBKDF2 name."""
    digest = hashlib.pbkdf2_hmac("sha256", f"{object_id}{who}".encode(), b"booru-mirror-site", 100, 2)
    return f"Background Pony #{digest.hex().upper()}"


def anonymous_avatar(name: str) -> str:
    """The generated `data:image/svg+xml;base64,...` avatar Philomena gives users without one."""
    import base64

    colour = hashlib.sha256(name.encode()).hexdigest()[:6]
    svg = (
        '<svg xmlns="http://www.w3.org/2000/svg" width="125" height="125" viewBox="0 0 125 125">'
        f'<rect width="125" height="125" fill="#{colour}"/></svg>'
    )
    return "data:image/svg+xml;base64," + base64.b64encode(svg.encode()).decode()


def slug_of_title(title: str, topic_id: int) -> str:
    """A topic's slug: its title in lowercase ASCII words joined by ``-`` (``topic-N`` if none)."""
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:60] or f"topic-{topic_id}"
