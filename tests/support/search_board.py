"""Random queries over a mirrored board's vocabulary (the ``board`` fixture of tests/search/conftest.py)."""

from __future__ import annotations

from hypothesis import strategies as st


def vocabulary(db) -> list[str]:
    tags = [row[0] for row in db.execute("SELECT name FROM tags ORDER BY id LIMIT 60")]
    words = sorted({w.strip(".,!?").lower() for (text,) in db.execute("SELECT description FROM images LIMIT 80")
                    for w in (text or "").split() if w.isalpha()})[:30]
    return tags + [t[:3] + "*" for t in tags[:10]] + [t[:-1] + "~1" for t in tags[:5] if len(t) > 3] + [
        "score.gt:2", "score.lte:0", "width.gte:800", "faves:0", "id.lt:100", "tag_count.gt:4", "animated:true",
        "created_at.gte:2021", "created_at:2020-02", "first_seen_at.lt:3 years ago", "wilson_score.gt:0.3",
        "aspect_ratio.gte:1", "duration.gt:0", "gallery_id:1", "uploader:*", "source_url:*", "missing tag",
        "original_format:gif", "pixels.lt:500000", "rating_tag_count:1", "faved_by:x", "processed:true",
    ] + [f"description:{w}" for w in words[:15]] + ["description:*an*"]


@st.composite
def image_queries(draw, atoms):
    def expression(depth):
        if depth == 0 or draw(st.booleans()):
            return draw(st.sampled_from(atoms))
        left, right = expression(depth - 1), expression(depth - 1)
        form = draw(st.sampled_from(["{a}, {b}", "{a} OR {b}", "{a} AND {b}", "-({a})", "NOT ({a})",
                                     "({a} || {b}), {b}", "!({a})"]))
        return form.format(a=left, b=right)

    return expression(3)
