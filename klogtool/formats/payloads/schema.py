"""Kafka's generated-message ("protocol") encoding, driven by schema tables.

Kafka describes control-record values, coordinator records (``__consumer_offsets``,
``__transaction_state``) and KRaft metadata records with JSON schema files; its build generates a
reader and writer per message. Here the schemas are *data*: a :class:`Message` is a list of
:class:`Field` objects mirroring the JSON files (Kafka's CamelCase field names, type strings such
as ``int32`` / ``[]string`` / ``[]TopicPartition``, ``versions`` ranges like ``"0+"`` or
``"1-3"``, ``nullableVersions``, ``taggedVersions`` + ``tag``, ``default``), and one engine reads
and writes any of them:

* :func:`decode` ``(message, buf, pos, version) -> (dict, pos)``
* :func:`encode` ``(message, data, version) -> bytes``
* :func:`message_from_json` / :func:`load_json_schema` / :func:`messages_from_json` build
  :class:`Message` objects from Kafka's own JSON schema text (``commonStructs`` included), so
  new record types need no code. Every table in this package is written in that notation,
  copied field by field from Kafka's files (``bench/check_schemas.py`` compares them).

Wire rules (docs/kafka-rules.md: Record formats). Non-flexible versions: string = int16 length +
UTF-8,
bytes = int32 length, array = int32 count, -1 = null. Flexible versions (``flexibleVersions``):
compact string/bytes/array = unsigned varint length+1 (0 = null), and every struct ends with a
tagged-field section (uvarint count, then per field uvarint tag, uvarint size, data). A nullable
struct field carries a presence marker first (int8, -1 = null; uvarint 0 = null inside a tagged
field). uuid = 16 raw bytes, uint16 = 2 bytes, bool = 1 byte (non-zero = true).

Decoded values are JSON-able and follow Kafka's generated JSON converters (what kafka-dump-log
prints): keys are the camelCase of the schema names (``TransactionalId`` -> ``transactionalId``,
only the first letter is lowered), fields are in schema order, fields absent from the decoded
version are omitted, tagged fields appear only when their value differs from the default, bytes
are standard base64 with padding (Jackson's ``BinaryNode``), uuids are Kafka's text form
(URL-safe base64 of the 16 bytes, no padding), nulls are ``None``. Strings are decoded as UTF-8
with U+FFFD for malformed sequences, as Java's ``new String(bytes, UTF_8)`` does.

Unknown tags (a tag the schema does not declare for that version) are skipped, as Kafka's JSON
output drops them; ``decode(..., keep_unknown_tags=True)`` keeps them instead under
``"_unknownTaggedFields": {"<tag>": "<hex of the raw field bytes>"}`` at the end of the struct,
and :func:`encode` writes such a mapping back, so a round trip is lossless.

Limits and errors: every length and count is checked against the bytes that remain before
anything is allocated; a known tagged field must use exactly the size it declares. Only
:mod:`klogtool.formats.errors` exceptions escape :func:`decode` (``TruncatedError`` when the data
ends early, ``CorruptRecordError`` for impossible lengths/counts/nulls, ``UnsupportedError`` for a
negative version), each with ``position`` = the byte offset in ``buf``. Like Kafka's generated
readers, :func:`decode` accepts any version >= 0 (a version above the newest known one is read
with the newest layout that its ranges describe; callers that want to reject unknown versions
check :meth:`Message.is_valid_version`) and does not require the message to end the buffer: it
returns the position after the message. :func:`encode` raises ``ValueError`` for data that does
not fit the schema.
"""

from __future__ import annotations

import base64
import binascii
import json
import struct
from collections.abc import Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

from klogtool.formats.errors import CorruptRecordError, TruncatedError, UnsupportedError
from klogtool.formats.varint import encode_uvarint, read_uvarint

__all__ = [
    "MISSING",
    "Field",
    "Message",
    "Struct",
    "Versions",
    "decode",
    "encode",
    "json_name",
    "load_json_schema",
    "message_from_json",
    "parse_versions",
    "uuid_from_text",
    "uuid_to_text",
]

Buffer = bytes | bytearray | memoryview


class _Missing:
    """Marker for "no default given in the schema" (Kafka then uses the type's zero value)."""

    _instance: _Missing | None = None

    def __new__(cls) -> _Missing:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()

ZERO_UUID_TEXT = "AAAAAAAAAAAAAAAAAAAAAA"


# --------------------------------------------------------------------------------------------
# Versions


@dataclass(frozen=True)
class Versions:
    """An inclusive version range; ``hi`` None means open-ended (``"3+"``)."""

    lo: int
    hi: int | None

    def __contains__(self, version: object) -> bool:
        if not isinstance(version, int):
            return False
        return self.lo <= version and (self.hi is None or version <= self.hi)

    def __str__(self) -> str:
        if self.hi is None:
            return f"{self.lo}+"
        if self.hi == self.lo:
            return str(self.lo)
        return f"{self.lo}-{self.hi}"


def parse_versions(text: str | int | None) -> Versions | None:
    """Parse Kafka's version syntax ``"0+"``, ``"1-3"``, ``"2"``; ``"none"``, ``""``, None: None."""
    if text is None:
        return None
    if isinstance(text, int):
        return Versions(text, text)
    t = text.strip()
    if t in ("", "none"):
        return None
    try:
        if t.endswith("+"):
            return Versions(int(t[:-1]), None)
        if "-" in t:
            lo, hi = t.split("-", 1)
            return Versions(int(lo), int(hi))
        n = int(t)
    except ValueError:
        raise ValueError(f"bad version range {text!r}") from None
    return Versions(n, n)


def _in(versions: Versions | None, version: int) -> bool:
    return versions is not None and version in versions


def json_name(name: str) -> str:
    """Kafka's ``camelCaseName``: the schema name with its first letter lowered."""
    return name[:1].lower() + name[1:]


# --------------------------------------------------------------------------------------------
# Schema objects

_FIXED: dict[str, struct.Struct] = {
    "int8": struct.Struct(">b"),
    "int16": struct.Struct(">h"),
    "int32": struct.Struct(">i"),
    "int64": struct.Struct(">q"),
    "uint16": struct.Struct(">H"),
    "uint32": struct.Struct(">I"),
    "float64": struct.Struct(">d"),
}
_SCALARS = frozenset(_FIXED) | {"bool", "uuid", "string", "bytes", "records"}
_INTS = frozenset(_FIXED) - {"float64"}
_I8 = _FIXED["int8"]
_I16 = _FIXED["int16"]
_I32 = _FIXED["int32"]


@dataclass(frozen=True, eq=False)
class Field:
    """One field of a struct, as in Kafka's JSON schema files.

    ``type`` is a scalar (``int8 int16 int32 int64 uint16 uint32 float64 bool string bytes uuid
    records``), ``[]<scalar>``, ``[]<StructName>`` or ``<StructName>`` (a capitalised name; the
    struct's ``fields`` must be given). ``versions`` None means ``tagged_versions`` when that is
    given (as Kafka does for tagged-only fields), else ``"0+"``. ``default`` is Kafka's JSON
    default (``"-1"``, ``-1``, ``"null"``/None, ``"true"``...); without one the type's zero value
    is used.
    """

    name: str
    type: str
    versions: str | None = None
    _: KW_ONLY
    nullable_versions: str | None = None
    tag: int | None = None
    tagged_versions: str | None = None
    default: Any = MISSING
    fields: Sequence[Field] = ()

    # Derived in __post_init__.
    json_name: str = field(init=False, repr=False)
    kind: str = field(init=False, repr=False)  # a scalar name, "array" or "struct"
    elem: str | None = field(init=False, repr=False)  # arrays: scalar name or "struct"
    struct: Struct | None = field(init=False, repr=False)
    version_range: Versions | None = field(init=False, repr=False)
    nullable_range: Versions | None = field(init=False, repr=False)
    tagged_range: Versions | None = field(init=False, repr=False)

    def __post_init__(self) -> None:
        setattr_ = object.__setattr__
        setattr_(self, "fields", tuple(self.fields))
        setattr_(self, "json_name", json_name(self.name))
        t = self.type
        elem: str | None = None
        if t.startswith("[]"):
            kind = "array"
            base = t[2:]
            elem = base if base in _SCALARS else "struct"
        else:
            base = t
            kind = t if t in _SCALARS else "struct"
        if (elem == "struct" or kind == "struct") and not (base[:1].isupper() and base.isalnum()):
            raise ValueError(f"field {self.name}: unknown type {t!r}")
        is_struct = kind == "struct" or elem == "struct"
        if is_struct and not self.fields:
            raise ValueError(f"field {self.name}: struct type {t!r} needs its fields")
        if not is_struct and self.fields:
            raise ValueError(f"field {self.name}: only struct types take fields")
        setattr_(self, "kind", kind)
        setattr_(self, "elem", elem)
        setattr_(self, "struct", Struct(base, self.fields) if is_struct else None)
        tagged = parse_versions(self.tagged_versions)
        if self.tag is not None and tagged is None:
            tagged = parse_versions(self.versions if self.versions is not None else "0+")
        if tagged is not None and self.tag is None:
            raise ValueError(f"field {self.name}: taggedVersions without a tag")
        versions = self.versions
        if versions is None:
            versions = self.tagged_versions if self.tagged_versions is not None else "0+"
        setattr_(self, "version_range", parse_versions(versions))
        setattr_(self, "nullable_range", parse_versions(self.nullable_versions))
        setattr_(self, "tagged_range", tagged)

    def present(self, version: int) -> bool:
        return _in(self.version_range, version)

    def tagged_in(self, version: int) -> bool:
        return _in(self.tagged_range, version)

    def nullable(self, version: int) -> bool:
        return _in(self.nullable_range, version)

    def default_value(self, version: int) -> Any:
        """The default as decode() would render it (JSON-able)."""
        d = self.default
        if d is None or (isinstance(d, str) and d == "null"):
            return None
        kind = self.kind
        if kind == "array":
            return [] if d is MISSING or d == "" else _parse_array_default(self, d)
        if kind == "struct":
            assert self.struct is not None
            return self.struct.default_value(version)
        if d is MISSING:
            return _ZERO[kind]
        return _parse_scalar_default(self, kind, d)


_ZERO: dict[str, Any] = {
    "int8": 0,
    "int16": 0,
    "int32": 0,
    "int64": 0,
    "uint16": 0,
    "uint32": 0,
    "float64": 0.0,
    "bool": False,
    "uuid": ZERO_UUID_TEXT,
    "string": "",
    "bytes": "",
    "records": None,
}


def _parse_scalar_default(f: Field, kind: str, d: Any) -> Any:
    try:
        if kind in _INTS:
            if isinstance(d, str):
                s = d.strip()
                neg = s.startswith("-")
                body = s[1:] if neg else s
                n = int(body, 16) if body.lower().startswith("0x") else int(body)
                return -n if neg else n
            return int(d)
        if kind == "float64":
            return float(d)
        if kind == "bool":
            return d if isinstance(d, bool) else str(d).lower() == "true"
        if kind == "string":
            return str(d)
        if kind == "uuid":
            return str(d) if d else ZERO_UUID_TEXT
        if kind in ("bytes", "records"):
            return None if d in ("null", None) else str(d)
    except ValueError:
        pass
    raise ValueError(f"field {f.name}: bad default {d!r} for type {f.type}")


def _parse_array_default(f: Field, d: Any) -> Any:
    raise ValueError(f"field {f.name}: arrays only take the null or empty default, not {d!r}")


class _Plan:
    """How a struct looks at one version: its regular fields and its tagged ones."""

    __slots__ = ("regular", "tagged", "order", "has_tagged", "min_size")

    def __init__(self, struct_: Struct, version: int, flexible: bool) -> None:
        regular: list[Field] = []
        tagged: dict[int, Field] = {}
        order: list[Field] = []
        for f in struct_.fields:
            if not f.present(version):
                continue
            if f.tagged_in(version):
                if not flexible:
                    continue  # tagged fields only exist in flexible versions
                assert f.tag is not None
                if f.tag in tagged:
                    raise ValueError(f"{struct_.name}: tag {f.tag} used twice")
                tagged[f.tag] = f
            else:
                regular.append(f)
            order.append(f)
        self.regular = tuple(regular)
        self.tagged = tagged
        self.order = tuple(order)
        self.has_tagged = bool(tagged)
        size = 1 if flexible else 0  # the tagged-field count
        for f in regular:
            size += _min_size(f.kind, f.struct, version, flexible, f.nullable(version))
        self.min_size = size


def _min_size(kind: str, st: Struct | None, version: int, flexible: bool, nullable: bool) -> int:
    fixed = _FIXED.get(kind)
    if fixed is not None:
        return fixed.size
    if kind == "bool":
        return 1
    if kind == "uuid":
        return 16
    if kind == "string":
        return 1 if flexible else 2
    if kind in ("bytes", "records", "array"):
        return 1 if flexible else 4
    if nullable:
        return 1
    assert st is not None
    return st.plan(version, flexible).min_size


class Struct:
    """A named list of fields (a message body, an array element, a nested struct)."""

    def __init__(self, name: str, fields: Sequence[Field]) -> None:
        self.name = name
        self.fields = tuple(fields)
        self._plans: dict[tuple[int, bool], _Plan] = {}

    def __repr__(self) -> str:
        return f"Struct({self.name!r}, {len(self.fields)} fields)"

    def plan(self, version: int, flexible: bool) -> _Plan:
        key = (version, flexible)
        p = self._plans.get(key)
        if p is None:
            p = self._plans[key] = _Plan(self, version, flexible)
        return p

    def default_value(self, version: int) -> dict[str, Any]:
        return {
            f.json_name: f.default_value(version)
            for f in self.fields
            if f.present(version) and not f.tagged_in(version)
        }


@dataclass(frozen=True, eq=False)
class Message:
    """A top-level schema: ``fields`` plus Kafka's ``validVersions`` and ``flexibleVersions``."""

    name: str
    fields: Sequence[Field]
    valid_versions: str = "0"
    flexible_versions: str = "none"
    _: KW_ONLY
    api_key: int | None = None
    struct: Struct = field(init=False, repr=False)
    valid_range: Versions | None = field(init=False, repr=False)
    flexible_range: Versions | None = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "fields", tuple(self.fields))
        object.__setattr__(self, "struct", Struct(self.name, self.fields))
        object.__setattr__(self, "valid_range", parse_versions(self.valid_versions))
        object.__setattr__(self, "flexible_range", parse_versions(self.flexible_versions))

    def flexible(self, version: int) -> bool:
        return _in(self.flexible_range, version)

    def is_valid_version(self, version: int) -> bool:
        return _in(self.valid_range, version)

    @property
    def lowest_version(self) -> int:
        return self.valid_range.lo if self.valid_range is not None else 0

    @property
    def highest_version(self) -> int:
        r = self.valid_range
        if r is None:
            return 0
        return r.hi if r.hi is not None else r.lo


# --------------------------------------------------------------------------------------------
# Uuid text form


def uuid_to_text(raw: bytes) -> str:
    """Kafka's ``Uuid.toString()``: URL-safe base64 of the 16 bytes without padding."""
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def uuid_from_text(text: str) -> bytes:
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        raise ValueError(f"not a Kafka uuid: {text!r}") from None
    if len(raw) != 16:
        raise ValueError(f"not a Kafka uuid: {text!r}")
    return raw


# --------------------------------------------------------------------------------------------
# Decoding


class _Reader:
    __slots__ = ("keep_unknown",)

    def __init__(self, keep_unknown: bool) -> None:
        self.keep_unknown = keep_unknown

    def struct(
        self, st: Struct, buf: memoryview, pos: int, version: int, flexible: bool
    ) -> tuple[dict[str, Any], int]:
        plan = st.plan(version, flexible)
        out: dict[str, Any] = {}
        for f in plan.regular:
            out[f.json_name], pos = self.value(
                f, f.kind, f.nullable(version), st, buf, pos, version, flexible, False
            )
        if not flexible:
            return out, pos
        start = pos
        count, pos = read_uvarint(buf, pos)
        if count > (len(buf) - pos) // 2:
            raise CorruptRecordError(
                f"{st.name}: {count} tagged fields cannot fit in the {len(buf) - pos} bytes left",
                start,
            )
        tagged: dict[str, Any] | None = None
        unknown: dict[str, str] | None = None
        for _ in range(count):
            tag_pos = pos
            tag, pos = read_uvarint(buf, pos)
            size, pos = read_uvarint(buf, pos)
            end = pos + size
            if end > len(buf):
                raise TruncatedError(
                    f"{st.name}: tagged field {tag} declares {size} bytes but only "
                    f"{len(buf) - pos} remain",
                    tag_pos,
                )
            tf = plan.tagged.get(tag)
            if tf is None:
                if self.keep_unknown:
                    if unknown is None:
                        unknown = {}
                    unknown[str(tag)] = bytes(buf[pos:end]).hex()
                pos = end
                continue
            window = buf[:end]
            value, after = self.value(
                tf, tf.kind, tf.nullable(version), st, window, pos, version, True, True
            )
            if after != end:
                raise CorruptRecordError(
                    f"{st.name}.{tf.name}: tagged field {tag} declares {size} bytes but its "
                    f"value uses {after - pos}",
                    tag_pos,
                )
            if value != tf.default_value(version):
                if tagged is None:
                    tagged = {}
                tagged[tf.json_name] = value
            pos = end
        if tagged:
            # Kafka's JSON lists tagged fields at their schema position, not at the end.
            out = {
                f.json_name: (tagged[f.json_name] if f.json_name in tagged else out[f.json_name])
                for f in plan.order
                if f.json_name in out or f.json_name in tagged
            }
        if unknown:
            out["_unknownTaggedFields"] = unknown
        return out, pos

    def value(
        self,
        f: Field,
        kind: str,
        nullable: bool,
        parent: Struct,
        buf: memoryview,
        pos: int,
        version: int,
        flexible: bool,
        tagged: bool,
    ) -> tuple[Any, int]:
        fixed = _FIXED.get(kind)
        if fixed is not None:
            if pos + fixed.size > len(buf):
                raise _truncated(parent, f, fixed.size, buf, pos)
            return fixed.unpack_from(buf, pos)[0], pos + fixed.size
        if kind == "bool":
            if pos >= len(buf):
                raise _truncated(parent, f, 1, buf, pos)
            return buf[pos] != 0, pos + 1
        if kind == "uuid":
            if pos + 16 > len(buf):
                raise _truncated(parent, f, 16, buf, pos)
            return uuid_to_text(bytes(buf[pos : pos + 16])), pos + 16
        st = f.struct
        if kind == "struct":
            assert st is not None
            if nullable:
                if tagged:
                    marker, pos = read_uvarint(buf, pos)
                    is_null = marker == 0
                else:
                    if pos >= len(buf):
                        raise _truncated(parent, f, 1, buf, pos)
                    is_null = _I8.unpack_from(buf, pos)[0] < 0
                    pos += 1
                if is_null:
                    return None, pos
            return self.struct(st, buf, pos, version, flexible)
        # Variable-length kinds: a length or count first.
        start = pos
        n, pos = _read_length(kind, buf, pos, flexible, parent, f)
        if n < 0:
            if not nullable:
                raise CorruptRecordError(
                    f"{parent.name}.{f.name}: non-nullable field was serialized as null", start
                )
            return None, pos
        left = len(buf) - pos
        if kind == "string":
            if n > 0x7FFF:
                raise CorruptRecordError(
                    f"{parent.name}.{f.name}: string field had invalid length {n}", start
                )
            if n > left:
                raise TruncatedError(
                    f"{parent.name}.{f.name}: string of {n} bytes but only {left} remain", start
                )
            return bytes(buf[pos : pos + n]).decode("utf-8", "replace"), pos + n
        if kind in ("bytes", "records"):
            if n > left:
                raise TruncatedError(
                    f"{parent.name}.{f.name}: {n} bytes announced but only {left} remain", start
                )
            return base64.b64encode(buf[pos : pos + n]).decode("ascii"), pos + n
        # kind == "array"
        elem = f.elem
        assert elem is not None
        each = max(1, _min_size(elem, st, version, flexible, False))
        if n * each > left:
            raise CorruptRecordError(
                f"{parent.name}.{f.name}: array of {n} elements cannot fit in the {left} "
                "bytes left",
                start,
            )
        efixed = _FIXED.get(elem)
        if efixed is not None and n:
            items = list(struct.unpack_from(f">{n}{efixed.format[-1]}", buf, pos))
            return items, pos + n * efixed.size
        out: list[Any] = []
        append = out.append
        for _ in range(n):
            item, pos = self.value(f, elem, False, parent, buf, pos, version, flexible, False)
            append(item)
        return out, pos


def _read_length(
    kind: str, buf: memoryview, pos: int, flexible: bool, parent: Struct, f: Field
) -> tuple[int, int]:
    if flexible:
        n, pos = read_uvarint(buf, pos)
        return n - 1, pos
    s = _I16 if kind == "string" else _I32
    if pos + s.size > len(buf):
        raise _truncated(parent, f, s.size, buf, pos)
    n = s.unpack_from(buf, pos)[0]
    return (n if n >= 0 else -1), pos + s.size


def _truncated(parent: Struct, f: Field, need: int, buf: memoryview, pos: int) -> TruncatedError:
    left = max(0, len(buf) - pos)
    return TruncatedError(f"{parent.name}.{f.name}: needs {need} bytes but only {left} remain", pos)


def decode(
    message: Message,
    buf: Buffer,
    pos: int = 0,
    version: int = 0,
    *,
    keep_unknown_tags: bool = False,
) -> tuple[dict[str, Any], int]:
    """Read ``message`` at ``version`` from ``buf[pos:]``; return (JSON-able dict, end position)."""
    if version < 0:
        raise UnsupportedError(f"{message.name}: invalid version {version}", pos)
    mv = buf if isinstance(buf, memoryview) else memoryview(buf)
    if mv.ndim != 1 or mv.itemsize != 1:
        mv = mv.cast("B")
    if not 0 <= pos <= len(mv):
        raise TruncatedError(f"{message.name}: start position {pos} is outside the data", pos)
    return _Reader(keep_unknown_tags).struct(
        message.struct, mv, pos, version, message.flexible(version)
    )


# --------------------------------------------------------------------------------------------
# Encoding


def encode(message: Message, data: Mapping[str, Any], version: int) -> bytes:
    """Write ``data`` (decode()'s shape: camelCase keys) as ``message`` at ``version``.

    Missing fields take their default. Bytes fields take bytes-like objects or base64 text; uuid
    fields take the 22-character text form or 16 raw bytes. Tagged fields are written when their
    value differs from the default; ``_unknownTaggedFields`` (as decode() keeps them) are written
    back in tag order.
    """
    if version < 0:
        raise ValueError(f"{message.name}: invalid version {version}")
    out = bytearray()
    _write_struct(message.struct, data, version, message.flexible(version), out)
    return bytes(out)


def _get(data: Mapping[str, Any], f: Field, version: int) -> tuple[bool, Any]:
    if f.json_name in data:
        return True, data[f.json_name]
    if f.name in data:
        return True, data[f.name]
    return False, f.default_value(version)


def _write_struct(
    st: Struct, data: Mapping[str, Any], version: int, flexible: bool, out: bytearray
) -> None:
    if not isinstance(data, Mapping):
        raise ValueError(f"{st.name}: expected a mapping, got {type(data).__name__}")
    plan = st.plan(version, flexible)
    for f in plan.regular:
        _, value = _get(data, f, version)
        _write_value(f, f.kind, value, version, flexible, False, out)
    if not flexible:
        return
    fields: list[tuple[int, bytes]] = []
    for tag, f in plan.tagged.items():
        given, value = _get(data, f, version)
        if not given or value == f.default_value(version):
            continue
        buf = bytearray()
        _write_value(f, f.kind, value, version, True, True, buf)
        fields.append((tag, bytes(buf)))
    unknown = data.get("_unknownTaggedFields")
    if unknown:
        for tag_text, hex_text in dict(unknown).items():
            tag = int(tag_text)
            if tag in plan.tagged:
                raise ValueError(f"{st.name}: unknown tag {tag} is a known field")
            fields.append((tag, bytes.fromhex(hex_text)))
    fields.sort(key=lambda item: item[0])
    out += encode_uvarint(len(fields))
    for tag, raw in fields:
        out += encode_uvarint(tag)
        out += encode_uvarint(len(raw))
        out += raw


def _write_value(
    f: Field,
    kind: str,
    value: Any,
    version: int,
    flexible: bool,
    tagged: bool,
    out: bytearray,
    element: bool = False,
) -> None:
    fixed = _FIXED.get(kind)
    if fixed is not None:
        try:
            out += fixed.pack(value)
        except struct.error as e:
            raise ValueError(f"field {f.name}: {value!r} does not fit {kind}: {e}") from None
        return
    if kind == "bool":
        out.append(1 if value else 0)
        return
    if kind == "uuid":
        if isinstance(value, str):
            out += uuid_from_text(value)
        elif isinstance(value, bytes | bytearray | memoryview) and len(value) == 16:
            out += bytes(value)
        else:
            raise ValueError(f"field {f.name}: not a uuid: {value!r}")
        return
    nullable = f.nullable(version) and not element
    if kind == "struct":
        assert f.struct is not None
        if nullable:
            if value is None:
                out += encode_uvarint(0) if tagged else _I8.pack(-1)
                return
            out += encode_uvarint(1) if tagged else _I8.pack(1)
        elif value is None:
            raise ValueError(f"field {f.name}: null for a non-nullable struct")
        _write_struct(f.struct, value, version, flexible, out)
        return
    if value is None:
        if not nullable:
            raise ValueError(f"field {f.name}: null for a non-nullable field")
        if flexible:
            out += encode_uvarint(0)
        else:
            out += (_I16 if kind == "string" else _I32).pack(-1)
        return
    if kind == "string":
        if not isinstance(value, str):
            raise ValueError(f"field {f.name}: expected text, got {type(value).__name__}")
        raw = value.encode("utf-8")
        if len(raw) > 0x7FFF:
            raise ValueError(f"field {f.name}: string of {len(raw)} bytes is too long")
        _write_length(len(raw), kind, flexible, out)
        out += raw
        return
    if kind in ("bytes", "records"):
        raw = _bytes_value(f, value)
        _write_length(len(raw), kind, flexible, out)
        out += raw
        return
    _write_array(f, kind, value, version, flexible, out)


def _bytes_value(f: Field, value: Any) -> bytes:
    """A bytes field's value: bytes, or base64 text (as the JSON form carries it)."""
    if isinstance(value, str):
        try:
            return base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError(f"field {f.name}: not base64: {value!r}") from None
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    raise ValueError(f"field {f.name}: expected bytes, got {type(value).__name__}")


def _write_array(
    f: Field, kind: str, value: Any, version: int, flexible: bool, out: bytearray
) -> None:
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Sequence):
        raise ValueError(f"field {f.name}: expected a list, got {type(value).__name__}")
    assert f.elem is not None
    _write_length(len(value), kind, flexible, out)
    efixed = _FIXED.get(f.elem)
    if efixed is not None:
        try:
            out += struct.pack(f">{len(value)}{efixed.format[-1]}", *value)
        except struct.error as e:
            raise ValueError(f"field {f.name}: {e}") from None
        return
    for item in value:
        if f.elem == "struct":
            assert f.struct is not None
            if item is None:
                raise ValueError(f"field {f.name}: null array element")
            _write_struct(f.struct, item, version, flexible, out)
        else:
            _write_value(f, f.elem, item, version, flexible, False, out, element=True)


def _write_length(n: int, kind: str, flexible: bool, out: bytearray) -> None:
    if flexible:
        out += encode_uvarint(n + 1)
    elif kind == "string":
        out += _I16.pack(n)
    else:
        out += _I32.pack(n)


# --------------------------------------------------------------------------------------------
# Building messages from Kafka's JSON schema files


def message_from_json(spec: Mapping[str, Any]) -> Message:
    """Build a :class:`Message` from a parsed Kafka JSON schema (``commonStructs`` resolved)."""
    common = {s["name"]: s for s in spec.get("commonStructs", ())}

    def conv(fj: Mapping[str, Any]) -> Field:
        t = fj["type"]
        base = t[2:] if t.startswith("[]") else t
        sub = fj.get("fields")
        if sub is None and base[:1].isupper():
            if base not in common:
                raise ValueError(f"field {fj['name']}: struct {base} is not defined")
            sub = common[base]["fields"]
        return Field(
            fj["name"],
            t,
            fj.get("versions"),
            nullable_versions=fj.get("nullableVersions"),
            tag=None if fj.get("tag") is None else int(fj["tag"]),  # some files quote it
            tagged_versions=fj.get("taggedVersions"),
            default=fj.get("default", MISSING),
            fields=tuple(conv(x) for x in sub or ()),
        )

    return Message(
        spec["name"],
        tuple(conv(f) for f in spec.get("fields", ())),
        spec.get("validVersions", "0"),
        spec.get("flexibleVersions", "none"),
        api_key=spec.get("apiKey"),
    )


def _strip_comments(text: str) -> str:
    """Drop ``//`` line comments outside JSON strings (Kafka's schema files use them)."""
    out: list[str] = []
    i, n = 0, len(text)
    in_string = False
    while i < n:
        c = text[i]
        if in_string:
            out.append(c)
            if c == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 2
                continue
            if c == '"':
                in_string = False
        elif c == '"':
            in_string = True
            out.append(c)
        elif c == "/" and text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        else:
            out.append(c)
        i += 1
    return "".join(out)


def messages_from_json(text: str) -> dict[str, Message]:
    """``{name: Message}`` of a JSON array of Kafka message schemas (``//`` comments allowed):
    the one notation of every table in ``klogtool/formats/payloads``."""
    return {m.name: m for m in map(message_from_json, json.loads(_strip_comments(text)))}


def load_json_schema(text: str) -> Message:
    """Build a :class:`Message` from the text of a Kafka ``*.json`` message schema file."""
    return message_from_json(json.loads(_strip_comments(text)))
