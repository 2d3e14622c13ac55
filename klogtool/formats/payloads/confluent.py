"""Payloads in Confluent's wire format, and the schema registry's ``_schemas`` records.

The wire format (Confluent's serializers): byte 0 is the magic byte 0, bytes 1-4 the schema id
(big-endian int32), then the payload: Avro's binary encoding of the writer schema; JSON text
(JSON Schema); for Protobuf a list of message indexes (zigzag varints: a count, then the
indexes; a single 0 byte stands for ``[0]``, the file's first message) and the message bytes.

:class:`SchemaRegistry` is the id → schema map the registry itself rebuilds from its
``_schemas`` topic (:meth:`SchemaRegistry.replay`: the last value per key wins, a tombstone or
``deleted`` drops the subject version but the schema stays decodable by its id: old records
still carry it). :func:`decode_confluent` turns one payload into a JSON-ready object; it never
raises on bad data: a payload that is not framed, whose schema is unknown or does not decode
gives its schema id (when it has one), ``error`` and ``raw`` (the whole payload, base64).

Avro decodes with fastavro (logical types as JSON: decimals and UUIDs as strings, dates and
times in ISO 8601, bytes and fixed in base64), once :mod:`.avro_bounds` has found the payload
within its bounds (depth, values, decimal digits; a payload over :data:`MAX_PAYLOAD_BYTES` is
not decoded, whatever its type): one beyond them gives ``error``, ``raw`` and ``code``
(``payload-refused``). Protobuf through descriptors built from the
schema text (:mod:`proto_schema_parser` parses it; the ``protobuf`` runtime decodes and renders
the message as proto3 JSON with the field names of the .proto), JSON Schema payloads are the
JSON value they hold. Nothing here reads files.
"""

from __future__ import annotations

import base64
import io
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from klogtool.formats.payloads import avro_bounds

CONFLUENT_DECODER = "confluent"
MAGIC = 0
AVRO = "AVRO"
JSON = "JSON"
PROTOBUF = "PROTOBUF"
SCHEMA_TYPES = (AVRO, JSON, PROTOBUF)

Payload = bytes | bytearray | memoryview
MAX_PAYLOAD_BYTES = 16 * 1024 * 1024  # larger payloads are refused: what decoding may hold


@dataclass(frozen=True)
class Reference:
    """A schema reference: ``name`` (an Avro full name, a .proto import path) is
    ``subject`` at ``version``."""

    name: str
    subject: str
    version: int


@dataclass(frozen=True)
class Schema:
    id: int
    schema_type: str  # AVRO | JSON | PROTOBUF
    text: str
    subject: str | None = None
    version: int | None = None
    references: tuple[Reference, ...] = ()
    deleted: bool = False

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Schema:
        """A schema object as the registry stores it in ``_schemas`` (and its REST API
        returns): ``subject``, ``version``, ``id``, ``schema``, ``schemaType`` (absent: AVRO),
        ``references``, ``deleted``. Raises ValueError for one that is not."""
        try:
            schema_id = obj["id"]
            text = obj["schema"]
            refs = tuple(
                Reference(str(r["name"]), str(r["subject"]), int(r["version"]))
                for r in obj.get("references") or ()
            )
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"not a schema object: {e!r}") from None
        if not isinstance(schema_id, int) or not isinstance(text, str):
            raise ValueError("not a schema object: id must be a number, schema a string")
        schema_type = obj.get("schemaType") or AVRO
        version = obj.get("version")
        subject = obj.get("subject")
        return cls(
            schema_id,
            str(schema_type).upper(),
            text,
            None if subject is None else str(subject),
            version if isinstance(version, int) else None,
            refs,
            bool(obj.get("deleted", False)),
        )


@dataclass
class SchemaRegistry:
    """Schemas by id, and ids by (subject, version); compiled readers are cached per id."""

    by_id: dict[int, Schema] = field(default_factory=dict)
    versions: dict[tuple[str, int], int] = field(default_factory=dict)
    source: str | None = None  # where the schemas came from (for messages)
    _compiled: dict[int, Any] = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return len(self.by_id)

    def __getstate__(self) -> dict[str, Any]:
        # to worker processes without the compiled readers (descriptors do not pickle)
        return {**self.__dict__, "_compiled": {}}

    def add(self, schema: Schema) -> None:
        self.by_id[schema.id] = schema
        self._compiled.pop(schema.id, None)
        if schema.subject is not None and schema.version is not None:
            if schema.deleted:
                self.versions.pop((schema.subject, schema.version), None)
            else:
                self.versions[(schema.subject, schema.version)] = schema.id

    def lookup(self, schema_id: int) -> Schema | None:
        return self.by_id.get(schema_id)

    def reference(self, ref: Reference) -> Schema:
        schema_id = self.versions.get((ref.subject, ref.version))
        if schema_id is None:  # a soft-deleted version still names its schema by id
            for s in self.by_id.values():
                if s.subject == ref.subject and s.version == ref.version:
                    return s
            raise KeyError(f"reference {ref.name}: {ref.subject} version {ref.version} unknown")
        return self.by_id[schema_id]

    @classmethod
    def replay(
        cls, records: Iterable[tuple[Payload | None, Payload | None]], source: str | None = None
    ) -> SchemaRegistry:
        """The registry as it loads its ``_schemas`` partition: ``records`` are (key, value)
        in offset order. SCHEMA keys only (CONFIG, MODE, NOOP, DELETE_SUBJECT, ... say nothing
        about ids); the last value per key wins; a null value (tombstone) removes the subject
        version, never the id. Keys or values that are not the registry's JSON are skipped."""
        registry = cls(source=source)
        for key, value in records:
            k = _json_object(key)
            if k is None or k.get("keytype") != "SCHEMA":
                continue
            subject, version = k.get("subject"), k.get("version")
            if not isinstance(subject, str) or not isinstance(version, int):
                continue
            if value is None:  # a tombstone (hard delete): the version goes, the id stays
                registry.versions.pop((subject, version), None)
                continue
            v = _json_object(value)
            if v is None:
                continue
            try:
                registry.add(Schema.from_json(v))
            except ValueError:
                continue
        return registry


def _json_object(data: Payload | None) -> dict[str, Any] | None:
    if data is None:
        return None
    try:
        obj = json.loads(bytes(data).decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    return obj if isinstance(obj, dict) else None


# -- decoding -------------------------------------------------------------------------------------
class _DecodeError(Exception):
    pass


class _Refused(_DecodeError):
    """A payload beyond the decoder's bounds (docs/confluent.md): refused, not decoded."""

    code = "payload-refused"


def _b64(data: Payload) -> str:
    return base64.b64encode(bytes(data)).decode("ascii")


def decode_confluent(data: Payload | None, registry: SchemaRegistry | None) -> Any:
    """One key or value in Confluent's wire format as a JSON-ready object (None stays None):
    ``{"schema_id", "subject", "version", "type", "value"}`` (Protobuf adds ``message``, the
    full name of the message type), or on failure ``{"schema_id" (when framed), "error",
    "raw"}``: the payload in base64."""
    if data is None:
        return None
    raw = bytes(data)
    if len(raw) < 5 or raw[0] != MAGIC:
        why = "shorter than 5 bytes" if len(raw) < 5 else f"magic byte {raw[0]}, not 0"
        return {"error": f"not in the Confluent wire format ({why})", "raw": _b64(raw)}
    schema_id = int.from_bytes(raw[1:5], "big", signed=True)
    schema = None if registry is None else registry.lookup(schema_id)
    if schema is None:
        where = (
            "no _schemas topic was read"
            if registry is None
            else f"not among the {len(registry)} schemas of {registry.source or '_schemas'}"
        )
        return {"schema_id": schema_id, "error": f"unknown schema ({where})", "raw": _b64(raw)}
    assert registry is not None
    out: dict[str, Any] = {
        "schema_id": schema_id,
        "subject": schema.subject,
        "version": schema.version,
        "type": schema.schema_type,
    }
    try:
        if len(raw) - 5 > MAX_PAYLOAD_BYTES:
            raise _Refused(f"payload refused: {len(raw) - 5} bytes, over {MAX_PAYLOAD_BYTES}")
        if schema.schema_type == AVRO:
            out["value"] = _decode_avro(registry, schema, raw[5:])
        elif schema.schema_type == JSON:
            out["value"] = _decode_json(raw[5:])
        elif schema.schema_type == PROTOBUF:
            out["message"], out["value"] = _decode_protobuf(registry, schema, raw[5:])
        else:
            raise _DecodeError(f"schema type {schema.schema_type} is not supported")
    except _DecodeError as e:
        out["error"] = str(e)
        if isinstance(e, _Refused):
            out["code"] = e.code
        out["raw"] = _b64(raw)
    except Exception as e:  # noqa: BLE001 - the decoders' own errors: one bad payload, no crash
        out["error"] = f"{schema.schema_type} payload does not decode: {type(e).__name__}: {e}"
        out["raw"] = _b64(raw)
    return out


def _compiled(registry: SchemaRegistry, schema: Schema, build: Any) -> Any:
    cached = registry._compiled.get(schema.id)
    if cached is None:
        try:
            cached = build(registry, schema)
        except _DecodeError as e:
            cached = e
        except Exception as e:  # noqa: BLE001 - a schema text its library refuses
            cached = _DecodeError(
                f"{schema.schema_type} schema {schema.id} does not parse: {type(e).__name__}: {e}"
            )
        registry._compiled[schema.id] = cached
    if isinstance(cached, _DecodeError):
        raise cached
    return cached


# -- JSON Schema ----------------------------------------------------------------------------------
def _non_finite(x: float) -> float | str:
    """A float as a JSON value: NaN and the infinities, which RFC 8259 has no number for,
    as the strings Protobuf's JSON mapping writes ("NaN", "Infinity", "-Infinity")."""
    if math.isfinite(x):
        return x
    return "NaN" if math.isnan(x) else ("Infinity" if x > 0 else "-Infinity")


def _decode_json(body: bytes) -> Any:
    try:
        # NaN/Infinity tokens (not JSON, but Python's parser takes them) and numbers past a
        # double (1e999) become the strings _non_finite writes
        return json.loads(
            body.decode("utf-8"),
            parse_constant=lambda c: _non_finite(float(c)),
            parse_float=lambda t: _non_finite(float(t)),
        )
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise _DecodeError(f"JSON payload is not JSON: {e}") from None


# -- Avro -----------------------------------------------------------------------------------------
def _avro_schema(registry: SchemaRegistry, schema: Schema) -> tuple[Any, avro_bounds.AvroType]:
    """fastavro's parsed schema, and its plan for avro_bounds. Each referenced schema is
    parsed once (schemas that each name the next twice would otherwise cost 2^depth)."""
    import fastavro

    named: dict[str, Any] = {}
    parsed_ids: set[int] = set()

    def parse(s: Schema, depth: int) -> Any:
        if depth > 32:
            raise _DecodeError("schema references nest deeper than 32")
        for ref in s.references:
            try:
                r = registry.reference(ref)
            except KeyError as e:
                raise _DecodeError(str(e.args[0])) from None
            if r.id not in parsed_ids:
                parse(r, depth + 1)
                parsed_ids.add(r.id)
        return fastavro.parse_schema(json.loads(s.text), named_schemas=named)

    parsed = parse(schema, 0)
    return parsed, avro_bounds.plan(parsed, named)


def _decode_avro(registry: SchemaRegistry, schema: Schema, body: bytes) -> Any:
    import fastavro

    parsed, plan = _compiled(registry, schema, _avro_schema)
    try:
        avro_bounds.check(plan, body)  # before fastavro: it can crash, hang or fill memory
    except avro_bounds.Refused as e:
        raise _Refused(f"AVRO payload refused: {e}") from None
    except avro_bounds.Malformed as e:
        raise _DecodeError(f"AVRO payload does not decode: {e}") from None
    return _jsonable(fastavro.schemaless_reader(io.BytesIO(body), parsed, None))


def _jsonable(v: Any) -> Any:
    """fastavro's Python values as JSON values: bytes in base64, decimals and UUIDs as
    strings, dates and times in ISO 8601."""
    if isinstance(v, float):
        return _non_finite(v)
    if v is None or isinstance(v, bool | int | str):
        return v
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_jsonable(x) for x in v]
    if isinstance(v, bytes | bytearray):
        return _b64(v)
    import datetime

    if isinstance(v, datetime.datetime | datetime.date | datetime.time):
        return v.isoformat()
    return str(v)  # decimal.Decimal, uuid.UUID


# -- Protobuf -------------------------------------------------------------------------------------
_SCALARS = {
    "double": 1,
    "float": 2,
    "int64": 3,
    "uint64": 4,
    "int32": 5,
    "fixed64": 6,
    "fixed32": 7,
    "bool": 8,
    "string": 9,
    "bytes": 12,
    "uint32": 13,
    "sfixed32": 15,
    "sfixed64": 16,
    "sint32": 17,
    "sint64": 18,
}
_LABEL_OPTIONAL, _LABEL_REQUIRED, _LABEL_REPEATED = 1, 2, 3
_TYPE_MESSAGE = 11


def _map_entry_name(field_name: str) -> str:
    """protoc's name of a map field's entry message: ``my_map`` → ``MyMapEntry``."""
    out, upper = [], True
    for c in field_name:
        if c == "_":
            upper = True
        elif upper:
            out.append(c.upper())
            upper = False
        else:
            out.append(c)
    return "".join(out) + "Entry"


def _set_type(fd: Any, type_name: str) -> None:
    if type_name in _SCALARS:
        fd.type = _SCALARS[type_name]
    else:
        fd.type_name = type_name  # resolved by the pool (C++ scoping rules); message or enum


def _add_field(msg: Any, f: Any, proto3: bool, oneof_index: int | None = None) -> None:
    from proto_schema_parser import ast

    fd = msg.field.add()
    fd.name = f.name
    fd.number = f.number
    fd.json_name = _json_name(f.name)
    _set_type(fd, f.type)
    card = f.cardinality
    if card == ast.FieldCardinality.REPEATED:
        fd.label = _LABEL_REPEATED
    elif card == ast.FieldCardinality.REQUIRED:
        fd.label = _LABEL_REQUIRED
    else:
        fd.label = _LABEL_OPTIONAL
    if oneof_index is not None:
        fd.oneof_index = oneof_index
    elif proto3 and card == ast.FieldCardinality.OPTIONAL:
        fd.proto3_optional = True
        msg.oneof_decl.add().name = "_" + f.name
        fd.oneof_index = len(msg.oneof_decl) - 1
    for opt in f.options:
        if opt.name == "packed" and isinstance(opt.value, bool):
            fd.options.packed = opt.value


def _json_name(name: str) -> str:
    parts = name.split("_")
    return parts[0] + "".join(p[:1].upper() + p[1:] for p in parts[1:])


def _fill_enum(enum: Any, e: Any) -> None:
    from proto_schema_parser import ast

    enum.name = e.name
    for el in e.elements:
        if isinstance(el, ast.EnumValue):
            v = enum.value.add()
            v.name, v.number = el.name, el.number
        elif isinstance(el, ast.Option) and el.name == "allow_alias":
            enum.options.allow_alias = bool(el.value)


def _fill_message(msg: Any, m: Any, proto3: bool) -> None:
    from proto_schema_parser import ast

    msg.name = m.name
    synthetic: list[Any] = []  # proto3 optional fields: their oneofs come after the real ones
    for el in m.elements:
        if isinstance(el, ast.Field):
            if proto3 and el.cardinality == ast.FieldCardinality.OPTIONAL:
                synthetic.append(el)
            else:
                _add_field(msg, el, proto3)
        elif isinstance(el, ast.MapField):
            entry = msg.nested_type.add()
            entry.name = _map_entry_name(el.name)
            entry.options.map_entry = True
            for number, name, typ in ((1, "key", el.key_type), (2, "value", el.value_type)):
                kv = entry.field.add()
                kv.name, kv.number, kv.label, kv.json_name = name, number, _LABEL_OPTIONAL, name
                _set_type(kv, typ)
            fd = msg.field.add()
            fd.name, fd.number, fd.label = el.name, el.number, _LABEL_REPEATED
            fd.json_name = _json_name(el.name)
            fd.type, fd.type_name = _TYPE_MESSAGE, entry.name
        elif isinstance(el, ast.OneOf):
            msg.oneof_decl.add().name = el.name
            index = len(msg.oneof_decl) - 1
            for of in el.elements:
                if isinstance(of, ast.Field):
                    _add_field(msg, of, proto3, index)
                elif isinstance(of, ast.Group):
                    raise _DecodeError("proto2 groups are not supported")
        elif isinstance(el, ast.Message):
            _fill_message(msg.nested_type.add(), el, proto3)
        elif isinstance(el, ast.Enum):
            _fill_enum(msg.enum_type.add(), el)
        elif isinstance(el, ast.Group):
            raise _DecodeError("proto2 groups are not supported")
        elif isinstance(el, ast.ExtensionRange):
            for r in el.ranges:
                lo, _, hi = str(r).partition(" to ")
                er = msg.extension_range.add()
                er.start = int(lo)
                er.end = 536870912 if hi.strip() == "max" else int(hi or lo) + 1
    for el in synthetic:
        _add_field(msg, el, proto3)


def _file_proto(name: str, text: str, deps: list[str]) -> Any:
    from google.protobuf import descriptor_pb2
    from proto_schema_parser import ast
    from proto_schema_parser.parser import Parser

    parsed = Parser().parse(text)
    fp = descriptor_pb2.FileDescriptorProto()
    fp.name = name
    proto3 = (parsed.syntax or "proto2") == "proto3"
    fp.syntax = "proto3" if proto3 else "proto2"
    for el in parsed.file_elements:
        if isinstance(el, ast.Package):
            fp.package = el.name
        elif isinstance(el, ast.Import) and el.name in deps:
            fp.dependency.append(el.name)
        elif isinstance(el, ast.Message):
            _fill_message(fp.message_type.add(), el, proto3)
        elif isinstance(el, ast.Enum):
            _fill_enum(fp.enum_type.add(), el)
    return fp


def _imports(text: str) -> list[str]:
    from proto_schema_parser import ast
    from proto_schema_parser.parser import Parser

    return [el.name for el in Parser().parse(text).file_elements if isinstance(el, ast.Import)]


def _well_known(name: str) -> Any | None:
    """google/protobuf/*.proto from the protobuf runtime (the registry stores no reference
    for them), or None."""
    if not name.startswith("google/protobuf/") or not name.endswith(".proto"):
        return None
    import importlib

    from google.protobuf import descriptor_pb2

    module = name[len("google/protobuf/") : -len(".proto")].replace("/", ".")
    try:
        mod = importlib.import_module(f"google.protobuf.{module}_pb2")
    except ImportError:
        return None
    return descriptor_pb2.FileDescriptorProto.FromString(mod.DESCRIPTOR.serialized_pb)


def _protobuf_file(registry: SchemaRegistry, schema: Schema) -> Any:
    """The FileDescriptor of a Protobuf schema, in a pool of its own with its references."""
    from google.protobuf import descriptor_pool

    pool = descriptor_pool.DescriptorPool()
    added: set[str] = set()

    def add(name: str, s: Schema, depth: int) -> None:
        if depth > 32:
            raise _DecodeError("schema references nest deeper than 32")
        refs = {r.name: r for r in s.references}
        deps = []
        for imp in _imports(s.text):
            if imp in added:
                deps.append(imp)
            elif imp in refs:
                try:
                    add(imp, registry.reference(refs[imp]), depth + 1)
                except KeyError as e:
                    raise _DecodeError(str(e.args[0])) from None
                deps.append(imp)
            else:
                wk = _well_known(imp)
                if wk is not None:
                    for dep in wk.dependency:
                        wkd = _well_known(dep)
                        if wkd is not None and dep not in added:
                            pool.Add(wkd)
                            added.add(dep)
                    pool.Add(wk)
                    added.add(imp)
                    deps.append(imp)
                # else (confluent/meta.proto, ...): options only, left out
        pool.Add(_file_proto(name, s.text, deps))
        added.add(name)

    main = f"schema-{schema.id}.proto"
    add(main, schema, 0)
    return pool.FindFileByName(main)


def _read_varint(body: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(body):
            raise _DecodeError("message indexes cut short")
        b = body[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return (result >> 1) ^ -(result & 1), pos  # zigzag
        shift += 7
        if shift > 63:
            raise _DecodeError("message index varint longer than 10 bytes")


def message_indexes(body: bytes) -> tuple[list[int], int]:
    """The Protobuf message indexes after the schema id, and where the message starts."""
    count, pos = _read_varint(body, 0)
    if count == 0:
        return [0], pos
    if count < 0 or count > 128:
        raise _DecodeError(f"message index count {count} is not plausible")
    indexes = []
    for _ in range(count):
        i, pos = _read_varint(body, pos)
        indexes.append(i)
    return indexes, pos


def _decode_protobuf(registry: SchemaRegistry, schema: Schema, body: bytes) -> tuple[str, Any]:
    from google.protobuf import json_format, message_factory

    file = _compiled(registry, schema, _protobuf_file)
    indexes, pos = message_indexes(body)
    types = list(file.message_types_by_name.values())
    desc = None
    for i in indexes:
        if not 0 <= i < len(types):
            raise _DecodeError(f"message index {indexes} is not in the schema")
        desc = types[i]
        # as Confluent counts them, in the .proto: a map field's entry type is not one
        types = [t for t in desc.nested_types if not t.GetOptions().map_entry]
    assert desc is not None
    msg = message_factory.GetMessageClass(desc)()
    msg.ParseFromString(body[pos:])
    return desc.full_name, json_format.MessageToDict(msg, preserving_proto_field_name=True)
