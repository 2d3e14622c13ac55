"""Which records a search keeps: the filters of ``find``, shared by ``export --where`` and the
``where`` option of the ``kafka-segments`` Spark source.

A :class:`RecordFilter` answers two questions. :meth:`RecordFilter.skips_batch` looks at a
batch header only (offsets, timestamps, producer id, control-ness), so a walk can pass over a
batch without decompressing it; :meth:`RecordFilter.matches` looks at one record. The
transactional state needs the whole partition (a header pass, see
:func:`klogtool.log.txnstates.transaction_states`): the walkers hold that, and the filter only
says which states it keeps (:attr:`RecordFilter.transactions`).

The filters' options are a table here, :data:`FILTER_OPTIONS`, without click: find's command
line options are generated from it (``klogtool/commands/_options.py``), and
:func:`parse_where` reads the same options from one string (``export --where``, the Spark
source's ``where``), so the two cannot drift apart.
"""

from __future__ import annotations

import importlib
import re
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cached_property, lru_cache
from typing import Any

from klogtool.formats.batch import LOG_APPEND_TIME, Batch, Record
from klogtool.formats.engine import FindSpec
from klogtool.formats.errors import FormatError

COMMITTED, ABORTED, OPEN, NONE = "committed", "aborted", "open", "none"
TXN_STATES = (COMMITTED, ABORTED, OPEN, NONE)
MAX_OFFSET = (1 << 63) - 1

# Every condition of a RecordFilter is one of these two kinds, declared here once (a test holds
# the declaration to the dataclass's fields): a condition added to neither, or record-level but
# left out of the native spec, would be silently ignored by the native engine's find kernel.
# Record-level: decided per record, by matches() or by the native kernel, in the kernel's spec
# order (native_spec builds its tuple in this order).
RECORD_LEVEL = (
    "key",
    "headers",
    "offsets",
    "from_time",
    "to_time",
    "min_size",
    "max_size",
    "key_regex",
    "value_regex",
)
# Batch-level only: decided from a batch's header (skips_batch) or the partition's transaction
# states, in Python under both engines.
BATCH_LEVEL = ("producer_ids", "transactions", "control")


@dataclass(frozen=True)
class RecordFilter:
    """All given conditions must hold. Times are milliseconds since the epoch; ranges are
    inclusive. Regexes are ``re`` patterns over the raw bytes (UTF-8 text patterns)."""

    from_time: int | None = None
    to_time: int | None = None
    offsets: tuple[int, int] | None = None
    key: bytes | None = None
    key_regex: str | None = None
    value_regex: str | None = None
    headers: tuple[tuple[str, bytes | None], ...] = ()  # (name, value or None = any value)
    producer_ids: frozenset[int] = frozenset()
    transactions: frozenset[str] = frozenset()  # subset of TXN_STATES; empty = any
    control: bool | None = None  # True: control records only; False: none; None: both
    min_size: int | None = None  # record_size() at least
    max_size: int | None = None  # record_size() at most

    def __post_init__(self) -> None:
        unknown = self.transactions - set(TXN_STATES)
        if unknown:
            raise ValueError(f"unknown transactional state {sorted(unknown)[0]!r}")

    @property
    def active(self) -> bool:
        """Whether anything is filtered at all."""
        return self != RecordFilter()

    @property
    def record_level(self) -> bool:
        """Whether a batch that passes :meth:`skips_batch` may still hold records that do not
        match (so each record must be looked at)."""
        return any(getattr(self, name) not in (None, "", ()) for name in RECORD_LEVEL)

    @cached_property
    def _key_re(self) -> re.Pattern[bytes] | None:
        return re.compile(self.key_regex.encode()) if self.key_regex else None

    @cached_property
    def _value_re(self) -> re.Pattern[bytes] | None:
        return re.compile(self.value_regex.encode()) if self.value_regex else None

    def native_spec(self) -> FindSpec | None:
        """The record-level conditions as the native engine's find kernel takes them (key,
        headers, offsets, from_time, to_time, min_size, max_size, key and value regexes in the
        regex crate's syntax; ``engine.find_matcher``), or None when :meth:`matches` must decide
        in Python: a regex :func:`native_regex` does not translate, a header name that is not
        UTF-8-encodable, a bound past 64 bits, a key or header value given as something other
        than ``bytes`` (the library API)."""
        key_regex, value_regex = (
            native_regex(t) if type(t) is str and t else None
            for t in (self.key_regex, self.value_regex)
        )
        # "" filters nothing (record_level); a regex not translated is decided in Python
        if (self.key_regex and key_regex is None) or (self.value_regex and value_regex is None):
            return None
        if self.key is not None and type(self.key) is not bytes:
            return None
        headers: list[tuple[str, bytes | None]] = []
        for name, value in self.headers:
            if type(name) is not str or (value is not None and type(value) is not bytes):
                return None
            try:
                name.encode()
            except UnicodeEncodeError:  # a lone surrogate: matches no decoded header name
                return None
            headers.append((name, value))
        times = (self.from_time, self.to_time)
        ints = [t for t in times if t is not None] + list(self.offsets or ())
        if any(type(v) is not int or not -(1 << 63) <= v < 1 << 63 for v in ints):
            return None
        sizes = (self.min_size, self.max_size)
        if any(s is not None and (type(s) is not int or not 0 <= s < 1 << 63) for s in sizes):
            return None
        given = {"headers": headers, "key_regex": key_regex, "value_regex": value_regex}
        return tuple(given.get(name, getattr(self, name)) for name in RECORD_LEVEL)

    def skips_batch(self, batch: Batch) -> bool:
        """True when no record of ``batch`` can match, judged from its header alone."""
        if self.offsets is not None:
            lo, hi = self.offsets
            if batch.last_offset < lo or past(batch, hi):
                return True
        if self.from_time is not None and batch.max_timestamp < self.from_time:
            return True
        if (
            self.to_time is not None
            and batch.timestamp_type == LOG_APPEND_TIME
            and batch.max_timestamp > self.to_time
        ):
            return True
        if self.producer_ids and batch.producer_id not in self.producer_ids:
            return True
        return self.control is not None and batch.is_control != self.control

    def matches(self, rec: Record) -> bool:
        """Whether one record of a batch that :meth:`skips_batch` kept matches."""
        if self.offsets is not None and not self.offsets[0] <= rec.offset <= self.offsets[1]:
            return False
        if self.from_time is not None and rec.timestamp < self.from_time:
            return False
        if self.to_time is not None and rec.timestamp > self.to_time:
            return False
        if self.key is not None and (rec.key is None or bytes(rec.key) != self.key):
            return False
        key_re, value_re = self._key_re, self._value_re
        if key_re is not None and (rec.key is None or key_re.search(bytes(rec.key)) is None):
            return False
        if value_re is not None and (
            rec.value is None or value_re.search(bytes(rec.value)) is None
        ):
            return False
        if self.min_size is not None or self.max_size is not None:
            size = record_size(rec)
            if self.min_size is not None and size < self.min_size:
                return False
            if self.max_size is not None and size > self.max_size:
                return False
        for name, value in self.headers:
            if not any(
                k == name and (value is None or (v is not None and bytes(v) == value))
                for k, v in rec.headers
            ):
                return False
        return True


# -- regexes for the native engine -----------------------------------------------------------------
# A ``re`` pattern is parsed by ``re``'s own parser (so every question of syntax, ``{`` as a
# literal, ``{,n}``, escapes, a non-ASCII character as its UTF-8 bytes, is answered as ``re``
# answers it) and its tree is written out in the regex crate's syntax when every node is one whose
# meaning for "is there a match anywhere" is the same in both: what else is None and stays in
# Python. Private modules (typeshed has no stubs for them): a Python without them, or a tree of
# an unexpected shape, translates nothing.
try:
    _parser: Any = importlib.import_module("re._parser")
    _MAXREPEAT: Any = importlib.import_module("re._constants").MAXREPEAT
except (ImportError, AttributeError):  # pragma: no cover - CPython 3.11+ has them
    _parser = None

# the classes of a bytes pattern are ASCII (_sre.c: SRE_IS_DIGIT, SRE_IS_WORD, SRE_IS_SPACE)
_DIGIT = frozenset(b"0123456789")
_WORD = frozenset(b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz")
_SPACE = frozenset(b" \t\n\r\f\v")
_ALL = frozenset(range(256))
_CATEGORIES = {
    "CATEGORY_DIGIT": _DIGIT,
    "CATEGORY_NOT_DIGIT": _ALL - _DIGIT,
    "CATEGORY_WORD": _WORD,
    "CATEGORY_NOT_WORD": _ALL - _WORD,
    "CATEGORY_SPACE": _SPACE,
    "CATEGORY_NOT_SPACE": _ALL - _SPACE,
}
_ZERO_WIDTH = {
    # ^ and \A without MULTILINE (flags are refused): the start of the string only
    "AT_BEGINNING": r"\A",
    "AT_BEGINNING_STRING": r"\A",
    "AT_END_STRING": r"\z",  # re's \Z; the crate has no \Z
    "AT_BOUNDARY": r"\b",  # ASCII under (?-u), as SRE_IS_WORD
    # \B is not here: re's never matches an empty string (before 3.14), the crate's does
}


class _Refused(Exception):
    """A node whose meaning the crate may not share."""


@lru_cache(maxsize=64)  # native_spec is asked once per search and engine
def native_regex(text: str) -> str | None:
    """``re.compile(text.encode())`` in the regex crate's syntax, to be searched in bytes with
    Unicode off (``find::compile``), with a match somewhere exactly when ``re``'s ``search``
    finds one; or None: not a pattern this translation is sure of (flags, lookarounds, backrefs,
    possessive and atomic forms, ``\\B``, ``$`` anywhere but at the end) or not a pattern."""
    if _parser is None:
        return None
    try:
        tree = _parser.parse(text.encode())
        if tree.state.flags:  # (?i), (?m), (?s), (?x), (?a), (?L): refused whole
            return None
        return "(?-u)" + _sequence(list(tree), tail=True)
    except (_Refused, re.error, UnicodeEncodeError, RecursionError, TypeError, ValueError):
        return None


def _sequence(nodes: list[Any], tail: bool) -> str:
    """``tail``: nothing is matched after the sequence (its last node may be ``$``)."""
    return "".join(_node(n, tail and i == len(nodes) - 1) for i, n in enumerate(nodes))


def _node(node: Any, tail: bool) -> str:
    op, av = node
    name = str(op)
    if name == "LITERAL":
        return _byte_class(frozenset((av,)))
    if name == "NOT_LITERAL":
        return _byte_class(_ALL - {av})
    if name == "ANY":  # no DOTALL: any byte but a newline
        return _byte_class(_ALL - {0x0A})
    if name == "IN":
        return _byte_class(_class_bytes(av))
    if name == "AT":
        at = str(av)
        if at == "AT_END" and tail:
            # re's $: at the end or before a final newline; nothing follows it, so consuming
            # that newline changes no answer (the crate has no lookahead)
            return r"(?:\n?\z)"
        if at in _ZERO_WIDTH:
            return _ZERO_WIDTH[at]
        raise _Refused(at)
    if name == "SUBPATTERN":
        _group, add_flags, del_flags, body = av
        if add_flags or del_flags:
            raise _Refused("flags")
        return "(?:" + _sequence(list(body), tail) + ")"
    if name == "BRANCH":
        _, alternatives = av
        return "(?:" + "|".join(_sequence(list(a), tail) for a in alternatives) + ")"
    if name in ("MAX_REPEAT", "MIN_REPEAT"):  # lazy or greedy: the same "is there a match"
        lo, hi, body = av
        bounds = f"{lo}," if hi == _MAXREPEAT else f"{lo},{hi}"
        return "(?:" + _sequence(list(body), tail=False) + "){" + bounds + "}"
    # POSSESSIVE_REPEAT, ATOMIC_GROUP (they give up matches), ASSERT, ASSERT_NOT, GROUPREF,
    # GROUPREF_EXISTS (the crate has none of them), anything unknown
    raise _Refused(name)


def _class_bytes(items: Any) -> frozenset[int]:
    """The bytes a ``[...]`` (or ``\\d``, ``\\w``, ``\\s`` and their negations) matches."""
    out: set[int] = set()
    negate = False
    for op, av in items:
        name = str(op)
        if name == "NEGATE":
            negate = True
        elif name == "LITERAL":
            out.add(av)
        elif name == "RANGE":
            out.update(range(av[0], av[1] + 1))
        elif name == "CATEGORY" and str(av) in _CATEGORIES:
            out |= _CATEGORIES[str(av)]
        else:  # the *_IGNORE and Unicode forms: flags, refused
            raise _Refused(name)
    return _ALL - out if negate else frozenset(out)


def _byte_class(members: frozenset[int]) -> str:
    """A set of bytes as the crate writes it under (?-u): ``\\xHH`` escapes only."""
    if not members <= _ALL:
        raise _Refused("not a byte")
    if not members:
        return r"[^\x00-\xFF]"  # matches nothing, as re's empty set
    if len(members) == 1:
        return rf"\x{next(iter(members)):02X}"
    ranges: list[str] = []
    ordered = sorted(members)
    start = prev = ordered[0]
    for b in [*ordered[1:], -2]:
        if b != prev + 1:
            ranges.append(rf"\x{start:02X}" if start == prev else rf"\x{start:02X}-\x{prev:02X}")
            start = b
        prev = b
    return "[" + "".join(ranges) + "]"


def record_size(rec: Record) -> int:
    """A record's payload bytes: its key, value and header names and values, what a producer
    serialised (the size ``--min-size``, ``--max-size`` and ``find --largest`` go by)."""
    size = (0 if rec.key is None else len(rec.key)) + (0 if rec.value is None else len(rec.value))
    for k, v in rec.headers:
        size += len(k.encode()) + (0 if v is None else len(v))
    return size


def past(batch: Batch, offset: int) -> bool:
    """Whether every record of ``batch`` lies after ``offset`` (a legacy wrapper is decompressed
    for its first offset only when its own, the last, is past)."""
    return batch.last_offset > offset and first_offset(batch) > offset


def first_offset(batch: Batch) -> int:
    """A batch's first offset (a v0/v1 wrapper is decompressed to know it; when that fails,
    its own offset, the last)."""
    try:
        return batch.base_offset
    except FormatError:
        return batch.last_offset


# -- the filters as options ----------------------------------------------------------------------
def parse_time(text: str) -> int:
    """A time option: milliseconds since the epoch, or an ISO-8601 date-time (UTC if no zone).
    Raises ValueError with the message a user sees."""
    t = text.strip()
    if t.lstrip("-").isdigit():
        return int(t)
    try:
        dt = datetime.fromisoformat(t.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"not a time: {text!r} (milliseconds since the epoch, or e.g. 2024-05-01T12:00:00Z)"
        ) from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return int(dt.timestamp() * 1000)


def parse_offset_range(text: str) -> tuple[int, int]:
    """``FROM:TO`` (either end may be left out) as an inclusive range."""
    lo, sep, hi = text.partition(":")
    try:
        start = int(lo) if lo else 0
        end = int(hi) if hi else MAX_OFFSET
    except ValueError:
        raise ValueError("expected FROM:TO offsets, e.g. 100:200, 100: or :200") from None
    if not sep or start > end:
        raise ValueError("expected FROM:TO with FROM <= TO, e.g. 100:200")
    return start, end


def parse_size(text: str) -> int:
    """A size: ``4096``, ``64K``, ``64M``, ``1G`` (also ``64MiB``, ``64mb``: powers of 1024) in
    bytes. Raises ValueError with the message a user sees."""
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    t = text.strip().lower().removesuffix("b").removesuffix("i")
    mult = units.get(t[-1:], 1)
    digits = t[:-1] if t[-1:] in units else t
    if not digits.isdigit():
        raise ValueError(f"not a size: {text!r} (e.g. 4096, 64M, 1G)")
    return int(digits) * mult


def _header(text: str) -> tuple[str, bytes | None]:
    name, sep, value = text.partition("=")
    if not name:
        raise ValueError(f"expected NAME or NAME=VALUE, not {text!r}")
    return name, value.encode() if sep else None


def _regex(text: str) -> str:
    try:
        re.compile(text.encode())
    except re.error as e:
        raise ValueError(f"not a regular expression: {e}") from None
    return text


def _integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a valid integer.") from None


@dataclass(frozen=True)
class FilterOption:
    """One filter option: its flag, the :class:`RecordFilter` field it sets, and how its text is
    read (``parse`` raises ValueError with the user's message). A ``switch`` is a flag pair
    (``--control/--no-control``) that takes no value."""

    flag: str
    field: str
    help: str
    metavar: str | None = None
    parse: Callable[[str], Any] | None = None
    multiple: bool = False
    choices: tuple[str, ...] | None = None
    switch: bool = False

    @property
    def negation(self) -> str:
        return "--no-" + self.flag.removeprefix("--")

    def value(self, text: str) -> Any:
        if self.choices is not None and text not in self.choices:
            shown = ", ".join(repr(c) for c in self.choices)
            raise ValueError(f"{text!r} is not one of {shown}.")
        return self.parse(text) if self.parse is not None else text


FILTER_OPTIONS = (
    FilterOption(
        "--from-time",
        "from_time",
        "Records with a timestamp at or after TIME (milliseconds since the epoch or ISO-8601; "
        "UTC without a zone).",
        metavar="TIME",
        parse=parse_time,
    ),
    FilterOption(
        "--to-time",
        "to_time",
        "Records with a timestamp at or before TIME.",
        metavar="TIME",
        parse=parse_time,
    ),
    FilterOption(
        "--offsets",
        "offsets",
        "Records with offsets in FROM..TO (inclusive; 100: or :200 leave an end open).",
        metavar="FROM:TO",
        parse=parse_offset_range,
    ),
    FilterOption(
        "--key",
        "key",
        "Records whose key is exactly TEXT (UTF-8 bytes).",
        metavar="TEXT",
        parse=str.encode,
    ),
    FilterOption(
        "--key-regex",
        "key_regex",
        "Records whose key matches REGEX (searched in the key's bytes).",
        metavar="REGEX",
        parse=_regex,
    ),
    FilterOption(
        "--value-regex",
        "value_regex",
        "Records whose value matches REGEX (searched in the value's bytes).",
        metavar="REGEX",
        parse=_regex,
    ),
    FilterOption(
        "--header",
        "headers",
        "Records with a header NAME (with exactly VALUE if given). Repeatable: all must match.",
        metavar="NAME[=VALUE]",
        parse=_header,
        multiple=True,
    ),
    FilterOption(
        "--producer-id",
        "producer_ids",
        "Records written by producer ID. Repeatable: any may match.",
        metavar="ID",
        parse=_integer,
        multiple=True,
    ),
    FilterOption(
        "--transaction",
        "transactions",
        "Records of committed, aborted or still open transactions (the markers included), or "
        "none for records outside any transaction. Repeatable: any may match.",
        choices=TXN_STATES,
        multiple=True,
    ),
    FilterOption(
        "--min-size",
        "min_size",
        "Records of at least SIZE bytes of key, value and headers (4096, 64K, 1M).",
        metavar="SIZE",
        parse=parse_size,
    ),
    FilterOption(
        "--max-size",
        "max_size",
        "Records of at most SIZE bytes of key, value and headers.",
        metavar="SIZE",
        parse=parse_size,
    ),
    FilterOption(
        "--control",
        "control",
        "Only control records (transaction markers, ...), or none of them [default: both].",
        switch=True,
    ),
)


def filter_of(values: Mapping[str, Any]) -> RecordFilter:
    """The :class:`RecordFilter` of parsed option values, keyed by field (a repeatable option's
    values in a sequence; a missing or None value filters nothing)."""
    fields: dict[str, Any] = {}
    for opt in FILTER_OPTIONS:
        v = values.get(opt.field)
        if opt.multiple:
            fields[opt.field] = (tuple if opt.field == "headers" else frozenset)(v or ())
        elif v is not None:
            fields[opt.field] = v
    return RecordFilter(**fields)


def parse_where(text: str) -> RecordFilter:
    """A ``--where`` string (find's filter options, quoted as a shell would) as a RecordFilter.
    Raises ValueError, ``--where: ...``, for what find would refuse."""
    try:
        return filter_of(_where_values(shlex.split(text)))
    except ValueError as e:  # shlex's (an unclosed quote) and the options' own
        raise ValueError(f"--where: {e}") from None


def _where_values(args: list[str]) -> dict[str, Any]:
    by_flag = {o.flag: o for o in FILTER_OPTIONS}
    by_flag |= {o.negation: o for o in FILTER_OPTIONS if o.switch}
    values: dict[str, Any] = {}
    words = iter(args)
    for word in words:
        flag, eq, text = word.partition("=") if word.startswith("--") else (word, "", "")
        opt = by_flag.get(flag)
        if opt is None:
            if not word.startswith("-"):
                raise ValueError(f"Got unexpected extra argument ({word})")
            raise ValueError(f"No such option: {flag}")
        if opt.switch:
            if eq:
                raise ValueError(f"Option '{flag}' does not take a value.")
            values[opt.field] = flag == opt.flag
            continue
        if not eq:
            following = next(words, None)
            if following is None:
                raise ValueError(f"Option '{flag}' requires an argument.")
            text = following
        try:
            value = opt.value(text)
        except ValueError as e:
            raise ValueError(f"Invalid value for '{flag}': {e}") from None
        if opt.multiple:
            values.setdefault(opt.field, []).append(value)
        else:
            values[opt.field] = value
    return values
