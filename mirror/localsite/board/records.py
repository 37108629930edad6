"""Small helpers shared by the generator, the board editor and the renderer: names, avatars, scores, slugs."""

from __future__ import annotations

import hashlib
import re


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
