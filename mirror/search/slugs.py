"""Tag slugs (``Philomena.Slug``): how tag records name related tags, and the names they spell.

Tag records list their aliases and implications by slug while the search index holds names, so
searching ``implies:pony`` matches a tag whose record says ``implied_tags: ["pony"]``, and a
slug whose tag the mirror does not keep still searches by the name it spells.
"""

from __future__ import annotations

import urllib.parse


def slug(name: str) -> str:
    """Philomena.Slug.slug: escape URL-hostile punctuation as words, then URI-encode (space -> +)."""
    for char, word in (("-", "-dash-"), ("/", "-fwslash-"), ("\\", "-bwslash-"),
                       (":", "-colon-"), (".", "-dot-"), ("+", "-plus-")):
        name = name.replace(char, word)
    return urllib.parse.quote(name, safe="-._~ ").replace(" ", "+")


def unslug(value: str) -> str:
    """The tag name a slug was made from (the reverse of :func:`slug`)."""
    name = urllib.parse.unquote_plus(value)
    for char, word in (("/", "-fwslash-"), ("\\", "-bwslash-"), (":", "-colon-"), (".", "-dot-"),
                       ("+", "-plus-"), ("-", "-dash-")):
        name = name.replace(word, char)
    return name
