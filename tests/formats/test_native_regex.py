"""find's regexes in Rust (``record_filter.native_regex``, ``native/src/find.rs``): whenever a
``re`` pattern is translated, the regex crate finds a match in exactly the keys and values in
which ``re.compile(pattern.encode()).search`` finds one; patterns generated from a grammar
that reaches past the translated subset (so refusals are exercised too), searched in random
bytes with newlines, non-ASCII and invalid UTF-8 and empty strings."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from klogtool.formats import engine, v2
from klogtool.formats.batch import Record
from klogtool.formats.records import SegmentScanner
from klogtool.log.record_filter import RecordFilter, native_regex

pytestmark = pytest.mark.skipif(
    not engine.native_available(), reason="the native engine is not built"
)

MAX = 1 << 26

# -- the grammar ------------------------------------------------------------------------------
LITERALS = [
    *"aAbz_09 -,é€",
    "\n",
    "\\n",
    "\\t",
    "\\r",
    "\\v",
    "\\f",
    "\\.",
    "\\\\",
    "\\x41",
    "\\xe9",
    "\\xff",
    "\\0",
    "\\{",
    "{",
    "}",
    "]",
    "\\$",
    "\\^",
    "\\|",
    "\\*",
]
ESCAPES = ["\\d", "\\D", "\\w", "\\W", "\\s", "\\S", "\\b", "\\B", "\\A", "\\Z", "^", "$", "."]
CLASS_ITEMS = [
    *"abzé_-^.$",
    "a-c",
    "0-9",
    "\\x00-\\x20",
    "\\x7f-\\xff",
    "é-ü",
    "\\d",
    "\\D",
    "\\w",
    "\\W",
    "\\s",
    "\\S",
    "\\n",
    "\\]",
    "\\\\",
    "\\b",  # a backspace in a class
]
# mostly the translated subset, so that most patterns are translated and searched
QUANTIFIERS = [
    *["*", "+", "?", "*?", "{2}", "{,2}", "{1,3}"] * 3,
    "*",
    "+",
    "?",
    "*?",
    "+?",
    "??",
    "{2}",
    "{1,3}",
    "{,2}",
    "{2,}",
    "{0}",
    "{0,0}",
    "{1,3}?",
    "{,}",
    "{a}",
    "{3,1}",  # an error
    "*+",  # possessive: refused
    "++",
    "?+",
    "{1,2}+",
]
OPENERS = [
    *["(", "(?:"] * 8,
    "(",
    "(?:",
    "(?=",  # lookarounds, atomic groups, scoped flags: refused
    "(?!",
    "(?<=a",
    "(?<!a",
    "(?>",
    "(?i:",
    "(?s:",
    "(?m:",
    "(?-i:",
]
GLOBAL_FLAGS = [*[""] * 20, "(?i)", "(?m)", "(?s)", "(?x)", "(?a)"]

klass = st.builds(
    lambda neg, items: "[" + neg + "".join(items) + "]",
    st.sampled_from(["", "^"]),
    st.lists(st.sampled_from(CLASS_ITEMS), min_size=1, max_size=4),
)
atom = (
    st.sampled_from(LITERALS + ESCAPES)
    | klass
    | st.sampled_from(["()", "(a)\\1", "(b)(?(1)c|d)"])  # backrefs: refused
)


def _extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    group = st.builds(lambda o, body: o + body + ")", st.sampled_from(OPENERS), inner)
    return st.one_of(
        # a quantified quantifier is an error ("multiple repeat"): atoms and groups only
        st.builds(str.__add__, atom | group, st.sampled_from(QUANTIFIERS)),
        st.lists(inner, min_size=2, max_size=4).map("".join),
        st.lists(inner, min_size=2, max_size=3).map("|".join),
        group,
        st.builds(lambda body: body + "|", inner),  # an empty alternative
    )


patterns = st.builds(
    str.__add__, st.sampled_from(GLOBAL_FLAGS), st.recursive(atom, _extend, max_leaves=8)
)
ALPHABET = list(b"aAbz_09 -,.{}$^\n\t\r\x0b\x0c\x1c\x1f\x00\x08\x7f\x80\xc3\xa9\xe2\x82\xac\xff")
haystack = st.lists(st.sampled_from(ALPHABET), max_size=8).map(bytes) | st.binary(max_size=6)


def _batch(keys: list[bytes]) -> v2.DefaultBatch:
    # the values are the keys in the other order, so that key and value are searched apart
    records = [
        Record(i, 0, k, v, ()) for i, (k, v) in enumerate(zip(keys, reversed(keys), strict=True))
    ]
    batch = next(iter(SegmentScanner(v2.encode_batch(records))))
    assert isinstance(batch, v2.DefaultBatch)
    return batch


def _native_indexes(where: RecordFilter, batch: v2.DefaultBatch) -> list[int] | None:
    spec = where.native_spec()
    if spec is None:
        return None
    with engine.using(engine.NATIVE):
        matcher = engine.find_matcher(spec)
        if matcher is None:  # the crate's limits
            return None
        found = matcher.matches(batch.data, MAX, batch.position)
    assert found is not None, "a well-formed batch was handed back"
    return found[1]


@pytest.mark.filterwarnings("ignore::FutureWarning")  # "[[" and "[--": possible set operations
@settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pattern=patterns, hays=st.lists(haystack, min_size=1, max_size=12))
@example(pattern="a$", hays=[b"a", b"a\n", b"a\n\n", b"\na", b"ba\nb"])
@example(pattern="\\s", hays=[bytes([b]) for b in range(256)])
@example(pattern="x{,2}y{", hays=[b"y{", b"xy", b"xxxy{"])
@example(pattern="[é]", hays=[b"\xc3", b"\xa9", b"e"])
@example(pattern="a.b", hays=[b"a\nb", b"a\xffb", b"\n"])
@example(pattern="(?i)a", hays=[b"A"])  # flags: refused
@example(pattern="(?m)^b", hays=[b"a\nb"])
@example(pattern="x(?s:.)", hays=[b"x\n"])
@example(pattern="a*+a", hays=[b"aa"])  # possessive: re gives up the match
@example(pattern="a$\n", hays=[b"a\n"])  # $ before the final newline, then the newline
def test_translated_regexes_search_as_re_does(pattern: str, hays: list[bytes]) -> None:
    try:
        compiled = re.compile(pattern.encode())
    except re.error:
        assert native_regex(pattern) is None
        return
    # the pattern's own bytes (and with a newline) make matches likelier
    hays = [*hays, pattern.encode(), pattern.encode() + b"\n", b""]
    batch = _batch(hays)
    want = [i for i, h in enumerate(hays) if compiled.search(h) is not None]
    assert _native_indexes(RecordFilter(key_regex=pattern), batch) in (None, want)
    got = _native_indexes(RecordFilter(value_regex=pattern), batch)
    last = len(hays) - 1
    assert got in (None, sorted(last - i for i in want))


def test_classes_are_re_s_byte_for_byte() -> None:
    """Each class escape, ``.`` and ranges over all 256 bytes, as re's bytes patterns see them."""
    every = [bytes([b]) for b in range(256)]
    batch = _batch(every)
    for pattern in [
        "\\d",
        "\\D",
        "\\w",
        "\\W",
        "\\s",
        "\\S",
        ".",
        "[^\\s\\d]",
        "[\\x80-\\xff]",
        "[^é]",
        "\\b",
        "[^\\x00-\\xff]",
    ]:
        compiled = re.compile(pattern.encode())
        want = [i for i, h in enumerate(every) if compiled.search(h) is not None]
        assert _native_indexes(RecordFilter(key_regex=pattern), batch) == want, pattern


@pytest.mark.parametrize(
    "pattern",
    [
        "abc",
        "^k-[12]$",
        "-1\\d-even",
        "odd|even",
        "\\bk\\w*\\Z",
        "(a|b)+c{2,3}?",
        "x{,3}",
        "x{",
        "é.",
        "[é€]",
        "(?P<name>a)b",
        "(?:ab|)*$",
        "^$",
        "a$|b$",
        "\\x00\\n",
    ],
)
def test_translated(pattern: str) -> None:
    assert native_regex(pattern) is not None


@pytest.mark.parametrize(
    "pattern",
    [
        "(?i)abc",
        "(?m)^a",
        "(?s:.)",
        "a(?=b)",
        "(?<!a)b",
        "(a)\\1",
        "(?(1)a|b)",
        "a*+",
        "(?>a)",
        "\\B",
        "a$b",
        "a$$",
        "(a$)*",
        "(",  # not a pattern
        "\udcff",  # not UTF-8-encodable
    ],
)
def test_refused(pattern: str) -> None:
    assert native_regex(pattern) is None
    assert RecordFilter(key_regex=pattern).native_spec() is None
    assert RecordFilter(value_regex=pattern).native_spec() is None


def test_what_the_crate_refuses_is_left_to_python() -> None:
    where = RecordFilter(key_regex="(?:(?:a{1000}){1000}){1000}")
    spec = where.native_spec()
    assert spec is not None  # translated; the crate's size limit refuses it
    with engine.using(engine.NATIVE):
        assert engine.find_matcher(spec) is None
