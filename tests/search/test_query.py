from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pytest

from mirror.search.query import (
    COMMENT_FIELDS,
    FILTER_FIELDS,
    GALLERY_FIELDS,
    IMAGE_FIELDS,
    POST_FIELDS,
    TAG_FIELDS,
    And,
    FieldSpec,
    MatchAll,
    MatchNone,
    Not,
    Or,
    QueryError,
    Term,
    clean_tag_name,
    parse_query,
)

from ..support.search_oracle import matches

UTC = timezone.utc
NOW = datetime(2024, 6, 15, 12, 0, 0, tzinfo=UTC)


def q(query, spec=IMAGE_FIELDS, now=NOW):
    return parse_query(query, spec, now=now)


def tag(name):
    return Term("tags", "term", name)


def img(*tags, **fields):
    return {"tags": list(tags), **fields}


def hits(query, docs, spec=IMAGE_FIELDS):
    node = q(query, spec)
    return [i for i, d in enumerate(docs) if matches(node, d)]


def error(query, spec=IMAGE_FIELDS):
    with pytest.raises(QueryError) as info:
        q(query, spec)
    return str(info.value)


# -- tokens and structure ------------------------------------------------------------------------

def test_star_alone_matches_everything_and_empty_matches_nothing():
    assert q("*") == MatchAll()
    assert q("***") == MatchAll()
    assert matches(q("*"), {})
    assert q("") == MatchNone()
    assert q("   ") == MatchNone()
    assert not matches(q(""), img("safe"))


def test_bare_terms_with_spaces_are_one_term():
    assert q("pinkie pie") == tag("pinkie pie")
    assert q("  Pinkie   Pie  ") == tag("pinkie pie")
    assert q("safe -pony") == tag("safe -pony")  # "-" only negates where a token starts
    assert q("a NOT b") == tag("a not b")


def test_precedence_from_reference():
    assert q("a OR b, c") == q("a OR (b AND c)") == Or((tag("a"), And((tag("b"), tag("c")))))
    assert q("NOT a, b") == q("(NOT a) AND b") == And((Not(tag("a")), tag("b")))
    assert q("a || b && c") == q("a OR (b, c)")
    assert q("(a OR b), c") == And((Or((tag("a"), tag("b"))), tag("c")))
    assert q("a,b,c") == And((tag("a"), tag("b"), tag("c")))


def test_operators_and_negation_forms():
    docs = [img("a", "b"), img("a"), img("b"), img()]
    assert hits("a AND b", docs) == [0]
    assert hits("a && b", docs) == [0]
    assert hits("a,b", docs) == [0]
    assert hits("a OR b", docs) == [0, 1, 2]
    assert hits("a || b", docs) == [0, 1, 2]
    assert hits("NOT a", docs) == [2, 3]
    assert hits("!a", docs) == [2, 3]
    assert hits("-a", docs) == [2, 3]
    assert hits("-(a OR b)", docs) == [3]
    assert q("-(-a)") == tag("a")  # double negation collapses


def test_spaced_operators_need_whitespace():
    assert q("aANDb") == tag("aandb")
    assert q("a&&b") == tag("a&&b")
    assert q("a||b") == tag("a||b")
    assert q("NOTHING") == tag("nothing")


def test_semi_grimdark_and_automatic_parentheses():
    assert q("semi-grimdark") == tag("semi-grimdark")
    assert q("foo (bar)") == tag("foo (bar)")
    assert q("(foo (bar))") == tag("foo (bar)")
    assert q("(safe), foo (bar)") == And((tag("safe"), tag("foo (bar)")))
    assert hits("fluttershy (character)", [img("fluttershy (character)"), img("fluttershy")]) == [0]


def test_quoted_terms_and_escapes():
    assert q('"a, b"') == tag("a, b")
    assert q('"say \\"hi\\""') == tag('say "hi"')
    # the lexer turns \\ into \, then the literal parser reads "\x" as an escaped x
    assert q(r'"back\\slash"') == tag("backslash")
    assert q(r'"back\\\\slash"') == tag("back\\slash")
    assert q(r"a\,b") == tag("a,b")
    assert q(r"a\(b") == tag("a(b")
    assert q(r"foo\*") == tag("foo*")
    assert q('"a" OR "b"') == Or((tag("a"), tag("b")))


def test_boost_is_parsed_and_ignored():
    assert q("a^2") == tag("a")
    assert q("a ^1.5, b") == And((tag("a"), tag("b")))
    assert q("(a OR b)^3") == Or((tag("a"), tag("b")))
    assert q("a^b") == tag("a^b")
    assert error("a^-1") == "Boost value must be non-negative."


# -- fields ----------------------------------------------------------------------------------------

def test_field_detection_only_for_known_names():
    assert q("artist:foo") == tag("artist:foo")
    assert q("id:5") == Term("id", "compare", ("eq", 5))
    assert q('"id:5"') == Term("id", "compare", ("eq", 5))  # quoting does not stop detection
    assert q(r"id\:5") == tag("id:5")  # escaping the colon does
    assert q("ID:5") == tag("id:5")  # field names are case-sensitive
    assert q("id.foo:5") == tag("id.foo:5")
    assert q("id:  5 ") == Term("id", "compare", ("eq", 5))  # values are trimmed
    assert q("tags:safe") == tag("tags:safe")  # the default field is not a named field


def test_aliases_map_to_doc_keys():
    assert hits("faved_by:Alice", [{"favourited_by_users": ["alice", "bob"]}, {}]) == [0]
    assert hits("faved_by_id:7", [{"favourited_by_user_ids": [1, 7]}, {"favourited_by_user_ids": [2]}]) == [0]
    assert hits("user:carol", [{"creator": "carol"}, {"creator": "dave"}], GALLERY_FIELDS) == [0]


def test_integer_ranges_each_operator():
    docs = [{"id": n} for n in range(6)]
    assert hits("id:3", docs) == [3]
    assert hits("id.eq:3", docs) == [3]
    assert hits("id.gt:3", docs) == [4, 5]
    assert hits("id.gte:3", docs) == [3, 4, 5]
    assert hits("id.lt:3", docs) == [0, 1, 2]
    assert hits("id.lte:3", docs) == [0, 1, 2, 3]
    assert hits("id:3~1", docs) == [2, 3, 4]
    assert hits("id.gt:-1", docs) == [0, 1, 2, 3, 4, 5]
    assert hits("id.gte:+2, id.lt:4", docs) == [2, 3]
    assert q("id:99999999999") == Term("id", "compare", ("eq", 2_147_483_647))


def test_numeric_errors():
    assert error("id.gt:5~2") == "multiple ranges specified for id"
    assert error("id:x").startswith("expected a signed integer, like `3' or `-10'")
    assert error("score.lte:1.5").startswith("expected a signed integer")
    assert error("uploader_id.gt:5") == "range specified for uploader_id"
    assert error("uploader_id:-5").startswith("expected a numeric value")
    assert error("aspect_ratio:wide").startswith("expected a real number")


def test_float_fields():
    docs = [{"aspect_ratio": 1.0}, {"aspect_ratio": 1.5}, {"aspect_ratio": 2}]
    assert hits("aspect_ratio:1.5", docs) == [1]
    assert hits("aspect_ratio.gt:1.2", docs) == [1, 2]
    assert hits("aspect_ratio.lte:-0.5", docs) == []
    assert hits("aspect_ratio:1.4~0.2", docs) == [1]
    assert error("aspect_ratio.lt:1~1") == "multiple ranges specified for aspect_ratio"


def test_boolean_fields():
    docs = [{"animated": True}, {"animated": False}, {}]
    assert hits("animated:true", docs) == [0]
    assert hits("animated:false", docs) == [1]
    assert hits("-animated:true", docs) == [1, 2]
    assert error("animated.gt:true") == "range specified for animated"
    assert error("animated:yes").startswith("expected a boolean")


def test_missing_field_never_matches_positive_term():
    assert hits("score.gte:0", [{"score": None}, {}, {"score": 0}]) == [2]
    assert hits("-score.gte:0", [{"score": None}, {}, {"score": 0}]) == [0, 1]
    assert hits("score:5", [{"score": "5"}, {"score": True}]) == []


# -- dates -------------------------------------------------------------------------------------------

def d(*args):
    return {"created_at": datetime(*args, tzinfo=UTC)}


def test_absolute_date_intervals_and_operators():
    docs = [d(2019, 12, 31, 23, 59, 59), d(2020, 1, 1), d(2020, 6, 1), d(2020, 12, 31, 23, 59, 59),
            d(2021, 1, 1), d(2021, 1, 1, 0, 0, 1)]
    assert hits("created_at:2020", docs) == [1, 2, 3]
    assert hits("created_at.eq:2020", docs) == [1, 2, 3]
    assert hits("created_at.gt:2020", docs) == [5]  # > upper (2021-01-01T00:00:00Z)
    assert hits("created_at.lte:2020", docs) == [0, 1, 2, 3, 4]  # <= upper
    assert hits("created_at.gte:2020", docs) == [1, 2, 3, 4, 5]  # >= lower
    assert hits("created_at.lt:2020", docs) == [0]  # < lower
    assert hits("created_at:2020-06", docs) == [2]
    assert hits("created_at:2020-12-31", docs) == [3]
    assert hits("created_at:2020-12-31T23", docs) == [3]
    assert hits("created_at:2020-12-31 23:59", docs) == [3]
    assert hits("created_at:2020-12-31t23:59:59", docs) == [3]
    assert hits("created_at:2020-12-31T23:59:58", docs) == []


def test_date_precision_month_and_leap_year():
    node = q("created_at:2020-02")
    assert matches(node, d(2020, 2, 29, 12))
    assert not matches(node, d(2020, 3, 1))
    assert matches(q("created_at:2020-12"), d(2020, 12, 31, 23))


def test_date_time_zones():
    # 2020-01-01T05+05:00 is 2020-01-01T00:00Z .. 01:00Z
    node = q("created_at:2020-01-01T05+05:00")
    assert matches(node, d(2020, 1, 1, 0, 30))
    assert not matches(node, d(2020, 1, 1, 5, 30))
    assert matches(q("created_at:2020-01-01T00-02"), d(2020, 1, 1, 2, 30))
    assert q("created_at:2020-01-01T00:00:00Z") == q("created_at:2020-01-01T00:00:00")
    assert q("created_at:2020z") == q("created_at:2020")


def test_relative_dates():
    now = NOW
    node = q("created_at:3 days ago")  # [now-4d, now-3d)
    assert matches(node, {"created_at": now - timedelta(days=3, hours=12)})
    assert not matches(node, {"created_at": now - timedelta(days=2)})
    assert not matches(node, {"created_at": now - timedelta(days=5)})
    gte = q("created_at.gte:3 days ago")  # >= now - 4 days
    assert matches(gte, {"created_at": now - timedelta(days=3, hours=23)})
    assert not matches(gte, {"created_at": now - timedelta(days=4, seconds=1)})
    assert matches(q("created_at.gt:1 hour ago"), {"created_at": now - timedelta(minutes=30)})
    assert not matches(q("created_at.gt:1 hour ago"), {"created_at": now - timedelta(minutes=90)})
    assert q("created_at.lte:2 weeks ago") == Term("created_at", "compare", ("lte", now - timedelta(weeks=2)))
    assert q("created_at.lt:1 month ago") == Term("created_at", "compare", ("lt", now - timedelta(days=60)))
    assert q("created_at.gte:1 years ago") == Term("created_at", "compare", ("gte", now - timedelta(days=730)))


def test_relative_dates_default_to_current_time():
    node = parse_query("created_at.gte:1 minute ago", IMAGE_FIELDS)
    assert matches(node, {"created_at": datetime.now(UTC)})


def test_date_errors():
    assert error("created_at:2020-13") == "invalid date format in input, parsed as 2020, 13"
    assert error("created_at:2021-02-29") == "invalid date format in input, parsed as 2021, 2, 29"
    assert error("created_at:2020-01-01T25+05:30") == (
        "invalid date format in input, parsed as 2020, 1, 1, 25, +, 5, 30")
    assert error("created_at:a week ago").startswith("expected a RFC3339 datetime fragment")
    assert error("created_at:3  days ago").startswith("expected a RFC3339 datetime fragment")
    assert error("created_at:2020-1").startswith("expected a RFC3339 datetime fragment")
    assert "over a millennium ago" in error("created_at:1001 years ago")
    assert error("created_at.gt:2020~1").startswith("expected")


# -- literal / ngram values -----------------------------------------------------------------------

def test_wildcards_in_literal_values():
    docs = [img("pinkie pie"), img("pinkamena"), img("pinkie"), img("twilight")]
    assert hits("pink*", docs) == [0, 1, 2]
    assert hits("pink**a", docs) == [1]
    assert hits("pinki? pie", docs) == [0]
    assert hits("*pie", docs) == [0]
    assert hits("PINK*", docs) == [0, 1, 2]
    assert hits(r"pink\*", [img("pink*"), img("pinkie")]) == [0]
    assert hits(r"pink\**", [img("pink*s"), img("pinkie")]) == [0]
    assert hits("sha512_hash:ab*", [{"sha512_hash": "ABCD"}, {"sha512_hash": "cd"}]) == [0]
    assert error("faved_by.gt:x") == "range specified for faved_by"


def test_fuzzy_terms():
    docs = [img("twilight sparkle"), img("twilight sparkel"), img("twilight")]
    assert hits("twilight sparkle~1", docs) == [0, 1]
    assert hits("twilight sparkle~0.5", docs) == [0]  # under 1 means exact
    assert hits("twilight sparkle~", [img("twilight sparkle~")]) == [0]


def test_list_valued_literal_field_matches_any_element():
    docs = [img("safe", "pony", "twilight sparkle"), img("safe"), img("suggestive", "pony")]
    assert hits("pony", docs) == [0, 2]
    assert hits("safe, pony", docs) == [0]
    assert hits("safe OR suggestive", docs) == [0, 1, 2]
    assert hits("-pony", docs) == [1]


def test_default_field_uses_clean_tag_name():
    assert q("Twilight_Sparkle") == tag("twilight sparkle")
    assert q("artist:some_artist") == tag("artist:some_artist")
    assert q("artist:  Foo") == tag("artist:foo")
    assert q("rainbow dash’s cutie mark") == tag("rainbow dash's cutie mark")


def test_no_downcase_fields():
    assert hits("file_name:IMG_01.png", [{"file_name": "IMG_01.png"}, {"file_name": "img_01.png"}]) == [0]
    assert hits("uploader:Alice", [{"uploader": "alice"}, {"uploader": "Alice"}]) == [0, 1]


def test_ngram_fields_substring_case_insensitive():
    docs = [{"description": "A Pony on the MOON"}, {"description": "sun"}, {}]
    assert hits("description:on the moon", docs) == [0]
    assert hits("description:PONY", docs) == [0]
    assert hits("description:su*", docs) == [1]
    assert hits("description:*", docs) == [0, 1, 2]
    assert error("description.gt:a") == "range specified for description"
    comments = [{"body": "Great picture!"}, {"body": "meh"}]
    assert hits("great pic", comments, COMMENT_FIELDS) == [0]
    assert hits("body:MEH", comments, COMMENT_FIELDS) == [1]
    assert hits("my:comments", [{"body": "see my:comments"}], COMMENT_FIELDS) == [0]


def test_gallery_id_custom_field():
    docs = [{"gallery_id": [1, 5]}, {"gallery_id": []}, {"gallery_id": [5]}, {}]
    assert hits("gallery_id:5", docs) == [0, 2]
    assert hits("-gallery_id:5", docs) == [1, 3]
    assert error("gallery_id:x") == "Invalid gallery `x'."
    assert error("gallery_id:-1") == "Invalid gallery `-1'."
    assert error("gallery_id.gt:1") == "range specified for gallery_id"


def test_custom_field_transform_hook():
    spec = replace(IMAGE_FIELDS, custom=IMAGE_FIELDS.custom | {"filter_id"})
    node = parse_query("filter_id:1", spec, transforms={"filter_id": lambda v: Not(tag("grimdark"))})
    assert matches(node, img("safe")) and not matches(node, img("grimdark"))


# -- errors ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("query", [")", "(a", "((a)", "(a OR b", "a, (b"])
def test_imbalanced_parentheses(query):
    assert error(query) == "Imbalanced parentheses."


def test_other_parse_errors():
    assert error("a OR ") == "Expected a term."
    assert q("a OR") == tag("a or")  # OR needs whitespace on both sides
    assert error("a,") == "Expected a term."
    assert error(",a") == "Expected a term."
    assert error("(") == "Expected a term."
    assert error("--a") == "Expected a term."
    assert error("a)") == "junk at end of expression: )"
    assert error('"a" "b"') == "junk at end of expression: b"
    with pytest.raises(QueryError, match="search query is not a string"):
        parse_query(5, IMAGE_FIELDS)  # type: ignore[arg-type]


# -- specs and helpers ----------------------------------------------------------------------------

def test_clean_tag_name():
    assert clean_tag_name("  Twilight\u00a0\u00a0Sparkle ") == "twilight sparkle"
    assert clean_tag_name("oc:my_oc") == "oc:my_oc"
    assert clean_tag_name("commissioner:a_b") == "commissioner:a_b"
    assert clean_tag_name("ARTIST :  Foo_Bar") == "artist:foo_bar"
    assert clean_tag_name("unknown :  x_y") == "unknown : x y"
    assert clean_tag_name("“quoted”") == '"quoted"'
    assert clean_tag_name("semi_grimdark") == "semi grimdark"


def test_specs_for_other_indexes():
    assert hits("name:safe*", [{"name": "safe"}, {"name": "suggestive"}], TAG_FIELDS) == [0]
    assert hits("implies:pony", [{"implied_tags": ["pony"]}, {"implied_tags": []}], TAG_FIELDS) == [0]
    assert hits("images.gt:10", [{"images": 11}, {"images": 10}], TAG_FIELDS) == [0]
    assert hits("Default", [{"name": "default"}, {"name": "everything"}], FILTER_FIELDS) == [0]
    assert hits("system:true", [{"system": True}, {"system": False}], FILTER_FIELDS) == [0]
    assert hits("My Gallery", [{"title": "my gallery"}], GALLERY_FIELDS) == [0]
    assert hits("user_id:3", [{"creator_id": 3}], GALLERY_FIELDS) == [0]
    assert hits("subject:hello", [{"subject": "Hello world", "body": "x"}], POST_FIELDS) == [0]
    assert hits("forum:Dis", [{"forum": "dis"}], POST_FIELDS) == [0]
    assert hits("image.tags:safe", [{"image.tags": ["safe"]}], COMMENT_FIELDS) == [0]


def test_minimal_custom_spec():
    spec = FieldSpec(default="title", integer=frozenset({"n"}))
    assert hits("n.gte:2 OR hello", [{"n": 1, "title": "Hello"}, {"n": 3}, {"n": 1}], spec) == [0, 1]


def test_specs_are_hashable_and_deep_nesting_is_an_error():
    assert len({IMAGE_FIELDS, TAG_FIELDS, IMAGE_FIELDS}) == 2
    assert q("(" * 50 + "a" + ")" * 50) == tag("a")
    assert error("(" * 5000 + "a" + ")" * 5000) == "query is nested too deeply"
