"""Deterministic generation of a realistic Philomena board for the local site.

Everything is drawn from one `random.Random(seed)` in a fixed order, and no set or dict of strings
is ever iterated for choices, so a seed always yields the same board. Dates come from fixed
ranges (2012..2025), never from the wall clock; only later mutations use "now".
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

from ..search.slugs import slug
from .records import RATINGS, background_pony, iso, parse_iso, slug_of_title

if TYPE_CHECKING:  # the dataset imports this module lazily; avoid the cycle at runtime
    from .dataset import Dataset

Record = dict[str, Any]

START = datetime(2012, 1, 2, 3, 10, 59, tzinfo=timezone.utc)
END = datetime(2025, 6, 30, 23, 0, 0, tzinfo=timezone.utc)

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
ALIASES = {
    "twilight": "twilight sparkle", "ts": "twilight sparkle", "dashie": "rainbow dash",
    "rd": "rainbow dash", "pinkamena": "pinkie pie", "flutters": "fluttershy", "aj": "applejack",
    "celly": "princess celestia", "tia": "princess celestia", "muffins": "derpy hooves",
    "pegasi": "pegasus", "sfw": "safe", "earth ponies": "earth pony",
}
IMPLICATIONS = {
    "twilight sparkle": ["alicorn"], "rainbow dash": ["pegasus"], "fluttershy": ["pegasus"],
    "derpy hooves": ["pegasus"], "rarity": ["unicorn"], "trixie": ["unicorn"], "starlight glimmer": ["unicorn"],
    "applejack": ["earth pony"], "pinkie pie": ["earth pony"], "princess celestia": ["alicorn"],
    "princess luna": ["alicorn"], "mare": ["female"], "stallion": ["male"], "alicorn": ["pony"],
    "pegasus": ["pony", "wings"], "unicorn": ["pony", "horn"], "earth pony": ["pony"],
    "sunny starscout": ["earth pony", "g5"], "izzy moonbow": ["unicorn", "g5"],
}
CATEGORIES = (
    [(n, "character") for n in CHARACTERS]
    + [(n, "species") for n in SPECIES]
    + [(n, "body-type") for n in BODY_TYPES]
    + [(n, "error") for n in ERRORS]
    + [(n, "content-official") for n in OFFICIAL]
)
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
DNP_TYPES = ["No Edits", "Artist Tag Change", "Uploader Credit Change", "Certain Type/Location Only",
             "With Permission Only", "Artist Upload Only", "Other"]
FORMATS = [("png", "image/png", 45), ("jpg", "image/jpeg", 33), ("gif", "image/gif", 9),
           ("webm", "video/webm", 7), ("svg", "image/svg+xml", 6)]
SIZES = [(800, 700), (900, 900), (1920, 1080), (1280, 1024), (100, 100), (640, 480), (3000, 2000),
         (250, 250), (1024, 4096), (4000, 1200), (50, 50), (2048, 1536), (333, 777), (1, 1)]
DELETION_REASONS = ["Rule #0", "Rule #2: Duplicate", "Artist request (DNP)", "Low quality (Rule #7)",
                    "Rule #1: Content not allowed"]
BADGES = [(1, "Artist", "artist.svg"), (2, "Donor", "donor.svg"), (3, "Happy Derpy!", "derpy.svg"),
          (4, "The End wasn't The End", "end.svg"), (5, "Best Artist", "best.svg")]
FORUMS = [
    ("dis", "General Discussion", "Talk about anything", "normal"),
    ("art", "Art Chat", "Discuss art of any form, and share techniques", "normal"),
    ("meta", "Site and Policy", "For site discussion and policy discussion", "normal"),
    ("pony", "Pony Discussion", "Discuss the show, comics, merchandise and more", "normal"),
    ("rp", "Roleplaying", "Roleplaying forums", "normal"),
    ("mod", "Moderation Discussion", "Staff only", "staff"),
]


def _date_between(rng: random.Random, start: datetime, end: datetime) -> datetime:
    seconds = int((end - start).total_seconds())
    return start + timedelta(seconds=rng.randint(0, max(seconds, 0)))


def _name(rng: random.Random, parts: int = 2) -> str:
    return "".join(rng.choice(SYLLABLES) for _ in range(parts + rng.randint(0, 1)))


def _sentence(rng: random.Random, words: int) -> str:
    text = " ".join(rng.choice(WORDS) for _ in range(words))
    return text[0].upper() + text[1:] + "."


def _text(rng: random.Random, image_ids: list[int]) -> str:
    """A comment/post/description body: plain, linked (>>123), unicode, or multi-KB."""
    roll = rng.random()
    if roll < 0.04:
        paragraphs = [_sentence(rng, rng.randint(20, 60)) for _ in range(rng.randint(20, 60))]
        return "\r\n\r\n".join(paragraphs) + " " + rng.choice(UNICODE_SNIPPETS)
    text = _sentence(rng, rng.randint(3, 25))
    if roll < 0.25:
        text += " " + rng.choice(UNICODE_SNIPPETS)
    if roll > 0.85 and image_ids:
        text += f"\r\n>>{rng.choice(image_ids)}t"
    return text


def _make_tags(ds: Dataset, rng: random.Random, n_artists: int) -> dict[str, list[str]]:
    """Create the vocabulary; returns tag names grouped for image tagging."""
    next_id = 1

    def add(name: str, category: str | None = None) -> Record:
        nonlocal next_id
        tag = ds.ensure_tag(name, tag_id=next_id)
        next_id += rng.choice((1, 1, 1, 2, 7))
        if category:
            tag["category"] = category
        if rng.random() < 0.3:
            tag["description"] = _sentence(rng, rng.randint(5, 30))
            tag["short_description"] = _sentence(rng, 4)
        elif rng.random() < 0.2:
            tag["short_description"] = None
        return tag

    for rating in RATINGS:
        add(rating, "rating")
    for name, category in CATEGORIES:
        add(name, category)
    for name in GENERAL + SPOILERS + FANMADE:
        tag = add(name)
        if tag["namespace"] == "spoiler":
            tag["spoiler_image"] = f"{tag['slug']}.png"
    artists = []
    for i in range(n_artists):
        tag = add(f"artist:{_name(rng)}{'' if i % 5 else '_' + _name(rng, 1)}")
        if rng.random() < 0.3:
            tag["dnp_entries"].append({
                "id": len(artists) + 1,
                "dnp_type": rng.choice(DNP_TYPES),
                "conditions": rng.choice(["", "No reposts without credit", "Edits allowed with permission"]),
                "reason": None if rng.random() < 0.3 else _sentence(rng, 6),
                "created_at": iso(_date_between(rng, START, END)),
            })
        artists.append(tag["name"])
    ocs = [add(f"oc:{_name(rng)}")["name"] for _ in range(max(3, n_artists // 3))]
    for alias, target in ALIASES.items():
        add(alias)["aliased_tag_id"] = ds.tag_by_name(target)["id"]
    for name, implied in IMPLICATIONS.items():
        ds.tag_by_name(name)["implied_tag_ids"] = [ds.tag_by_name(n)["id"] for n in implied]
    return {"artists": artists, "ocs": ocs}


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


def new_image(ds: Dataset, rng: random.Random, image_id: int, created: str,
              vocab: dict[str, list[str]] | None = None, users: Sequence[int] | None = None) -> Record:
    """One visible image record uploaded at `created` (also used by `Dataset.add_images`).

    ``users`` is ``sorted(ds.users)``, given by callers that make many images: sorting every
    account for each image would dominate generating a large board.
    """
    if vocab is None:
        vocab = {
            "artists": sorted(t["name"] for t in ds.tags.values() if t["namespace"] == "artist") or ["artist:anon"],
            "ocs": sorted(t["name"] for t in ds.tags.values() if t["namespace"] == "oc") or ["oc:anon"],
        }
    fmt, mime, _ = rng.choices(FORMATS, weights=[f[2] for f in FORMATS])[0]
    width, height = rng.choice(SIZES)
    animated = fmt == "webm" or (fmt == "gif" and rng.random() < 0.7)
    duration = 0.0 if fmt == "svg" else round(rng.uniform(1, 60), 2) if animated else 0.04
    upvotes = 0 if rng.random() < 0.1 else int(rng.paretovariate(1.2) * 5)
    downvotes = rng.randint(0, max(1, upvotes // 10)) if rng.random() < 0.6 else 0
    users = sorted(ds.users) if users is None else users
    anonymous = rng.random() < 0.15 or not users
    uploader_id = None if anonymous else rng.choice(users)
    base = rng.choice(["", "", "untitled", "drawing", "комикс", "ポニー", "commission final v2"])
    name = (f"{base or image_id}_{_name(rng)}.{fmt}" if rng.random() < 0.8 else f"{image_id}__{_name(rng, 3)}")
    image = {
        "id": image_id,
        "created_at": created,
        "updated_at": created,
        "first_seen_at": created,
        "width": width,
        "height": height,
        "mime_type": mime,
        "format": fmt,
        "size": 0,
        "orig_size": 0,
        "duration": duration,
        "animated": animated,
        "name": name[:255],
        "sha512_hash": "",
        "orig_sha512_hash": "",
        "tag_ids": [],
        "tags": [],
        "uploader_id": uploader_id,
        "uploader": ds.user_name(uploader_id),
        "upvotes": upvotes,
        "downvotes": downvotes,
        "score": upvotes - downvotes,
        "faves": rng.randint(0, upvotes),
        "hides": rng.randint(0, 3) if rng.random() < 0.2 else 0,
        "comment_count": 0,
        "intensities": None if rng.random() < 0.03 else {
            k: round(rng.uniform(0, 255), 6) for k in ("nw", "ne", "sw", "se")
        },
        "description": "" if rng.random() < 0.4 else _text(rng, []),
        "source_urls": [
            rng.choice([f"https://www.deviantart.com/{_name(rng)}/art/{_name(rng)}-{rng.randint(1000, 99999)}",
                        f"https://twitter.com/{_name(rng)}/status/{rng.randint(10**17, 10**18)}",
                        f"https://{_name(rng)}.tumblr.com/post/{rng.randint(10**9, 10**10)}",
                        f"http://example.com/{_name(rng)}.{fmt}"])
            for _ in range(rng.choice((0, 1, 1, 1, 2, 3)))
        ],
        "thumbnails_generated": True,
        "processed": True,
        "hidden_from_users": False,
        "deletion_reason": None,
        "duplicate_of": None,
        "file_key": f"{ds.seed}-{image_id}",
    }
    ds.set_image_tags(image, ds.resolve_tags(_image_tag_names(rng, vocab)))
    ds.finish_image_file(image)
    return image


def _message(ds: Dataset, rng: random.Random, message_id: int, thread_id: int, salt: int, user_id: int | None,
             created: str, body: str | None, anonymous: bool | None) -> Record:
    """The fields comments and forum posts share: author attribution, body, dates, hidden state."""
    anonymous = user_id is None if anonymous is None else anonymous
    author = background_pony(thread_id, user_id or f"ip-{message_id % salt}") if anonymous else ds.user_name(user_id)
    return {
        "id": message_id,
        "user_id": user_id,
        "anonymous": anonymous,
        "author": author,
        "body": body if body is not None else _text(rng, sorted(ds.images)[-50:]),
        "created_at": created,
        "updated_at": created,
        "edited_at": None,
        "edit_reason": None,
        "hidden_from_users": False,
        "deletion_reason": None,
        "destroyed_content": False,
    }


def make_comment(ds: Dataset, rng: random.Random, comment_id: int, image_id: int, user_id: int | None,
                 created: str, *, body: str | None = None, anonymous: bool | None = None) -> Record:
    return {**_message(ds, rng, comment_id, image_id, 97, user_id, created, body, anonymous), "image_id": image_id}


def make_post(ds: Dataset, rng: random.Random, post_id: int, topic: Record, position: int,
              user_id: int | None, created: str, *, body: str | None = None, anonymous: bool | None = None) -> Record:
    return {**_message(ds, rng, post_id, topic["id"], 89, user_id, created, body, anonymous),
            "topic_id": topic["id"], "topic_position": position}


def _users(ds: Dataset, rng: random.Random, n: int, artists: list[str]) -> None:
    fancy = ["Joey", "Ponyfan ☆", "ユーザー", "Мария", "Background Artist", "Carcer", "user with spaces",
             "Ça va", "dot.name", "Le-Dash"]
    used: set[str] = set()
    user_id = 1
    for i in range(n):
        name = fancy[i] if i < len(fancy) else _name(rng).capitalize() + str(rng.randint(1, 999))
        while name in used:
            name += "_"
        used.add(name)
        created = _date_between(rng, START - timedelta(days=300), END - timedelta(days=30))
        role = {0: "admin", 1: "moderator", 2: "assistant"}.get(i, "user")
        user = {
            "id": user_id,
            "name": name,
            "slug": slug(name),
            "role": role,
            "description": None if rng.random() < 0.3 else _text(rng, []),
            "avatar": f"{created.year}/{created.month}/{created.day}/{user_id}.png" if rng.random() < 0.6 else None,
            "created_at": iso(created),
            "links": [],
            "awards": [],
            "deleted": i > 5 and rng.random() < 0.05,
        }
        if artists and rng.random() < 0.25:
            user["links"].append({"user_id": user_id, "created_at": iso(created + timedelta(days=3)),
                                  "state": "verified", "tag_id": ds.tag_by_name(rng.choice(artists))["id"]})
        for badge_id, title, image in rng.sample(BADGES, rng.randint(0, 3)):
            user["awards"].append({
                "id": badge_id, "title": title, "image": image,
                "label": rng.choice(["", "Thanks for your support", "Best Artist 2016"]),
                "awarded_on": iso(_date_between(rng, created, END)),
            })
        ds.users[user_id] = user
        user_id += rng.choice((1, 1, 1, 3))
    key_user = sorted(u["id"] for u in ds.users.values() if u["role"] == "user" and not u["deleted"])[0]
    ds.api_keys[f"testkey-{ds.seed}"] = key_user


def _date_image(rng: random.Random, image: Record, created: datetime, previous: Record | None) -> None:
    """Some images were imported earlier or tie with the one before; updates come later."""
    roll = rng.random()
    if roll < 0.04 and previous is not None:
        image["first_seen_at"] = iso(created - timedelta(days=rng.randint(1, 400)))  # imported earlier
    elif roll < 0.08 and previous is not None:
        image["first_seen_at"] = previous["first_seen_at"]  # a tie
    image["updated_at"] = iso(min(created + timedelta(seconds=rng.randint(0, 86400 * 700)), END))


def set_fate(rng: random.Random, image: Record, merge_targets: Callable[[], Sequence[int]]) -> None:
    """Delete, merge (into one of ``merge_targets()``, earlier visible images) or leave unprocessed a few images."""
    roll = rng.random()
    if roll < 0.02:
        image.update(hidden_from_users=True, deletion_reason=rng.choice(DELETION_REASONS))
    elif roll < 0.03:
        image.update(hidden_from_users=True, duplicate_of=rng.choice(merge_targets()))
    elif roll < 0.05:
        image.update(thumbnails_generated=False, processed=rng.random() < 0.3)


def upload_time(index: int, count: int, rng: random.Random) -> datetime:
    """When the ``index``-th of ``count`` images was uploaded: evenly spread over the board's years."""
    step = (END - START) / max(count, 1)
    return START + step * index + timedelta(seconds=rng.randint(0, max(int(step.total_seconds()) - 1, 0)))


def dated_image(ds: Dataset, rng: random.Random, image_id: int, index: int, count: int, vocab: dict[str, list[str]],
                users: Sequence[int], previous: Record | None) -> Record:
    """The ``index``-th image of a board of ``count``, with its upload, first-seen and update dates."""
    created = upload_time(index, count, rng)
    image = new_image(ds, rng, image_id, iso(created), vocab, users)
    _date_image(rng, image, created, previous)
    return image


def next_image_id(rng: random.Random, image_id: int) -> int:
    """Ids mostly follow each other; a few are skipped (uploads that never finished)."""
    return image_id + (1 if rng.random() > 0.02 else rng.randint(2, 5))


def _images(ds: Dataset, rng: random.Random, n: int, vocab: dict[str, list[str]]) -> None:
    image_id, previous = 0, None
    users = sorted(ds.users)
    for i in range(n):
        previous = ds.images[image_id] = dated_image(ds, rng, image_id, i, n, vocab, users, previous)
        image_id = next_image_id(rng, image_id)
    ids = sorted(ds.images)
    if not ids:
        return
    for image_id in ids[1:]:
        set_fate(rng, ds.images[image_id],
                 lambda: [i for i in ids if i < image_id and not ds.images[i]["hidden_from_users"]])
    mark_processing(ds.images[ids[-1]])


def mark_processing(image: Record) -> None:
    """The newest image is always still processing, like a fresh upload."""
    image.update(thumbnails_generated=False, processed=False, hidden_from_users=False, deletion_reason=None,
                 duplicate_of=None)


def comment_on(ds: Dataset, rng: random.Random, comment_id: int, image: Record, users: Sequence[int]) -> Record:
    """A comment on ``image`` by one of ``users`` (or anonymous); a few hidden, destroyed or edited.

    The image's ``comment_count`` counts it unless it is destroyed.
    """
    user_id = None if rng.random() < 0.15 else rng.choice(users)
    created = _date_between(rng, parse_iso(image["created_at"]), END)
    comment = make_comment(ds, rng, comment_id, image["id"], user_id, iso(created))
    roll = rng.random()
    if roll < 0.05:
        comment.update(hidden_from_users=True, deletion_reason="Rule #1")
    elif roll < 0.07:
        comment.update(destroyed_content=True, hidden_from_users=True)
    elif roll < 0.15:
        edited = created + timedelta(minutes=rng.randint(1, 600))
        comment.update(edited_at=iso(edited), updated_at=iso(edited),
                       edit_reason=rng.choice([None, "typo", "fixed link"]))
    if not comment["destroyed_content"]:
        image["comment_count"] += 1
    return comment


def active_users(ds: Dataset) -> list[int]:
    """Ids of the accounts that were not deleted, in order: who comments, posts and makes galleries."""
    return sorted(u for u, rec in ds.users.items() if not rec["deleted"])


def _comments(ds: Dataset, rng: random.Random, n: int) -> None:
    ids = sorted(ds.images)
    if not ids:
        return
    users = active_users(ds)
    for comment_id in range(1, n + 1):
        ds.comments[comment_id] = comment_on(ds, rng, comment_id, ds.images[rng.choice(ids)], users)


def make_forums() -> dict[str, Record]:
    """The board's forums, by short name, with no topics yet."""
    return {short: {"id": i, "short_name": short, "name": name, "description": description, "access_level": access,
                    "topic_count": 0, "post_count": 0}
            for i, (short, name, description, access) in enumerate(FORUMS, start=1)}


def make_topic(ds: Dataset, rng: random.Random, topic_id: int, forum: Record, used_slugs: set[tuple[str, str]],
               users: Sequence[int], first_post_id: int) -> tuple[Record, list[Record]]:
    """A topic of ``forum`` and its posts (ids from ``first_post_id``); the forum's counters count it."""
    title = _sentence(rng, rng.randint(2, 7)).rstrip(".")
    if topic_id % 7 == 3:
        title += " " + rng.choice(UNICODE_SNIPPETS)
    topic_slug = slug_of_title(title, topic_id)
    while (forum["short_name"], topic_slug) in used_slugs:
        topic_slug += "-"
    used_slugs.add((forum["short_name"], topic_slug))
    created = _date_between(rng, START, END - timedelta(days=5))
    user_id = None if rng.random() < 0.1 else rng.choice(users)
    topic = {
        "id": topic_id, "forum": forum["short_name"], "slug": topic_slug, "title": title,
        "user_id": user_id, "anonymous": user_id is None,
        "author": background_pony(topic_id, "op") if user_id is None else ds.user_name(user_id),
        "view_count": rng.randint(0, 100000), "sticky": topic_id % 9 == 1, "locked": topic_id % 11 == 5,
        "hidden": topic_id % 13 == 7, "created_at": iso(created), "last_replied_to_at": iso(created),
        "post_count": 0,
    }
    count = 80 if topic_id == 2 else rng.randint(1, 30)  # topic 2 spans several pages
    when = created
    posts = []
    for position in range(count):
        when = min(when + timedelta(minutes=rng.randint(1, 3000)), END)
        posts.append(_reply(ds, rng, first_post_id + position, topic, position, users, when))
    topic["post_count"] = count
    topic["last_replied_to_at"] = iso(when)
    if not topic["hidden"]:
        forum["topic_count"] += 1
        forum["post_count"] += count
    return topic, posts


def _reply(ds: Dataset, rng: random.Random, post_id: int, topic: Record, position: int, users: Sequence[int],
           when: datetime) -> Record:
    author = None if rng.random() < 0.1 else rng.choice(users)
    post = make_post(ds, rng, post_id, topic, position, author, iso(when))
    roll = rng.random()
    if roll < 0.04 and position:
        post.update(hidden_from_users=True, deletion_reason="Off topic")
    elif roll < 0.06 and position:
        post.update(destroyed_content=True, hidden_from_users=True)
    elif roll < 0.12:
        edited = when + timedelta(minutes=5)
        post.update(edited_at=iso(edited), updated_at=iso(edited), edit_reason=None)
    return post


def forum_of(forums: dict[str, Record], topic_id: int) -> Record:
    """Topics go round the forums in turn."""
    shorts = [f[0] for f in FORUMS]
    return forums[shorts[(topic_id - 1) % len(shorts)]]


def _forums(ds: Dataset, rng: random.Random, n_topics: int) -> None:
    users = active_users(ds)
    ds.forums.update(make_forums())
    used_slugs: set[tuple[str, str]] = set()
    post_id = 1
    for topic_id in range(1, n_topics + 1):
        topic, posts = make_topic(ds, rng, topic_id, forum_of(ds.forums, topic_id), used_slugs, users, post_id)
        ds.topics[topic_id] = topic
        ds.posts.update((post["id"], post) for post in posts)
        post_id += len(posts)


def make_gallery(rng: random.Random, gallery_id: int, user_id: int, visible: Sequence[int]) -> Record:
    """A gallery of 1 to 40 of the ``visible`` images, made by ``user_id``."""
    images = rng.sample(visible, min(len(visible), rng.randint(1, 40)))
    created = _date_between(rng, START, END)
    return {
        "id": gallery_id,
        "title": (_sentence(rng, rng.randint(1, 4)).rstrip(".") + ("" if gallery_id % 6 else " 🎨"))[:100],
        "description": "" if rng.random() < 0.3 else _text(rng, visible),
        "spoiler_warning": rng.choice(["", "", "", "grimdark", "contains spoilers"]),
        "thumbnail_id": images[0] if images else None,
        "user_id": user_id,
        "image_ids": images,
        "subscriber_count": rng.randint(0, 40),
        "created_at": iso(created),
        "updated_at": iso(min(created + timedelta(days=rng.randint(0, 300)), END)),
    }


def _galleries(ds: Dataset, rng: random.Random, n: int) -> None:
    visible = sorted(i for i, im in ds.images.items() if not im["hidden_from_users"])
    users = active_users(ds)
    key_user = next(iter(ds.api_keys.values()))
    for gallery_id in range(1, n + 1):
        user_id = key_user if gallery_id == 1 else rng.choice(users)
        ds.galleries[gallery_id] = make_gallery(rng, gallery_id, user_id, visible)


def make_filters(ds: Dataset, rng: random.Random) -> None:
    """The system filters (``Default`` among them) and some users' own, public or not."""
    def ids(*names: str) -> list[int]:
        return [ds.tag_by_name(n)["id"] for n in names]

    system = [
        ("Default", "The site's default filter: hides explicit and grotesque content.",
         ids("explicit", "grotesque"), ids("questionable", "semi-grimdark", "grimdark"), "", "score.lt:-5"),
        ("Everything", "This filter won't filter anything out at all - that means NSFW content!",
         [], [], None, None),
        ("18+ Dark", "Shows everything, spoilers grotesque", [], ids("grotesque"), "", ""),
        ("Maximum Spoilers", "Spoilers everything that is not safe", [], ids("suggestive", "questionable",
                                                                            "explicit", "grimdark"),
         "", "score.lt:0"),
    ]
    filter_id = 1
    for name, description, hidden, spoilered, hidden_complex, spoilered_complex in system:
        ds.filters[filter_id] = {
            "id": filter_id, "name": name, "description": description, "public": False, "system": True,
            "user_count": rng.randint(1000, 90000), "user_id": None, "hidden_tag_ids": hidden,
            "spoilered_tag_ids": spoilered, "hidden_complex": hidden_complex,
            "spoilered_complex": spoilered_complex, "created_at": iso(START),
        }
        filter_id += 1
    key_user = next(iter(ds.api_keys.values()))
    owners = [key_user, key_user] + sorted(ds.users)[: max(2, len(ds.users) // 3)]
    for i, owner in enumerate(owners):
        hidden = rng.sample(sorted(ds.tags), rng.randint(0, 4))
        ds.filters[filter_id] = {
            "id": filter_id, "name": f"{ds.users[owner]['name']}'s filter {i}",
            "description": _sentence(rng, 5), "public": i % 2 == 1, "system": False,
            "user_count": rng.randint(0, 30), "user_id": owner, "hidden_tag_ids": sorted(hidden),
            "spoilered_tag_ids": [], "hidden_complex": rng.choice(["", None, "score.lt:0", "rarity, explicit"]),
            "spoilered_complex": rng.choice(["", None]),
            "created_at": iso(_date_between(rng, START, END)),
        }
        filter_id += 1


def _interactions(ds: Dataset, rng: random.Random) -> None:
    key_user = next(iter(ds.api_keys.values()))
    visible = sorted(i for i, im in ds.images.items() if not im["hidden_from_users"])
    for image_id in rng.sample(visible, min(len(visible), 12)):
        kind = rng.choice(["faved", "voted", "voted", "hidden"])
        value = rng.choice(["up", "down"]) if kind == "voted" else ""
        ds.interactions.append({"image_id": image_id, "user_id": key_user, "interaction_type": kind,
                                "value": value})
    for image_id in visible[:: max(1, len(visible) // 8)][:8]:
        ds.features.append({"image_id": image_id,
                            "created_at": iso(parse_iso(ds.images[image_id]["created_at"]) + timedelta(days=1))})


ACTIVITY = {"uploads_count": "uploader_id", "comments_count": "user_id", "posts_count": "user_id",
            "topics_count": "user_id"}


def zero_counts(users: dict[int, Record]) -> None:
    for user in users.values():
        user.update(dict.fromkeys(ACTIVITY, 0))


def count_activity(users: dict[int, Record], kind: str, records: Iterable[Record]) -> None:
    """Add ``records`` (uploads, comments, posts or topics) to their authors' ``kind`` counter."""
    field = ACTIVITY[kind]
    for record in records:
        if record.get(field) in users:
            users[record[field]][kind] += 1


def _counts(ds: Dataset) -> None:
    """Per-user counters shown on profiles."""
    zero_counts(ds.users)
    for kind, records in (("uploads_count", ds.images), ("comments_count", ds.comments), ("posts_count", ds.posts),
                          ("topics_count", ds.topics)):
        count_activity(ds.users, kind, records.values())


def make_vocabulary(ds: Dataset, rng: random.Random, *, artists: int, users: int) -> dict[str, list[str]]:
    """The tags (with ``artists`` artist tags) and ``users`` accounts, the test key's owner among
    them; returns the tag names images draw from."""
    vocab = _make_tags(ds, rng, n_artists=artists)
    _users(ds, rng, users, vocab["artists"])
    return vocab


def populate(ds: Dataset, rng: random.Random, images: int) -> None:
    """Fill an empty dataset with a whole board of `images` images."""
    vocab = make_vocabulary(ds, rng, artists=max(5, images // 8), users=max(12, images // 8))
    _images(ds, rng, images, vocab)
    _comments(ds, rng, images * 3 // 2)
    _forums(ds, rng, max(8, images // 12))
    _galleries(ds, rng, max(3, images // 20))
    make_filters(ds, rng)
    _interactions(ds, rng)
    _counts(ds)
    ds.invalidate()
