"""An edit of a text (a description, a source) shown as the words removed and added, in place.

Drawn with :mod:`difflib` on the server; every piece of the record's text is escaped, so an edit
that adds markup shows the markup as text.
"""

from __future__ import annotations

import difflib
import re

from markupsafe import Markup, escape

__all__ = ["text_diff"]

# Words and the spaces between them, kept, so the text reads as it was written.
_TOKENS = re.compile(r"\s+|[^\s]+")


def text_diff(old: str | None, new: str | None) -> Markup:
    """``old`` turned into ``new``: what was removed in ``<del>``, what was added in ``<ins>``."""
    before, after = _TOKENS.findall(old or ""), _TOKENS.findall(new or "")
    parts = []
    for op, a1, a2, b1, b2 in difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes():
        if op == "equal":
            parts.append(escape("".join(before[a1:a2])))
            continue
        if a2 > a1:
            parts.append(Markup('<del class="booru-removed">{}</del>').format("".join(before[a1:a2])))
        if b2 > b1:
            parts.append(Markup('<ins class="booru-added">{}</ins>').format("".join(after[b1:b2])))
    return Markup("").join(parts)
