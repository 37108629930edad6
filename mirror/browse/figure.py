"""An image as the browser shows it: its kept thumbnail, with its artists, its source and its page.

The site's usage rules ask that an image's artist tags and source URL go with it, with a link to
its page on the site. An image shown alone (a table's cell, a history, an embed) carries them
beside it; a grid is the site's media boxes (:meth:`ImageCard.box`), each linked to the image's
page, which carries them, and naming its artists in its title. Every page of the browser that
shows an image builds it here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from urllib.parse import quote, urlsplit

from markupsafe import Markup

from ..urls import is_web_url

__all__ = ["VIDEO", "Counts", "ImageCard", "artists_of_tags", "artists_of_text"]

# Kept files a browser plays as video rather than shows as a picture.
VIDEO = ("webm", "mp4")


def artists_of_tags(tags: str | list | None) -> list[str]:
    """Artist names from an image's tag list (JSON text or a list)."""
    names = json.loads(tags) if isinstance(tags, str) else (tags or [])
    return [name[len("artist:"):] for name in names if isinstance(name, str) and name.startswith("artist:")]


def artists_of_text(text: str | None) -> list[str]:
    """Artist names from the ``artists`` column of ``image_details`` (comma-separated)."""
    return [name.strip() for name in (text or "").split(",") if name.strip()]


@dataclass(frozen=True)
class Counts:
    """What the site's media box header says of an image: its score, faves and comments."""

    score: int | None
    faves: int | None
    comments: int | None

    def html(self) -> Markup:
        return Markup('<span class="booru-counts"><span class="booru-score" title="score">\u2191{}</span> '
                      '<span class="booru-faves" title="faves">\u2605{}</span> '
                      '<span class="booru-comments" title="comments">\u275d{}</span></span>').format(
            _count(self.score), _count(self.faves), _count(self.comments))


def _count(value: int | None) -> str:
    return "?" if value is None else f"{value:,}"


@dataclass(frozen=True)
class ImageCard:
    """What is needed to show one image properly."""

    image_id: int
    artists: list[str]
    source: str | None
    kept: str | None  # the kept thumbnail's extension, None when no thumbnail is kept
    counts: Counts | None = None
    # Why the filter in use spoilers it (the tags it matched, or its query); None when it does not.
    spoiler: str | None = None

    def box(self, row_path: str) -> Markup:
        """The image in a grid, as the site's media box: the thumbnail in a box of fixed size, linked
        to the image's page, with its counts under it. The attribution is on that page (and in the
        thumbnail's title), not under every thumbnail of a grid."""
        picture = Markup('<a class="booru-box" href="{}" title="{}">{}</a>').format(
            row_path, self._title(), self._picture())
        counts = self.counts.html() if self.counts else Markup("")
        return Markup('<figure class="booru-image" data-image-id="{}">{}<figcaption>{}</figcaption></figure>').format(
            self.image_id, picture, counts)

    def _title(self) -> str:
        return f"#{self.image_id}" + (f" by {', '.join(self.artists)}" if self.artists else "")

    def html(self, site: str, search_path: str = "/-/booru", row_path: str | None = None) -> Markup:
        """The thumbnail (or a placeholder when the file is not kept) and its attribution."""
        picture = self._picture()
        if row_path:
            picture = Markup('<a href="{}">{}</a>').format(row_path, picture)
        header = self.counts.html() if self.counts else Markup("")
        return Markup('<figure class="booru-image" data-image-id="{}">{}{}<figcaption>{}{}{}</figcaption>'
                      '</figure>').format(self.image_id, header, picture, self._on_site(site),
                                          self._artists(search_path), self._source())

    def _picture(self) -> Markup:
        """The kept thumbnail, or a placeholder; covered when the filter in use spoilers it."""
        if self.kept in VIDEO:
            picture = Markup('<video class="booru-thumb" src="/-/media/thumbnail/{}" muted loop autoplay '
                             'playsinline></video>').format(self.image_id)
        elif self.kept:
            picture = Markup('<img class="booru-thumb" src="/-/media/thumbnail/{}" alt="{}">'
                             ).format(self.image_id, self._title())
        else:
            picture = Markup('<div class="booru-thumb booru-missing">not downloaded</div>')
        if self.spoiler is not None:  # the picture stays, covered until pointed at (CSS)
            picture = Markup('<span class="booru-spoilered" tabindex="0">{}<span class="booru-spoiler-cover">'
                             'spoilered: {}</span></span>').format(picture, self.spoiler)
        return picture

    def inline_html(self, site: str, size_class: str, large: bool = False) -> Markup:
        """The kept thumbnail (the kept picture when ``large``) inside a line of text, linked to the
        image's page, with the same attribution in small print."""
        media = "picture" if large else "thumbnail"
        if self.kept in VIDEO and not large:
            picture = Markup('<video src="/-/media/{}/{}" muted loop autoplay playsinline></video>').format(
                media, self.image_id)
        else:
            picture = Markup('<img src="/-/media/{}/{}" alt="#{}">').format(media, self.image_id, self.image_id)
        return Markup('<span class="booru-ref-embed {}" data-image-id="{}"><a href="/-/image/{}">{}</a>'
                      '<small>{}{}{}</small></span>').format(
            size_class, self.image_id, self.image_id, picture, self._on_site(site), self._artists("/-/booru"),
            self._source())

    def _on_site(self, site: str) -> Markup:
        host = urlsplit(site).netloc or site
        return Markup('<a class="booru-page" href="{}/images/{}">#{} on {}</a>').format(
            site, self.image_id, self.image_id, host)

    def _artists(self, search_path: str) -> Markup:
        if not self.artists:
            return Markup('<span class="booru-artists">artist unknown</span>')
        links = Markup(", ").join(
            Markup('<a href="{}?q={}">{}</a>').format(search_path, quote(f"artist:{name}"), name)
            for name in self.artists)
        return Markup('<span class="booru-artists">by {}</span>').format(links)

    def _source(self) -> Markup:
        if not self.source:
            return Markup('<span class="booru-source">no source given</span>')
        if not is_web_url(self.source):  # shown, never a link: it could be javascript:
            return Markup('<span class="booru-source">source: {}</span>').format(self.source)
        return Markup('<span class="booru-source">source: <a href="{}" rel="noreferrer">{}</a></span>').format(
            self.source, self.source)
