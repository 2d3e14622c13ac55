"""--key-decoder/--value-decoder confluent in dump-segments, find and export, on a generated
log dir holding a ``_schemas`` partition beside a data topic (payloads built with fastavro's
writer, protobuf's own message classes and json.dumps), and on the real Confluent host of the
corpus."""

from __future__ import annotations

import base64
import io
import json
import struct
from pathlib import Path
from typing import Any

import fastavro
import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory
from support.cli import jsonl, run
from support.paths import CORPUS, needs_corpus
from support.rewrite import write_partition

from klogtool.formats.batch import Record
from klogtool.formats.v2 import encode_batch

T0 = 1_700_000_000_000
AVRO = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [{"name": "id", "type": "long"}, {"name": "item", "type": ["null", "string"]}],
}
PROTO = 'syntax = "proto3";\npackage shop;\nmessage Click { string page = 1; int32 ms = 2; }\n'
SCHEMAS = [
    {"subject": "orders-value", "version": 1, "id": 1, "schema": json.dumps(AVRO)},
    {
        "subject": "clicks-value",
        "version": 1,
        "id": 2,
        "schema": PROTO,
        "schemaType": "PROTOBUF",
        "references": [],
    },
    {
        "subject": "events-value",
        "version": 1,
        "id": 3,
        "schema": '{"type":"object"}',
        "schemaType": "JSON",
    },
]


def frame(schema_id: int, body: bytes) -> bytes:
    return b"\0" + struct.pack(">i", schema_id) + body


def avro(value: dict[str, Any]) -> bytes:
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(AVRO), value)
    return buf.getvalue()


def click_class() -> Any:
    F = descriptor_pb2.FieldDescriptorProto
    f = descriptor_pb2.FileDescriptorProto(name="c.proto", package="shop", syntax="proto3")
    m = f.message_type.add(name="Click")
    m.field.add(name="page", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    m.field.add(name="ms", number=2, type=F.TYPE_INT32, label=F.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(f)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Click"))


CLICK = click_class()(page="/home", ms=42)
VALUES: list[bytes | None] = [
    frame(1, avro({"id": 7, "item": "boots"})),
    frame(2, b"\0" + CLICK.SerializeToString()),
    frame(3, b'{"kind": "login", "n": [1, 2]}'),
    b"plain text",
    frame(99, b"?"),
    None,
]
EXPECTED = [
    {
        "schema_id": 1,
        "type": "AVRO",
        "subject": "orders-value",
        "value": {"id": 7, "item": "boots"},
    },
    {
        "schema_id": 2,
        "type": "PROTOBUF",
        "message": "shop.Click",
        "value": json_format.MessageToDict(CLICK, preserving_proto_field_name=True),
    },
    {"schema_id": 3, "type": "JSON", "value": {"kind": "login", "n": [1, 2]}},
]


@pytest.fixture
def logdir(tmp_path: Path) -> Path:
    d = tmp_path / "data"
    keys = [{"keytype": "NOOP", "magic": 0}] + [
        {"keytype": "SCHEMA", "subject": s["subject"], "version": 1, "magic": 1} for s in SCHEMAS
    ]
    vals: list[bytes | None] = [None] + [json.dumps(s).encode() for s in SCHEMAS]
    recs = [
        Record(i, T0 + i, json.dumps(k).encode(), v)
        for i, (k, v) in enumerate(zip(keys, vals, strict=True))
    ]
    write_partition(d / "_schemas-0", [(0, [encode_batch(recs)])])
    data = [Record(i, T0 + i, b"k%d" % i, v, [("h", b"\x00\x01")]) for i, v in enumerate(VALUES)]
    write_partition(d / "orders-0", [(0, [encode_batch(data)])])
    return d


def _check(values: list[Any]) -> None:
    for got, want in zip(values, EXPECTED, strict=False):
        assert "error" not in got, got
        assert {k: got[k] for k in want} == want
    plain, unknown, null = values[3:]
    assert "magic byte 112" in plain["error"]
    assert base64.b64decode(plain["raw"]) == b"plain text"
    assert unknown["schema_id"] == 99 and "unknown schema" in unknown["error"]
    assert null is None


def test_dump_segments_decodes_beside_its_schemas(logdir: Path) -> None:
    code, out, err = run(
        "dump-segments", "--format", "jsonl", "--print-data", "--value-decoder", "confluent",
        str(logdir / "orders-0"),
    )  # fmt: skip
    assert code == 0, err
    recs = [o for o in jsonl(out) if o["type"] == "record"]
    _check([r["value"] for r in recs])
    assert recs[0]["key"] == base64.b64encode(b"k0").decode()  # the key decoder's default
    assert recs[0]["headers"] == [{"key": "h", "value": "AAE="}]  # header values: base64
    # text and kafka-dump-log's lines show the same JSON
    code, out, _ = run(
        "dump-segments", "--print-data", "--value-decoder", "confluent", str(logdir / "orders-0")
    )
    assert '"value":{"id":7,"item":"boots"}' in out and "key: k0" in out
    code, out, _ = run(
        "dump-segments", "--format", "kafka", "--print-data", "--value-decoder", "confluent",
        str(logdir / "orders-0"),
    )  # fmt: skip
    assert 'payload: {"schema_id":1,"subject":"orders-value"' in out


def test_key_decoder_confluent_and_the_schemas_option(logdir: Path, tmp_path: Path) -> None:
    # the log dir named by --schemas: the data partition copied elsewhere
    lone = tmp_path / "elsewhere"
    lone.mkdir()
    (lone / "orders-0").symlink_to(logdir / "orders-0")
    code, out, err = run(
        "dump-segments", "--format", "jsonl", "--print-data", "--key-decoder", "confluent",
        "--value-decoder", "confluent", "--schemas", str(logdir), str(lone / "orders-0"),
    )  # fmt: skip
    assert code == 0, err
    recs = [o for o in jsonl(out) if o["type"] == "record"]
    _check([r["value"] for r in recs])
    assert all("not in the Confluent wire format" in r["key"]["error"] for r in recs)
    # a JSON Lines file of schema objects, as the REST API gives them
    file = tmp_path / "schemas.jsonl"
    file.write_text("".join(json.dumps(s) + "\n" for s in SCHEMAS))
    code, out, _ = run(
        "dump-segments", "--format", "jsonl", "--print-data", "--value-decoder", "confluent",
        "--schemas", str(file), str(lone / "orders-0"),
    )  # fmt: skip
    _check([o["value"] for o in jsonl(out) if o["type"] == "record"])
    # none found: the schema ids, a warning
    code, out, err = run(
        "dump-segments", "--format", "jsonl", "--print-data", "--value-decoder", "confluent",
        str(lone / "orders-0"),
    )  # fmt: skip
    assert code == 0 and "no _schemas partition found" in err
    first = [o for o in jsonl(out) if o["type"] == "record"][0]["value"]
    assert first["schema_id"] == 1 and "no _schemas topic was read" in first["error"]
    code, _, err = run("dump-segments", "--schemas", str(file), str(lone / "orders-0"))
    assert code == 2 and "--schemas is for" in err
    code, _, err = run(
        "dump-segments", "--value-decoder", "confluent", "--schemas", str(tmp_path / "no"),
        str(lone / "orders-0"),
    )  # fmt: skip
    assert code == 3 and "not-found" in err
    bad = tmp_path / "bad.json"
    bad.write_text('[{"subject": "x"}]')
    code, _, err = run(
        "dump-segments", "--value-decoder", "confluent", "--schemas", str(bad),
        str(lone / "orders-0"),
    )  # fmt: skip
    assert code == 3 and "schema object 1" in err


def test_find_decodes_its_matches(logdir: Path) -> None:
    code, out, err = run(
        "find", "--format", "jsonl", "--value-decoder", "confluent", "--key", "k1", str(logdir)
    )
    assert code == 0, err
    (rec,) = [o for o in jsonl(out) if o["type"] == "record"]
    assert rec["topic"] == "orders" and rec["value"]["message"] == "shop.Click"
    assert rec["value"]["value"] == EXPECTED[1]["value"]


@pytest.mark.parametrize("to", ["jsonl", "parquet"])
def test_export_writes_a_decoded_column_beside_the_bytes(
    logdir: Path, tmp_path: Path, to: str
) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    dest = tmp_path / "out"
    code, _, err = run(
        "export", "--engine", "local", "--to", to, str(dest), "--value-decoder", "confluent",
        str(logdir / "orders-0"),
    )  # fmt: skip
    assert code == 0, err
    if to == "parquet":
        rows = pq.read_table(next(dest.rglob("*.parquet"))).to_pylist()
        raw = [r["value"] for r in rows]
    else:
        rows = [
            json.loads(line)
            for f in dest.rglob("*.json")
            for line in f.read_text().split("\n")
            if line
        ]
        raw = [None if r["value"] is None else base64.b64decode(r["value"]) for r in rows]
    assert raw == VALUES
    assert list(rows[0])[:3] == ["key", "value", "value_decoded"]
    decoded = [None if r["value_decoded"] is None else json.loads(r["value_decoded"]) for r in rows]
    _check(decoded)
    code, _, err = run(
        "export", "--engine", "spark", "--to", to, str(tmp_path / "s"), "--value-decoder",
        "confluent", str(logdir / "orders-0"),
    )  # fmt: skip
    assert code == 2 and "--engine local" in err


REAL = CORPUS / "rjmfernandes__flink-on-prem" / "data"


@needs_corpus
def test_real_confluent_host_promotions_decode() -> None:
    """A Confluent Platform 7.6 host (Flink demo): promotions-0's values are Avro of schema 8
    (promotions-value), found in the _schemas partition beside it."""
    code, out, err = run(
        "find", "--format", "jsonl", "--value-decoder", "confluent", str(REAL / "promotions-0")
    )
    assert code == 0, err
    recs = [o for o in jsonl(out) if o["type"] == "record"]
    values = [r["value"] for r in recs if r["value"] is not None]
    assert len(values) == 21 and len(recs) == 29  # 8 tombstones
    for v in values:
        assert "error" not in v
        assert (v["schema_id"], v["subject"], v["type"]) == (8, "promotions-value", "AVRO")
        assert isinstance(v["value"]["promotion_name"], str)
    assert values[0]["value"] == {"promotion_name": "bundle_offer"}


@needs_corpus
def test_real_schemas_topics_replay() -> None:
    from klogtool.formats.limits import DEFAULT_LIMITS
    from klogtool.log.schemas import replay_partition

    reg = replay_partition(REAL / "_schemas-0", DEFAULT_LIMITS)
    assert sorted(reg.by_id) == list(range(1, 9))
    assert {s.schema_type for s in reg.by_id.values()} == {"AVRO"}
    assert reg.versions[("promotions-value", 1)] == 8
    # a registry that only ever wrote NOOPs: nothing to know, nothing invented
    other = CORPUS / "ItumelengMogase__Real-Time-Data-Pipeline-for-Patient-Admissions"
    assert len(replay_partition(other / "kafka-data" / "_schemas-0", DEFAULT_LIMITS)) == 0
