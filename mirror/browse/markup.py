"""Comment, post and description bodies rendered as the site renders its markup, safely.

The site writes its bodies in Markdown (comrak with Philomena's extensions, read in its
``native/philomena/src/markdown.rs`` and ``markdown_renderer.ex``): line breaks are kept, bare web
addresses become links, ``||text||`` is a spoiler, ``>`` needs a space after it to quote (so
``>>5`` is not a quote), and ``>>N`` names an image: ``>>N`` a link to it, ``>>Nt``, ``>>Ns`` and
``>>Np`` its picture at a small, a thumbnail and a medium size. Here the same is drawn from the
mirror: a reference is a link to the image's page in the browser, or its kept picture with its
attribution; an image the mirror lacks is a plain link to its page on the site.

A record's text is never HTML here: raw HTML is escaped, a link is made only of an http(s)
address (:func:`mirror.urls.is_web_url`), and a Markdown picture is a link to it (nothing is
fetched from elsewhere by reading a page).

Rendering has a budget, since a page must not take minutes: markdown-it-py's time grows with a
body's size, and far faster with its markup (200 KB of ``![`` took 4.5 s, of ``*_`` 2.3 s, of
prose 0.1 s), and the site takes bodies of 300 KB. A body whose :func:`cost` is past
:data:`MAX_BODY_COST` (some 50 KB of prose, 8 KB of ``![``: half a second at worst) is shown as
written, escaped, with its line breaks and a note; so is every body after the page has spent
:data:`PAGE_SECONDS` rendering the ones before. Nothing is lost: the text is all there.
"""

from __future__ import annotations

import json
import re
import sqlite3
import time
from collections.abc import Callable, Container, Iterable, Sequence
from dataclasses import dataclass

from markdown_it import MarkdownIt
from markdown_it.rules_block.blockquote import blockquote
from markdown_it.rules_block.state_block import StateBlock
from markdown_it.rules_core.state_core import StateCore
from markdown_it.rules_inline.state_inline import StateInline
from markdown_it.token import Token
from markupsafe import Markup, escape

from ..urls import is_web_url
from .figure import ImageCard, artists_of_tags
from .metadata import kept_extension

__all__ = ["Reference", "cost", "find_references", "references_in", "render", "render_all"]

# The site's own pattern for an image reference; ids past a 32-bit integer name nothing there.
IMAGE_REFERENCE = re.compile(r">>(\d{1,10})([tsp])?")
LARGEST_ID = 2**31 - 1
# A bare web address, up to the first space or bracket, less the punctuation a sentence ends it with.
BARE_URL = re.compile(r"https?://[^\s<>\[\]]*[^\s<>\[\].,:;!?\"')]", re.IGNORECASE)
# A body's cost: each character once, each markup character (what makes the parser look ahead)
# MARKUP_WEIGHT times, each line break (a block, a list item) LINE_WEIGHT times; the weights make
# a unit of cost some 5 to 15 microseconds whatever the body holds (measured on hostile bodies).
MARKUP_CHARACTERS = "[]!*_<>`\\|~&"
MARKUP_WEIGHT, LINE_WEIGHT = 5, 20
MAX_BODY_COST = 50_000
# What a page may spend rendering: the bodies after are shown as written.
PAGE_SECONDS = 0.5
# What each size of reference shows (the site's small, thumb_small and medium versions).
SIZE_CLASS = {"t": "booru-ref-small", "s": "booru-ref-thumb", "p": "booru-ref-medium"}


@dataclass(frozen=True)
class Reference:
    """What the mirror holds of an image a body names."""

    image_id: int
    gone: str | None  # "merged" or "deleted" when the site no longer shows it
    card: ImageCard
    spoilered: bool = False

    @property
    def embeddable(self) -> bool:
        return self.gone is None and self.card.kept is not None and not self.spoilered


def references_in(texts: Iterable[str | None]) -> set[int]:
    """The ids of the images ``texts`` refer to."""
    return {int(m.group(1)) for text in texts if text for m in IMAGE_REFERENCE.finditer(text)
            if int(m.group(1)) <= LARGEST_ID}


def find_references(conn: sqlite3.Connection, ids: Iterable[int],
                    spoilers: Callable[[list[int]], Container[int]] | None = None) -> dict[int, Reference]:
    """The mirrored images among ``ids``; those ``spoilers`` names (the filter in use spoilers
    them) are linked, not shown."""
    wanted = sorted(set(ids))
    if not wanted:
        return {}
    rows = conn.execute("SELECT id, hidden_from_users, duplicate_of, tags, source_url FROM images "
                        "WHERE id IN (SELECT value FROM json_each(?))", [json.dumps(wanted)]).fetchall()
    covered = spoilers([row[0] for row in rows]) if spoilers and rows else ()
    found = {}
    for image_id, gone, merged, tags, source in rows:
        state = "merged" if merged else "deleted" if gone else None
        card = ImageCard(image_id, artists_of_tags(tags), source or None, kept_extension(conn, image_id))
        found[image_id] = Reference(image_id, state, card, image_id in covered)
    return found


def _greentext_blockquote(state: StateBlock, start: int, end: int, silent: bool) -> bool:
    """A quote only where ``>`` is followed by a space (comrak's greentext rule): ``>>5`` is text."""
    at = state.bMarks[start] + state.tShift[start]
    if state.src[at + 1:at + 2] not in (" ", "\t", "\n", ""):
        return False
    return blockquote(state, start, end, silent)


def _image_reference(state: StateInline, silent: bool) -> bool:
    found = IMAGE_REFERENCE.match(state.src, state.pos)
    if found is None or int(found.group(1)) > LARGEST_ID:
        return False
    if not silent:
        token = state.push("image_reference", "", 0)
        token.meta = {"id": int(found.group(1)), "size": found.group(2) or ""}
        token.content = found.group(0)
    state.pos = found.end()
    return True


def _spoiler(state: StateInline, silent: bool) -> bool:
    """``||text||``: the text hidden until pointed at."""
    if not state.src.startswith("||", state.pos):
        return False
    end = state.src.find("||", state.pos + 2, state.posMax)
    if end <= state.pos + 2:
        return False
    if not silent:
        limit = state.posMax
        state.push("spoiler_open", "span", 1).attrSet("class", "booru-spoiler")
        state.pos, state.posMax = state.pos + 2, end
        state.md.inline.tokenize(state)
        state.push("spoiler_close", "span", -1)
        state.posMax = limit
    state.pos = end + 2
    return True


def _bare_links(state: StateCore) -> None:
    """Bare web addresses in text become links, as the site's autolink makes them."""
    for block in state.tokens:
        if block.type != "inline" or not block.children:
            continue
        children, in_link = [], 0
        for token in block.children:
            in_link += token.type == "link_open"
            in_link -= token.type == "link_close"
            if token.type != "text" or in_link or not BARE_URL.search(token.content):
                children.append(token)
                continue
            children += _linked(token.content)
        block.children = children


def _linked(text: str) -> list[Token]:
    tokens, at = [], 0
    for found in BARE_URL.finditer(text):
        if found.start() > at:
            tokens.append(_text(text[at:found.start()]))
        opening = Token("link_open", "a", 1)
        opening.attrSet("href", found.group(0))
        tokens += [opening, _text(found.group(0)), Token("link_close", "a", -1)]
        at = found.end()
    if at < len(text):
        tokens.append(_text(text[at:]))
    return tokens


def _text(content: str) -> Token:
    token = Token("text", "", 0)
    token.content = content
    return token


def _render_reference(renderer: object, tokens: Sequence[Token], idx: int, options: object, env: dict) -> str:
    meta = tokens[idx].meta
    written = escape(tokens[idx].content)
    found: Reference | None = env.get("references", {}).get(meta["id"])
    if found is None:
        return Markup('<a class="booru-ref booru-ref-away" href="{}/images/{}">{}</a>').format(
            env["site"], meta["id"], written)
    if meta["size"] and found.embeddable:
        return found.card.inline_html(env["site"], SIZE_CLASS[meta["size"]], meta["size"] == "p")
    suffix = f" ({found.gone})" if found.gone else " (spoilered)" if meta["size"] and found.spoilered else ""
    return Markup('<a class="booru-ref" href="/-/image/{}">{}{}</a>').format(meta["id"], written, suffix)


def _render_picture(renderer: object, tokens: Sequence[Token], idx: int, options: object, env: dict) -> str:
    """A Markdown picture as a link to it (its text, or its address), never fetched."""
    token = tokens[idx]
    src = token.attrGet("src") or ""
    label = "".join(child.content for child in token.children or []) or src
    return Markup('<a class="booru-picture-link" href="{}" rel="noreferrer">{}</a>').format(src, label)


def _renderer() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "breaks": True}).enable(["strikethrough", "table"])
    md.validateLink = lambda url: is_web_url(url.strip())
    md.block.ruler.at("blockquote", _greentext_blockquote,
                      {"alt": ["paragraph", "reference", "blockquote", "list"]})
    md.inline.ruler.before("text", "image_reference", _image_reference)
    md.inline.ruler.before("emphasis", "spoiler", _spoiler)
    md.inline.add_terminator_char("|")
    md.core.ruler.push("bare_links", _bare_links)
    md.add_render_rule("image_reference", _render_reference)
    md.add_render_rule("image", _render_picture)
    return md


_MD = _renderer()


def cost(text: str) -> int:
    """What rendering ``text`` costs, in units of a few microseconds (see :data:`MAX_BODY_COST`)."""
    return (len(text) + MARKUP_WEIGHT * sum(map(text.count, MARKUP_CHARACTERS))
            + LINE_WEIGHT * text.count("\n"))


def render(text: str | None, references: dict[int, Reference], site: str) -> Markup:
    """One body as safe HTML, its image references drawn from ``references``; as written (escaped)
    when its markup costs more than :data:`MAX_BODY_COST`."""
    text = text or ""
    if cost(text) > MAX_BODY_COST:
        return as_written(text, f"Shown as written: {len(text):,} characters, too long or too full of markup "
                                "to render here.")
    return Markup(_MD.render(text, {"references": references, "site": site}))


def as_written(text: str, note: str) -> Markup:
    """``text`` escaped, its line breaks kept, under ``note``."""
    return Markup('<p class="booru-as-written-note">{}</p><p class="booru-as-written">{}</p>').format(note, text)


def render_all(conn: sqlite3.Connection, texts: Sequence[str | None], site: str,
               spoilers: Callable[[list[int]], Container[int]] | None = None) -> list[Markup]:
    """Every body of a page, their image references looked up in the mirror at once; those left
    once the page has spent :data:`PAGE_SECONDS` rendering are shown as written."""
    references = find_references(conn, references_in(texts), spoilers)
    deadline = time.monotonic() + PAGE_SECONDS
    return [render(text, references, site) if time.monotonic() < deadline
            else as_written(text or "", "Shown as written: the texts above took this page's time for rendering.")
            for text in texts]
