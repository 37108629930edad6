"""SVG files rasterised with cairosvg, safely: no external references, bounded size.

The site renders SVGs with librsvg (rsvg-convert); cairosvg draws text and edges a little
differently (see docs/reverse-search.md on intensities), which only queries made from SVG files see.
"""

from __future__ import annotations

import io

from PIL import Image

from .errors import MediaError

__all__ = ["render_svg"]

# An SVG is rendered no larger than this many pixels (its aspect ratio kept): enough for
# intensities, which are averages, and it bounds the work an uploaded SVG can ask for.
_SVG_PIXELS = 2048 * 2048


def render_svg(data: bytes) -> Image.Image:
    """The SVG rasterised at its own size (scaled down past :data:`_SVG_PIXELS`)."""
    try:
        import cairosvg
    except (ImportError, OSError) as e:  # OSError: the cairo library itself is missing
        raise MediaError(f"SVG files cannot be read here: cairosvg is not usable ({e})") from None
    try:
        tree = cairosvg.parser.Tree(bytestring=data, url_fetcher=_refuse_fetch, unsafe=False)
        out = io.BytesIO()
        surface = cairosvg.surface.PNGSurface(tree, out, 96, scale=_scale(tree))
        surface.finish()
        return Image.open(io.BytesIO(out.getvalue()))
    except MediaError:
        raise
    except Exception as e:  # cairosvg raises many kinds on bad input; all mean "not a readable SVG"
        raise MediaError(f"cannot render the SVG: {type(e).__name__}: {e}") from None


def _scale(tree: object) -> float:
    """Below 1 for an SVG larger than :data:`_SVG_PIXELS`."""
    from cairosvg.surface import size

    width, height = size(None, tree.get("width"), "x"), size(None, tree.get("height"), "y")  # type: ignore[attr-defined]
    return min(1.0, (_SVG_PIXELS / (width * height)) ** 0.5) if width and height else 1.0


def _refuse_fetch(url: str, *args: object, **kwargs: object) -> bytes:
    raise MediaError(f"the SVG refers to {url!r}; external references are not followed")
