"""What the site's filter kept out of an images walk made without ``site.filter_id``.

Without a filter_id the site searches through the filter of an anonymous visitor (its Default
filter) or of the key's owner, which leaves out every image carrying its hidden tags; its
``total`` counts only what the filter lets through, so nothing in the walk shows anything missing.
After such a walk the images crawler counts the same query once more through the site's system
filter that hides nothing (Derpibooru's "Everything") and says how many the mirror lacks and which
filter_id would bring them. Three requests a run, and only while no filter_id is set: a mirror that
means to keep the filtered view sets filter_id to that filter's id and hears no more of it.
"""

from __future__ import annotations

from contextlib import suppress

from ..api import ApiError, PhilomenaClient
from ..api.client import Record
from .report import SyncReport


async def note_filtered_out(client: PhilomenaClient, query: str, include_hidden: bool, report: SyncReport) -> None:
    """Note in ``report`` how many images of ``query`` the site's filter hid, when it hid any.

    The walk is done by then: a site that will not answer these counts costs the note, not the run."""
    if client.filter_id is None:
        with suppress(ApiError):
            await _note(client, query, include_hidden, report)


async def _note(client: PhilomenaClient, query: str, include_hidden: bool, report: SyncReport) -> None:
    everything = hiding_nothing((await client.system_filters()).records)
    if everything is None:
        return
    q = f"({query})"
    shown = (await client.search_images(q, per_page=1, include_hidden=include_hidden)).total
    counted = (await client.search_images(q, per_page=1, include_hidden=include_hidden,
                                          filter_id=everything["id"])).total
    if shown is None or counted is None or counted <= shown:
        return
    name = everything.get("name") or "system"
    report.note(f"the site's filter hid {counted - shown} of the {counted} images it counts for images.query, "
                f"since no site.filter_id is set; to mirror them too, set filter_id = {everything['id']} in [site] "
                f"(its \"{name}\" filter, which hides nothing)")


def hiding_nothing(filters: list[Record]) -> Record | None:
    """The system filter that hides no tag and no query; "Everything" when several do."""
    found = [f for f in filters if isinstance(f.get("id"), int) and f.get("system", True)
             and not f.get("hidden_tag_ids") and not (f.get("hidden_complex_str") or "").strip()]
    named = [f for f in found if f.get("name") == "Everything"]
    return (named or found or [None])[0]
