"""--key-decoder/--value-decoder confluent in dump-segments, find and export, on a generated
log dir holding a ``_schemas`` partition beside a data topic (payloads built with fastavro's
writer, protobuf's own message classes and json.dumps), and on the real Confluent host of the
corpus."""

from __future__ import annotations

import base64
import decimal
import io
import json
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import fastavro
import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory
from support.cli import jsonl, run
from support.extras import needs_pyarrow
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


# -- hostile Avro payloads (issue 37, item 10): refused with a finding, never a crash or a hang
def zigzag(n: int) -> bytes:
    """A long in Avro's binary encoding (written out here, not by fastavro: fastavro's own
    writer recurses in C as its reader does)."""
    z, out = (n << 1) ^ (n >> 63), bytearray()
    while z > 0x7F:
        out.append(z & 0x7F | 0x80)
        z >>= 7
    return bytes(out + bytes([z]))


def registry_dir(tmp_path: Path, schemas: list[dict[str, Any]], values: list[bytes]) -> Path:
    """A log dir: ``_schemas-0`` holding ``schemas`` as the registry writes them (a JSON key
    and value per subject version), and ``t-0`` holding ``values``."""
    d = tmp_path / "data"
    recs = [
        Record(
            i,
            T0 + i,
            json.dumps(
                {"keytype": "SCHEMA", "subject": s["subject"], "version": s["version"], "magic": 1}
            ).encode(),
            json.dumps(s).encode(),
        )
        for i, s in enumerate(schemas)
    ]
    write_partition(d / "_schemas-0", [(0, [encode_batch(recs)])])
    data = [Record(i, T0 + i, b"k%d" % i, v) for i, v in enumerate(values)]
    write_partition(d / "t-0", [(0, [encode_batch(data)])])
    return d


_PROBE = (
    "import resource, subprocess, sys, time\n"
    "t = time.monotonic()\n"
    "p = subprocess.run(sys.argv[1:], capture_output=True, text=True, timeout=float(sys.argv[1]))\n"
    "print(p.returncode, time.monotonic() - t, "
    "resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)\n"
    "sys.stdout.write(p.stdout)\n"
)


def bounded_run(*args: str, timeout: float = 60) -> tuple[int, str, float, float]:
    """``klogtool ARGS`` in a process of its own (a SIGSEGV cannot kill pytest; a hang ends at
    ``timeout``): (exit status, stdout, wall seconds, peak RSS in MiB)."""
    probe = _PROBE.replace("sys.argv[1:]", "sys.argv[2:]")
    cmd = [sys.executable, "-c", probe, str(timeout), sys.executable, "-m", "klogtool", *args]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout + 30)
    assert "TimeoutExpired" not in p.stderr, f"klogtool {' '.join(args)}: over {timeout} s"
    code, secs, rss = p.stderr.split()[-3:]
    return int(code), p.stdout, float(secs), int(rss) / 1024


def dumped(logdir: Path, timeout: float = 60) -> tuple[list[Any], list[Any], float, float]:
    """dump-segments of ``t-0`` with the confluent value decoder, in a bounded process: the
    values, the findings, wall seconds and peak RSS (MiB)."""
    code, out, secs, rss = bounded_run(
        "dump-segments", "--format", "jsonl", "--print-data", "--value-decoder", "confluent",
        str(logdir / "t-0"), timeout=timeout,
    )  # fmt: skip
    assert code == 0, (code, out[-2000:])
    objs = jsonl(out)
    return (
        [o["value"] for o in objs if o["type"] == "record"],
        [o for o in objs if o["type"] == "finding"],
        secs,
        rss,
    )


def assert_refused(value: Any, payload: bytes, findings: list[Any], offset: int) -> None:
    """Shown undecoded, with its raw bytes, and one payload-refused finding for it."""
    assert value["code"] == "payload-refused" and "refused" in value["error"], value
    assert "value" not in value and base64.b64decode(value["raw"]) == payload
    mine = [f for f in findings if f["offset"] == offset]
    assert [(f["severity"], f["code"]) for f in mine] == [("warning", "payload-refused")]
    assert value["error"] in mine[0]["message"]


def avro_schema(i: int, subject: str, schema: Any, refs: list[Any] | None = None) -> Any:
    return {"subject": subject, "version": 1, "id": i, "schema": json.dumps(schema),
            "references": refs or []}  # fmt: skip


def test_avro_value_nested_thousands_deep_is_refused_not_a_crash(tmp_path: Path) -> None:
    """A linked list 5000 deep in a recursive schema: fastavro's reader recursed in C until
    SIGSEGV. A record that holds itself and nothing else (no bytes, no end) too."""
    node = {
        "type": "record",
        "name": "Node",
        "fields": [{"name": "next", "type": ["null", "Node"]}],
    }
    loop = {"type": "record", "name": "Loop", "fields": [{"name": "again", "type": "Loop"}]}
    # the encoding written out here is fastavro's own for a shallow list
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(node), {"next": {"next": None}})
    assert buf.getvalue() == zigzag(1) + zigzag(0)
    deep = zigzag(1) * 5000 + zigzag(0)
    fine = zigzag(1) * 100 + zigzag(0)  # 101 records: within the bound, decoded
    values = [frame(1, deep), frame(1, fine), frame(2, b"")]
    logdir = registry_dir(
        tmp_path, [avro_schema(1, "list-value", node), avro_schema(2, "loop-value", loop)], values
    )
    got, findings, secs, rss = dumped(logdir)
    assert_refused(got[0], values[0], findings, 0)
    assert "nested deeper than 128" in got[0]["error"]
    v = got[1]["value"]
    for _ in range(100):
        v = v["next"]
    assert v == {"next": None}
    assert_refused(got[2], values[2], findings, 2)
    assert len(findings) == 2
    assert secs < 20 and rss < 200, (secs, rss)


def test_schemas_that_each_reference_the_next_twice_parse_once(tmp_path: Path) -> None:
    """32 _schemas entries, each naming the next twice in its references: parsing every
    reference where it is named cost 2^31 schema parses for one payload."""
    n = 32
    schemas, types = [], []
    for i in range(n):
        nxt = f"shop.T{i + 1}"
        fields: list[Any] = (
            [{"name": "x", "type": "long"}]
            if i == n - 1
            else [{"name": "a", "type": nxt}, {"name": "b", "type": ["null", nxt]}]
        )
        types.append({"type": "record", "name": f"T{i}", "namespace": "shop", "fields": fields})
        refs = [] if i == n - 1 else [{"name": nxt, "subject": f"t{i + 1}", "version": 1}] * 2
        schemas.append(avro_schema(100 + i, f"t{i}", types[-1], refs))
    schemas[0]["subject"] = "t-value"
    for s, nxt in zip(schemas, schemas[1:], strict=False):  # each names the next by subject
        for r in s["references"]:
            r["subject"] = nxt["subject"]
    named: dict[str, Any] = {}
    for t in reversed(types):
        writer = fastavro.parse_schema(t, named_schemas=named)
    value: Any = {"x": 42}
    for _ in range(n - 1):
        value = {"a": value, "b": None}
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, writer, value)
    logdir = registry_dir(tmp_path, schemas, [frame(100, buf.getvalue())])
    got, findings, secs, rss = dumped(logdir, timeout=60)
    assert "error" not in got[0], got[0]
    assert got[0]["subject"] == "t-value" and got[0]["value"] == value
    assert not findings
    assert secs < 20 and rss < 200, (secs, rss)


@needs_pyarrow
def test_items_that_take_no_bytes_cannot_announce_millions(tmp_path: Path) -> None:
    """An array of nulls announcing 50 million items in a few bytes built them all (900 MB);
    so did an array of empty records."""
    nulls = {"type": "record", "name": "R", "fields": [
        {"name": "a", "type": {"type": "array", "items": "null"}},
        {"name": "e", "type": {"type": "array",
                               "items": {"type": "record", "name": "E", "fields": []}}},
    ]}  # fmt: skip
    parsed = fastavro.parse_schema(nulls)
    buf = io.BytesIO()  # fastavro's encoding of a few: what the hostile ones scale up
    fastavro.schemaless_writer(buf, parsed, {"a": [None] * 3, "e": [{}] * 2})
    assert buf.getvalue() == zigzag(3) + zigzag(0) + zigzag(2) + zigzag(0)
    many = 50_000_000
    values = [
        frame(1, zigzag(many) + zigzag(0) + zigzag(0)),
        frame(1, zigzag(0) + zigzag(many) + zigzag(0)),
        frame(1, buf.getvalue()),
    ]
    logdir = registry_dir(tmp_path, [avro_schema(1, "t-value", nulls)], values)
    got, findings, secs, rss = dumped(logdir)
    for i in (0, 1):
        assert_refused(got[i], values[i], findings, i)
        assert "more than 1000000 values" in got[i]["error"]
    assert got[2]["value"] == {"a": [None] * 3, "e": [{}] * 2}
    assert secs < 20 and rss < 200, (secs, rss)
    # find shows the same values, and its findings on stderr (docs/output.md)
    code, out, err = run(
        "find", "--format", "jsonl", "--value-decoder", "confluent", str(logdir / "t-0")
    )
    assert code == 0, err
    assert [o["value"] for o in jsonl(out) if o["type"] == "record"] == got
    warnings = [line for line in err.splitlines() if "(payload-refused)" in line]
    assert len(warnings) == 2 and warnings[0].startswith("klogtool: warning: "), err
    # export: the raw bytes, and the refusal in value_decoded
    dest = tmp_path / "out"
    code, _, err = run(
        "export", "--engine", "local", "--to", "jsonl", str(dest), "--value-decoder",
        "confluent", str(logdir / "t-0"),
    )  # fmt: skip
    assert code == 0, err
    rows = [json.loads(line) for f in dest.rglob("*.json") for line in f.read_text().splitlines()]
    assert [base64.b64decode(r["value"]) for r in rows] == values
    assert [json.loads(r["value_decoded"]) for r in rows] == got


def test_a_long_decimal_costs_linear_time(tmp_path: Path) -> None:
    """800 KB of decimal bytes: fastavro's int → Decimal conversion is quadratic (~55 s). Its
    precision bounds its digits: beyond them the value is refused; within, decoded."""
    dec = {"type": "record", "name": "P", "fields": [
        {"name": "d", "type": {"type": "bytes", "logicalType": "decimal",
                               "precision": 10, "scale": 2}},
    ]}  # fmt: skip
    parsed = fastavro.parse_schema(dec)
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, parsed, {"d": decimal.Decimal("-12345678.91")})
    long = b"\x7f" + b"\xff" * (800_000 - 1)
    padded = b"\0" * 100_000 + b"\x30\x39"  # 12345, sign-extended: few digits, decoded
    values = [
        frame(1, zigzag(len(long)) + long),
        frame(1, buf.getvalue()),
        frame(1, zigzag(len(padded)) + padded),
    ]
    logdir = registry_dir(tmp_path, [avro_schema(1, "t-value", dec)], values)
    got, findings, secs, rss = dumped(logdir, timeout=40)
    assert_refused(got[0], values[0], findings, 0)
    assert "precision 10" in got[0]["error"]
    assert decimal.Decimal(got[1]["value"]["d"]) == decimal.Decimal("-12345678.91")
    assert decimal.Decimal(got[2]["value"]["d"]) == decimal.Decimal("123.45")
    assert len(findings) == 1
    assert secs < 20 and rss < 200, (secs, rss)


def _strict(line: str) -> Any:
    """A JSON text as RFC 8259 has it: a bare NaN or Infinity token is an error (jq's, Go's
    and Jackson's parsers refuse the line)."""

    def refuse(token: str) -> Any:
        raise ValueError(f"not JSON: {token}")

    return json.loads(line, parse_constant=refuse)


@needs_pyarrow
def test_non_finite_numbers_are_written_as_json(tmp_path: Path) -> None:
    """Confluent decoding wrote NaN and Infinity as bare tokens (an Avro double any producer
    can send; a JSON Schema payload [1e999]): every line is RFC 8259 JSON, the non-finite
    numbers the strings "NaN", "Infinity", "-Infinity" (docs/output.md)."""
    reading = {"type": "record", "name": "R", "fields": [{"name": "x", "type": "double"}]}
    schemas = [
        {"subject": "r-value", "version": 1, "id": 1, "schema": json.dumps(reading)},
        {"subject": "j-value", "version": 1, "id": 2, "schema": "{}", "schemaType": "JSON"},
    ]

    def double(x: float) -> bytes:
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, fastavro.parse_schema(reading), {"x": x})
        return frame(1, buf.getvalue())

    values = [double(float("nan")), double(float("inf")), double(-float("inf")), double(1.5)]
    values.append(frame(2, b"[1e999, -1e999, NaN, Infinity, 2.5]"))
    d = registry_dir(tmp_path, schemas, values)
    decoder = ("--value-decoder", "confluent")
    outputs = []
    for args in (
        ("dump-segments", "--deep-iteration", "--print-data", "--format", "jsonl"),
        ("find", "--print-data", "--format", "jsonl"),
    ):
        code, out, err = run(*args, *decoder, str(d / "t-0"), cwd=tmp_path)
        assert code == 0, err
        outputs.append([_strict(line) for line in out.splitlines()])
    code, _out, err = run(
        "export", *decoder, "--to", "jsonl", str(tmp_path / "out"), str(d / "t-0")
    )
    assert code == 0, err
    rows = [_strict(x) for f in (tmp_path / "out").rglob("*.json*") for x in f.open()]
    exported = sorted((r["offset"], _strict(r["value_decoded"])["value"]) for r in rows)
    for objs in outputs:
        got = sorted((o["offset"], o["value"]["value"]) for o in objs if o["type"] == "record")
        assert got == exported
    assert [v for _o, v in exported] == [
        {"x": "NaN"},
        {"x": "Infinity"},
        {"x": "-Infinity"},
        {"x": 1.5},
        ["Infinity", "-Infinity", "NaN", "Infinity", 2.5],
    ]
