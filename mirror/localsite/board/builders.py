"""The records of a generated board, one builder each: images, comments, posts, topics, filters.

Shared by the generator (:mod:`.generate`, which makes a whole board in a fixed order) and the
editor (:mod:`.editor`, which adds to a board later): each builder takes the board it makes records
for (a :class:`Maker`) and a seeded `random.Random`, so the same seed gives the same record. The
word lists are the board's world: the characters, species and general tags images carry, and
the words their descriptions and messages are made of.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any, Protocol

from ..files.img import FileSource, file_key, finish_image_file
from .records import background_pony
from .vocabulary import Vocabulary

__all__ = ["Maker", "make_comment", "make_filter", "make_post", "make_topic_record", "made_up_name",
           "message_text", "new_image", "sentence", "set_image_tags", "tag_groups"]

Record = dict[str, Any]
CHARACTERS = [
    "twilight sparkle", "rainbow dash", "pinkie pie", "fluttershy", "rarity", "applejack",
    "princess celestia", "princess luna", "derpy hooves", "spike", "starlight glimmer", "trixie",
    "sunset shimmer", "sunny starscout", "izzy moonbow",
]
SPECIES = ["pony", "unicorn", "pegasus", "earth pony", "alicorn", "dragon", "griffon", "changeling",
           "species:bat pony"]
GENERAL = [
    "female", "male", "mare", "stallion", "solo", "duo", "group", "smiling", "cute", "open mouth",
    "looking at you", "simple background", "transparent background", "grass", "sky", "cloud",
    "flying", "sitting", "lying down", "eyes closed", "wings", "horn", "hat", "clothes", "book",
    "magic", "food", "cake", "tree", "night", "stars", "moon", "sun", "flower", "heart",
    "text", "comic", "traditional art", "digital art", "pixel art", "3d", "vector", "animated",
    "sketch", "blushing", "happy", "sad", "angry", "floppy ears", "tongue out", "café",
    "日本語", "blood", "weapon",
]
BODY_TYPES = ["g4", "g5", "g3", "equestria girls", "anthro"]
ERRORS = ["artist needed", "source needed", "dead source", "tagme"]
SPOILERS = ["spoiler:s01e01", "spoiler:s05e25", "spoiler:g5 movie", "spoiler:my little pony: the movie"]
FANMADE = ["comic:the lunar incident", "fanfic:past sins", "art pack:pony pack 2", "series:friendship tales",
           "video:pony tube"]
OFFICIAL = ["official", "official comic", "merchandise"]
SYLLABLES = ["ka", "ri", "mo", "lu", "na", "sha", "do", "vel", "pix", "zor", "fi", "ne", "ty", "bel",
             "quin", "ar", "so", "mi", "ro", "dex"]
WORDS = ("pony sunset meadow friendship magic library castle cloud rainbow apple orchard sketch "
         "commission drawing colours shading lineart background practice study gift request "
         "evening morning adventure lesson tea party stars comet festival winter summer").split()
UNICODE_SNIPPETS = [
    "🦄✨🌈", "こんにちは、ポニー！", "مرحبا بالمهر الصغير", "שלום פוני", "Ünïcödé çafé naïve",
    "👩‍🎨 made with ❤️", "中文描述：小马宝莉", "Ελληνικά και русский текст", "e\u0301 combining",
    "zero\u200bwidth", "RTL \u202eoverride\u202c test",
]
FORMATS = [("png", "image/png", 45), ("jpg", "image/jpeg", 33), ("gif", "image/gif", 9),
           ("webm", "video/webm", 7), ("svg", "image/svg+xml", 6)]
SIZES = [(800, 700), (900, 900), (1920, 1080), (1280, 1024), (100, 100), (640, 480), (3000, 2000),
         (250, 250), (1024, 4096), (4000, 1200), (50, 50), (2048, 1536), (333, 777), (1, 1)]


class Maker(Protocol):
    """What the record builders ask of the board they make records for (the generator's, or the
    editor's over a database)."""

    seed: int
    pictures: bool
    vocab: Vocabulary

    def user_name(self, user_id: int | None) -> str | None: ...

    def link_targets(self) -> Sequence[int]: ...


def made_up_name(rng: random.Random, parts: int = 2) -> str:
    return "".join(rng.choice(SYLLABLES) for _ in range(parts + rng.randint(0, 1)))


def sentence(rng: random.Random, words: int) -> str:
    text = " ".join(rng.choice(WORDS) for _ in range(words))
    return text[0].upper() + text[1:] + "."


def message_text(rng: random.Random, image_ids: Sequence[int]) -> str:
    """A comment/post/description body: plain, linked (>>123), unicode, or multi-KB."""
    roll = rng.random()
    if roll < 0.04:
        paragraphs = [sentence(rng, rng.randint(20, 60)) for _ in range(rng.randint(20, 60))]
        return "\r\n\r\n".join(paragraphs) + " " + rng.choice(UNICODE_SNIPPETS)
    text = sentence(rng, rng.randint(3, 25))
    if roll < 0.25:
        text += " " + rng.choice(UNICODE_SNIPPETS)
    if roll > 0.85 and image_ids:
        text += f"\r\n>>{rng.choice(image_ids)}t"
    return text


def _rating_tags(rng: random.Random) -> list[str]:
    """Exactly what the rating rules allow: `safe` alone, or at most one sexual + at most one grim."""
    roll = rng.random()
    if roll < 0.6:
        return ["safe"]
    tags = []
    if roll < 0.92:
        tags.append(rng.choice(["suggestive", "questionable", "explicit"]))
    if rng.random() < 0.25 or not tags:
        tags.append(rng.choice(["semi-grimdark", "grimdark"]))
    if rng.random() < 0.05:
        tags.append("grotesque")
    return tags


def _image_tag_names(rng: random.Random, vocab: dict[str, list[str]]) -> list[str]:
    names = _rating_tags(rng)
    if rng.random() < 0.1:
        names.append("artist needed")
    else:
        names += rng.sample(vocab["artists"], rng.choice((1, 1, 1, 2)))
    names += rng.sample(CHARACTERS, rng.randint(0, 3))
    names += rng.sample(SPECIES, rng.randint(0, 2))
    names.append(rng.choice(BODY_TYPES[:2]))
    names += rng.sample(GENERAL, rng.randint(1, 10))
    for extra, chance in ((vocab["ocs"], 0.15), (SPOILERS, 0.05), (FANMADE, 0.05), (OFFICIAL, 0.03),
                          (ERRORS[1:], 0.05)):
        if rng.random() < chance:
            names.append(rng.choice(extra))
    return names


def tag_groups(vocab: Vocabulary) -> dict[str, list[str]]:
    """The artist and OC tag names images draw from, for a vocabulary made elsewhere."""
    return {kind + "s": sorted(t["name"] for t in vocab.tags.values() if t["namespace"] == kind) or [f"{kind}:anon"]
            for kind in ("artist", "oc")}


def set_image_tags(image: Record, tags: list[Record]) -> Record:
    image["tag_ids"] = [t["id"] for t in tags]
    image["tags"] = [t["name"] for t in tags]
    return image


def new_image(g: Maker, rng: random.Random, image_id: int, created: str, groups: dict[str, list[str]],
              users: Sequence[int]) -> Record:
    """One visible image record uploaded at `created` by one of ``users`` (or anonymous)."""
    fmt, mime, _ = rng.choices(FORMATS, weights=[f[2] for f in FORMATS])[0]
    width, height = rng.choice(SIZES)
    animated = fmt == "webm" or (fmt == "gif" and rng.random() < 0.7)
    # A still GIF lasts its one frame's delay (the drawn one's 300 ms), other stills 1/25 s.
    duration = 0.0 if fmt == "svg" else round(rng.uniform(1, 60), 2) if animated else 0.3 if fmt == "gif" else 0.04
    upvotes = 0 if rng.random() < 0.1 else int(rng.paretovariate(1.2) * 5)
    downvotes = rng.randint(0, max(1, upvotes // 10)) if rng.random() < 0.6 else 0
    anonymous = rng.random() < 0.15 or not users
    uploader_id = None if anonymous else rng.choice(users)
    base = rng.choice(["", "", "untitled", "drawing", "комикс", "ポニー", "commission final v2"])
    name = (f"{base or image_id}_{made_up_name(rng)}.{fmt}" if rng.random() < 0.8 else f"{image_id}__{made_up_name(rng, 3)}")
    image = {
        "id": image_id, "created_at": created, "updated_at": created, "first_seen_at": created,
        "width": width, "height": height, "mime_type": mime, "format": fmt, "size": 0, "orig_size": 0,
        "duration": duration, "animated": animated, "name": name[:255], "sha512_hash": "", "orig_sha512_hash": "",
        "tag_ids": [], "tags": [], "uploader_id": uploader_id, "uploader": g.user_name(uploader_id),
        "upvotes": upvotes, "downvotes": downvotes, "score": upvotes - downvotes,
        "faves": rng.randint(0, upvotes),
        "hides": rng.randint(0, 3) if rng.random() < 0.2 else 0,
        "comment_count": 0,
        "intensities": None if rng.random() < 0.03 else {
            k: round(rng.uniform(0, 255), 6) for k in ("nw", "ne", "sw", "se")
        },
        "description": "" if rng.random() < 0.4 else message_text(rng, []),
        "source_urls": [
            rng.choice([f"https://www.deviantart.com/{made_up_name(rng)}/art/{made_up_name(rng)}-{rng.randint(1000, 99999)}",
                        f"https://twitter.com/{made_up_name(rng)}/status/{rng.randint(10**17, 10**18)}",
                        f"https://{made_up_name(rng)}.tumblr.com/post/{rng.randint(10**9, 10**10)}",
                        f"http://example.com/{made_up_name(rng)}.{fmt}"])
            for _ in range(rng.choice((0, 1, 1, 1, 2, 3)))
        ],
        "thumbnails_generated": True, "processed": True,
        "hidden_from_users": False, "deletion_reason": None, "duplicate_of": None,
    }
    set_image_tags(image, g.vocab.resolve(_image_tag_names(rng, groups)))
    return finish_image_file(image, FileSource(file_key(g.seed, image_id), g.pictures))


def _message(g: Maker, rng: random.Random, message_id: int, thread_id: int, salt: int, user_id: int | None,
             created: str, body: str | None, anonymous: bool | None) -> Record:
    """The fields comments and forum posts share: author attribution, body, dates, hidden state."""
    anonymous = user_id is None if anonymous is None else anonymous
    author = background_pony(thread_id, user_id or f"ip-{message_id % salt}") if anonymous else g.user_name(user_id)
    return {
        "id": message_id, "user_id": user_id, "anonymous": anonymous, "author": author,
        "body": body if body is not None else message_text(rng, g.link_targets()),
        "created_at": created, "updated_at": created, "edited_at": None, "edit_reason": None,
        "hidden_from_users": False, "deletion_reason": None, "destroyed_content": False,
    }


def make_comment(g: Maker, rng: random.Random, comment_id: int, image_id: int, user_id: int | None,
                 created: str, *, body: str | None = None, anonymous: bool | None = None) -> Record:
    return {**_message(g, rng, comment_id, image_id, 97, user_id, created, body, anonymous), "image_id": image_id}


def make_post(g: Maker, rng: random.Random, post_id: int, topic: Record, position: int,
              user_id: int | None, created: str, *, body: str | None = None, anonymous: bool | None = None) -> Record:
    return {**_message(g, rng, post_id, topic["id"], 89, user_id, created, body, anonymous),
            "topic_id": topic["id"], "topic_position": position}


def make_topic_record(topic_id: int, forum: str, topic_slug: str, title: str, user_id: int | None,
                      author: str | None, created: str, **fields: Any) -> Record:
    """A topic with no posts yet (``post_count`` counts those added)."""
    return {"id": topic_id, "forum": forum, "slug": topic_slug, "title": title, "user_id": user_id,
            "anonymous": user_id is None, "author": author, "view_count": 0, "sticky": False, "locked": False,
            "hidden": False, "created_at": created, "last_replied_to_at": created, "post_count": 0, **fields}


def make_filter(filter_id: int, name: str, user_id: int | None, created: str, **fields: Any) -> Record:
    """A filter hiding and spoilering nothing, owned by ``user_id`` (a system filter when None)."""
    return {"id": filter_id, "name": name, "description": "", "public": False, "system": user_id is None,
            "user_count": 0, "user_id": user_id, "hidden_tag_ids": [], "spoilered_tag_ids": [],
            "hidden_complex": "", "spoilered_complex": "", "created_at": created, **fields}
