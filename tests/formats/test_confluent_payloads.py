"""Confluent's wire format (klogtool.formats.payloads.confluent), held to independent
references: fastavro's writer builds the Avro payloads, protobuf's own message classes built
from a FileDescriptorProto written out here by hand (not from the .proto text klogtool
parses) build the Protobuf payloads, json.dumps the JSON Schema ones."""

from __future__ import annotations

import base64
import datetime
import decimal
import io
import json
import random
import struct
import uuid
from typing import Any

import fastavro
import pytest
from google.protobuf import (
    descriptor_pb2,
    descriptor_pool,
    json_format,
    message_factory,
    timestamp_pb2,
)

from klogtool.formats.payloads.confluent import (
    MAX_PAYLOAD_BYTES,
    Reference,
    Schema,
    SchemaRegistry,
    decode_confluent,
    message_indexes,
)


def frame(schema_id: int, body: bytes, indexes: bytes = b"") -> bytes:
    return b"\0" + struct.pack(">i", schema_id) + indexes + body


def zigzag(n: int) -> bytes:
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while True:
        b = z & 0x7F
        z >>= 7
        if z:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def indexes_bytes(path: list[int]) -> bytes:
    if path == [0]:
        return b"\0"
    return zigzag(len(path)) + b"".join(zigzag(i) for i in path)


# -- framing ----------------------------------------------------------------------------------
def test_not_framed_unknown_and_no_registry_never_raise() -> None:
    reg = SchemaRegistry(source="here")
    assert decode_confluent(None, reg) is None
    bad = decode_confluent(b'{"a": 1}', reg)
    assert "magic byte 123" in bad["error"] and "schema_id" not in bad
    assert base64.b64decode(bad["raw"]) == b'{"a": 1}'
    assert "shorter than 5" in decode_confluent(b"\0\0\0", reg)["error"]
    unknown = decode_confluent(frame(42, b"xyz"), reg)
    assert unknown["schema_id"] == 42 and "unknown schema" in unknown["error"]
    assert base64.b64decode(unknown["raw"]) == frame(42, b"xyz")
    none = decode_confluent(frame(-1, b""), None)
    assert none["schema_id"] == -1 and "no _schemas" in none["error"]


# -- Avro -------------------------------------------------------------------------------------
MONEY = {
    "type": "record",
    "name": "Money",
    "namespace": "com.shop",
    "fields": [
        {"name": "currency", "type": "string"},
        {
            "name": "amount",
            "type": {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 2},
        },
    ],
}
ORDER = {
    "type": "record",
    "name": "Order",
    "namespace": "com.shop",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "customer", "type": ["null", "string"], "default": None},
        {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID"]}},
        {"name": "lines", "type": {"type": "array", "items": {"type": "map", "values": "int"}}},
        {"name": "digest", "type": {"type": "fixed", "name": "Digest", "size": 4}},
        {"name": "blob", "type": "bytes"},
        {"name": "ratio", "type": "double"},
        {"name": "ok", "type": "boolean"},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "ref", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "price", "type": "com.shop.Money"},
    ],
}


def _avro_registry() -> SchemaRegistry:
    reg = SchemaRegistry()
    reg.add(Schema(1, "AVRO", json.dumps(MONEY), "money", 1))
    reg.add(
        Schema(
            2,
            "AVRO",
            json.dumps(ORDER),
            "orders-value",
            3,
            (Reference("com.shop.Money", "money", 1),),
        )
    )
    return reg


def _avro_order(rng: random.Random) -> dict[str, Any]:
    return {
        "id": rng.randrange(-(2**63), 2**63),
        "customer": rng.choice([None, "ada", "Ünïcode ✓"]),
        "status": rng.choice(["NEW", "PAID"]),
        "lines": [
            {f"sku{j}": rng.randrange(-5, 5) for j in range(rng.randrange(3))}
            for _ in range(rng.randrange(3))
        ],
        "digest": bytes(rng.randrange(256) for _ in range(4)),
        "blob": bytes(rng.randrange(256) for _ in range(rng.randrange(10))),
        "ratio": rng.random(),
        "ok": rng.random() < 0.5,
        "at": datetime.datetime(2024, 4, 19, 15, 42, 38, 26000, tzinfo=datetime.UTC),
        "day": datetime.date(2024, 4, rng.randrange(1, 29)),
        "ref": uuid.UUID(int=rng.getrandbits(128)),
        "price": {
            "currency": "EUR",
            "amount": decimal.Decimal(rng.randrange(-(10**6), 10**6)) / 100,
        },
    }


def test_avro_matches_fastavros_writer() -> None:
    reg = _avro_registry()
    named: dict[str, Any] = {}
    fastavro.parse_schema(MONEY, named_schemas=named)
    writer = fastavro.parse_schema(ORDER, named_schemas=named)
    rng = random.Random(27)
    for _ in range(200):
        order = _avro_order(rng)
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, writer, order)
        got = decode_confluent(frame(2, buf.getvalue()), reg)
        assert "error" not in got, got
        assert (got["schema_id"], got["subject"], got["version"], got["type"]) == (
            2,
            "orders-value",
            3,
            "AVRO",
        )
        v = got["value"]
        json.dumps(v)  # JSON-ready
        assert v["id"] == order["id"] and v["customer"] == order["customer"]
        assert v["status"] == order["status"] and v["lines"] == order["lines"]
        assert base64.b64decode(v["digest"]) == order["digest"]
        assert base64.b64decode(v["blob"]) == order["blob"]
        assert v["ratio"] == order["ratio"] and v["ok"] == order["ok"]
        assert datetime.datetime.fromisoformat(v["at"]) == order["at"]
        assert v["day"] == order["day"].isoformat() and v["ref"] == str(order["ref"])
        assert decimal.Decimal(v["price"]["amount"]) == order["price"]["amount"]


def test_avro_payload_that_does_not_decode_shows_error_and_raw() -> None:
    reg = _avro_registry()
    got = decode_confluent(frame(2, b"\x01"), reg)  # cut short
    assert got["schema_id"] == 2 and "does not decode" in got["error"] and got["raw"]
    reg.add(Schema(9, "AVRO", "{not json", "x", 1))
    assert "does not parse" in decode_confluent(frame(9, b""), reg)["error"]
    reg.add(
        Schema(10, "AVRO", json.dumps(ORDER), "y", 1, (Reference("com.shop.Money", "gone", 1),))
    )
    assert "gone version 1 unknown" in decode_confluent(frame(10, b""), reg)["error"]


def _one(schema: Any) -> SchemaRegistry:
    reg = SchemaRegistry()
    reg.add(Schema(1, "AVRO", json.dumps(schema), "t-value", 1))
    return reg


def test_avro_values_that_take_no_bytes_are_counted_not_built() -> None:
    """Records of records of nulls: 2^20 leaves from no bytes at all (fastavro built them
    all). (A record that holds itself crashes fastavro: tests/test_confluent.py, in a process
    of its own.)"""
    types: list[Any] = [
        {"type": "record", "name": "R20", "fields": [{"name": "n", "type": "null"}]}
    ]
    for i in range(19, -1, -1):
        fields = [{"name": "a", "type": types[-1]}, {"name": "b", "type": f"R{i + 1}"}]
        types.append({"type": "record", "name": f"R{i}", "fields": fields})
    got = decode_confluent(frame(1, b""), _one(types[-1]))
    assert got["code"] == "payload-refused" and "more than 1000000 values" in got["error"]
    # a few levels decode as fastavro's writer wrote them (nothing)
    small = types[-1]
    for _ in range(15):
        small = small["fields"][0]["type"]
    assert small["name"] == "R15"
    buf = io.BytesIO()
    leaf = {"n": None}
    value: Any = leaf
    for _ in range(5):
        value = {"a": value, "b": value}
    fastavro.schemaless_writer(buf, fastavro.parse_schema(small), value)
    assert buf.getvalue() == b""
    assert decode_confluent(frame(1, b""), _one(small))["value"] == value


def test_avro_walk_reads_as_fastavro_does() -> None:
    """Blocks with a negative count (their size in bytes follows), maps, fixed decimals padded
    to their size: what fastavro's writer or the spec write decodes; bytes that are no value
    of the schema do not (an error, no code)."""
    schema = {"type": "record", "name": "W", "fields": [
        {"name": "xs", "type": {"type": "array", "items": "long"}},
        {"name": "m", "type": {"type": "map", "values": ["null", "string"]}},
        {"name": "f", "type": {"type": "fixed", "name": "F", "size": 16,
                               "logicalType": "decimal", "precision": 5, "scale": 1}},
        {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B"]}},
    ]}  # fmt: skip
    reg = _one(schema)
    value = {
        "xs": [1, -2, 3],
        "m": {"k": None, "j": "v"},
        "f": decimal.Decimal("-1234.5"),
        "e": "B",
    }
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(schema), value)
    body = buf.getvalue()
    got = decode_confluent(frame(1, body), reg)["value"]
    assert got == {**value, "f": "-1234.5"}
    # the spec's other block form: -3 items, then their size in bytes
    assert body[:5] == zigzag(3) + zigzag(1) + zigzag(-2) + zigzag(3) + zigzag(0)
    sized = zigzag(-3) + zigzag(3) + body[1:]
    assert decode_confluent(frame(1, sized), reg)["value"] == got
    for bad, why in [
        (body[:-1], "cut short"),  # the enum's index is missing
        (body[:-1] + zigzag(2), "enum symbol 2 of 2"),
        (zigzag(10**6) + body[1:], "more than the bytes left hold"),
    ]:
        out = decode_confluent(frame(1, bad), reg)
        assert why in out["error"] and "code" not in out and out["raw"], out
    # a decimal whose 16 bytes hold more digits than precision 5 allows: refused
    over = body[:-17] + (10**6).to_bytes(16, "big") + body[-1:]
    out = decode_confluent(frame(1, over), reg)
    assert out["code"] == "payload-refused" and "precision 5" in out["error"]


def test_payloads_over_16_mib_are_refused() -> None:
    reg = _one("bytes")
    n = MAX_PAYLOAD_BYTES
    ok = decode_confluent(frame(1, zigzag(n - 4) + b"a" * (n - 4)), reg)
    assert base64.b64decode(ok["value"]) == b"a" * (n - 4)
    big = frame(1, zigzag(n) + b"a" * n)
    out = decode_confluent(big, reg)
    assert out["code"] == "payload-refused" and f"over {n}" in out["error"]
    assert base64.b64decode(out["raw"]) == big


# -- JSON Schema ------------------------------------------------------------------------------
def test_json_schema_payload_is_its_json_value() -> None:
    reg = SchemaRegistry()
    reg.add(Schema(5, "JSON", '{"type": "object"}', "j-value", 1))
    value = {"a": [1, 2.5, None, True], "b": {"c": "é"}}
    got = decode_confluent(frame(5, json.dumps(value).encode()), reg)
    assert got == {
        "schema_id": 5,
        "subject": "j-value",
        "version": 1,
        "type": "JSON",
        "value": value,
    }
    assert "not JSON" in decode_confluent(frame(5, b"\xff"), reg)["error"]


# -- Protobuf ---------------------------------------------------------------------------------
COMMON_PROTO = """
syntax = "proto3";
package common;
message Money { string currency = 1; int64 units = 2; }
"""
ORDER_PROTO = """
syntax = "proto3";
package shop.v1;

import "google/protobuf/timestamp.proto";
import "common.proto";

// an order
message Order {
  int32 id = 1;
  optional string note = 2;
  map<string, int64> counts = 3;
  oneof pay { string card = 4; Transfer transfer = 5; }
  message Transfer { repeated Status history = 1; bytes iban = 2; }
  enum Status { UNKNOWN = 0; SENT = 1; DONE = 2; }
  google.protobuf.Timestamp at = 6;
  common.Money price = 7;
  repeated sint64 deltas = 8;
  double ratio = 9;
}

message Refund {
  string reason = 1;
  message Line { uint32 qty = 1; fixed64 sku = 2; }
}
"""


def _reference_pool() -> descriptor_pool.DescriptorPool:
    """The same types as COMMON_PROTO and ORDER_PROTO, as descriptors written by hand."""
    F = descriptor_pb2.FieldDescriptorProto
    pool = descriptor_pool.DescriptorPool()
    pool.Add(descriptor_pb2.FileDescriptorProto.FromString(timestamp_pb2.DESCRIPTOR.serialized_pb))
    common = descriptor_pb2.FileDescriptorProto(
        name="common.proto", package="common", syntax="proto3"
    )
    money = common.message_type.add(name="Money")
    money.field.add(name="currency", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    money.field.add(name="units", number=2, type=F.TYPE_INT64, label=F.LABEL_OPTIONAL)
    pool.Add(common)
    f = descriptor_pb2.FileDescriptorProto(
        name="order.proto",
        package="shop.v1",
        syntax="proto3",
        dependency=["google/protobuf/timestamp.proto", "common.proto"],
    )
    order = f.message_type.add(name="Order")
    order.oneof_decl.add(name="pay")
    order.oneof_decl.add(name="_note")
    order.field.add(name="id", number=1, type=F.TYPE_INT32, label=F.LABEL_OPTIONAL)
    order.field.add(
        name="note",
        number=2,
        type=F.TYPE_STRING,
        label=F.LABEL_OPTIONAL,
        oneof_index=1,
        proto3_optional=True,
    )
    entry = order.nested_type.add(name="CountsEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    entry.field.add(name="value", number=2, type=F.TYPE_INT64, label=F.LABEL_OPTIONAL)
    order.field.add(
        name="counts",
        number=3,
        type=F.TYPE_MESSAGE,
        label=F.LABEL_REPEATED,
        type_name=".shop.v1.Order.CountsEntry",
    )
    order.field.add(
        name="card", number=4, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL, oneof_index=0
    )
    order.field.add(
        name="transfer",
        number=5,
        type=F.TYPE_MESSAGE,
        label=F.LABEL_OPTIONAL,
        oneof_index=0,
        type_name=".shop.v1.Order.Transfer",
    )
    transfer = order.nested_type.add(name="Transfer")
    transfer.field.add(
        name="history",
        number=1,
        type=F.TYPE_ENUM,
        label=F.LABEL_REPEATED,
        type_name=".shop.v1.Order.Status",
    )
    transfer.field.add(name="iban", number=2, type=F.TYPE_BYTES, label=F.LABEL_OPTIONAL)
    status = order.enum_type.add(name="Status")
    for i, n in enumerate(("UNKNOWN", "SENT", "DONE")):
        status.value.add(name=n, number=i)
    order.field.add(
        name="at",
        number=6,
        type=F.TYPE_MESSAGE,
        label=F.LABEL_OPTIONAL,
        type_name=".google.protobuf.Timestamp",
    )
    order.field.add(
        name="price",
        number=7,
        type=F.TYPE_MESSAGE,
        label=F.LABEL_OPTIONAL,
        type_name=".common.Money",
    )
    order.field.add(name="deltas", number=8, type=F.TYPE_SINT64, label=F.LABEL_REPEATED)
    order.field.add(name="ratio", number=9, type=F.TYPE_DOUBLE, label=F.LABEL_OPTIONAL)
    refund = f.message_type.add(name="Refund")
    refund.field.add(name="reason", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    line = refund.nested_type.add(name="Line")
    line.field.add(name="qty", number=1, type=F.TYPE_UINT32, label=F.LABEL_OPTIONAL)
    line.field.add(name="sku", number=2, type=F.TYPE_FIXED64, label=F.LABEL_OPTIONAL)
    pool.Add(f)
    return pool


def _proto_registry() -> SchemaRegistry:
    reg = SchemaRegistry()
    reg.add(Schema(11, "PROTOBUF", COMMON_PROTO, "common.proto", 1))
    reg.add(
        Schema(
            12,
            "PROTOBUF",
            ORDER_PROTO,
            "orders-value",
            2,
            (Reference("common.proto", "common.proto", 1),),
        )
    )
    return reg


def _random_order(cls: Any, rng: random.Random) -> Any:
    m = cls(id=rng.randrange(-(2**31), 2**31), ratio=rng.random())
    if rng.random() < 0.5:
        m.note = rng.choice(["", "fragile", "✓"])
    for i in range(rng.randrange(3)):
        m.counts[f"k{i}"] = rng.randrange(-(2**63), 2**63)
    if rng.random() < 0.5:
        m.card = "4111"
    else:
        m.transfer.history.extend(rng.choice([0, 1, 2]) for _ in range(rng.randrange(4)))
        m.transfer.iban = bytes(rng.randrange(256) for _ in range(rng.randrange(6)))
    m.at.seconds = rng.randrange(0, 2**33)
    m.at.nanos = rng.randrange(0, 10**9)
    m.price.currency = "EUR"
    m.price.units = rng.randrange(-(2**40), 2**40)
    m.deltas.extend(rng.randrange(-(2**63), 2**63) for _ in range(rng.randrange(4)))
    return m


def test_protobuf_matches_protobufs_own_classes() -> None:
    reg = _proto_registry()
    pool = _reference_pool()
    order_cls = message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.v1.Order"))
    rng = random.Random(4)
    for _ in range(200):
        m = _random_order(order_cls, rng)
        expected = json_format.MessageToDict(m, preserving_proto_field_name=True)
        got = decode_confluent(frame(12, m.SerializeToString(), b"\0"), reg)
        assert "error" not in got, got
        assert got["message"] == "shop.v1.Order" and got["type"] == "PROTOBUF"
        assert got["value"] == expected
        # the long form of [0] says the same
        long_form = decode_confluent(frame(12, m.SerializeToString(), b"\x02\x00"), reg)
        assert long_form["value"] == expected


def test_protobuf_message_indexes_pick_nested_types() -> None:
    reg = _proto_registry()
    pool = _reference_pool()
    line_cls = message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.v1.Refund.Line"))
    transfer_cls = message_factory.GetMessageClass(
        pool.FindMessageTypeByName("shop.v1.Order.Transfer")
    )
    line = line_cls(qty=7, sku=2**64 - 1)
    got = decode_confluent(frame(12, line.SerializeToString(), indexes_bytes([1, 0])), reg)
    assert got["message"] == "shop.v1.Refund.Line"
    assert got["value"] == json_format.MessageToDict(line, preserving_proto_field_name=True)
    t = transfer_cls(history=[2, 1], iban=b"\x00\xff")
    got = decode_confluent(frame(12, t.SerializeToString(), indexes_bytes([0, 0])), reg)
    assert got["message"] == "shop.v1.Order.Transfer" and got["value"]["history"] == [
        "DONE",
        "SENT",
    ]
    bad = decode_confluent(frame(12, b"", indexes_bytes([5])), reg)
    assert "message index [5]" in bad["error"] and bad["raw"]
    assert message_indexes(b"\0rest") == ([0], 1)
    assert message_indexes(indexes_bytes([3, 1, 200])) == ([3, 1, 200], 5)  # 400: 2 bytes


def test_protobuf_errors_are_fields_not_exceptions() -> None:
    reg = _proto_registry()
    assert "does not decode" in decode_confluent(frame(12, b"\x0a\xff", b"\0"), reg)["error"]
    reg.add(Schema(13, "PROTOBUF", "message {", "broken", 1))
    assert "does not parse" in decode_confluent(frame(13, b"", b"\0"), reg)["error"]
    reg.add(Schema(14, "PROTOBUF", ORDER_PROTO, "o", 1))  # its common.proto reference missing
    assert "error" in decode_confluent(frame(14, b"", b"\0"), reg)


# -- the _schemas replay ----------------------------------------------------------------------
def _key(subject: str, version: int, keytype: str = "SCHEMA") -> bytes:
    return json.dumps(
        {"keytype": keytype, "subject": subject, "version": version, "magic": 1}
    ).encode()


def _value(subject: str, version: int, schema_id: int, deleted: bool = False, **kw: Any) -> bytes:
    obj = {
        "subject": subject,
        "version": version,
        "id": schema_id,
        "schema": '"string"',
        "deleted": deleted,
        **kw,
    }
    return json.dumps(obj).encode()


def test_replay_last_value_wins_and_ids_outlive_deletes() -> None:
    records: list[tuple[bytes | None, bytes | None]] = [
        (b'{"keytype":"NOOP","magic":0}', None),
        (b'{"keytype":"CONFIG","subject":null,"magic":0}', b'{"compatibilityLevel":"BACKWARD"}'),
        (_key("a-value", 1), _value("a-value", 1, 1)),
        (_key("a-value", 2), _value("a-value", 2, 2, schemaType="JSON")),
        (_key("b-value", 1), _value("b-value", 1, 3, schemaType="PROTOBUF")),
        (_key("a-value", 1), _value("a-value", 1, 1, deleted=True)),  # soft delete
        (_key("b-value", 1), None),  # hard delete (tombstone)
        (b"garbage", b"garbage"),
        (_key("c-value", 1), b"{not json"),
        (
            b'{"keytype":"DELETE_SUBJECT","subject":"a-value","magic":0}',
            b'{"subject":"a-value","version":2}',
        ),
    ]
    reg = SchemaRegistry.replay(records, source="t")
    assert sorted(reg.by_id) == [1, 2, 3]
    assert reg.lookup(2).schema_type == "JSON" and reg.lookup(3).schema_type == "PROTOBUF"
    assert reg.lookup(1).schema_type == "AVRO" and reg.lookup(1).deleted
    assert reg.versions == {("a-value", 2): 2}
    assert decode_confluent(frame(1, b"\x06abc"), reg)["value"] == "abc"  # soft-deleted: decodes


def test_schema_from_json_refuses_what_is_not_one() -> None:
    with pytest.raises(ValueError):
        Schema.from_json({"subject": "x"})
    with pytest.raises(ValueError):
        Schema.from_json({"id": "7", "schema": "{}"})
