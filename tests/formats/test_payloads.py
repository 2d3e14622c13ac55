"""Tests for klogtool.formats.payloads: the schema engine, control records, __consumer_offsets,
__transaction_state and the decoder registry.

Expected bytes come from three independent places: struct.pack by hand, kafka-python's own
schema-driven encoder (its ApiData classes, fed JSON schemas written here), and real
broker-written segments from the corpus (``support.paths.CORPUS``), read with a tiny
extractor local to this file so that these tests do not depend on klogtool's record reader.
"""

from __future__ import annotations

import base64
import gzip
import json
import struct
import sys
import types
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.paths import CORPUS

from klogtool.formats.errors import (
    CorruptRecordError,
    FormatError,
    TruncatedError,
    UnsupportedError,
)
from klogtool.formats.payloads import (
    BYTE_DECODERS,
    DECODERS,
    UNIMPLEMENTED_DECODERS,
    auto_decoder_for_topic,
    decode_bytes,
    decode_internal,
    get_byte_decoder,
    is_internal_decoder,
    kafka_dump_text,
)
from klogtool.formats.payloads import control as ctl
from klogtool.formats.payloads.consumer_offsets import (
    CONSUMER_OFFSETS_RECORDS,
    CONSUMER_PROTOCOL_ASSIGNMENT,
    CONSUMER_PROTOCOL_SUBSCRIPTION,
    decode_consumer_offsets,
    decode_consumer_protocol_assignment,
    decode_consumer_protocol_subscription,
)
from klogtool.formats.payloads.schema import (
    MISSING,
    Field,
    Message,
    Struct,
    Versions,
    decode,
    encode,
    json_name,
    load_json_schema,
    message_from_json,
    parse_versions,
    uuid_from_text,
    uuid_to_text,
)
from klogtool.formats.payloads.transaction_state import (
    TRANSACTION_LOG_VALUE,
    TRANSACTION_STATE_RECORDS,
    decode_transaction_state,
    format_transaction_text,
    transaction_state_name,
)
from klogtool.formats.varint import encode_uvarint, read_varint, read_varlong

REAL = CORPUS

# ---------------------------------------------------------------------------------------------
# Byte helpers (hand encoding)


def i8(v: int) -> bytes:
    return struct.pack(">b", v)


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def i64(v: int) -> bytes:
    return struct.pack(">q", v)


def s16(v: str | None) -> bytes:
    if v is None:
        return i16(-1)
    raw = v.encode()
    return i16(len(raw)) + raw


def b32(v: bytes | None) -> bytes:
    if v is None:
        return i32(-1)
    return i32(len(v)) + v


def cs(v: str | None) -> bytes:
    """Compact string."""
    if v is None:
        return b"\x00"
    raw = v.encode()
    return encode_uvarint(len(raw) + 1) + raw


def cb(v: bytes | None) -> bytes:
    if v is None:
        return b"\x00"
    return encode_uvarint(len(v) + 1) + v


def b64(v: bytes) -> str:
    return base64.b64encode(v).decode()


# ---------------------------------------------------------------------------------------------
# A test-local record extractor for real segments (v0/v1 messages, v2 batches)


def extract_records(path: Path) -> list[tuple[int, bool, bytes | None, bytes | None]]:
    """(offset, is_control, key, value) of every record; compressed legacy wrappers unsupported."""
    data = path.read_bytes()
    out: list[tuple[int, bool, bytes | None, bytes | None]] = []
    pos = 0
    while pos + 17 <= len(data):
        base, size = struct.unpack_from(">qi", data, pos)
        end = pos + 12 + size
        if end > len(data):
            break
        magic = data[pos + 16]
        if magic < 2:
            assert data[pos + 17] & 7 == 0, "compressed legacy wrapper"
            p = pos + 18 + (8 if magic == 1 else 0)
            (klen,) = struct.unpack_from(">i", data, p)
            key = None if klen < 0 else data[p + 4 : p + 4 + klen]
            p += 4 + max(klen, 0)
            (vlen,) = struct.unpack_from(">i", data, p)
            out.append((base, False, key, None if vlen < 0 else data[p + 4 : p + 4 + vlen]))
        else:
            (attrs,) = struct.unpack_from(">h", data, pos + 21)
            (count,) = struct.unpack_from(">i", data, pos + 57)
            body = data[pos + 61 : end]
            if attrs & 7 == 1:
                body = gzip.decompress(body)
            elif attrs & 7 == 3:
                body = pytest.importorskip("lz4.frame").decompress(body)
            assert attrs & 7 in (0, 1, 3)
            p = 0
            for _ in range(count):
                length, p = read_varint(body, p)
                rec_end = p + length
                _, p = read_varlong(body, p + 1)
                delta, p = read_varint(body, p)
                klen, p = read_varint(body, p)
                key = None if klen < 0 else body[p : p + klen]
                p += max(klen, 0)
                vlen, p = read_varint(body, p)
                value = None if vlen < 0 else body[p : p + vlen]
                out.append((base + delta, bool(attrs & 0x20), key, value))
                p = rec_end
        pos = end
    return out


def real(path: str) -> Path:
    p = REAL / path
    if not p.exists():
        pytest.skip(f"corpus file missing: {p}")
    return p


# ---------------------------------------------------------------------------------------------
# kafka-python's schema-driven encoder as an independent oracle

KP_SCHEMAS = {
    "TransactionLogValue": """{
      "type": "data", "name": "TransactionLogValue", "validVersions": "0-1",
      "flexibleVersions": "1+",
      "fields": [
        {"name": "ProducerId", "type": "int64", "versions": "0+"},
        {"name": "PreviousProducerId", "type": "int64", "versions": "1+",
         "taggedVersions": "1+", "tag": 0, "default": -1},
        {"name": "NextProducerId", "type": "int64", "versions": "1+",
         "taggedVersions": "1+", "tag": 1, "default": -1},
        {"name": "ProducerEpoch", "type": "int16", "versions": "0+"},
        {"name": "TransactionTimeoutMs", "type": "int32", "versions": "0+"},
        {"name": "TransactionStatus", "type": "int8", "versions": "0+"},
        {"name": "TransactionPartitions", "type": "[]PartitionsSchema", "versions": "0+",
         "nullableVersions": "0+", "fields": [
           {"name": "Topic", "type": "string", "versions": "0+"},
           {"name": "PartitionIds", "type": "[]int32", "versions": "0+"}]},
        {"name": "TransactionLastUpdateTimestampMs", "type": "int64", "versions": "0+"},
        {"name": "TransactionStartTimestampMs", "type": "int64", "versions": "0+"},
        {"name": "ClientTransactionVersion", "type": "int16", "versions": "1+",
         "taggedVersions": "1+", "tag": 2, "default": 0}]}""",
    "VotersRecord": """{
      "type": "data", "name": "VotersRecord", "validVersions": "0", "flexibleVersions": "0+",
      "fields": [
        {"name": "Version", "type": "int16", "versions": "0+"},
        {"name": "Voters", "type": "[]Voter", "versions": "0+", "fields": [
          {"name": "VoterId", "type": "int32", "versions": "0+"},
          {"name": "VoterDirectoryId", "type": "uuid", "versions": "0+"},
          {"name": "Endpoints", "type": "[]Endpoint", "versions": "0+", "fields": [
            {"name": "Name", "type": "string", "versions": "0+"},
            {"name": "Host", "type": "string", "versions": "0+"},
            {"name": "Port", "type": "uint16", "versions": "0+"}]},
          {"name": "KRaftVersionFeature", "type": "KRaftVersionFeature", "versions": "0+",
           "fields": [
            {"name": "MinSupportedVersion", "type": "int16", "versions": "0+"},
            {"name": "MaxSupportedVersion", "type": "int16", "versions": "0+"}]}]}]}""",
    "ConsumerGroupMemberMetadataValue": """{
      "type": "data", "name": "ConsumerGroupMemberMetadataValue", "validVersions": "0",
      "flexibleVersions": "0+",
      "fields": [
        {"name": "InstanceId", "versions": "0+", "nullableVersions": "0+", "type": "string"},
        {"name": "RackId", "versions": "0+", "nullableVersions": "0+", "type": "string"},
        {"name": "ClientId", "versions": "0+", "type": "string"},
        {"name": "ClientHost", "versions": "0+", "type": "string"},
        {"name": "SubscribedTopicNames", "versions": "0+", "type": "[]string"},
        {"name": "SubscribedTopicRegex", "versions": "0+", "nullableVersions": "0+",
         "type": "string"},
        {"name": "RebalanceTimeoutMs", "type": "int32", "versions": "0+", "default": -1},
        {"name": "ServerAssignor", "versions": "0+", "nullableVersions": "0+", "type": "string"},
        {"name": "ClassicMemberMetadata", "versions": "0+", "nullableVersions": "0+",
         "type": "ClassicMemberMetadata", "default": null, "taggedVersions": "0+", "tag": 0,
         "fields": [
          {"name": "SessionTimeoutMs", "type": "int32", "versions": "0+"},
          {"name": "SupportedProtocols", "type": "[]ClassicProtocol", "versions": "0+",
           "fields": [
            {"name": "Name", "type": "string", "versions": "0+"},
            {"name": "Metadata", "type": "bytes", "versions": "0+"}]}]}]}""",
    "ConsumerGroupCurrentMemberAssignmentValue": """{
      "type": "data", "name": "ConsumerGroupCurrentMemberAssignmentValue",
      "validVersions": "0", "flexibleVersions": "0+",
      "fields": [
        {"name": "MemberEpoch", "versions": "0+", "type": "int32"},
        {"name": "PreviousMemberEpoch", "versions": "0+", "type": "int32"},
        {"name": "State", "versions": "0+", "type": "int8"},
        {"name": "AssignedPartitions", "versions": "0+", "type": "[]TopicPartitions"},
        {"name": "PartitionsPendingRevocation", "versions": "0+", "type": "[]TopicPartitions"}],
      "commonStructs": [
        {"name": "TopicPartitions", "versions": "0+", "fields": [
          {"name": "TopicId", "type": "uuid", "versions": "0+"},
          {"name": "Partitions", "type": "[]int32", "versions": "0+"}]}]}""",
}


@pytest.fixture(scope="module")
def kp(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """kafka-python ApiData classes built from KP_SCHEMAS (they encode with a version prefix)."""
    api_data = pytest.importorskip("kafka.protocol.api_data")
    root = tmp_path_factory.mktemp("kp")
    name = f"klogtool_kp_{uuid.uuid4().hex}"
    pkg = root / name
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for schema_name, text in KP_SCHEMAS.items():
        (pkg / f"{schema_name}.json").write_text(text)
    sys.path.insert(0, str(root))
    try:
        module = __import__(name)
        classes = {
            n: types.new_class(n, (api_data.ApiData,), {"load_json": module}) for n in KP_SCHEMAS
        }
    finally:
        sys.path.remove(str(root))
    return types.SimpleNamespace(**classes)


# =============================================================================================
# Schema engine


def test_parse_versions() -> None:
    assert parse_versions("0+") == Versions(0, None)
    assert parse_versions("1-3") == Versions(1, 3)
    assert parse_versions("2") == Versions(2, 2)
    assert parse_versions(5) == Versions(5, 5)
    assert parse_versions("none") is None
    assert parse_versions("") is None
    assert parse_versions(None) is None
    assert 7 in Versions(3, None) and 2 not in Versions(3, None)
    assert 3 in Versions(1, 3) and 4 not in Versions(1, 3)
    assert str(Versions(1, 3)) == "1-3" and str(Versions(2, None)) == "2+"
    with pytest.raises(ValueError):
        parse_versions("x+")


def test_json_name_lowers_only_the_first_letter() -> None:
    assert json_name("TransactionalId") == "transactionalId"
    assert json_name("KRaftVersion") == "kRaftVersion"
    assert json_name("offset") == "offset"


def test_field_schema_errors() -> None:
    with pytest.raises(ValueError):
        Field("A", "[]Sub")  # a struct needs its fields
    with pytest.raises(ValueError):
        Field("A", "int32", fields=(Field("B", "int8"),))
    with pytest.raises(ValueError):
        Field("A", "integer")
    with pytest.raises(ValueError):
        Field("A", "int32", tagged_versions="0+")  # tagged without a tag
    with pytest.raises(ValueError):
        Message("M", (Field("A", "int8", tag=0), Field("B", "int8", tag=0)), "0", "0+").struct.plan(
            0, True
        )


def test_field_defaults() -> None:
    assert Field("A", "int64", default="-1").default_value(0) == -1
    assert Field("A", "int32", default="0x10").default_value(0) == 16
    assert Field("A", "int16", default=-2).default_value(0) == -2
    assert Field("A", "bool", default="true").default_value(0) is True
    assert Field("A", "string").default_value(0) == ""
    assert Field("A", "string", nullable_versions="0+", default="null").default_value(0) is None
    assert Field("A", "uuid").default_value(0) == "AAAAAAAAAAAAAAAAAAAAAA"
    assert Field("A", "[]int32").default_value(0) == []
    assert Field("A", "bytes").default_value(0) == ""
    assert Field("A", "float64").default_value(0) == 0.0
    sub = Field("S", "Sub", fields=(Field("X", "int8", default=3), Field("Y", "string")))
    assert sub.default_value(0) == {"x": 3, "y": ""}
    assert MISSING is Field("A", "int8").default


def test_uuid_text_form() -> None:
    raw = uuid.UUID("e23501fa-cea6-4df2-a7b1-0257832d4540").bytes
    assert uuid_to_text(raw) == "4jUB-s6mTfKnsQJXgy1FQA"
    assert uuid_from_text("4jUB-s6mTfKnsQJXgy1FQA") == raw
    assert uuid_to_text(bytes(16)) == "AAAAAAAAAAAAAAAAAAAAAA"
    with pytest.raises(ValueError):
        uuid_from_text("short")


SAMPLE = Message(
    "Sample",
    (
        Field("Id", "int32"),
        Field("Name", "string", nullable_versions="1+"),
        Field("Blob", "bytes", "1+", nullable_versions="1+"),
        Field("Flag", "bool", "2+"),
        Field("Items", "[]Item", fields=(Field("K", "string"), Field("V", "[]int64"))),
        Field("Extra", "int64", tag=0, tagged_versions="2+", default=-1),
        Field("Note", "string", tag=5, tagged_versions="2+", nullable_versions="2+", default=None),
    ),
    "0-2",
    "2+",
)


def test_decode_non_flexible_by_hand() -> None:
    buf = i32(7) + s16("héllo") + i32(2) + s16("a") + i32(1) + i64(-5) + s16("b") + i32(0)
    assert decode(SAMPLE, buf, 0, 0) == (
        {"id": 7, "name": "héllo", "items": [{"k": "a", "v": [-5]}, {"k": "b", "v": []}]},
        len(buf),
    )
    buf1 = i32(1) + s16(None) + b32(b"\x00\xff") + i32(-1 + 1)
    assert decode(SAMPLE, buf1, 0, 1)[0] == {"id": 1, "name": None, "blob": "AP8=", "items": []}
    # Null for a non-nullable field (name at v0).
    with pytest.raises(CorruptRecordError) as e:
        decode(SAMPLE, i32(1) + s16(None) + i32(0), 0, 0)
    assert e.value.position == 4


def test_decode_flexible_with_tagged_fields() -> None:
    body = i32(9) + cs("n") + cb(None) + b"\x01" + encode_uvarint(2) + cs("k") + encode_uvarint(1)
    body += b"\x00"  # the element's tagged fields
    tags = (
        encode_uvarint(3)
        + encode_uvarint(0)
        + encode_uvarint(8)
        + i64(42)
        + encode_uvarint(3)  # unknown tag 3
        + encode_uvarint(2)
        + b"\xab\xcd"
        + encode_uvarint(5)
        + encode_uvarint(3)
        + cs("hi")
    )
    buf = b"\xee" + body + tags + b"trailing"
    data, end = decode(SAMPLE, buf, 1, 2)
    assert end == len(buf) - len(b"trailing")
    assert data == {
        "id": 9,
        "name": "n",
        "blob": None,
        "flag": True,
        "items": [{"k": "k", "v": []}],
        "extra": 42,
        "note": "hi",
    }
    # Tagged fields sit at their schema position, as in Kafka's JSON.
    assert list(data) == ["id", "name", "blob", "flag", "items", "extra", "note"]
    kept, _ = decode(SAMPLE, buf, 1, 2, keep_unknown_tags=True)
    assert kept["_unknownTaggedFields"] == {"3": "abcd"}
    assert encode(SAMPLE, kept, 2) == buf[1:end]


def test_tagged_field_equal_to_default_is_omitted() -> None:
    buf = i32(1) + cs("") + cb(b"") + b"\x00" + b"\x01" + b"\x01" + b"\x00\x08" + i64(-1)
    data, _ = decode(SAMPLE, buf, 0, 2)
    assert "extra" not in data
    assert data["blob"] == ""


def test_tagged_field_size_mismatch_is_corrupt() -> None:
    buf = i32(1) + cs("") + cb(None) + b"\x00" + b"\x01" + b"\x01" + b"\x00\x09" + i64(1) + b"\x00"
    with pytest.raises(CorruptRecordError):
        decode(SAMPLE, buf, 0, 2)
    short = i32(1) + cs("") + cb(None) + b"\x00" + b"\x01" + b"\x01" + b"\x00\x04" + i32(1)
    with pytest.raises(TruncatedError):
        decode(SAMPLE, short, 0, 2)


def test_huge_counts_fail_before_allocating() -> None:
    big_array = i32(1) + s16("x") + i32(0x7FFFFFFF)
    with pytest.raises(CorruptRecordError) as e:
        decode(SAMPLE, big_array, 0, 0)
    assert e.value.position == 7
    big_bytes = i32(1) + s16("x") + i32(0x7FFFFFF0)
    with pytest.raises(TruncatedError):
        decode(SAMPLE, big_bytes, 0, 1)
    big_string = i32(1) + i16(0x7FFF) + b"ab"
    with pytest.raises(TruncatedError) as e2:
        decode(SAMPLE, big_string, 0, 0)
    assert e2.value.position == 4
    compact_huge = i32(1) + encode_uvarint(0xFFFFFFF) + b"ab"
    with pytest.raises(CorruptRecordError):
        decode(SAMPLE, compact_huge, 0, 2)
    many_tags = i32(1) + cs("") + cb(None) + b"\x00" + b"\x01" + encode_uvarint(10**6)
    with pytest.raises(CorruptRecordError):
        decode(SAMPLE, many_tags, 0, 2)
    bad_varint = i32(1) + b"\xff\xff\xff\xff\xff\xff"
    with pytest.raises(CorruptRecordError):
        decode(SAMPLE, bad_varint, 0, 2)


def test_decode_rejects_negative_version_and_bad_start() -> None:
    with pytest.raises(UnsupportedError):
        decode(SAMPLE, b"", 0, -1)
    with pytest.raises(TruncatedError):
        decode(SAMPLE, b"abc", 5, 0)


def test_decode_accepts_memoryview_and_bytearray() -> None:
    raw = b"\x00\x00" + encode(SAMPLE, {"id": 3, "name": "z", "items": []}, 0)
    expect = ({"id": 3, "name": "z", "items": []}, len(raw))
    assert decode(SAMPLE, memoryview(raw), 2, 0) == expect
    assert decode(SAMPLE, bytearray(raw), 2, 0) == expect


def test_nullable_struct_markers() -> None:
    inner = (Field("A", "int16"),)
    m = Message(
        "N",
        (
            Field("S", "Inner", nullable_versions="0+", fields=inner),
            Field("T", "Inner2", nullable_versions="0+", default=None, tag=0, fields=inner),
        ),
        "0",
        "0+",
    )
    assert encode(m, {"s": None}, 0) == b"\xff\x00"
    assert encode(m, {"s": {"a": 1}, "t": {"a": 2}}, 0) == (
        b"\x01\x00\x01\x00" + b"\x01\x00\x04\x01\x00\x02\x00"
    )
    assert decode(m, b"\x01\x00\x01\x00\x01\x00\x04\x01\x00\x02\x00", 0, 0)[0] == {
        "s": {"a": 1},
        "t": {"a": 2},
    }
    # A tagged null with a uvarint 0 marker equals the default and is omitted.
    assert decode(m, b"\xff\x01\x00\x01\x00\x00", 0, 0)[0] == {"s": None}


def test_encode_errors() -> None:
    with pytest.raises(ValueError):
        encode(SAMPLE, {"id": 2**40}, 0)
    with pytest.raises(ValueError):
        encode(SAMPLE, {"id": 1, "name": None}, 0)
    with pytest.raises(ValueError):
        encode(SAMPLE, {"id": 1, "items": "nope"}, 0)
    with pytest.raises(ValueError):
        encode(SAMPLE, {"id": 1, "blob": "!!notbase64"}, 1)
    with pytest.raises(ValueError):
        encode(SAMPLE, {"id": 1}, -1)
    with pytest.raises(ValueError):
        encode(SAMPLE, {"id": 1, "name": "x" * 40000}, 0)
    # bytes fields accept raw bytes too
    assert decode(SAMPLE, encode(SAMPLE, {"blob": b"\x01\x02"}, 1), 0, 1)[0]["blob"] == "AQI="


KAFKA_JSON = """// Licensed to the Apache Software Foundation (ASF) ... (a comment)
{
  "type": "data",
  "name": "Sample",
  // Version 2 is the first flexible version.
  "validVersions": "0-2",
  "flexibleVersions": "2+",
  "fields": [
    { "name": "Id", "type": "int32", "versions": "0+", "about": "has // inside a string" },
    { "name": "Name", "type": "string", "versions": "0+", "nullableVersions": "1+" },
    { "name": "Blob", "type": "bytes", "versions": "1+", "nullableVersions": "1+" },
    { "name": "Flag", "type": "bool", "versions": "2+" },
    { "name": "Items", "type": "[]Item", "versions": "0+" },
    { "name": "Extra", "type": "int64", "taggedVersions": "2+", "tag": 0, "default": -1 },
    { "name": "Note", "type": "string", "versions": "2+", "taggedVersions": "2+", "tag": 5,
      "nullableVersions": "2+", "default": "null" }
  ],
  "commonStructs": [
    { "name": "Item", "versions": "0+", "fields": [
      { "name": "K", "type": "string", "versions": "0+" },
      { "name": "V", "type": "[]int64", "versions": "0+" }
    ]}
  ]
}
"""


def test_load_json_schema_matches_hand_table() -> None:
    m = load_json_schema(KAFKA_JSON)
    assert m.name == "Sample" and m.valid_versions == "0-2" and m.highest_version == 2
    data = {
        "id": 1,
        "name": "x",
        "blob": "AQ==",
        "flag": True,
        "items": [{"k": "a", "v": [1, 2]}],
        "extra": 7,
        "note": "n",
    }
    for version in (0, 1, 2):
        raw = encode(SAMPLE, data, version)
        assert encode(m, data, version) == raw
        assert decode(m, raw, 0, version) == decode(SAMPLE, raw, 0, version)
    with pytest.raises(ValueError):
        message_from_json({"name": "X", "fields": [{"name": "A", "type": "[]Missing"}]})


def test_message_versions() -> None:
    assert TRANSACTION_LOG_VALUE.is_valid_version(1)
    assert not TRANSACTION_LOG_VALUE.is_valid_version(2)
    assert TRANSACTION_LOG_VALUE.flexible(1) and not TRANSACTION_LOG_VALUE.flexible(0)
    assert (TRANSACTION_LOG_VALUE.lowest_version, TRANSACTION_LOG_VALUE.highest_version) == (0, 1)
    assert "fields" in repr(SAMPLE.struct)


# ---------------------------------------------------------------------------------------------
# Hypothesis: data generated from any schema, round-tripped


def _scalar_strategy(kind: str) -> st.SearchStrategy[Any]:
    ints = {
        "int8": (-(2**7), 2**7 - 1),
        "int16": (-(2**15), 2**15 - 1),
        "int32": (-(2**31), 2**31 - 1),
        "int64": (-(2**63), 2**63 - 1),
        "uint16": (0, 2**16 - 1),
        "uint32": (0, 2**32 - 1),
    }
    if kind in ints:
        lo, hi = ints[kind]
        return st.integers(lo, hi)
    if kind == "float64":
        return st.floats(allow_nan=False)
    if kind == "bool":
        return st.booleans()
    if kind == "uuid":
        return st.binary(min_size=16, max_size=16).map(uuid_to_text)
    if kind == "string":
        return st.text(max_size=12)
    if kind in ("bytes", "records"):
        return st.binary(max_size=12).map(b64)
    raise AssertionError(kind)


def _field_strategy(f: Field, version: int) -> st.SearchStrategy[Any]:
    inner: st.SearchStrategy[Any]
    elem: st.SearchStrategy[Any]
    if f.kind == "struct":
        assert f.struct is not None
        inner = _struct_strategy(f.struct, version)
    elif f.kind == "array":
        assert f.elem is not None
        if f.elem == "struct":
            assert f.struct is not None
            elem = _struct_strategy(f.struct, version)
        else:
            elem = _scalar_strategy(f.elem)
        inner = st.lists(elem, max_size=3)
    else:
        inner = _scalar_strategy(f.kind)
    if f.nullable(version):
        return st.none() | inner
    return inner


def _struct_strategy(s: Struct, version: int) -> st.SearchStrategy[dict[str, Any]]:
    required: dict[str, st.SearchStrategy[Any]] = {}
    optional: dict[str, st.SearchStrategy[Any]] = {}
    for f in s.fields:
        if not f.present(version):
            continue
        (optional if f.tagged_in(version) else required)[f.json_name] = _field_strategy(f, version)
    return st.fixed_dictionaries(required, optional=optional)


def _expected(s: Struct, data: dict[str, Any], version: int, flexible: bool) -> dict[str, Any]:
    """What decode() returns for encode(data): schema order, tagged defaults dropped."""
    out: dict[str, Any] = {}
    for f in s.fields:
        if not f.present(version) or f.json_name not in data:
            continue
        value = data[f.json_name]
        if f.tagged_in(version) and (not flexible or value == f.default_value(version)):
            continue
        if f.struct is not None and value is not None:
            if f.kind == "array":
                value = [_expected(f.struct, v, version, flexible) for v in value]
            else:
                value = _expected(f.struct, value, version, flexible)
        out[f.json_name] = value
    return out


ALL_TYPES = Message(
    "AllTypes",
    (
        Field("I8", "int8"),
        Field("I16", "int16"),
        Field("I32", "int32"),
        Field("I64", "int64"),
        Field("U16", "uint16"),
        Field("U32", "uint32"),
        Field("F64", "float64"),
        Field("B", "bool"),
        Field("U", "uuid"),
        Field("S", "string"),
        Field("NS", "string", nullable_versions="0+"),
        Field("By", "bytes"),
        Field("NBy", "bytes", "1+", nullable_versions="1+"),
        Field("R", "records", nullable_versions="0+"),
        Field("Ints", "[]int32"),
        Field("Strs", "[]string", nullable_versions="1+"),
        Field("Uuids", "[]uuid"),
        Field(
            "Sub",
            "Sub",
            nullable_versions="2+",
            fields=(Field("X", "int16"), Field("Y", "string", "2+")),
        ),
        Field(
            "Subs",
            "[]Elem",
            fields=(
                Field("A", "string"),
                Field("B", "[]int64"),
                Field("T", "int32", tag=0, tagged_versions="2+", default=-1),
            ),
        ),
        Field("Tag1", "int64", tag=0, tagged_versions="2+", default=-1),
        Field(
            "Tag2", "[]string", tag=1, tagged_versions="2+", nullable_versions="2+", default=None
        ),
        Field(
            "Tag3",
            "TaggedStruct",
            tag=7,
            tagged_versions="2+",
            nullable_versions="2+",
            default=None,
            fields=(Field("Z", "uuid"),),
        ),
        Field("Tag4", "bytes", tag=300, tagged_versions="3+"),
    ),
    "0-3",
    "2+",
)


@st.composite
def _message_and_data(draw: st.DrawFn, message: Message) -> tuple[int, dict[str, Any]]:
    version = draw(st.integers(message.lowest_version, message.highest_version))
    return version, draw(_struct_strategy(message.struct, version))


HYP = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@HYP
@given(_message_and_data(ALL_TYPES))
def test_round_trip_all_types(case: tuple[int, dict[str, Any]]) -> None:
    version, data = case
    raw = encode(ALL_TYPES, data, version)
    decoded, end = decode(ALL_TYPES, raw, 0, version)
    assert end == len(raw)
    expected = _expected(ALL_TYPES.struct, data, version, ALL_TYPES.flexible(version))
    assert decoded == expected
    assert list(decoded) == list(expected)
    assert encode(ALL_TYPES, decoded, version) == raw
    json.dumps(decoded)  # JSON-able
    for cut in sorted({*range(0, len(raw), max(1, len(raw) // 16)), len(raw) - 1}):
        with pytest.raises(FormatError):
            decode(ALL_TYPES, raw[:cut], 0, version)


PRODUCTION_MESSAGES = sorted(
    {
        *(s.key for s in CONSUMER_OFFSETS_RECORDS.values()),
        *(s.value for s in CONSUMER_OFFSETS_RECORDS.values()),
        *(s.key for s in TRANSACTION_STATE_RECORDS.values()),
        *(s.value for s in TRANSACTION_STATE_RECORDS.values()),
        CONSUMER_PROTOCOL_SUBSCRIPTION,
        CONSUMER_PROTOCOL_ASSIGNMENT,
        *ctl.CONTROL_VALUE_MESSAGES.values(),
    },
    key=lambda m: m.name,
)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(PRODUCTION_MESSAGES), st.data())
def test_round_trip_production_tables(message: Message, data: st.DataObject) -> None:
    version, value = data.draw(_message_and_data(message))
    raw = encode(message, value, version)
    decoded, end = decode(message, raw, 0, version)
    assert end == len(raw)
    assert decoded == _expected(message.struct, value, version, message.flexible(version))
    assert encode(message, decoded, version) == raw


@HYP
@given(st.binary(max_size=64), st.integers(0, 3))
def test_garbage_raises_only_format_errors(raw: bytes, version: int) -> None:
    for message in (ALL_TYPES, SAMPLE, *PRODUCTION_MESSAGES):
        try:
            data, end = decode(message, raw, 0, version)
        except FormatError as e:
            assert e.position is not None and 0 <= e.position <= len(raw)
        else:
            assert 0 <= end <= len(raw)
            json.dumps(data)


@HYP
@given(st.one_of(st.none(), st.binary(max_size=48)), st.one_of(st.none(), st.binary(max_size=48)))
def test_garbage_records_raise_only_format_errors(key: bytes | None, value: bytes | None) -> None:
    for fn in (decode_consumer_offsets, decode_transaction_state, ctl.decode_control_record):
        try:
            fn(key, value)
        except FormatError:
            pass
    for name in ("consumer-offsets", "transaction-state"):
        try:
            decode_internal(name, key, value)
            kafka_dump_text(name, key, value, 5)
        except FormatError:
            pass


@HYP
@given(st.binary(max_size=40).map(lambda b: b"\x00\x02" + b))
def test_garbage_group_metadata_values(tail: bytes) -> None:
    for version in range(5):
        value = i16(version) + tail
        try:
            decode_consumer_offsets(i16(2) + s16("g"), value)
        except FormatError:
            pass


# =============================================================================================
# Control records


def test_end_txn_marker_round_trip() -> None:
    key, value = ctl.encode_end_txn_marker(ctl.COMMIT, 5)
    assert key == b"\x00\x00\x00\x01"
    assert value == b"\x00\x00\x00\x00\x00\x05"
    rec = ctl.decode_control_record(key, value)
    assert rec == ctl.ControlRecord(1, "COMMIT", 0, {"version": 0, "coordinatorEpoch": 5})
    assert rec.is_end_txn_marker
    key, value = ctl.encode_end_txn_marker(ctl.ABORT, -1)
    rec = ctl.decode_control_record(memoryview(key), bytearray(value + b"extra"))
    assert (rec.type_name, rec.fields["coordinatorEpoch"]) == ("ABORT", -1)
    with pytest.raises(ValueError):
        ctl.encode_end_txn_marker(ctl.LEADER_CHANGE, 1)
    # A newer marker version is read as v0, as Kafka does.
    assert ctl.decode_control_record(key, i16(3) + i32(9)).fields == {
        "version": 3,
        "coordinatorEpoch": 9,
    }


def test_control_key_errors() -> None:
    with pytest.raises(TruncatedError):
        ctl.decode_control_record(b"\x00\x00\x00", b"")
    with pytest.raises(CorruptRecordError):
        ctl.decode_control_record(None, b"")
    with pytest.raises(CorruptRecordError):
        ctl.decode_control_record(i16(-1) + i16(0), i16(0) + i32(0))
    assert ctl.decode_control_key(i16(1) + i16(1) + b"more") == (1, 1)


def test_control_value_errors() -> None:
    key = ctl.encode_control_key(ctl.ABORT)
    with pytest.raises(TruncatedError) as e:
        ctl.decode_control_record(key, b"\x00\x00\x00\x00\x01")
    assert "value" in str(e.value)
    with pytest.raises(CorruptRecordError):
        ctl.decode_control_record(key, i16(-2) + i32(0))
    with pytest.raises(CorruptRecordError):
        ctl.decode_control_record(key, None)
    with pytest.raises(TruncatedError) as e2:
        ctl.decode_control_record(ctl.encode_control_key(ctl.SNAPSHOT_HEADER), b"\x00\x00\x01")
    assert str(e2.value).startswith("control record value:")
    assert e2.value.position == 2


def test_unknown_control_type() -> None:
    rec = ctl.decode_control_record(i16(0) + i16(7), b"whatever")
    assert (rec.type_id, rec.type_name, rec.fields) == (7, "UNKNOWN", {})
    assert ctl.control_type_name(-1) == "UNKNOWN"
    assert ctl.decode_control_record(i16(0) + i16(99), None).type_name == "UNKNOWN"


def test_kraft_control_records_round_trip() -> None:
    key, value = ctl.encode_snapshot_header(1713537222197)
    assert key == i16(0) + i16(3)
    assert value == i16(0) + i64(1713537222197) + b"\x00"
    assert ctl.decode_control_record(key, value).fields == {
        "version": 0,
        "lastContainedLogTimestamp": 1713537222197,
    }
    key, value = ctl.encode_snapshot_footer()
    assert (key, value) == (i16(0) + i16(4), b"\x00\x00\x00")
    key, value = ctl.encode_kraft_version(1)
    assert ctl.decode_control_record(key, value) == ctl.ControlRecord(
        5, "KRAFT_VERSION", 0, {"version": 0, "kRaftVersion": 1}
    )
    key, value = ctl.encode_leader_change(3, [1, 2, 3], [3, 1])
    assert value == (
        i16(0) + i32(3) + b"\x04" + i32(1) + b"\x00" + i32(2) + b"\x00" + i32(3) + b"\x00"
    ) + (b"\x03" + i32(3) + b"\x00" + i32(1) + b"\x00" + b"\x00")
    assert ctl.decode_control_record(key, value).fields == {
        "version": 0,
        "leaderId": 3,
        "voters": [{"voterId": 1}, {"voterId": 2}, {"voterId": 3}],
        "grantingVoters": [{"voterId": 3}, {"voterId": 1}],
    }
    voters = {
        "version": 0,
        "voters": [
            {
                "voterId": 1,
                "voterDirectoryId": "4jUB-s6mTfKnsQJXgy1FQA",
                "endpoints": [{"name": "CONTROLLER", "host": "localhost", "port": 9093}],
                "kRaftVersionFeature": {"minSupportedVersion": 0, "maxSupportedVersion": 1},
            }
        ],
    }
    key, value = ctl.encode_control_record(ctl.KRAFT_VOTERS, voters)
    assert ctl.decode_control_record(key, value) == ctl.ControlRecord(6, "KRAFT_VOTERS", 0, voters)
    assert ctl.encode_control_record(ctl.COMMIT, {"coordinatorEpoch": 2}) == (
        ctl.encode_end_txn_marker(ctl.COMMIT, 2)
    )
    with pytest.raises(ValueError):
        ctl.encode_control_record(9, {})


def test_voters_record_matches_kafka_python(kp: Any) -> None:
    dir_id = uuid.UUID("e23501fa-cea6-4df2-a7b1-0257832d4540")
    v = kp.VotersRecord
    msg = v(
        version=0,
        voters=[
            v.Voter(
                voter_id=2,
                voter_directory_id=dir_id,
                endpoints=[v.Voter.Endpoint(name="CONTROLLER", host="kraft-2", port=65000)],
                k_raft_version_feature=v.Voter.KRaftVersionFeature(
                    min_supported_version=0, max_supported_version=1
                ),
            )
        ],
    )
    raw = msg.encode()[2:]  # kafka-python prefixes the version; control values carry none
    rec = ctl.decode_control_record(ctl.encode_control_key(ctl.KRAFT_VOTERS), raw)
    assert rec.fields["voters"] == [
        {
            "voterId": 2,
            "voterDirectoryId": "4jUB-s6mTfKnsQJXgy1FQA",
            "endpoints": [{"name": "CONTROLLER", "host": "kraft-2", "port": 65000}],
            "kRaftVersionFeature": {"minSupportedVersion": 0, "maxSupportedVersion": 1},
        }
    ]
    assert ctl.encode_control_record(ctl.KRAFT_VOTERS, rec.fields)[1] == raw


def _control_records(path: Path) -> list[ctl.ControlRecord]:
    return [ctl.decode_control_record(k, v) for _, c, k, v in extract_records(path) if c]


def test_real_snapshot_header_and_footer() -> None:
    p = real(
        "rjmfernandes__flink-on-prem/data/__cluster_metadata-0/"
        "00000000000000007752-0000000001.checkpoint"
    )
    recs = _control_records(p)
    assert [r.type_name for r in recs] == ["SNAPSHOT_HEADER", "SNAPSHOT_FOOTER"]
    assert recs[0].fields == {"version": 0, "lastContainedLogTimestamp": 1713537222197}
    assert recs[1].fields == {"version": 0}


def test_real_leader_change_records() -> None:
    p = real(
        "Jeong-Rae__KafkaDemo/kraft-combined-logs/__cluster_metadata-0/00000000000000000000.log"
    )
    recs = _control_records(p)
    assert len(recs) == 5
    for r in recs:
        assert r.type_name == "LEADER_CHANGE"
        assert r.fields == {
            "version": 0,
            "leaderId": 1,
            "voters": [{"voterId": 1}],
            "grantingVoters": [{"voterId": 1}],
        }


def test_real_commit_markers() -> None:
    p = real(
        "ItumelengMogase__Real-Time-Data-Pipeline-for-Patient-Admissions/kafka-data/"
        "_confluent-ksql-default__command_topic-0/00000000000000000000.log"
    )
    recs = _control_records(p)
    assert recs and all(r.fields == {"version": 0, "coordinatorEpoch": 0} for r in recs)
    assert {r.type_name for r in recs} == {"COMMIT"}


# =============================================================================================
# __consumer_offsets


def offset_key(group: str, topic: str, partition: int, key_version: int = 1) -> bytes:
    return i16(key_version) + s16(group) + s16(topic) + i32(partition)


@pytest.mark.parametrize(
    ("version", "value", "expected"),
    [
        (
            0,
            i64(12) + s16("m") + i64(1000),
            {"offset": 12, "metadata": "m", "commitTimestamp": 1000},
        ),
        (
            1,
            i64(12) + s16("") + i64(1000) + i64(2000),
            {"offset": 12, "metadata": "", "commitTimestamp": 1000, "expireTimestamp": 2000},
        ),
        (2, i64(-1) + s16("x") + i64(5), {"offset": -1, "metadata": "x", "commitTimestamp": 5}),
        (
            3,
            i64(35) + i32(-1) + s16("") + i64(1560756288007),
            {"offset": 35, "leaderEpoch": -1, "metadata": "", "commitTimestamp": 1560756288007},
        ),
        (
            4,
            i64(7) + i32(3) + cs("meta") + i64(9) + b"\x00",
            {"offset": 7, "leaderEpoch": 3, "metadata": "meta", "commitTimestamp": 9},
        ),
    ],
)
def test_offset_commit_values(version: int, value: bytes, expected: dict[str, Any]) -> None:
    for key_version in (0, 1):
        rec = decode_consumer_offsets(
            offset_key("grp", "topic", 4, key_version), i16(version) + value
        )
        assert rec.kind == "record" and rec.record_type == key_version
        assert rec.key == {"group": "grp", "topic": "topic", "partition": 4}
        assert (rec.key_name, rec.value_name) == ("OffsetCommitKey", "OffsetCommitValue")
        assert rec.value_version == version
        assert rec.value == expected
        assert list(rec.value) == list(expected)


def member_v(version: int, subscription: bytes, assignment: bytes, flexible: bool) -> bytes:
    s, nullable, b = (cs, cs, cb) if flexible else (s16, s16, b32)
    out = s("member-1")
    if version >= 3:
        out += nullable(None)
    out += s("client-1") + s("/10.0.0.1")
    if version >= 1:
        out += i32(300000)
    out += i32(10000) + b(subscription) + b(assignment)
    return out + (b"\x00" if flexible else b"")


def group_value(version: int, protocol_type: str, members: list[bytes]) -> bytes:
    flexible = version >= 4
    s = cs if flexible else s16
    out = i16(version) + s(protocol_type) + i32(3) + s("range") + s("member-1")
    if version >= 2:
        out += i64(1670071252892)
    if flexible:
        out += encode_uvarint(len(members) + 1)
    else:
        out += i32(len(members))
    return out + b"".join(members) + (b"\x00" if flexible else b"")


def kp_subscription(version: int) -> bytes:
    meta = pytest.importorskip("kafka.protocol.consumer.metadata")
    sub = meta.ConsumerProtocolSubscription
    return bytes(
        sub(
            version=version,
            topics=["orders", "payments"],
            user_data=b"\x01\x02",
            owned_partitions=[sub.TopicPartition(topic="orders", partitions=[0, 2])],
            generation_id=7,
            rack_id="rack-a",
        ).encode()
    )


def kp_assignment(version: int) -> bytes:
    meta = pytest.importorskip("kafka.protocol.consumer.metadata")
    asg = meta.ConsumerProtocolAssignment
    return bytes(
        asg(
            version=version,
            assigned_partitions=[asg.TopicPartition(topic="orders", partitions=[2, 0])],
            user_data=None,
        ).encode()
    )


SUBSCRIPTION_FIELDS: list[dict[str, Any]] = [
    {"topics": ["orders", "payments"], "userData": "AQI="},
    {"ownedPartitions": [{"topic": "orders", "partitions": [0, 2]}]},
    {"generationId": 7},
    {"rackId": "rack-a"},
]


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("embedded_version", [0, 1, 2, 3])
def test_group_metadata_values_with_kafka_python_members(
    version: int, embedded_version: int
) -> None:
    sub, asg = kp_subscription(embedded_version), kp_assignment(embedded_version)
    value = group_value(version, "consumer", [member_v(version, sub, asg, version >= 4)])
    rec = decode_consumer_offsets(i16(2) + s16("console-consumer-1"), value)
    assert (rec.kind, rec.record_type, rec.value_version) == ("record", 2, version)
    assert rec.key == {"group": "console-consumer-1"}
    expected_sub: dict[str, Any] = {}
    for extra in SUBSCRIPTION_FIELDS[: embedded_version + 1]:
        expected_sub.update(extra)
    member: dict[str, Any] = {"memberId": "member-1"}
    if version >= 3:
        member["groupInstanceId"] = None
    member.update(clientId="client-1", clientHost="/10.0.0.1")
    if version >= 1:
        member["rebalanceTimeout"] = 300000
    member.update(
        sessionTimeout=10000,
        subscription=expected_sub,
        assignment={
            "assignedPartitions": [{"topic": "orders", "partitions": [2, 0]}],
            "userData": None,
        },
    )
    expected: dict[str, Any] = {
        "protocolType": "consumer",
        "generation": 3,
        "protocol": "range",
        "leader": "member-1",
    }
    if version >= 2:
        expected["currentStateTimestamp"] = 1670071252892
    expected["members"] = [member]
    assert rec.value == expected
    assert rec.value_json() == {"version": str(version), "data": expected}


def test_consumer_protocol_decoders() -> None:
    assert decode_consumer_protocol_subscription(kp_subscription(3)) == (
        3,
        {
            "topics": ["orders", "payments"],
            "userData": "AQI=",
            "ownedPartitions": [{"topic": "orders", "partitions": [0, 2]}],
            "generationId": 7,
            "rackId": "rack-a",
        },
    )
    assert decode_consumer_protocol_assignment(kp_assignment(1))[1]["userData"] is None
    # A newer version is read with the newest layout (Kafka's forward compatibility rule).
    newer = i16(9) + kp_subscription(3)[2:]
    assert decode_consumer_protocol_subscription(newer)[1]["rackId"] == "rack-a"
    with pytest.raises(TruncatedError):
        decode_consumer_protocol_subscription(b"\x00")
    with pytest.raises(CorruptRecordError):
        decode_consumer_protocol_assignment(i16(-1) + i32(0))


def test_group_metadata_embedded_bytes_kept_when_not_decodable() -> None:
    bad = b"\x00\x00\x00\x00\x00\x05"  # v0 subscription claiming 5 topics in 0 bytes
    members = [member_v(3, bad, b"", False)]
    rec = decode_consumer_offsets(i16(2) + s16("g"), group_value(3, "consumer", members))
    assert rec.value is not None
    assert rec.value["members"][0]["subscription"] == b64(bad)
    assert rec.value["members"][0]["assignment"] == ""
    # Other protocol types keep their bytes.
    sub = kp_subscription(0)
    rec = decode_consumer_offsets(
        i16(2) + s16("g"), group_value(3, "connect", [member_v(3, sub, sub, False)])
    )
    assert rec.value is not None
    assert rec.value["members"][0]["subscription"] == b64(sub)


def test_group_metadata_empty_group_v0() -> None:
    value = i16(0) + s16("consumer") + i32(2) + s16(None) + s16(None) + i32(0)
    rec = decode_consumer_offsets(i16(2) + s16("g"), value)
    assert rec.value == {
        "protocolType": "consumer",
        "generation": 2,
        "protocol": None,
        "leader": None,
        "members": [],
    }


def test_tombstones_and_unknown_types() -> None:
    rec = decode_consumer_offsets(offset_key("g", "t", 0), None)
    assert rec.is_tombstone and rec.kind == "tombstone"
    assert rec.key == {"group": "g", "topic": "t", "partition": 0}
    assert rec.value is None and rec.value_json() is None
    # 24: no record type in Kafka 4.2 (17-23 are the streams groups')
    unknown = decode_consumer_offsets(i16(24) + b"anything", b"\x00\x00junk")
    assert unknown.is_unknown and unknown.record_type == 24 and unknown.key is None
    assert unknown.key_json() == {"type": "24", "unknown": True}
    assert decode_consumer_offsets(i16(-3), None).is_unknown


def test_consumer_offsets_errors_name_key_or_value() -> None:
    with pytest.raises(CorruptRecordError):
        decode_consumer_offsets(None, b"")
    with pytest.raises(TruncatedError) as e:
        decode_consumer_offsets(b"\x00", None)
    assert str(e.value).startswith("key:")
    with pytest.raises(TruncatedError) as e:
        decode_consumer_offsets(i16(1) + s16("group") + s16("to"), None)
    assert str(e.value).startswith("key:") and e.value.position == 13
    with pytest.raises(TruncatedError) as e:
        decode_consumer_offsets(offset_key("g", "t", 0), i16(3) + i64(1) + i32(0))
    assert str(e.value).startswith("value:") and e.value.position == 14
    with pytest.raises(UnsupportedError) as e2:
        decode_consumer_offsets(offset_key("g", "t", 0), i16(5) + i64(1))
    assert "OffsetCommitValue version 5" in str(e2.value)
    with pytest.raises(TruncatedError):
        decode_consumer_offsets(offset_key("g", "t", 0), b"\x00")


GROUP_ID = "AAAAAAAAAAAAAAAAAAAAAQ"  # a uuid ending in 01


def test_kip848_records_by_hand() -> None:
    topic_id = bytes(15) + b"\x01"
    cases: list[tuple[int, bytes, bytes, dict[str, Any], dict[str, Any]]] = [
        (3, s16("g"), i32(5) + b"\x00", {"groupId": "g"}, {"epoch": 5}),
        (
            3,
            s16("g"),
            i32(5) + b"\x01\x00\x08" + i64(123),
            {"groupId": "g"},
            {"epoch": 5, "metadataHash": 123},
        ),
        (
            4,
            s16("g"),
            b"\x02"
            + topic_id
            + cs("t")
            + i32(2)
            + b"\x02"
            + i32(0)
            + b"\x02"
            + cs("r1")
            + b"\x00\x00\x00",
            {"groupId": "g"},
            {
                "topics": [
                    {
                        "topicId": GROUP_ID,
                        "topicName": "t",
                        "numPartitions": 2,
                        "partitionMetadata": [{"partition": 0, "racks": ["r1"]}],
                    }
                ]
            },
        ),
        (
            6,
            s16("g"),
            i32(9) + b"\x00",
            {"groupId": "g"},
            {"assignmentEpoch": 9},
        ),
        (
            7,
            s16("g") + s16("m"),
            b"\x02" + topic_id + b"\x03" + i32(0) + i32(1) + b"\x00" + b"\x00",
            {"groupId": "g", "memberId": "m"},
            {"topicPartitions": [{"topicId": GROUP_ID, "partitions": [0, 1]}]},
        ),
        (
            16,
            s16("g") + s16("^t.*"),
            b"\x02" + cs("t1") + i64(3) + i64(4) + b"\x00",
            {"groupId": "g", "regularExpression": "^t.*"},
            {"topics": ["t1"], "version": 3, "timestamp": 4},
        ),
    ]
    for record_type, key, value, key_fields, value_fields in cases:
        rec = decode_consumer_offsets(i16(record_type) + key, i16(0) + value)
        assert (rec.kind, rec.record_type, rec.value_version) == ("record", record_type, 0)
        assert rec.key == key_fields
        assert rec.value == value_fields


def test_kip848_records_match_kafka_python(kp: Any) -> None:
    c = kp.ConsumerGroupMemberMetadataValue
    raw = c(
        version=0,
        instance_id=None,
        rack_id="rack",
        client_id="client",
        client_host="/1.2.3.4",
        subscribed_topic_names=["a", "b"],
        subscribed_topic_regex=None,
        rebalance_timeout_ms=45000,
        server_assignor="uniform",
        classic_member_metadata=c.ClassicMemberMetadata(
            session_timeout_ms=45000,
            supported_protocols=[
                c.ClassicMemberMetadata.ClassicProtocol(name="range", metadata=b"x")
            ],
        ),
    ).encode()
    rec = decode_consumer_offsets(i16(5) + s16("g") + s16("m"), raw)
    assert rec.value == {
        "instanceId": None,
        "rackId": "rack",
        "clientId": "client",
        "clientHost": "/1.2.3.4",
        "subscribedTopicNames": ["a", "b"],
        "subscribedTopicRegex": None,
        "rebalanceTimeoutMs": 45000,
        "serverAssignor": "uniform",
        "classicMemberMetadata": {
            "sessionTimeoutMs": 45000,
            "supportedProtocols": [{"name": "range", "metadata": "eA=="}],
        },
    }
    a = kp.ConsumerGroupCurrentMemberAssignmentValue
    tid = uuid.UUID(int=1)
    raw = a(
        version=0,
        member_epoch=4,
        previous_member_epoch=3,
        state=0,
        assigned_partitions=[a.TopicPartitions(topic_id=tid, partitions=[1, 2])],
        partitions_pending_revocation=[],
    ).encode()
    rec = decode_consumer_offsets(i16(8) + s16("g") + s16("m"), raw)
    assert rec.value == {
        "memberEpoch": 4,
        "previousMemberEpoch": 3,
        "state": 0,
        "assignedPartitions": [{"topicId": GROUP_ID, "partitions": [1, 2]}],
        "partitionsPendingRevocation": [],
    }


def test_share_group_record_types_are_known() -> None:
    # Kafka 4.1/4.2's record types: 9 was the 4.0 preview's ShareGroupPartitionMetadata, 18 a
    # streams record dropped before release
    assert sorted(CONSUMER_OFFSETS_RECORDS) == [t for t in range(0, 24) if t not in (9, 18)]
    rec = decode_consumer_offsets(i16(11) + s16("share"), i16(0) + i32(2) + i64(77) + b"\x00")
    assert rec.value == {"epoch": 2, "metadataHash": 77}
    assert rec.key_name == "ShareGroupMetadataKey"


CONSUMER_OFFSETS_LOGS = [
    "DonaldY__kafka-2.7.1/kafka-logs/__consumer_offsets-17/00000000000000000000.log",
    "DonaldY__kafka-2.7.1/kafka-logs/__consumer_offsets-17/00000000000000000001.log",
    "DonaldY__kafka-2.7.1/kafka-logs/__consumer_offsets-28/00000000000000000000.log",
    "DonaldY__kafka-2.7.1/kafka-logs/__consumer_offsets-28/00000000000000000002.log",
    "DonaldY__kafka-2.7.1/kafka-logs/__consumer_offsets-39/00000000000000000000.log",
    "DonaldY__kafka-2.7.1/kafka-logs/__consumer_offsets-39/00000000000000000018.log",
    "ItumelengMogase__Real-Time-Data-Pipeline-for-Patient-Admissions/kafka-data/"
    "__consumer_offsets-29/00000000000000000000.log",
    "Niloufar1171__LDI-POC/__consumer_offsets-6/00000000000000000000.log",
    "iechenyb__data/kafka-logs/__consumer_offsets-36/00000000000000000000.log",
    "rjmfernandes__flink-on-prem/data/__consumer_offsets-36/00000000000000000000.log",
    "xpxwo100__bullShit/tmp/kafka-logs/__consumer_offsets-40/00000000000000000000.log",
]


@pytest.mark.parametrize("path", CONSUMER_OFFSETS_LOGS, ids=lambda p: p.split("/")[0])
def test_real_consumer_offsets_logs_decode(path: str) -> None:
    records = extract_records(real(path))
    assert records
    for offset, is_control, key, value in records:
        assert not is_control
        rec = decode_consumer_offsets(key, value)
        assert rec.kind in ("record", "tombstone"), offset
        key_text, payload = kafka_dump_text("consumer-offsets", key, value, offset)
        assert key_text is not None and key_text.startswith('{"type":"')
        assert payload is not None
        if rec.kind == "record":
            assert json.loads(payload)["data"] == rec.value
        else:
            assert payload == "<DELETE>"
        if rec.record_type == 2 and rec.value and rec.value["protocolType"] == "consumer":
            for member in rec.value["members"]:
                assert isinstance(member["subscription"], dict)
                assert isinstance(member["assignment"], dict)


def test_real_consumer_offsets_spot_checks() -> None:
    recs = extract_records(
        real("iechenyb__data/kafka-logs/__consumer_offsets-36/00000000000000000000.log")
    )
    assert len(recs) == 16
    offset, _, key, value = recs[0]
    assert kafka_dump_text("consumer-offsets", key, value, offset) == (
        '{"type":"1","data":{"group":"flink-group","topic":"test-0921","partition":0}}',
        '{"version":"3","data":{"offset":35,"leaderEpoch":-1,"metadata":"",'
        '"commitTimestamp":1560756288007}}',
    )

    recs = extract_records(
        real("rjmfernandes__flink-on-prem/data/__consumer_offsets-36/00000000000000000000.log")
    )
    assert len(recs) == 1564
    rec = decode_consumer_offsets(recs[-1][2], recs[-1][3])
    assert rec.key == {
        "group": "_confluent-controlcenter-7-6-0-1",
        "topic": "_confluent-controlcenter-7-6-0-1-expected-group-consumption-rekey",
        "partition": 0,
    }
    assert rec.value == {
        "offset": 487,
        "leaderEpoch": -1,
        "metadata": "AgAAAY73DL91",
        "commitTimestamp": 0x18EF70CC382,
    }

    recs = extract_records(
        real("xpxwo100__bullShit/tmp/kafka-logs/__consumer_offsets-40/00000000000000000000.log")
    )
    assert len(recs) == 860
    group = decode_consumer_offsets(recs[0][2], recs[0][3])
    assert group.value_version == 1 and group.key == {"group": "GroupA"}
    assert group.value == {
        "protocolType": "consumer",
        "generation": 1,
        "protocol": "range",
        "leader": "consumer-1-341274c8-2f14-4475-96be-d44f261d5fc9",
        "members": [
            {
                "memberId": "consumer-1-341274c8-2f14-4475-96be-d44f261d5fc9",
                "clientId": "consumer-1",
                "clientHost": "/192.168.2.20",
                "rebalanceTimeout": 300000,
                "sessionTimeout": 30000,
                "subscription": {"topics": ["foo"], "userData": ""},
                "assignment": {
                    "assignedPartitions": [{"topic": "foo", "partitions": [0]}],
                    "userData": "",
                },
            }
        ],
    }
    commit = decode_consumer_offsets(recs[1][2], recs[1][3])
    assert commit.key == {"group": "GroupA", "topic": "foo", "partition": 0}
    assert commit.value == {
        "offset": 2,
        "metadata": "",
        "commitTimestamp": 1479457455691,
        "expireTimestamp": 1479543855691,
    }

    recs = extract_records(
        real("DonaldY__kafka-2.7.1/kafka-logs/__consumer_offsets-17/00000000000000000001.log")
    )
    assert [kafka_dump_text("consumer-offsets", k, v, o)[1] for o, _, k, v in recs][
        -1
    ] == "<DELETE>"


# =============================================================================================
# __transaction_state


def txn_key(tid: str, version: int = 0) -> bytes:
    return i16(version) + s16(tid)


def test_transaction_value_v0_by_hand() -> None:
    value = (
        i16(0)
        + i64(1000)
        + i16(3)
        + i32(60000)
        + i8(2)
        + i32(2)
        + s16("a")
        + i32(2)
        + i32(0)
        + i32(1)
        + s16("b")
        + i32(1)
        + i32(7)
        + i64(1728561475538)
        + i64(1728561475379)
    )
    rec = decode_transaction_state(txn_key("my-txn"), value)
    assert rec.key == {"transactionalId": "my-txn"}
    assert rec.value == {
        "producerId": 1000,
        "producerEpoch": 3,
        "transactionTimeoutMs": 60000,
        "transactionStatus": 2,
        "transactionPartitions": [
            {"topic": "a", "partitionIds": [0, 1]},
            {"topic": "b", "partitionIds": [7]},
        ],
        "transactionLastUpdateTimestampMs": 1728561475538,
        "transactionStartTimestampMs": 1728561475379,
    }
    assert format_transaction_text(rec) == (
        "transaction_metadata::transactionalId=my-txn",
        "producerId:1000,producerEpoch:3,state=PrepareCommit,partitions=[a-0,a-1,b-7],"
        "txnLastUpdateTimestamp=1728561475538,txnTimeoutMs=60000",
    )
    assert decode_internal("transaction-state", txn_key("my-txn"), value) == (
        {"type": "0", "data": {"transactionalId": "my-txn"}},
        {"version": "0", "data": rec.value},
    )


def test_transaction_value_v1_matches_kafka_python(kp: Any) -> None:
    t = kp.TransactionLogValue
    raw = t(
        version=1,
        producer_id=5,
        previous_producer_id=4,
        next_producer_id=-1,
        producer_epoch=1,
        transaction_timeout_ms=60000,
        transaction_status=1,
        transaction_partitions=[t.PartitionsSchema(topic="t", partition_ids=[0, 1])],
        transaction_last_update_timestamp_ms=10,
        transaction_start_timestamp_ms=9,
        client_transaction_version=2,
    ).encode()
    rec = decode_transaction_state(txn_key("x"), raw)
    assert rec.value_version == 1
    assert rec.value == {
        "producerId": 5,
        "previousProducerId": 4,
        "producerEpoch": 1,
        "transactionTimeoutMs": 60000,
        "transactionStatus": 1,
        "transactionPartitions": [{"topic": "t", "partitionIds": [0, 1]}],
        "transactionLastUpdateTimestampMs": 10,
        "transactionStartTimestampMs": 9,
        "clientTransactionVersion": 2,
    }
    assert list(rec.value)[:3] == ["producerId", "previousProducerId", "producerEpoch"]
    assert i16(1) + encode(TRANSACTION_LOG_VALUE, rec.value, 1) == bytes(raw)
    v0 = t(
        version=0,
        producer_id=5,
        producer_epoch=1,
        transaction_timeout_ms=60000,
        transaction_status=0,
        transaction_partitions=None,
        transaction_last_update_timestamp_ms=10,
        transaction_start_timestamp_ms=-1,
    ).encode()
    assert kafka_dump_text("transaction-state", txn_key("x"), v0, 0) == (
        "transaction_metadata::transactionalId=x",
        "producerId:5,producerEpoch:1,state=Empty,partitions=[],txnLastUpdateTimestamp=10,"
        "txnTimeoutMs=60000",
    )


def test_transaction_state_special_cases() -> None:
    assert kafka_dump_text("transaction-state", txn_key("x"), None, 3) == (
        "transaction_metadata::transactionalId=x",
        "<DELETE>",
    )
    assert kafka_dump_text("transaction-state", txn_key("x", 1), b"junk", 3) == (
        "unknown::version=1",
        None,
    )
    with pytest.raises(UnsupportedError):
        decode_transaction_state(txn_key("x"), i16(2) + bytes(40))
    bad_state = i16(0) + i64(1) + i16(0) + i32(1) + i8(9) + i32(-1) + i64(1) + i64(1)
    assert decode_transaction_state(txn_key("x"), bad_state).value is not None
    with pytest.raises(CorruptRecordError):
        kafka_dump_text("transaction-state", txn_key("x"), bad_state, 0)
    with pytest.raises(CorruptRecordError):
        kafka_dump_text("transaction-state", None, bad_state, 0)
    assert transaction_state_name(7) == "PrepareEpochFence"
    assert transaction_state_name(12) == "Unknown(12)"


def test_real_transaction_state_log() -> None:
    p = real(
        "ItumelengMogase__Real-Time-Data-Pipeline-for-Patient-Admissions/kafka-data/"
        "__transaction_state-44/00000000000000000000.log"
    )
    texts = [kafka_dump_text("transaction-state", k, v, o) for o, _, k, v in extract_records(p)]
    prefix = "producerId:0,producerEpoch:0,state="
    topic = "_confluent-ksql-default__command_topic-0"
    assert texts == [
        (
            "transaction_metadata::transactionalId=default_",
            f"{prefix}Empty,partitions=[],txnLastUpdateTimestamp=1728561474712,txnTimeoutMs=60000",
        ),
        (
            "transaction_metadata::transactionalId=default_",
            f"{prefix}Ongoing,partitions=[{topic}],txnLastUpdateTimestamp=1728561475379,"
            "txnTimeoutMs=60000",
        ),
        (
            "transaction_metadata::transactionalId=default_",
            f"{prefix}PrepareCommit,partitions=[{topic}],txnLastUpdateTimestamp=1728561475538,"
            "txnTimeoutMs=60000",
        ),
        (
            "transaction_metadata::transactionalId=default_",
            f"{prefix}CompleteCommit,partitions=[],txnLastUpdateTimestamp=1728561475551,"
            "txnTimeoutMs=60000",
        ),
    ]
    for _, _, k, v in extract_records(p):
        assert decode_transaction_state(k, v).kind == "record"


# =============================================================================================
# Registry


def test_byte_decoders() -> None:
    raw = b'{"a": [1, "\xc3\xa9"]}'
    assert decode_bytes("utf8", raw) == '{"a": [1, "é"]}'
    assert decode_bytes("utf8", b"ok\xff") == "ok\\xff"
    assert decode_bytes("base64", b"\x00\xff") == "AP8="
    assert decode_bytes("hex", memoryview(b"\x00\xff")) == "00ff"
    assert decode_bytes("json", raw) == {"a": [1, "é"]}
    assert decode_bytes("json", b"not json") == "not json"
    assert decode_bytes("json", b"\xff{") == "\\xff{"
    assert decode_bytes("json", b"NaN") == "NaN"
    assert decode_bytes("json", b'"s"') == "s"
    assert decode_bytes("none", raw) is None
    assert decode_bytes("hex", None) is None
    assert get_byte_decoder("none") is None
    with pytest.raises(ValueError):
        get_byte_decoder("rot13")
    assert set(BYTE_DECODERS) <= set(DECODERS)
    assert is_internal_decoder("consumer-offsets") and not is_internal_decoder("hex")


def test_auto_decoder_for_topic() -> None:
    assert auto_decoder_for_topic("__consumer_offsets") == "consumer-offsets"
    assert auto_decoder_for_topic("__consumer_offsets-36") == "consumer-offsets"
    assert auto_decoder_for_topic("__transaction_state") == "transaction-state"
    assert auto_decoder_for_topic("__transaction_state-44") == "transaction-state"
    assert auto_decoder_for_topic("__cluster_metadata-0") == "cluster-metadata"
    assert auto_decoder_for_topic("orders") is None
    assert auto_decoder_for_topic("orders-0") is None
    assert auto_decoder_for_topic("__consumer_offsets_copy") is None


def test_cluster_metadata_is_registered_and_implemented() -> None:
    # cluster-metadata was unimplemented until issue 6; its tests are in test_kraft_metadata.py
    assert "cluster-metadata" in DECODERS and "cluster-metadata" not in UNIMPLEMENTED_DECODERS
    with pytest.raises(ValueError):
        decode_internal("hex", b"", b"")
    with pytest.raises(ValueError):
        kafka_dump_text("nope", b"", b"", 0)


def test_decode_internal_shapes() -> None:
    key = offset_key("g", "t", 1)
    value = i16(3) + i64(10) + i32(2) + s16("") + i64(99)
    assert decode_internal("consumer-offsets", key, value) == (
        {"type": "1", "data": {"group": "g", "topic": "t", "partition": 1}},
        {
            "version": "3",
            "data": {"offset": 10, "leaderEpoch": 2, "metadata": "", "commitTimestamp": 99},
        },
    )
    assert decode_internal("consumer-offsets", key, None)[1] is None
    assert decode_internal("consumer-offsets", i16(40) + b"x", b"y") == (
        {"type": "40", "unknown": True},
        None,
    )
    with pytest.raises(FormatError):
        decode_internal("consumer-offsets", key, i16(3) + b"\x00")


def test_kafka_dump_text_consumer_offsets() -> None:
    key = offset_key("g", "tö", 1)
    value = i16(3) + i64(10) + i32(2) + s16("") + i64(99)
    assert kafka_dump_text("consumer-offsets", key, value, 8) == (
        '{"type":"1","data":{"group":"g","topic":"tö","partition":1}}',
        '{"version":"3","data":{"offset":10,"leaderEpoch":2,"metadata":"","commitTimestamp":99}}',
    )
    assert kafka_dump_text("consumer-offsets", key, None, 8)[1] == "<DELETE>"
    assert kafka_dump_text("consumer-offsets", i16(24) + b"k", b"v", 42) == (
        "Unknown record type 24 at offset 42, skipping.",
        None,
    )
    key_text, payload = kafka_dump_text("consumer-offsets", key, i16(3) + b"\x00", 7)
    assert key_text is not None and key_text.startswith("Error at offset 7, skipping. value:")
    assert payload is None
    with pytest.raises(CorruptRecordError):
        kafka_dump_text("consumer-offsets", None, value, 0)


def test_kafka_dump_text_byte_decoders() -> None:
    assert kafka_dump_text("utf8", b"k\xff", b"v", 0) == ("k\ufffd", "v")
    assert kafka_dump_text("utf8", None, b"v", 0) == (None, "v")
    assert kafka_dump_text("utf8", b"k", None, 0) == ("k", None)
    assert kafka_dump_text("hex", b"\x01", b"\x02", 0) == ("01", "02")
    assert kafka_dump_text("base64", b"\x01", b"\x02", 0) == ("AQ==", "Ag==")
    assert kafka_dump_text("json", b'{"a": 1}', b"x\xff", 0) == ('{"a":1}', "x\\xff")
    assert kafka_dump_text("none", b"k", b"v", 0) == (None, None)
