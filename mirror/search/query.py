"""Philomena search query language: tokenizer, recursive-descent parser and field tables.

Behaviour follows section 6 of the Philomena API reference (lexer.ex, parser.ex,
term_range_parser.ex, literal/int/float/date/bool parsers).  ``parse_query`` turns a query string
into a tree of :class:`Node` objects, which :mod:`mirror.search.compile` turns into SQL.

Grammar (lowest precedence first)::

    or    := and (OR or)?
    and   := boost (AND and)?          -- ",", " AND ", " && "
    boost := not ("^" number)?         -- boosts are checked and then ignored
    not   := NOT group | group         -- "NOT ", "!", "-"
    group := "(" or ")" | term

Differences from Philomena, which compiles queries to OpenSearch rather than to SQL:
boosts are ignored; an escaped ``\\*``/``\\?`` inside a wildcard value stays literal (Philomena
drops the backslash, making it a wildcard); fuzzy terms use edit distance ``min(2, int(fuzz))``
(below 1 means exact); ngram (match_phrase) fields match a case-insensitive substring, and their
wildcards match any whitespace-separated word; ip fields, ``my:`` and ``filter_id:`` need a
``transforms=`` callback (see :func:`parse_query`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from ..philomena import QUERY_NAMESPACES

__all__ = [
    "FieldSpec", "QueryError", "Node", "MatchAll", "MatchNone", "And", "Or", "Not", "Term",
    "parse_query", "clean_tag_name",
    "IMAGE_FIELDS", "COMMENT_FIELDS", "POST_FIELDS", "GALLERY_FIELDS", "TAG_FIELDS",
    "FILTER_FIELDS",
]


class QueryError(Exception):
    """A query that Philomena would reject; ``str(e)`` is the user-facing message."""


@dataclass(frozen=True)
class FieldSpec:
    default: str
    literal: frozenset[str] = frozenset()
    no_downcase: frozenset[str] = frozenset()
    integer: frozenset[str] = frozenset()
    float: frozenset[str] = frozenset()
    date: frozenset[str] = frozenset()
    boolean: frozenset[str] = frozenset()
    ngram: frozenset[str] = frozenset()
    custom: frozenset[str] = frozenset()
    aliases: Mapping[str, str] = field(default_factory=dict, hash=False)  # keeps specs hashable
    normalize_default: Callable[[str], str] | None = None
    # Unsigned integers without ranges or fuzz (Philomena's "numeric" fields).
    numeric: frozenset[str] = frozenset()


# --------------------------------------------------------------------------------------------
# Evaluation tree
# --------------------------------------------------------------------------------------------

class Node:
    """A node of a parsed query; :mod:`mirror.search.compile` turns a tree of them into SQL."""


@dataclass(frozen=True)
class MatchAll(Node):
    pass


@dataclass(frozen=True)
class MatchNone(Node):
    pass


@dataclass(frozen=True)
class And(Node):
    children: tuple[Node, ...]


@dataclass(frozen=True)
class Or(Node):
    children: tuple[Node, ...]


@dataclass(frozen=True)
class Not(Node):
    child: Node


@dataclass(frozen=True)
class Term(Node):
    """One leaf query against ``doc[field]``.

    kind / value:
      - "term":     value is a str (exact; doc strings downcased first when ``fold``)
      - "wildcard": value is a wildcard pattern (``*``, ``?``; escaped ones as stand-ins, see
                    :func:`wildcard_regex`) matched in full
      - "fuzzy":    value is (str, max edit distance)
      - "phrase":   value is a downcased str, matched as a substring of the downcased doc text
      - "phrase_wildcard": value is a wildcard pattern matched against any word of the doc text
      - "compare":  value is (op, bound) for numbers, bools and datetimes
      - "between":  value is (lower, upper, upper_inclusive)
    A list-valued field matches if any element matches; a missing field or None never matches.
    """

    field: str
    kind: str
    value: Any
    fold: bool = True


def edit_distance(a: str, b: str, limit: int) -> int:
    """Optimal-string-alignment distance (Levenshtein plus adjacent transpositions)."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        prev2, prev = prev, cur
    return prev[-1]


def _and(left: Node, right: Node) -> Node:
    parts = [*(left.children if isinstance(left, And) else (left,)),
             *(right.children if isinstance(right, And) else (right,))]
    return And(tuple(parts))


def _or(left: Node, right: Node) -> Node:
    parts = [*(left.children if isinstance(left, Or) else (left,)),
             *(right.children if isinstance(right, Or) else (right,))]
    return Or(tuple(parts))


def _negate(node: Node) -> Node:
    return node.child if isinstance(node, Not) else Not(node)


# --------------------------------------------------------------------------------------------
# Tokenizer (lexer.ex)
# --------------------------------------------------------------------------------------------

_WS = " \t\n\r\v\f"
_WS_CLASS = "[ \\t\\n\\r\\v\\f]"
_SPACED_OP = re.compile(f"{_WS_CLASS}+(AND|&&|OR|\\|\\|){_WS_CLASS}+")
_NOT_WORD = re.compile(f"NOT{_WS_CLASS}+")
_BOOST = re.compile(r"\^([-+]?[0-9]+(?:\.[0-9]+)?)")
_SPACES_THEN = re.compile(f"{_WS_CLASS}*(\\)|\\^[-+]?[0-9])")


@dataclass(frozen=True)
class _Token:
    kind: str  # "and" | "or" | "not" | "lparen" | "rparen" | "boost" | "term"
    text: str  # as shown in "junk at end of expression"
    value: Any = None


def _at_stop(s: str, i: int) -> bool:
    """True where an unquoted term must end: ",", spaced AND/OR, [spaces] ")" or [spaces] boost."""
    return (s.startswith(",", i) or _SPACED_OP.match(s, i) is not None
            or _SPACES_THEN.match(s, i) is not None)


def _scan_text(s: str, i: int) -> int | None:
    """Scan an unquoted term from ``i``; balanced (...) stays inside.  Returns the end or None."""
    start = i
    while i < len(s) and not _at_stop(s, i):
        c = s[i]
        if c == "\\" and i + 1 < len(s):
            i += 2
        elif c == "(":
            inner = _scan_text(s, i + 1)
            if inner is None or not s.startswith(")", inner):
                break
            i = inner + 1
        elif c == ")":
            break
        else:
            i += 1
    return i if i > start else None


def _scan_quoted(s: str, i: int) -> tuple[str, int] | None:
    """Scan a quoted term starting at the opening quote; None if it is never closed."""
    out: list[str] = []
    i += 1
    while i < len(s):
        c = s[i]
        if c == '"':
            return "".join(out), i + 1
        if c == "\\" and i + 1 < len(s):
            nxt = s[i + 1]
            out.append(nxt if nxt in '"\\' else c + nxt)
            i += 2
        else:
            out.append(c)
            i += 1
    return None


def _tokenize(s: str) -> list[_Token]:
    tokens: list[_Token] = []
    i = 0
    while i < len(s):
        c = s[i]
        if c == ",":
            tokens.append(_Token("and", ","))
            i += 1
        elif c in "!-":
            tokens.append(_Token("not", c))
            i += 1
        elif m := _SPACED_OP.match(s, i):
            kind = "and" if m.group(1) in ("AND", "&&") else "or"
            tokens.append(_Token(kind, m.group(1)))
            i = m.end()
        elif m := _NOT_WORD.match(s, i):
            tokens.append(_Token("not", "NOT"))
            i = m.end()
        elif c in "()":
            tokens.append(_Token("lparen" if c == "(" else "rparen", c))
            i += 1
        elif m := _BOOST.match(s, i):
            tokens.append(_Token("boost", m.group(1), float(m.group(1))))
            i = m.end()
        elif c in _WS:
            i += 1
        else:
            quoted = _scan_quoted(s, i) if c == '"' else None
            if quoted is not None:
                text, i = quoted
            else:
                end = _scan_text(s, i)
                if end is None:  # not reachable for well-formed input; kept as a guard
                    raise QueryError(f"expected end of string, starting at: {s[i:]}")
                text, i = s[i:end], end
            tokens.append(_Token("term", text, text))
    return tokens


# --------------------------------------------------------------------------------------------
# Value parsers (literal_parser.ex, int_parser.ex, float_parser.ex, bool_parser.ex, date_parser.ex)
# --------------------------------------------------------------------------------------------

_FUZZ = re.compile(r"~([0-9]+(?:\.[0-9]+)?)")
# Stand-ins for escaped "*" and "?" inside a wildcard value, so normalisation cannot touch them.
LIT_STAR, LIT_QMARK = "\ue000", "\ue001"


def _parse_literal(value: str) -> tuple[str, str, float | None]:
    """Return (mode, text, fuzz): mode "literal" (unescaped text) or "wildcard" (text keeps
    unescaped "*" / "?" as wildcards, escaped ones as stand-ins; runs of "*" merged)."""
    out: list[str] = []
    i = 0
    while i < len(value):
        if (m := _FUZZ.fullmatch(value, i)) is not None:
            return "literal", "".join(out), float(m.group(1))
        c = value[i]
        if c in "*?":
            break
        if c == "\\" and i + 1 < len(value):
            out.append(value[i + 1])
            i += 2
        else:
            out.append(c)
            i += 1
    else:
        return "literal", "".join(out), None

    out = []
    i = 0
    while i < len(value) and _FUZZ.fullmatch(value, i) is None:
        c = value[i]
        if c == "\\" and i + 1 < len(value):
            nxt = value[i + 1]
            out.append({"*": LIT_STAR, "?": LIT_QMARK}.get(nxt, nxt))
            i += 2
        elif c == "*":
            if not out or out[-1] != "*":
                out.append("*")
            i += 1
        else:
            out.append(c)
            i += 1
    return "wildcard", "".join(out), None


def wildcard_regex(pattern: str) -> str:
    """The regex source for a wildcard pattern as the parser leaves it in a Term."""
    parts = []
    for c in pattern:
        if c == "*":
            parts.append(".*")
        elif c == "?":
            parts.append(".")
        else:
            parts.append(re.escape({LIT_STAR: "*", LIT_QMARK: "?"}.get(c, c)))
    return "".join(parts)


_INT_MIN, _INT_MAX = -2_147_483_648, 2_147_483_647
_INT_RE = re.compile(f"([-+]?[0-9]+)(?:~([0-9]+))?{_WS_CLASS}*")
_FLOAT_NUM = r"[0-9]+(?:\.[0-9]+)?"
_FLOAT_RE = re.compile(f"([-+]?{_FLOAT_NUM})(?:~({_FLOAT_NUM}))?")
_BOOL_RE = re.compile(f"(true|false){_WS_CLASS}*")
_NUMERIC_RE = re.compile("[0-9]+")

_ABS_DATE = re.compile(
    r"([0-9]{4})(?:-([0-9]{2})(?:-([0-9]{2})(?:[Tt \t\n\r\v\f]"
    r"(?:([0-9]{2})(?::([0-9]{2})(?::([0-9]{2}))?)?)?)?)?)?"
    f"(?:([-+])([0-9]{{2}})(?::([0-9]{{2}}))?|[Zz])?{_WS_CLASS}*"
)
_REL_DATE = re.compile(
    f"([0-9]+){_WS_CLASS}(second|minute|hour|day|week|month|year)s? ago{_WS_CLASS}*"
)
_UNIT_SECONDS = {"second": 1, "minute": 60, "hour": 3_600, "day": 86_400, "week": 604_800,
                 "month": 2_592_000, "year": 31_536_000}
_MILLENNIUM_SECONDS = 31_536_000_000

_DATE_LABEL = ("a RFC3339 datetime fragment, like `2019-01-01', "
               "or relative date, like `3 days ago'")


def _expected(label: str, value: str) -> QueryError:
    return QueryError(f"expected {label}, starting at: {value}")


def _clamp_int(text: str) -> int:
    return max(_INT_MIN, min(_INT_MAX, int(text)))


def _parse_date(value: str, now: datetime) -> tuple[datetime, datetime]:
    """Return the [lower, upper) interval a date value covers."""
    if (m := _ABS_DATE.fullmatch(value)) is not None:
        parts = [int(g) for g in m.groups()[:6] if g is not None]
        tz = [g if i == 0 else int(g) for i, g in enumerate(m.groups()[6:]) if g is not None]
        try:
            return _absolute_interval(parts, tz)
        except (ValueError, OverflowError):
            shown = ", ".join(str(p) for p in parts + tz)
            raise QueryError(f"invalid date format in input, parsed as {shown}") from None
    if (m := _REL_DATE.fullmatch(value)) is not None:
        count, scale = int(m.group(1)), _UNIT_SECONDS[m.group(2)]
        if count * scale > _MILLENNIUM_SECONDS:
            raise QueryError("invalid date format in input; requested time "
                             f"{count * scale} seconds is over a millennium ago")
        return (now - timedelta(seconds=(count + 1) * scale),
                now - timedelta(seconds=count * scale))
    raise _expected(_DATE_LABEL, value)


def _absolute_interval(parts: list[int], tz: list) -> tuple[datetime, datetime]:
    sign, tz_hour, tz_minute = (tz + [0])[:3] if tz else ["+", 0, 0]
    if tz_hour > 23 or tz_minute > 59:
        raise ValueError("bad offset")
    offset = timedelta(hours=tz_hour, minutes=tz_minute) * (-1 if sign == "-" else 1)
    year, month, day, hour, minute, second = parts + [1, 1, 0, 0, 0][len(parts) - 1:]
    lower = datetime(year, month, day, hour, minute, second, tzinfo=timezone(offset))
    if len(parts) == 1:
        upper = lower.replace(year=year + 1)
    elif len(parts) == 2:
        upper = (lower.replace(year=year + 1, month=1) if month == 12
                 else lower.replace(month=month + 1))
    else:
        upper = lower + timedelta(seconds=(86_400, 3_600, 60, 1)[len(parts) - 3])
    return lower.astimezone(timezone.utc), upper.astimezone(timezone.utc)


# --------------------------------------------------------------------------------------------
# Parser (parser.ex + term_range_parser.ex)
# --------------------------------------------------------------------------------------------

_RANGES = ("eq", "gt", "gte", "lt", "lte")


class _Parser:
    def __init__(self, tokens: list[_Token], spec: FieldSpec, now: datetime,
                 transforms: Mapping[str, Callable[[str], Node]]):
        self.tokens = tokens
        self.pos = 0
        self.spec = spec
        self.now = now
        self.transforms = transforms
        # Later kinds win when a name is listed twice, as in Parser.new/1.
        self.fields: dict[str, str] = {}
        for kind in ("boolean", "date", "float", "integer", "numeric", "literal", "ngram",
                     "custom"):
            for name in getattr(spec, kind):
                self.fields[name] = kind

    # -- grammar ------------------------------------------------------------------------------

    def peek(self) -> str | None:
        return self.tokens[self.pos].kind if self.pos < len(self.tokens) else None

    def parse(self) -> Node:
        node = self.parse_or()
        if self.pos < len(self.tokens):
            junk = "".join(t.text for t in self.tokens[self.pos:])
            raise QueryError(f"junk at end of expression: {junk}")
        return node

    def parse_or(self) -> Node:
        left = self.parse_and()
        if self.peek() == "or":
            self.pos += 1
            return _or(left, self.parse_or())
        return left

    def parse_and(self) -> Node:
        left = self.parse_boost()
        if self.peek() == "and":
            self.pos += 1
            return _and(left, self.parse_and())
        return left

    def parse_boost(self) -> Node:
        child = self.parse_not()
        if self.peek() == "boost":
            if self.tokens[self.pos].value < 0:
                raise QueryError("Boost value must be non-negative.")
            self.pos += 1  # boosts only affect scoring, which an in-memory filter ignores
        return child

    def parse_not(self) -> Node:
        if self.peek() == "not":
            self.pos += 1
            return _negate(self.parse_group())
        return self.parse_group()

    def parse_group(self) -> Node:
        kind = self.peek()
        if kind == "lparen":
            self.pos += 1
            child = self.parse_or()
            if self.peek() != "rparen":
                raise QueryError("Imbalanced parentheses.")
            self.pos += 1
            return child
        if kind == "rparen":
            raise QueryError("Imbalanced parentheses.")
        if kind == "term":
            self.pos += 1
            return self.term(self.tokens[self.pos - 1].value)
        raise QueryError("Expected a term.")

    # -- terms ---------------------------------------------------------------------------------

    def split_field(self, text: str) -> tuple[str, str, str, str]:
        """(name, kind, range, value); unknown names fall back to the default field."""
        head, colon, rest = text.partition(":")
        if colon:
            name, dot, rng = head.rpartition(".")
            if head in self.fields:
                return head, self.fields[head], "eq", rest.strip()
            if dot and rng in _RANGES and name in self.fields:
                return name, self.fields[name], rng, rest.strip()
        default = self.spec.default
        return default, ("ngram" if default in self.spec.ngram else "literal"), "eq", text

    def term(self, text: str) -> Node:
        name, kind, rng, value = self.split_field(text)
        target = self.spec.aliases.get(name, name)

        if kind == "custom":
            if rng != "eq":
                raise QueryError(f"range specified for {name}")
            if name in self.transforms:
                return self.transforms[name](value)
            m = re.fullmatch(r"[-+]?[0-9]+", value)
            if m is None or int(value) < 0:
                label = name[:-3] if name.endswith("_id") else name
                raise QueryError(f"Invalid {label} `{value}'.")
            return Term(target, "compare", ("eq", int(value)))

        if kind in ("literal", "ngram"):
            return self.text_term(name, target, kind, rng, value)

        if kind == "boolean":
            if (m := _BOOL_RE.fullmatch(value)) is None:
                raise _expected("a boolean, like `true' or `false'", value)
            if rng != "eq":
                raise QueryError(f"range specified for {name}")
            return Term(target, "compare", ("eq", m.group(1) == "true"))

        if kind == "numeric":
            if _NUMERIC_RE.fullmatch(value) is None:
                raise _expected("a numeric value, like `3' or `10'", value)
            if rng != "eq":
                raise QueryError(f"range specified for {name}")
            return Term(target, "compare", ("eq", _clamp_int(value)))

        if kind in ("integer", "float"):
            if kind == "integer":
                m = _INT_RE.fullmatch(value)
                label, conv = "a signed integer, like `3' or `-10'", _clamp_int
            else:
                m = _FLOAT_RE.fullmatch(value)
                label, conv = "a real number, like `2.7182818' or `-10'", float
            if m is None:
                raise _expected(label, value)
            number = conv(m.group(1))
            if m.group(2) is None:
                return Term(target, "compare", (rng, number))
            if rng != "eq":
                raise QueryError(f"multiple ranges specified for {name}")
            fuzz = int(m.group(2)) if kind == "integer" else float(m.group(2))
            return Term(target, "between", (number - fuzz, number + fuzz, True))

        assert kind == "date", kind
        lower, upper = _parse_date(value, self.now)
        if rng == "eq":
            return Term(target, "between", (lower, upper, False))
        return Term(target, "compare", (rng, upper if rng in ("gt", "lte") else lower))

    def text_term(self, name: str, target: str, kind: str, rng: str, value: str) -> Node:
        mode, text, fuzz = _parse_literal(value)
        if rng != "eq":
            raise QueryError(f"range specified for {name}")
        if mode == "wildcard" and text == "*":
            return MatchAll()
        text = self.normalize(name, text)
        fold = name not in self.spec.no_downcase
        if kind == "ngram":
            if mode == "wildcard":
                return Term(target, "phrase_wildcard", text.lower())
            return Term(target, "phrase", text.lower())
        if mode == "wildcard":
            return Term(target, "wildcard", text, fold)
        if fuzz is not None and int(fuzz) >= 1:
            return Term(target, "fuzzy", (text, min(2, int(fuzz))), fold)
        return Term(target, "term", text, fold)

    def normalize(self, name: str, text: str) -> str:
        if name == self.spec.default and self.spec.normalize_default is not None:
            return self.spec.normalize_default(text)
        text = text.strip()
        return text if name in self.spec.no_downcase else text.lower()


def parse_query(q: str, spec: FieldSpec, *, now: datetime | None = None,
                transforms: Mapping[str, Callable[[str], Node]] | None = None) -> Node:
    """Parse a Philomena search query into an evaluable :class:`Node`.

    An empty query (or one of only whitespace) gives :class:`MatchNone`.  ``now`` anchors
    relative dates (default: the current UTC time).  ``transforms`` optionally maps custom field
    names to callables turning the trimmed value into a Node (e.g. ``filter_id``, ``my``);
    custom fields without one are matched as non-negative integer membership in ``doc[field]``.
    Raises :class:`QueryError` with Philomena's message on malformed input.
    """
    if q is None:
        q = ""
    if not isinstance(q, str):
        raise QueryError("search query is not a string")
    if now is None:
        now = datetime.now(timezone.utc)
    elif now.tzinfo is None:
        now = now.replace(tzinfo=timezone.utc)
    try:
        tokens = _tokenize(q)
        if not tokens:
            return MatchNone()
        return _Parser(tokens, spec, now, transforms or {}).parse()
    except RecursionError:
        raise QueryError("query is nested too deeply") from None


# --------------------------------------------------------------------------------------------
# Tag name cleaning (Tag.clean_tag_name) and the per-index field tables
# --------------------------------------------------------------------------------------------

_TAG_SPACE = re.compile(
    "[\\s\u00a0\u1680\u180e\u2000-\u200f\u202f\u205f\u3000\ufeff]+")
_TAG_SQUOTE = re.compile("[\u00b4\u2018\u2019\u201a\u201b\u2032]")
_TAG_DQUOTE = re.compile("[\u201c\u201d\u201e\u201f\u2033]")
_UNDERSCORE_SAFE = ("artist:", "colorist:", "commissioner:", "editor:", "oc:", "photographer:")


def clean_tag_name(name: str) -> str:
    """Downcase, collapse whitespace, straighten curly quotes, trim, tidy a known namespace
    prefix, and turn "_" into " " unless the tag is in an underscore-safe namespace."""
    name = _TAG_SPACE.sub(" ", name.lower())
    name = _TAG_DQUOTE.sub('"', _TAG_SQUOTE.sub("'", name)).strip()
    namespace, colon, rest = name.partition(":")
    if colon and namespace.strip() in QUERY_NAMESPACES:
        name = f"{namespace.strip()}:{rest.strip()}"
    if not name.startswith(_UNDERSCORE_SAFE):
        name = name.replace("_", " ")
    return name


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


_TAG_COUNT_FIELDS = (
    " body_type_tag_count error_tag_count character_tag_count content_fanmade_tag_count"
    " content_official_tag_count oc_tag_count origin_tag_count rating_tag_count"
    " species_tag_count spoiler_tag_count"
)

# doc keys: "tags" (names plus alias names), "favourited_by_users", "favourited_by_user_ids",
# "gallery_id" (ids of galleries containing the image), and the remaining field names as is.
IMAGE_FIELDS = FieldSpec(
    default="tags",
    integer=_names("id width height score upvotes downvotes hides faves pixels size orig_size"
                   " comment_count source_count tag_count" + _TAG_COUNT_FIELDS),
    numeric=_names("uploader_id faved_by_id duplicate_id"),
    float=_names("aspect_ratio wilson_score duration"),
    date=_names("created_at updated_at first_seen_at"),
    literal=_names("faved_by orig_sha512_hash sha512_hash uploader source_url original_format"
                   " mime_type file_name"),
    no_downcase=_names("file_name"),
    boolean=_names("animated processed thumbnails_generated"),
    ngram=_names("description"),
    custom=_names("gallery_id"),
    aliases={"faved_by": "favourited_by_users", "faved_by_id": "favourited_by_user_ids"},
    normalize_default=clean_tag_name,
)

COMMENT_FIELDS = FieldSpec(
    default="body",
    integer=_names("id"),
    numeric=_names("author_id image_id"),
    date=_names("created_at updated_at"),
    literal=_names("author image.tags"),
    ngram=_names("body"),
)

POST_FIELDS = FieldSpec(
    default="body",
    integer=_names("id topic_position"),
    numeric=_names("author_id forum_id topic_id"),
    date=_names("created_at updated_at"),
    literal=_names("author forum"),
    ngram=_names("body subject"),
)

# "spoiler_warning" is not in Philomena's index mapping, so it never matches there; docs for
# this spec should leave it out.
GALLERY_FIELDS = FieldSpec(
    default="title",
    integer=_names("id image_count subscriber_count"),
    numeric=_names("user_id image_ids thumbnail_id"),
    literal=_names("title user"),
    date=_names("created_at updated_at"),
    ngram=_names("description spoiler_warning"),
    aliases={"user_id": "creator_id", "user": "creator"},
)

TAG_FIELDS = FieldSpec(
    default="name",
    integer=_names("id images"),
    literal=_names("slug name name_in_namespace namespace implies alias_of implied_by aliases"
                   " category analyzed_name"),
    boolean=_names("aliased"),
    ngram=_names("description short_description"),
    aliases={"implies": "implied_tags", "implied_by": "implied_by_tags",
             "alias_of": "aliased_tag"},
)

# "public" is indexed as public OR system.
FILTER_FIELDS = FieldSpec(
    default="name",
    integer=_names("id spoilered_count hidden_count"),
    numeric=_names("user_id"),
    date=_names("created_at"),
    ngram=_names("description"),
    literal=_names("name creator"),
    boolean=_names("public system"),
)
