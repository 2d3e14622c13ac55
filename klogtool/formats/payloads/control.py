"""Control records: the single record of a v2 control batch (docs/kafka-rules.md: Record formats).

Key (4 bytes): ``version:int16`` (0; negative = corruption; a higher one is read as v0, as Kafka
does) + ``type:int16``: 0 ABORT, 1 COMMIT, 2 LEADER_CHANGE, 3 SNAPSHOT_HEADER, 4 SNAPSHOT_FOOTER,
5 KRAFT_VERSION, 6 KRAFT_VOTERS; any other type is UNKNOWN (its value is not decoded and
``type_id`` keeps the number from the key, so it prints as ``UNKNOWN(7)``).

Values: ABORT/COMMIT carry an ``EndTransactionMarker`` (``version:int16`` + ``coordinatorEpoch:
int32``; fewer than 6 bytes or a negative version is corruption, a higher version is read as v0).
The KRaft types carry the generated message serialized at flexible version 0 with no prefix (the
message's own first field is ``Version``); they are decoded with the schema engine at version 0,
as Kafka's ``ControlRecordUtils`` does, so ``fields`` is exactly the JSON kafka-dump-log prints
(``{"version":0,"lastContainedLogTimestamp":...}``). Trailing bytes after a value are ignored,
as Kafka ignores them. Errors raise :class:`~klogtool.formats.errors.CorruptRecordError` or
:class:`~klogtool.formats.errors.TruncatedError`; the message says whether the key or the value
is at fault and ``position`` is relative to that buffer.

The encoders (:func:`encode_end_txn_marker`, :func:`encode_control_record` and friends) use the
same tables, for commands that write control batches.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from klogtool.formats.errors import CorruptRecordError, FormatError, TruncatedError
from klogtool.formats.payloads.schema import Message, decode, encode, messages_from_json

__all__ = [
    "ABORT",
    "COMMIT",
    "CONTROL_TYPE_NAMES",
    "CONTROL_VALUE_MESSAGES",
    "KRAFT_VERSION",
    "KRAFT_VOTERS",
    "LEADER_CHANGE",
    "SNAPSHOT_FOOTER",
    "SNAPSHOT_HEADER",
    "ControlRecord",
    "control_type_name",
    "decode_control_key",
    "decode_control_record",
    "encode_control_key",
    "encode_control_record",
    "encode_end_txn_marker",
    "encode_kraft_version",
    "encode_leader_change",
    "encode_snapshot_footer",
    "encode_snapshot_header",
]

ABORT = 0
COMMIT = 1
LEADER_CHANGE = 2
SNAPSHOT_HEADER = 3
SNAPSHOT_FOOTER = 4
KRAFT_VERSION = 5
KRAFT_VOTERS = 6

CONTROL_TYPE_NAMES: dict[int, str] = {
    ABORT: "ABORT",
    COMMIT: "COMMIT",
    LEADER_CHANGE: "LEADER_CHANGE",
    SNAPSHOT_HEADER: "SNAPSHOT_HEADER",
    SNAPSHOT_FOOTER: "SNAPSHOT_FOOTER",
    KRAFT_VERSION: "KRAFT_VERSION",
    KRAFT_VOTERS: "KRAFT_VOTERS",
}

_KEY = struct.Struct(">hh")
_END_TXN = struct.Struct(">hi")

SCHEMA_JSON = """[
// clients/src/main/resources/common/message/*.json. Kafka writes and reads every control
// record value at version 0 (ControlRecordUtils' *_CURRENT_VERSION).
{"name": "LeaderChangeMessage", "validVersions": "0-1", "flexibleVersions": "0+",
 "fields": [
  {"name": "Version", "type": "int16", "versions": "0+"},
  {"name": "LeaderId", "type": "int32", "versions": "0+"},
  {"name": "Voters", "type": "[]Voter", "versions": "0+", "fields": [
    {"name": "VoterId", "type": "int32", "versions": "0+"},
    {"name": "VoterDirectoryId", "type": "uuid", "versions": "1+"}]},
  {"name": "GrantingVoters", "type": "[]Voter", "versions": "0+", "fields": [
    {"name": "VoterId", "type": "int32", "versions": "0+"},
    {"name": "VoterDirectoryId", "type": "uuid", "versions": "1+"}]}]},
{"name": "SnapshotHeaderRecord", "validVersions": "0", "flexibleVersions": "0+",
 "fields": [
  {"name": "Version", "type": "int16", "versions": "0+"},
  {"name": "LastContainedLogTimestamp", "type": "int64", "versions": "0+"}]},
{"name": "SnapshotFooterRecord", "validVersions": "0", "flexibleVersions": "0+",
 "fields": [
  {"name": "Version", "type": "int16", "versions": "0+"}]},
{"name": "KRaftVersionRecord", "validVersions": "0", "flexibleVersions": "0+",
 "fields": [
  {"name": "Version", "type": "int16", "versions": "0+"},
  {"name": "KRaftVersion", "type": "int16", "versions": "0+"}]},
{"name": "VotersRecord", "validVersions": "0", "flexibleVersions": "0+",
 "fields": [
  {"name": "Version", "type": "int16", "versions": "0+"},
  {"name": "Voters", "type": "[]Voter", "versions": "0+", "fields": [
    {"name": "VoterId", "type": "int32", "versions": "0+"},
    {"name": "VoterDirectoryId", "type": "uuid", "versions": "0+"},
    {"name": "Endpoints", "type": "[]Endpoint", "versions": "0+", "fields": [
      {"name": "Name", "type": "string", "versions": "0+"},
      {"name": "Host", "type": "string", "versions": "0+"},
      {"name": "Port", "type": "uint16", "versions": "0+"}]},
    {"name": "KRaftVersionFeature", "type": "KRaftVersionFeature", "versions": "0+", "fields": [
      {"name": "MinSupportedVersion", "type": "int16", "versions": "0+"},
      {"name": "MaxSupportedVersion", "type": "int16", "versions": "0+"}]}]}]}
]"""
_MESSAGES = messages_from_json(SCHEMA_JSON)

CONTROL_VALUE_MESSAGES: dict[int, Message] = {
    LEADER_CHANGE: _MESSAGES["LeaderChangeMessage"],
    SNAPSHOT_HEADER: _MESSAGES["SnapshotHeaderRecord"],
    SNAPSHOT_FOOTER: _MESSAGES["SnapshotFooterRecord"],
    KRAFT_VERSION: _MESSAGES["KRaftVersionRecord"],
    KRAFT_VOTERS: _MESSAGES["VotersRecord"],
}


def control_type_name(type_id: int) -> str:
    return CONTROL_TYPE_NAMES.get(type_id, "UNKNOWN")


@dataclass(frozen=True)
class ControlRecord:
    """A decoded control record.

    ``type_id``/``type_name``: the key's type (``UNKNOWN`` for a type Kafka does not know, with
    the number kept). ``version``: the key's version. ``fields``: the decoded value —
    ``{"version": v, "coordinatorEpoch": e}`` for ABORT/COMMIT, the message's fields in Kafka's
    JSON form for the KRaft types, ``{}`` for UNKNOWN.
    """

    type_id: int
    type_name: str
    version: int
    fields: dict[str, Any] = field(default_factory=dict)

    @property
    def is_end_txn_marker(self) -> bool:
        return self.type_id in (ABORT, COMMIT)


def _as_view(data: bytes | bytearray | memoryview) -> memoryview:
    mv = data if isinstance(data, memoryview) else memoryview(data)
    if mv.ndim != 1 or mv.itemsize != 1:
        mv = mv.cast("B")
    return mv


def decode_control_key(key: bytes | bytearray | memoryview | None) -> tuple[int, int]:
    """Return ``(version, type_id)`` of a control record key."""
    if key is None:
        raise CorruptRecordError("control record key: the key is null", 0)
    kv = _as_view(key)
    if len(kv) < _KEY.size:
        raise TruncatedError(
            f"control record key: must have at least 4 bytes, but found only {len(kv)}", 0
        )
    version, type_id = _KEY.unpack_from(kv, 0)
    if version < 0:
        raise CorruptRecordError(
            f"control record key: invalid version {version} (may indicate data corruption)", 0
        )
    return version, type_id


def decode_control_record(
    key: bytes | bytearray | memoryview | None,
    value: bytes | bytearray | memoryview | None,
) -> ControlRecord:
    """Decode a control record's key and value (see the module docstring)."""
    version, type_id = decode_control_key(key)
    name = control_type_name(type_id)
    if name == "UNKNOWN":
        return ControlRecord(type_id, name, version, {})
    if value is None:
        raise CorruptRecordError(f"control record value: {name} record has a null value", 0)
    vv = _as_view(value)
    if type_id in (ABORT, COMMIT):
        if len(vv) < _END_TXN.size:
            raise TruncatedError(
                "control record value: end transaction marker must have at least 6 bytes, "
                f"but found only {len(vv)}",
                0,
            )
        marker_version, epoch = _END_TXN.unpack_from(vv, 0)
        if marker_version < 0:
            raise CorruptRecordError(
                f"control record value: invalid end transaction marker version {marker_version}",
                0,
            )
        return ControlRecord(
            type_id, name, version, {"version": marker_version, "coordinatorEpoch": epoch}
        )
    message = CONTROL_VALUE_MESSAGES[type_id]
    try:
        data, _ = decode(message, vv, 0, 0)
    except FormatError as e:
        e.message = f"control record value: {e.message}"
        e.args = (e.message,)
        raise
    return ControlRecord(type_id, name, version, data)


def encode_control_key(type_id: int, version: int = 0) -> bytes:
    return _KEY.pack(version, type_id)


def encode_end_txn_marker(
    type_id: int, coordinator_epoch: int, version: int = 0
) -> tuple[bytes, bytes]:
    """Key and value of an ABORT (0) or COMMIT (1) marker."""
    if type_id not in (ABORT, COMMIT):
        raise ValueError(f"end transaction markers are ABORT (0) or COMMIT (1), not {type_id}")
    return encode_control_key(type_id), _END_TXN.pack(version, coordinator_epoch)


def encode_control_record(type_id: int, fields: Mapping[str, Any]) -> tuple[bytes, bytes]:
    """Key and value of a KRaft control record (types 2-6) from decode's ``fields`` shape.

    ``version`` defaults to 0 like every other field left out.
    """
    message = CONTROL_VALUE_MESSAGES.get(type_id)
    if message is None:
        if type_id in (ABORT, COMMIT):
            epoch = fields.get("coordinatorEpoch", 0)
            return encode_end_txn_marker(type_id, epoch, fields.get("version", 0))
        raise ValueError(f"no schema for control record type {type_id}")
    return encode_control_key(type_id), encode(message, fields, 0)


def encode_leader_change(
    leader_id: int, voters: list[int], granting_voters: list[int]
) -> tuple[bytes, bytes]:
    return encode_control_record(
        LEADER_CHANGE,
        {
            "version": 0,
            "leaderId": leader_id,
            "voters": [{"voterId": v} for v in voters],
            "grantingVoters": [{"voterId": v} for v in granting_voters],
        },
    )


def encode_snapshot_header(last_contained_log_timestamp: int) -> tuple[bytes, bytes]:
    return encode_control_record(
        SNAPSHOT_HEADER, {"version": 0, "lastContainedLogTimestamp": last_contained_log_timestamp}
    )


def encode_snapshot_footer() -> tuple[bytes, bytes]:
    return encode_control_record(SNAPSHOT_FOOTER, {"version": 0})


def encode_kraft_version(kraft_version: int) -> tuple[bytes, bytes]:
    return encode_control_record(KRAFT_VERSION, {"version": 0, "kRaftVersion": kraft_version})
