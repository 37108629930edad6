"""Bodies rendered as the site renders its markup, and nothing in them live: image references as
links or pictures of mirrored images, links only to http(s) addresses, raw HTML as text."""

from __future__ import annotations

import re

from mirror.browse.figure import ImageCard
from mirror.browse.markup import Reference, references_in, render

SITE = "https://board.example"
KEPT = Reference(5, None, ImageCard(5, ["somebody"], "https://example.com/src", "png"))
MERGED = Reference(6, "merged", ImageCard(6, [], None, "png"))
NO_FILE = Reference(7, None, ImageCard(7, [], None, None))
SPOILERED = Reference(8, None, ImageCard(8, [], None, "png"), spoilered=True)
REFS = {ref.image_id: ref for ref in (KEPT, MERGED, NO_FILE, SPOILERED)}


def html(text: str) -> str:
    return str(render(text, REFS, SITE))


def test_image_references_are_found_as_the_site_finds_them():
    assert references_in([">>5t and >>6, x>>7p", None, ">>99999999999 is too large", ">>8s"]) == {5, 6, 7, 8}


def test_a_reference_links_the_image_page_and_a_sized_one_shows_its_kept_picture_with_attribution():
    assert '<a class="booru-ref" href="/-/image/5">&gt;&gt;5</a>' in html(">>5")
    for size, media, css in (("t", "thumbnail", "booru-ref-small"), ("s", "thumbnail", "booru-ref-thumb"),
                             ("p", "picture", "booru-ref-medium")):
        shown = html(f"look >>5{size} here")
        assert f'<img src="/-/media/{media}/5"' in shown and css in shown, size
        assert 'href="/-/image/5"' in shown and ">somebody</a>" in shown and f"{SITE}/images/5" in shown
        assert 'href="https://example.com/src"' in shown


def test_a_reference_at_the_start_of_a_line_is_not_a_quote_but_a_spaced_one_is():
    assert "<blockquote>" not in html(">>5\n>>6t") and html(">>5").count("booru-ref") == 1
    assert "<blockquote>" in html("> quoted")


def test_an_image_gone_without_a_file_spoilered_or_not_mirrored_is_a_link():
    assert 'href="/-/image/6">&gt;&gt;6t (merged)</a>' in html(">>6t")
    assert 'href="/-/image/7">&gt;&gt;7t</a>' in html(">>7t") and "<img" not in html(">>7t")
    assert 'href="/-/image/8">&gt;&gt;8p (spoilered)</a>' in html(">>8p") and "<img" not in html(">>8p")
    assert f'<a class="booru-ref booru-ref-away" href="{SITE}/images/404">&gt;&gt;404s</a>' in html(">>404s")


def test_only_http_links_and_no_raw_html():
    shown = html('[a](javascript:alert(1)) [b](https://example.com/b) <javascript:alert(2)> '
                 '<script>window.pwned=1</script> <img src=x onerror=alert(3)> ![pic](https://example.com/p.png) '
                 'bare https://example.com/c. and JaVaScRiPt:alert(4) [c](data:text/html,x) [d]( vbscript:x)')
    assert re.findall(r'href="([^"]*)"', shown) == ["https://example.com/b", "https://example.com/p.png",
                                                     "https://example.com/c"]
    assert "<script" not in shown and "<img" not in shown and "&lt;script&gt;" in shown
    assert '<a class="booru-picture-link" href="https://example.com/p.png" rel="noreferrer">pic</a>' in shown


def test_the_sites_inline_markup_and_line_breaks():
    shown = html("**bold** *it* ~~gone~~ ||secret **x**||\nnext line")
    assert "<strong>bold</strong>" in shown and "<em>it</em>" in shown and "<s>gone</s>" in shown
    assert '<span class="booru-spoiler">secret <strong>x</strong></span>' in shown
    assert "<br" in shown


def test_a_reference_inside_a_link_or_code_stays_text():
    assert "booru-ref" not in html("`>>5t`")
    assert "&gt;&gt;5" in html("`>>5t`")
