"""The documentation's text, for the tests that hold it to the code.

README.md is the first screen; the rest lives in pages under docs/ (built by MkDocs, mkdocs.yml).
A test names the page its content is on, so a section that moves to another page fails the test
that reads it instead of passing on an empty string.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
HEADING = re.compile(r"^(#{1,6}) (.+?)\s*$")


def readme() -> str:
    return (ROOT / "README.md").read_text()


def page(name: str) -> str:
    """The text of docs/NAME (such as ``use.md``)."""
    return (DOCS / name).read_text()


def every_page() -> str:
    """The README and every page under docs/, one after another."""
    return "\n".join([readme(), *(path.read_text() for path in sorted(DOCS.glob("*.md")))])


def section(text: str, title: str) -> str:
    """The lines under the heading TITLE, up to the next heading (a `#` line inside a code block is
    no heading)."""
    lines, inside, fenced = [], False, False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        heading = None if fenced else HEADING.match(line)
        if heading and inside:
            break
        if heading and heading.group(2) == title:
            inside = True
        elif inside:
            lines.append(line)
    assert inside, f"no heading {title!r}"
    return "\n".join(lines)


def headings(text: str) -> list[str]:
    """The headings of a Markdown text (not `#` lines inside code blocks)."""
    found, fenced = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (heading := HEADING.match(line)):
            found.append(heading.group(2).rstrip("#").strip())
    return found


def links(text: str) -> list[str]:
    """The targets of the Markdown links and images in TEXT that stay inside the repository."""
    targets = re.findall(r"\]\(([^)\s]+)\)", text)
    return [target for target in targets if not re.match(r"[a-z]+:", target)]


def link_resolves(source: Path, target: str) -> bool:
    """Whether TARGET, a link written in the file SOURCE, names a file that exists and, after a
    `#`, one of its headings as MkDocs (and the forge) make their anchors."""
    from markdown.extensions.toc import slugify

    path, _, anchor = target.partition("#")
    file = (source.parent / path).resolve() if path else source
    if not file.is_file():
        return False
    return not anchor or anchor in {slugify(heading.replace("`", ""), "-") for heading in headings(file.read_text())}


MIRROR = re.compile(r"^(?:\.venv/bin/)?mirror$")


def commands(text: str) -> list[list[str]]:
    """Every `mirror ...` command TEXT shows, in a code block or inline, as its words: comments,
    `[optional]` brackets and what follows a pipe, `&&` or a redirection left out; `a | b` inside
    brackets (a choice) kept as both words."""
    shown, fenced, block = [], False, []
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif fenced:
            block.append(line)
    joined = re.sub(r"\\\n\s*", " ", "\n".join(block))
    candidates = [line.split(" #", 1)[0] for line in joined.splitlines()]
    candidates += re.findall(r"`([^`\n]*\bmirror [^`\n]*)`", text)
    for candidate in candidates:
        candidate = re.sub(r"\[([^]]*)\]", lambda choice: " " + choice.group(1).replace("|", " ") + " ", candidate)
        for part in re.split(r"&&|\|\||[|;&>]", candidate):
            words = part.split()
            if words and MIRROR.match(words[0]):
                shown.append(["mirror", *words[1:]])
    return shown
