"""The ``__cluster_metadata`` (KRaft) decoder: the schema tables, the frame, errors, the
kafka-dump-log texts, and golden decodes of every real metadata log and snapshot of the corpus.
"""

from __future__ import annotations

import hashlib
import json
import struct
from collections import Counter
from pathlib import Path

import pytest
from support.paths import CORPUS, needs_corpus

from klogtool.formats.batch import Record
from klogtool.formats.errors import FormatError
from klogtool.formats.payloads import decode_internal, kafka_dump_text
from klogtool.formats.payloads.cluster_metadata import (
    METADATA_MESSAGES,
    METADATA_RECORD_TYPES,
    MetadataParseError,
    decode_metadata_record,
    encode_metadata_record,
    record_type_name,
)
from klogtool.formats.payloads.control import decode_control_record
from klogtool.formats.payloads.schema import load_json_schema, uuid_to_text
from klogtool.formats.records import SegmentScanner
from klogtool.formats.v2 import encode_batch
from klogtool.formats.varint import encode_uvarint

TOPIC_ID = bytes(range(16))
TOPIC_ID_TEXT = uuid_to_text(TOPIC_ID)


def cs(text: str | None) -> bytes:
    if text is None:
        return b"\x00"
    raw = text.encode()
    return encode_uvarint(len(raw) + 1) + raw


def frame(api_key: int, version: int, body: bytes) -> bytes:
    return b"\x01" + encode_uvarint(api_key) + encode_uvarint(version) + body


# ---------------------------------------------------------------------------------------------
# The tables


def test_every_record_type_of_the_spec_has_a_table() -> None:
    # docs/kafka-rules.md: Internal topics (MetadataRecordType): api key -> enum name. 21 is the
    # constant of the
    # schema named ZkMigrationStateRecord (the spec's list says ZK_MIGRATION_RECORD).
    expected = {
        0: "REGISTER_BROKER_RECORD",
        1: "UNREGISTER_BROKER_RECORD",
        2: "TOPIC_RECORD",
        3: "PARTITION_RECORD",
        4: "CONFIG_RECORD",
        5: "PARTITION_CHANGE_RECORD",
        7: "FENCE_BROKER_RECORD",
        8: "UNFENCE_BROKER_RECORD",
        9: "REMOVE_TOPIC_RECORD",
        10: "DELEGATION_TOKEN_RECORD",
        11: "USER_SCRAM_CREDENTIAL_RECORD",
        12: "FEATURE_LEVEL_RECORD",
        14: "CLIENT_QUOTA_RECORD",
        15: "PRODUCER_IDS_RECORD",
        17: "BROKER_REGISTRATION_CHANGE_RECORD",
        18: "ACCESS_CONTROL_ENTRY_RECORD",
        19: "REMOVE_ACCESS_CONTROL_ENTRY_RECORD",
        20: "NO_OP_RECORD",
        21: "ZK_MIGRATION_STATE_RECORD",
        22: "REMOVE_USER_SCRAM_CREDENTIAL_RECORD",
        23: "BEGIN_TRANSACTION_RECORD",
        24: "END_TRANSACTION_RECORD",
        25: "ABORT_TRANSACTION_RECORD",
        26: "REMOVE_DELEGATION_TOKEN_RECORD",
        27: "REGISTER_CONTROLLER_RECORD",
    }
    assert {k: METADATA_RECORD_TYPES[k] for k in expected} == expected
    assert record_type_name(6) == record_type_name(99) == "UNKNOWN"
    # every metadata record is a flexible message at every version
    for message in METADATA_MESSAGES.values():
        assert message.flexible(0), message.name


@pytest.mark.parametrize("api_key", sorted(METADATA_MESSAGES))
def test_round_trip_every_table_and_version(api_key: int) -> None:
    message = METADATA_MESSAGES[api_key]
    for version in range(message.lowest_version, message.highest_version + 1):
        default = message.struct.default_value(version)
        raw = encode_metadata_record(api_key, default, version)
        rec = decode_metadata_record(raw)
        assert (rec.api_key, rec.version, rec.type_name) == (
            api_key,
            version,
            METADATA_RECORD_TYPES[api_key],
        )
        assert rec.data == default
        assert encode_metadata_record(api_key, rec.data or {}, version) == raw


def test_hand_encoded_records() -> None:
    # TopicRecord v0: Name, TopicId, no tagged fields
    rec = decode_metadata_record(frame(2, 0, cs("orders") + TOPIC_ID + b"\x00"))
    assert rec.json() == {
        "type": "TOPIC_RECORD",
        "version": 0,
        "data": {"name": "orders", "topicId": TOPIC_ID_TEXT},
    }
    # PartitionChangeRecord v0 with tagged Isr (tag 0) and Leader (tag 1); untouched tagged
    # fields keep their defaults and are not shown
    tagged = (
        b"\x02" + b"\x00\x09\x03" + struct.pack(">ii", 1, 2) + b"\x01\x04" + struct.pack(">i", 2)
    )
    rec = decode_metadata_record(frame(5, 0, struct.pack(">i", 3) + TOPIC_ID + tagged))
    assert rec.data == {"partitionId": 3, "topicId": TOPIC_ID_TEXT, "isr": [1, 2], "leader": 2}
    # ConfigRecord with a null value (a deleted config)
    body = b"\x02" + cs("orders") + cs("retention.ms") + cs(None) + b"\x00"
    assert decode_metadata_record(frame(4, 0, body)).data == {
        "resourceType": 2,
        "resourceName": "orders",
        "name": "retention.ms",
        "value": None,
    }
    # ClientQuotaRecord: float64 and a null entity name
    body = (
        b"\x02"
        + cs("user")
        + cs(None)
        + b"\x00"
        + cs("producer_byte_rate")
        + struct.pack(">d", 10485760.0)
        + b"\x00"
        + b"\x00"
    )
    raw = frame(14, 0, body)
    assert decode_metadata_record(raw).data == {
        "entity": [{"entityType": "user", "entityName": None}],
        "key": "producer_byte_rate",
        "value": 10485760.0,
        "remove": False,
    }
    # kafka-dump-log prints doubles in Java's notation
    assert kafka_dump_text("cluster-metadata", None, raw, 5)[1] == (
        '{"type":"CLIENT_QUOTA_RECORD","version":0,"data":{"entity":[{"entityType":"user",'
        '"entityName":null}],"key":"producer_byte_rate","value":1.048576E7,"remove":false}}'
    )
    # UserScramCredentialRecord: bytes as base64
    body = cs("alice") + b"\x01" + b"\x03ab" + b"\x02k" + b"\x02s" + struct.pack(">i", 4096)
    assert decode_metadata_record(frame(11, 0, body + b"\x00")).data == {
        "name": "alice",
        "mechanism": 1,
        "salt": "YWI=",
        "storedKey": "aw==",
        "serverKey": "cw==",
        "iterations": 4096,
    }
    # AbortTransactionRecord: the tagged reason
    rec = decode_metadata_record(frame(25, 0, b"\x01\x00\x05" + cs("oops")))
    assert rec.data == {"reason": "oops"}


def test_frame_and_body_errors() -> None:
    cases = [
        (b"\x00\x02\x00", "Could not deserialize metadata record with frame version 0."),
        (b"\x02\x02\x00", "unknown frame version 2(only frame version 1 is supported)"),
        (b"\x01\x80\x80\x02\x00", "Value for type was too large."),
        (b"\x01\x02", "Error while reading version"),
        (frame(2, 1, b""), "Failed to deserialize record with type 2"),  # no v1 TopicRecord
        (frame(2, 0, cs("t")), "Failed to deserialize record with type 2"),  # truncated
        (frame(20, 0, b"\x00\x99"), "Found 1 byte(s) of garbage after 20"),
    ]
    for raw, kafka in cases:
        with pytest.raises(MetadataParseError) as e:
            decode_metadata_record(raw)
        assert kafka in e.value.kafka_message, raw.hex()
        assert isinstance(e.value, FormatError) and e.value.position is not None
        text = kafka_dump_text("cluster-metadata", None, raw, 42)
        assert text[0] is None and text[1] is not None
        assert text[1].startswith("Error at 42, skipping. ") and kafka in text[1]
    with pytest.raises(FormatError):
        decode_metadata_record(None)
    with pytest.raises(FormatError):
        decode_internal("cluster-metadata", None, b"\x00")


def test_unknown_api_key_is_reported_not_fatal() -> None:
    raw = frame(99, 3, b"\xab\xcd")
    rec = decode_metadata_record(raw)
    assert rec.is_unknown and rec.type_name == "UNKNOWN"
    assert decode_internal("cluster-metadata", None, raw) == (
        None,
        {"type": "UNKNOWN", "apiKey": 99, "version": 3, "unknown": True, "raw": "q80="},
    )
    assert kafka_dump_text("cluster-metadata", None, raw, 7) == (
        None,
        "Error at 7, skipping. org.apache.kafka.common.errors.UnsupportedVersionException: "
        "Unknown metadata id 99",
    )


def test_decode_internal_and_kafka_text_shapes() -> None:
    raw = frame(12, 0, cs("metadata.version") + struct.pack(">h", 19) + b"\x00")
    assert decode_internal("cluster-metadata", None, raw) == (
        None,
        {
            "type": "FEATURE_LEVEL_RECORD",
            "version": 0,
            "data": {"name": "metadata.version", "featureLevel": 19},
        },
    )
    # no key is printed, even if a record had one
    assert kafka_dump_text("cluster-metadata", b"ignored", raw, 0) == (
        None,
        '{"type":"FEATURE_LEVEL_RECORD","version":0,"data":{"name":"metadata.version",'
        '"featureLevel":19}}',
    )


def test_kafka_json_schema_files_load_with_quoted_tags() -> None:
    # Kafka's own files sometimes quote the tag ("tag": "2"); the loader accepts both
    message = load_json_schema(
        """// a comment
        {"apiKey": 17, "name": "BrokerRegistrationChangeRecord", "validVersions": "0-2",
         "flexibleVersions": "0+", "fields": [
          {"name": "BrokerId", "type": "int32", "versions": "0+"},
          {"name": "LogDirs", "type": "[]uuid", "versions": "2+", "taggedVersions": "2+",
           "tag": "2"}]}"""
    )
    assert message.fields[1].tag == 2


# ---------------------------------------------------------------------------------------------
# Golden decodes of the real corpus

# file -> (metadata records, sha256 prefix of "<offset> <kafka-dump-log payload>\n" lines,
#          {type/version: count})
GOLDEN: dict[str, tuple[int, str, dict[str, int]]] = {}
_SNAP_ITUMELENG = {
    "FEATURE_LEVEL_RECORD/0": 1,
    "ZK_MIGRATION_STATE_RECORD/0": 1,
    "REGISTER_BROKER_RECORD/3": 1,
    "REGISTER_CONTROLLER_RECORD/0": 1,
    "CONFIG_RECORD/0": 16,
    "PRODUCER_IDS_RECORD/0": 1,
}
_SNAP_JY = {
    "FEATURE_LEVEL_RECORD/0": 1,
    "ZK_MIGRATION_STATE_RECORD/0": 1,
    "REGISTER_BROKER_RECORD/2": 1,
    "TOPIC_RECORD/0": 8,
    "PARTITION_RECORD/0": 57,
    "CONFIG_RECORD/0": 3,
    "PRODUCER_IDS_RECORD/0": 1,
}
_BOOT = {"FEATURE_LEVEL_RECORD/0": 1}
_IT = "ItumelengMogase__Real-Time-Data-Pipeline-for-Patient-Admissions/kafka-data/"
_JY = "JY-GIEGIEGIE__Stock-Sys-Integration/kafka-logs/__cluster_metadata-0/"
_RJ = "rjmfernandes__flink-on-prem/data/"
_CC = "codecrafters-io__kafka-tester/internal/test_helpers/pass_all/kraft-combined-logs/"
GOLDEN.update(
    {
        _IT + "__cluster_metadata-0/00000000000000007364-0000000001.checkpoint": (
            163,
            "06243c6904a456b8",
            {**_SNAP_ITUMELENG, "TOPIC_RECORD/0": 8, "PARTITION_RECORD/1": 134},
        ),
        _IT + "__cluster_metadata-0/00000000000000021265-0000000006.checkpoint": (
            163,
            "8df167674560a317",
            {**_SNAP_ITUMELENG, "TOPIC_RECORD/0": 8, "PARTITION_RECORD/1": 134},
        ),
        _IT + "__cluster_metadata-0/00000000000000060500-0000000025.checkpoint": (
            169,
            "a69b4e379a79b38c",
            {**_SNAP_ITUMELENG, "TOPIC_RECORD/0": 9, "PARTITION_RECORD/1": 139},
        ),
        _IT + "bootstrap.checkpoint": (1, "3d7029c2c1cb6e01", _BOOT),
        _JY + "00000000000000004758-0000000001.checkpoint": (72, "1e6bfda7037f8f11", _SNAP_JY),
        _JY + "00000000000000014600-0000000003.checkpoint": (72, "7a0abbd5e888d4d9", _SNAP_JY),
        _JY + "00000000000000017202-0000000003.checkpoint": (72, "7a0abbd5e888d4d9", _SNAP_JY),
        _JY + "00000000000000024491-0000000003.checkpoint": (72, "85ace0fae73e3e0c", _SNAP_JY),
        _JY + "00000000000000031680-0000000003.checkpoint": (72, "85ace0fae73e3e0c", _SNAP_JY),
        _JY + "00000000000000039002-0000000004.checkpoint": (72, "63f326ded10f2b5c", _SNAP_JY),
        "Jeong-Rae__KafkaDemo/kraft-combined-logs/__cluster_metadata-0/00000000000000000000.log": (
            3067,
            "bfe16d038d2908d8",
            {
                "BEGIN_TRANSACTION_RECORD/0": 1,
                "FEATURE_LEVEL_RECORD/0": 1,
                "ZK_MIGRATION_STATE_RECORD/0": 1,
                "END_TRANSACTION_RECORD/0": 1,
                "NO_OP_RECORD/0": 3054,
                "REGISTER_BROKER_RECORD/2": 4,
                "BROKER_REGISTRATION_CHANGE_RECORD/0": 5,
            },
        ),
        "Jeong-Rae__KafkaDemo/kraft-combined-logs/bootstrap.checkpoint": (
            1,
            "d1644d97b1265601",
            _BOOT,
        ),
        "Niloufar1171__LDI-POC/__cluster_metadata-0/00000000000000000000.log": (
            4928,
            "2c604dfd82a6e755",
            {
                "BEGIN_TRANSACTION_RECORD/0": 1,
                "FEATURE_LEVEL_RECORD/0": 1,
                "ZK_MIGRATION_STATE_RECORD/0": 1,
                "END_TRANSACTION_RECORD/0": 1,
                "REGISTER_CONTROLLER_RECORD/0": 1,
                "REGISTER_BROKER_RECORD/3": 2,
                "NO_OP_RECORD/0": 4801,
                "BROKER_REGISTRATION_CHANGE_RECORD/0": 2,
                "BROKER_REGISTRATION_CHANGE_RECORD/1": 1,
                "TOPIC_RECORD/0": 5,
                "CONFIG_RECORD/0": 3,
                "PARTITION_RECORD/1": 54,
                "PRODUCER_IDS_RECORD/0": 1,
                "PARTITION_CHANGE_RECORD/1": 54,
            },
        ),
        "Niloufar1171__LDI-POC/bootstrap.checkpoint": (1, "3d7029c2c1cb6e01", _BOOT),
        _CC + "__cluster_metadata-0/00000000000000000000.log": (
            114,
            "09304b3213c57829",
            {
                "BEGIN_TRANSACTION_RECORD/0": 1,
                "FEATURE_LEVEL_RECORD/0": 1,
                "ZK_MIGRATION_STATE_RECORD/0": 1,
                "END_TRANSACTION_RECORD/0": 1,
                "REGISTER_CONTROLLER_RECORD/0": 2,
                "REGISTER_BROKER_RECORD/3": 2,
                "BROKER_REGISTRATION_CHANGE_RECORD/0": 4,
                "BROKER_REGISTRATION_CHANGE_RECORD/1": 2,
                "NO_OP_RECORD/0": 94,
                "TOPIC_RECORD/0": 1,
                "PARTITION_RECORD/1": 1,
                "PRODUCER_IDS_RECORD/0": 1,
                "PARTITION_CHANGE_RECORD/1": 3,
            },
        ),
        _CC + "bootstrap.checkpoint": (1, "81d63489498addca", _BOOT),
        _RJ + "__cluster_metadata-0/00000000000000007752-0000000001.checkpoint": (
            583,
            "1455abfa5dc8cbd6",
            {
                "FEATURE_LEVEL_RECORD/0": 1,
                "ZK_MIGRATION_STATE_RECORD/0": 1,
                "REGISTER_BROKER_RECORD/2": 1,
                "TOPIC_RECORD/0": 58,
                "PARTITION_RECORD/0": 146,
                "CONFIG_RECORD/0": 375,
                "PRODUCER_IDS_RECORD/0": 1,
            },
        ),
        _RJ + "__cluster_metadata-0/00000000000000014926-0000000001.checkpoint": (
            587,
            "80d8696856f36318",
            {
                "FEATURE_LEVEL_RECORD/0": 1,
                "ZK_MIGRATION_STATE_RECORD/0": 1,
                "REGISTER_BROKER_RECORD/2": 1,
                "TOPIC_RECORD/0": 60,
                "PARTITION_RECORD/0": 148,
                "CONFIG_RECORD/0": 375,
                "PRODUCER_IDS_RECORD/0": 1,
            },
        ),
        _RJ + "bootstrap.checkpoint": (1, "d1644d97b1265601", _BOOT),
    }
)


def _kraft_files() -> list[Path]:
    if not CORPUS.is_dir():
        return []
    return sorted(
        p
        for p in CORPUS.rglob("*")
        if p.is_file()
        and (
            (p.parent.name.startswith("__cluster_metadata-") and p.suffix == ".log")
            or p.name == "bootstrap.checkpoint"
            or (p.suffix == ".checkpoint" and p.name[:1].isdigit())
        )
    )


@needs_corpus
def test_golden_covers_every_kraft_file_of_the_corpus() -> None:
    assert {str(p.relative_to(CORPUS)) for p in _kraft_files()} == set(GOLDEN)


@needs_corpus
@pytest.mark.parametrize("rel", sorted(GOLDEN))
def test_golden_decode(rel: str) -> None:
    path = CORPUS / rel
    count, digest, types = GOLDEN[rel]
    h = hashlib.sha256()
    seen: Counter[str] = Counter()
    controls: list[str] = []
    n = 0
    for batch in SegmentScanner(memoryview(path.read_bytes())):
        for rec in batch.records():
            if batch.is_control:
                controls.append(decode_control_record(rec.key, rec.value).type_name)
                continue
            assert rec.key is None  # metadata records have no key
            meta = decode_metadata_record(rec.value)  # raises on anything that does not decode
            assert not meta.is_unknown, rec.offset
            seen[f"{meta.type_name}/{meta.version}"] += 1
            _, text = kafka_dump_text("cluster-metadata", rec.key, rec.value, rec.offset)
            assert text is not None and not text.startswith("Error")
            assert json.loads(text) == meta.json()
            h.update(f"{rec.offset} {text}\n".encode())
            n += 1
    assert n == count
    assert dict(seen) == types
    assert h.hexdigest()[:16] == digest
    if path.suffix == ".checkpoint":  # snapshots are framed by a header and a footer
        assert controls[0] == "SNAPSHOT_HEADER" and controls[-1] == "SNAPSHOT_FOOTER"


def _decoded(rel: str, offset: int) -> dict:
    for batch in SegmentScanner(memoryview((CORPUS / rel).read_bytes())):
        for rec in batch.records():
            if rec.offset == offset:
                return decode_metadata_record(rec.value).json()
    raise AssertionError(f"no offset {offset} in {rel}")


@needs_corpus
def test_spot_checked_values() -> None:
    """Values read by hand from the hex of the records (see the comments)."""
    nil = "Niloufar1171__LDI-POC/__cluster_metadata-0/00000000000000000000.log"
    # 01 00 03 | 00000001 | 00 | b5ae51e1... | 0000000000000006 | 02 0a"PLAINTEXT" 06"kafka"
    # 2384 0000 00 | 02 11"metadata.version" 0001 0013 00 | 00 01 00 | 01 00 11 02 5c7864af...
    assert _decoded(nil, 6) == {
        "type": "REGISTER_BROKER_RECORD",
        "version": 3,
        "data": {
            "brokerId": 1,
            "isMigratingZkBroker": False,
            "incarnationId": "ta5R4VtUQvagltuIzSD9hg",
            "brokerEpoch": 6,
            "endPoints": [
                {"name": "PLAINTEXT", "host": "kafka", "port": 9092, "securityProtocol": 0}
            ],
            "features": [
                {"name": "metadata.version", "minSupportedVersion": 1, "maxSupportedVersion": 19}
            ],
            "rack": None,
            "fenced": True,
            "inControlledShutdown": False,
            "logDirs": ["XHhkr4tkSsD900pOQ8pPfg"],
        },
    }
    # 01 11 00 | 00000001 | 0000000000000008 | 01 00 01 ff  (tag 0 Fenced = -1: unfenced)
    assert _decoded(nil, 9)["data"] == {"brokerId": 1, "brokerEpoch": 8, "fenced": -1}
    # 01 05 01 | 00000000 | fe0e287f... | 01 01 04 ffffffff  (tag 1 Leader = -1)
    assert _decoded(nil, 4872) == {
        "type": "PARTITION_CHANGE_RECORD",
        "version": 1,
        "data": {"partitionId": 0, "topicId": "_g4of-T3Rq-jr09kDxtjFA", "leader": -1},
    }
    # 01 03 01 | 00000000 | 8129dfa4... | 02 00000001 | 02 00000001 | 01 | 01 | 00000001 |
    # 00000000 | 00000000 | 02 5c7864af... | 00
    assert _decoded(nil, 420)["data"] == {
        "partitionId": 0,
        "topicId": "gSnfpEbtQfSDpxM2lhEn9A",
        "replicas": [1],
        "isr": [1],
        "removingReplicas": [],
        "addingReplicas": [],
        "leader": 1,
        "leaderEpoch": 0,
        "partitionEpoch": 0,
        "directories": ["XHhkr4tkSsD900pOQ8pPfg"],
    }
    rj = _RJ + "__cluster_metadata-0/00000000000000007752-0000000001.checkpoint"
    assert _decoded(rj, 208)["data"] == {
        "resourceType": 2,
        "resourceName": "_confluent-controlcenter-7-6-0-1-MonitoringStream-THREE_HOURS-changelog",
        "name": "cleanup.policy",
        "value": "compact,delete",
    }
    # 01 0f 00 | ffffffff | ffffffffffffffff | 00000000000003e8 | 00
    assert _decoded(rj, 583)["data"] == {
        "brokerId": -1,
        "brokerEpoch": -1,
        "nextProducerId": 1000,
    }


# ---------------------------------------------------------------------------------------------
# dump-segments end to end


def _metadata_partition(root: Path) -> Path:
    d = root / "__cluster_metadata-0"
    d.mkdir()
    good = frame(2, 0, cs("orders") + TOPIC_ID + b"\x00")
    bad = frame(2, 0, cs("orders"))  # truncated body
    unknown = frame(99, 0, b"")
    batch = encode_batch(
        [
            Record(0, 1000, None, good),
            Record(1, 1000, None, bad),
            Record(2, 1000, None, unknown),
        ]
    )
    (d / "00000000000000000000.log").write_bytes(batch)
    return d


def test_dump_segments_auto_decodes_metadata(tmp_path: Path) -> None:
    from support.cli import jsonl, run

    _metadata_partition(tmp_path)
    code, out, err = run(
        "dump-segments", "--print-data", "--format", "kafka", "__cluster_metadata-0", cwd=tmp_path
    )
    assert code == 0, err
    lines = [line for line in out.splitlines() if line.startswith("|")]
    assert lines[0].endswith(
        'keySize: -1 valueSize: 27 sequence: -1 headerKeys: [] payload: {"type":"TOPIC_RECORD",'
        f'"version":0,"data":{{"name":"orders","topicId":"{TOPIC_ID_TEXT}"}}}}'
    )
    assert " key:" not in lines[0]
    assert lines[1].endswith(
        "payload: Error at 1, skipping. Failed to deserialize record with type 2"
    )
    assert len(lines) > 2, (out, err)
    assert "Error at 2, skipping." in lines[2] and "Unknown metadata id 99" in lines[2]

    code, out, _ = run(
        "dump-segments", "--print-data", "--format", "jsonl", "__cluster_metadata-0", cwd=tmp_path
    )
    records = [o for o in jsonl(out) if o["type"] == "record"]
    assert records[0]["key"] is None and records[0]["value"]["type"] == "TOPIC_RECORD"
    assert "decode_error" in records[1] and records[1]["value"] is None
    assert records[2]["value"]["unknown"] is True
    # --decoder none shows the bytes; --decoder cluster-metadata is a valid choice
    code, out, _ = run(
        "dump-segments",
        "--print-data",
        "--format",
        "jsonl",
        "--decoder",
        "none",
        "__cluster_metadata-0",
        cwd=tmp_path,
    )
    assert [o for o in jsonl(out) if o["type"] == "record"][0]["value"] == (
        __import__("base64").b64encode(frame(2, 0, cs("orders") + TOPIC_ID + b"\x00")).decode()
    )
    code, _, _ = run(
        "dump-segments",
        "--print-data",
        "--decoder",
        "cluster-metadata",
        "__cluster_metadata-0/00000000000000000000.log",
        cwd=tmp_path,
    )
    assert code == 0


@needs_corpus
def test_dump_segments_kraft_snapshot_kafka_format() -> None:
    from support.cli import run

    code, out, err = run(
        "dump-segments",
        "--print-data",
        "--format",
        "kafka",
        "bootstrap.checkpoint",
        cwd=CORPUS / "Niloufar1171__LDI-POC",
    )
    assert code == 0, err
    assert out.splitlines()[:2] == ["Dumping bootstrap.checkpoint", "KRaft bootstrap snapshot"]
    assert (
        "| offset: 1 CreateTime: 1769791430996 keySize: -1 valueSize: 23 sequence: -1 "
        'headerKeys: [] payload: {"type":"FEATURE_LEVEL_RECORD","version":0,"data":'
        '{"name":"metadata.version","featureLevel":19}}'
    ) in out.splitlines()
    assert " SnapshotHeader {" in out and " SnapshotFooter {" in out
