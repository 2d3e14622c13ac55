"""What an Avro payload may cost to decode, checked before fastavro decodes it.

fastavro's C reader recurses once per nested value (a value a few thousand levels deep in a
recursive schema overflows the C stack: SIGSEGV), builds whatever item count a block
announces (items of a type that takes no bytes, ``null`` or an empty record, cost nothing to
announce: 50 million in a few bytes), and turns a decimal's unscaled integer into a
``Decimal`` in time quadratic in its length. :func:`check` walks the binary encoding as the
reader will, guided by a :func:`plan` of the writer schema, without building values, and
raises :class:`Refused` for a value beyond the bounds below or :class:`Malformed` for bytes
that are not a value of the schema. Its cost is linear in the bytes and the values counted.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

MAX_DEPTH = 128  # records, arrays and maps nested in one another (the top value is 1)
MAX_VALUES = 1_000_000  # values in one payload: records, fields, items, map entries
MAX_DECIMAL_DIGITS = 1000  # a decimal's unscaled digits (PostgreSQL's numeric allows 1000)

_PRIMITIVE_MIN = {
    "null": 0,
    "boolean": 1,
    "int": 1,
    "long": 1,
    "float": 4,
    "double": 8,
    "bytes": 1,
    "string": 1,
}
_NAMED = ("record", "error", "enum", "fixed")
_BITS_PER_DIGIT = math.log2(10)


class Refused(Exception):
    """A value beyond the bounds: what it is, in words."""


class Malformed(Exception):
    """Bytes that are not a value of the schema."""


@dataclass(eq=False)
class AvroType:
    """One node of a schema's plan; named types are one node however often they are used."""

    kind: str  # a primitive, record, enum, fixed, array, map or union
    children: list[AvroType] = field(default_factory=list)  # fields, items, values, branches
    size: int = 0  # fixed: its size; enum: its symbol count
    decimal_bits: int | None = None  # a decimal's unscaled value: at most this many bits
    precision: int | None = None
    min_size: int = -1  # the fewest bytes a value takes (a lower bound; -1: not known yet)
    # a type whose values take no bytes (null, fixed 0, records of such): the values and
    # depth of one of them (MAX + 1 for a record that holds itself: it has no end)
    zero: tuple[int, int] | None = None


def plan(parsed: Any, named: Mapping[str, Any]) -> AvroType:
    """The plan of a schema fastavro parsed (``named``: its named types by full name).
    Raises ValueError (KeyError, TypeError) for what is not an Avro schema."""
    names: dict[str, AvroType] = {}
    nodes: list[AvroType] = []

    def of(s: Any) -> AvroType:
        if isinstance(s, list):
            return new(AvroType("union", [of(b) for b in s]))
        if isinstance(s, str):
            if s in _PRIMITIVE_MIN:
                return new(AvroType(s))
            return names[s] if s in names else of(named[s])
        kind = s["type"]
        if not isinstance(kind, str) or (kind not in _PRIMITIVE_MIN and kind not in _COMPLEX):
            return of(kind)  # {"type": <a schema or a name>}
        if kind in _NAMED and s["name"] in names:
            return names[s["name"]]
        t = new(AvroType(kind))
        if kind in _NAMED:
            names[s["name"]] = t  # before its fields: a record may hold itself
        if kind in ("record", "error"):
            t.children = [of(f["type"]) for f in s["fields"]]
        elif kind in ("array", "map"):
            t.children = [of(s["items" if kind == "array" else "values"])]
        elif kind == "enum":
            t.size = len(s["symbols"])
        elif kind == "fixed":
            t.size = int(s["size"])
        if s.get("logicalType") == "decimal" and kind in ("bytes", "fixed"):
            p = s.get("precision")
            t.precision = p if isinstance(p, int) and p > 0 else None
            digits = min(t.precision or MAX_DECIMAL_DIGITS, MAX_DECIMAL_DIGITS)
            t.decimal_bits = math.ceil(digits * _BITS_PER_DIGIT) + 1  # (+1: float rounding)
        return t

    def new(t: AvroType) -> AvroType:
        nodes.append(t)
        return t

    top = of(parsed)
    _take_no_bytes(nodes)
    busy: set[int] = set()
    for t in nodes:
        _min_size(t, busy)
    return top


_COMPLEX = ("record", "error", "enum", "fixed", "array", "map")


def _take_no_bytes(nodes: list[AvroType]) -> None:
    """Marks the types whose values take no bytes, with their values and depth. A record
    takes none when none of its fields does (the greatest fixed point: a record that holds
    itself and nothing else takes none, and never ends)."""
    zero = {
        id(t)
        for t in nodes
        if t.kind == "null" or (t.kind == "fixed" and t.size == 0) or t.kind in ("record", "error")
    }
    parents: dict[int, list[AvroType]] = {}
    for t in nodes:
        if t.kind in ("record", "error"):
            for c in t.children:
                parents.setdefault(id(c), []).append(t)
    work = [t for t in nodes if id(t) not in zero]
    while work:  # a record holding a type that takes bytes takes bytes (linear: no rescans)
        for p in parents.get(id(work.pop()), ()):
            if id(p) in zero:
                zero.discard(id(p))
                work.append(p)
    busy: set[int] = set()

    def count(t: AvroType) -> tuple[int, int]:
        if t.zero is not None:
            return t.zero
        if id(t) in busy:  # a cycle of such records: no end
            return MAX_VALUES + 1, MAX_DEPTH + 1
        busy.add(id(t))
        values, depth = 1, 1
        for c in t.children:
            v, d = count(c)
            values, depth = min(values + v, MAX_VALUES + 1), max(depth, min(d + 1, MAX_DEPTH + 1))
        busy.discard(id(t))
        t.zero, t.min_size = (values, depth), 0
        return t.zero

    for t in nodes:
        if id(t) in zero:
            count(t)


def _min_size(t: AvroType, busy: set[int]) -> int:
    """A lower bound of the bytes a value of ``t`` takes (a record met again inside itself
    counts 0: still a lower bound)."""
    if t.min_size >= 0:
        return t.min_size
    if id(t) in busy:
        return 0
    busy.add(id(t))
    if t.kind in ("record", "error"):
        size = sum(_min_size(c, busy) for c in t.children)
    elif t.kind == "union":
        size = 1 + min((_min_size(c, busy) for c in t.children), default=0)
    elif t.kind == "fixed":
        size = t.size
    else:  # primitives, enum (an index), array and map (a block count)
        size = _PRIMITIVE_MIN.get(t.kind, 1)
    busy.discard(id(t))
    t.min_size = size
    return size


def check(t: AvroType, body: bytes) -> None:
    """Raises Refused or Malformed when ``body`` (a value of ``t`` in Avro's binary encoding,
    as fastavro's schemaless reader reads it: what follows is ignored) may not be decoded."""
    _Walk(body).value(t, 1)


class _Walk:
    __slots__ = ("body", "pos", "values")

    def __init__(self, body: bytes) -> None:
        self.body = body
        self.pos = 0
        self.values = 0

    def long(self) -> int:
        body, pos = self.body, self.pos
        result = shift = 0
        while True:
            if pos >= len(body):
                raise Malformed(f"cut short at byte {pos}")
            b = body[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            if b < 0x80:
                self.pos = pos
                return (result >> 1) ^ -(result & 1)
            shift += 7
            if shift > 63:
                raise Malformed(f"a varint longer than 10 bytes at byte {self.pos}")

    def skip(self, n: int) -> int:
        start = self.pos
        if n < 0 or start + n > len(self.body):
            raise Malformed(f"{n} bytes at byte {start}: the payload has {len(self.body)}")
        self.pos = start + n
        return start

    def count(self, values: int, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise Refused(f"values nested deeper than {MAX_DEPTH}")
        self.values += values
        if self.values > MAX_VALUES:
            raise Refused(f"more than {MAX_VALUES} values")

    def value(self, t: AvroType, depth: int) -> None:
        while t.kind == "union":  # its branch's value, at the same depth
            i = self.long()
            if not 0 <= i < len(t.children):
                raise Malformed(f"union branch {i} of {len(t.children)} at byte {self.pos}")
            t = t.children[i]
        if t.zero is not None:
            self.count(t.zero[0], depth + t.zero[1] - 1)
            return
        self.count(1, depth)
        kind = t.kind
        if kind in ("int", "long"):
            self.long()
        elif kind in ("boolean", "float", "double"):
            self.skip(_PRIMITIVE_MIN[kind])
        elif kind in ("string", "bytes", "fixed"):
            n = t.size if kind == "fixed" else self.long()
            start = self.skip(n)
            if t.decimal_bits is not None:
                self.decimal(t, start, n)
        elif kind == "enum":
            i = self.long()
            if not 0 <= i < t.size:
                raise Malformed(f"enum symbol {i} of {t.size} at byte {self.pos}")
        elif kind in ("record", "error"):
            for c in t.children:
                self.value(c, depth + 1)
        elif kind in ("array", "map"):
            self.blocks(t, depth + 1)
        else:
            raise Malformed(f"type {kind!r} is not Avro's")

    def blocks(self, t: AvroType, depth: int) -> None:
        item = t.children[0]
        is_map = t.kind == "map"
        least = item.min_size + is_map  # (a map entry's key: at least its length)
        while True:
            n = self.long()
            if n == 0:
                return
            if n < 0:  # a block that gives its size in bytes too
                n = -n
                self.long()
            if n * least > len(self.body) - self.pos:
                raise Malformed(
                    f"a block of {n} items at byte {self.pos}: more than the bytes left hold"
                )
            if item.zero is not None and not is_map:  # nothing to read: count them at once
                self.count(n * item.zero[0], depth + item.zero[1] - 1)
                continue
            self.count(0, depth)
            if n > MAX_VALUES:
                raise Refused(f"more than {MAX_VALUES} values")
            for _ in range(n):
                if is_map:
                    self.skip(self.long())
                self.value(item, depth)

    def decimal(self, t: AvroType, start: int, n: int) -> None:
        assert t.decimal_bits is not None
        unscaled = int.from_bytes(self.body[start : start + n], "big", signed=True)
        bits = unscaled.bit_length()
        if bits > t.decimal_bits:
            allowed = (
                f"precision {t.precision}"
                if t.precision is not None and t.precision <= MAX_DECIMAL_DIGITS
                else f"at most {MAX_DECIMAL_DIGITS} digits"
            )
            digits = int(bits / _BITS_PER_DIGIT) + 1
            raise Refused(f"a decimal of about {digits} digits ({allowed})")
