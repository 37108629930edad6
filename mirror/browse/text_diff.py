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
    """``old`` turned into ``new``: what was removed in ``<del>``, what was added in ``<ins>``.

    Words replaced side by side are one change (the spaces between them kept on both sides), and a
    removal and the addition that replaces it are spaced apart: "Rainbow request" edited to "Edited
    request by" reads ``Rainbow Edited request by``, not ``RainbowEdited requestby``."""
    before, after = _TOKENS.findall(old or ""), _TOKENS.findall(new or "")
    parts: list[Markup] = []
    for removed, added, kept in _changes(before, after):
        if removed:
            parts.append(Markup('<del class="booru-removed">{}</del>').format(removed))
        if removed and added:
            parts.append(Markup(" "))
        if added:
            parts.append(Markup('<ins class="booru-added">{}</ins>').format(added))
        parts.append(escape(kept))
    return Markup("").join(parts)


def _changes(before: list[str], after: list[str]) -> list[tuple[str, str, str]]:
    """(removed, added, then kept) runs; a change, the spaces after it and the change after them are one."""
    runs: list[list[str]] = [["", "", ""]]
    for op, a1, a2, b1, b2 in difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes():
        if op == "equal":
            runs[-1][2] += "".join(before[a1:a2])
            continue
        last = runs[-1]
        if last[2].isspace() and (last[0] or last[1]):  # only spaces between two changes: join them
            last[0] += last[2] if last[0] else ""
            last[1] += last[2] if last[1] else ""
            last[2] = ""
        elif last[2]:
            runs.append(["", "", ""])
        runs[-1][0] += "".join(before[a1:a2])
        runs[-1][1] += "".join(after[b1:b2])
    return [(removed, added, kept) for removed, added, kept in runs]
