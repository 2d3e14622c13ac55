"""``__cluster_metadata`` (KRaft) records and snapshots (docs/kafka-rules.md: Internal topics).

Every data record of the metadata log, and of a KRaft snapshot (``<offset>-<epoch>.checkpoint``,
``bootstrap.checkpoint``: the same v2 batches, framed by SNAPSHOT_HEADER / SNAPSHOT_FOOTER
control records, which :mod:`.control` decodes), has a null key and a value framed by
``AbstractApiMessageSerde``::

    frameVersion:uvarint (must be 1)  apiKey:uvarint  version:uvarint  message body

The body is the generated message of that api key at that version; the whole value must be
used (trailing bytes are an error). The schemas are data: :data:`SCHEMA_JSON` holds one Kafka
JSON schema per record type (``metadata/src/main/resources/common/metadata/*.json`` of
apache/kafka, transcribed without the ``about`` texts), turned into
:class:`~.schema.Message` tables by :func:`~.schema.message_from_json`; a new record type or
version is a table entry. The output follows kafka-dump-log's ``--cluster-metadata-decoder``:
``{"type": "<ENUM_NAME>", "version": <int>, "data": {...}}`` where ``ENUM_NAME`` is
``MetadataRecordType``'s constant (the schema name in upper snake case, e.g.
``PARTITION_CHANGE_RECORD``) and ``data`` is the message in Kafka's JSON form (camelCase names,
tagged fields only when they differ from their default).

An api key with no table is *unknown*: :func:`decode_metadata_record` returns a record whose
``type_name`` is ``UNKNOWN`` (Kafka's tool prints an error and skips it). Everything else that
does not decode raises :mod:`klogtool.formats.errors` exceptions with ``position`` relative to
the value and a Kafka-like message (:func:`kafka_error_message` gives the exact text
kafka-dump-log prints after ``Error at {offset}, skipping.``).

Every table was compared field by field with Kafka's own files (``python bench/check_schemas.py
<kafka checkout>``, against apache/kafka at 1eb7644, 2024-10-25): all agree, including
``UserScramCredentialRecord`` (the KIP-900 layout written since 3.5, once marked unsure).
``ClearElrRecord`` (28) and ``UnregisterControllerRecord`` (29) are newer than that checkout;
they were taken from later Kafka JSON schemas.
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass
from typing import Any

from klogtool.formats.errors import CorruptRecordError, FormatError
from klogtool.formats.payloads.schema import Message, decode, encode, messages_from_json
from klogtool.formats.varint import encode_uvarint, read_uvarint

__all__ = [
    "FRAME_VERSION",
    "METADATA_MESSAGES",
    "METADATA_RECORD_TYPES",
    "SCHEMA_JSON",
    "MetadataParseError",
    "MetadataRecord",
    "decode_api_message",
    "decode_metadata_record",
    "encode_metadata_record",
    "kafka_error_message",
    "record_type_name",
    "tables",
]

FRAME_VERSION = 1

# One Kafka JSON schema per record type (apiKey order). Field keys are Kafka's: name, type,
# versions, nullableVersions, taggedVersions, tag, default, fields.
SCHEMA_JSON = r"""[
{"apiKey": 0, "name": "RegisterBrokerRecord", "validVersions": "0-3", "flexibleVersions": "0+",
 "fields": [
  {"name": "BrokerId", "type": "int32", "versions": "0+"},
  {"name": "IsMigratingZkBroker", "type": "bool", "versions": "2+", "default": "false"},
  {"name": "IncarnationId", "type": "uuid", "versions": "0+"},
  {"name": "BrokerEpoch", "type": "int64", "versions": "0+"},
  {"name": "EndPoints", "type": "[]BrokerEndpoint", "versions": "0+", "fields": [
    {"name": "Name", "type": "string", "versions": "0+"},
    {"name": "Host", "type": "string", "versions": "0+"},
    {"name": "Port", "type": "uint16", "versions": "0+"},
    {"name": "SecurityProtocol", "type": "int16", "versions": "0+"}]},
  {"name": "Features", "type": "[]BrokerFeature", "versions": "0+", "fields": [
    {"name": "Name", "type": "string", "versions": "0+"},
    {"name": "MinSupportedVersion", "type": "int16", "versions": "0+"},
    {"name": "MaxSupportedVersion", "type": "int16", "versions": "0+"}]},
  {"name": "Rack", "type": "string", "versions": "0+", "nullableVersions": "0+"},
  {"name": "Fenced", "type": "bool", "versions": "0+", "default": "true"},
  {"name": "InControlledShutdown", "type": "bool", "versions": "1+", "default": "false"},
  {"name": "LogDirs", "type": "[]uuid", "versions": "3+", "taggedVersions": "3+", "tag": 0}]},
{"apiKey": 1, "name": "UnregisterBrokerRecord", "validVersions": "0", "flexibleVersions": "0+",
 "fields": [
  {"name": "BrokerId", "type": "int32", "versions": "0+"},
  {"name": "BrokerEpoch", "type": "int64", "versions": "0+"}]},
{"apiKey": 2, "name": "TopicRecord", "validVersions": "0", "flexibleVersions": "0+",
 "fields": [
  {"name": "Name", "type": "string", "versions": "0+"},
  {"name": "TopicId", "type": "uuid", "versions": "0+"}]},
{"apiKey": 3, "name": "PartitionRecord", "validVersions": "0-2", "flexibleVersions": "0+",
 "fields": [
  {"name": "PartitionId", "type": "int32", "versions": "0+", "default": "-1"},
  {"name": "TopicId", "type": "uuid", "versions": "0+"},
  {"name": "Replicas", "type": "[]int32", "versions": "0+"},
  {"name": "Isr", "type": "[]int32", "versions": "0+"},
  {"name": "RemovingReplicas", "type": "[]int32", "versions": "0+"},
  {"name": "AddingReplicas", "type": "[]int32", "versions": "0+"},
  {"name": "Leader", "type": "int32", "versions": "0+", "default": "-1"},
  {"name": "LeaderRecoveryState", "type": "int8", "default": "0", "versions": "0+",
   "taggedVersions": "0+", "tag": 0},
  {"name": "LeaderEpoch", "type": "int32", "versions": "0+", "default": "-1"},
  {"name": "PartitionEpoch", "type": "int32", "versions": "0+", "default": "-1"},
  {"name": "Directories", "type": "[]uuid", "versions": "1+"},
  {"name": "EligibleLeaderReplicas", "type": "[]int32", "default": "null", "versions": "2+",
   "nullableVersions": "2+", "taggedVersions": "2+", "tag": 1},
  {"name": "LastKnownElr", "type": "[]int32", "default": "null", "versions": "2+",
   "nullableVersions": "2+", "taggedVersions": "2+", "tag": 2}]},
{"apiKey": 4, "name": "ConfigRecord", "validVersions": "0", "flexibleVersions": "0+",
 "fields": [
  {"name": "ResourceType", "type": "int8", "versions": "0+"},
  {"name": "ResourceName", "type": "string", "versions": "0+"},
  {"name": "Name", "type": "string", "versions": "0+"},
  {"name": "Value", "type": "string", "versions": "0+", "nullableVersions": "0+"}]},
{"apiKey": 5, "name": "PartitionChangeRecord", "validVersions": "0-2", "flexibleVersions": "0+",
 "fields": [
  {"name": "PartitionId", "type": "int32", "versions": "0+", "default": "-1"},
  {"name": "TopicId", "type": "uuid", "versions": "0+"},
  {"name": "Isr", "type": "[]int32", "default": "null", "versions": "0+",
   "nullableVersions": "0+", "taggedVersions": "0+", "tag": 0},
  {"name": "Leader", "type": "int32", "default": "-2", "versions": "0+",
   "taggedVersions": "0+", "tag": 1},
  {"name": "Replicas", "type": "[]int32", "default": "null", "versions": "0+",
   "nullableVersions": "0+", "taggedVersions": "0+", "tag": 2},
  {"name": "RemovingReplicas", "type": "[]int32", "default": "null", "versions": "0+",
   "nullableVersions": "0+", "taggedVersions": "0+", "tag": 3},
  {"name": "AddingReplicas", "type": "[]int32", "default": "null", "versions": "0+",
   "nullableVersions": "0+", "taggedVersions": "0+", "tag": 4},
  {"name": "LeaderRecoveryState", "type": "int8", "default": "-1", "versions": "0+",
   "taggedVersions": "0+", "tag": 5},
  {"name": "Directories", "type": "[]uuid", "default": "null", "versions": "1+",
   "nullableVersions": "1+", "taggedVersions": "1+", "tag": 8},
  {"name": "EligibleLeaderReplicas", "type": "[]int32", "default": "null", "versions": "2+",
   "nullableVersions": "2+", "taggedVersions": "2+", "tag": 6},
  {"name": "LastKnownElr", "type": "[]int32", "default": "null", "versions": "2+",
   "nullableVersions": "2+", "taggedVersions": "2+", "tag": 7}]},
{"apiKey": 7, "name": "FenceBrokerRecord", "validVersions": "0", "flexibleVersions": "0+",
 "fields": [
  {"name": "Id", "type": "int32", "versions": "0+"},
  {"name": "Epoch", "type": "int64", "versions": "0+"}]},
{"apiKey": 8, "name": "UnfenceBrokerRecord", "validVersions": "0", "flexibleVersions": "0+",
 "fields": [
  {"name": "Id", "type": "int32", "versions": "0+"},
  {"name": "Epoch", "type": "int64", "versions": "0+"}]},
{"apiKey": 9, "name": "RemoveTopicRecord", "validVersions": "0", "flexibleVersions": "0+",
 "fields": [
  {"name": "TopicId", "type": "uuid", "versions": "0+"}]},
{"apiKey": 10, "name": "DelegationTokenRecord", "validVersions": "0", "flexibleVersions": "0+",
 "fields": [
  {"name": "Owner", "type": "string", "versions": "0+"},
  {"name": "Requester", "type": "string", "versions": "0+"},
  {"name": "Renewers", "type": "[]string", "versions": "0+"},
  {"name": "IssueTimestamp", "type": "int64", "versions": "0+"},
  {"name": "MaxTimestamp", "type": "int64", "versions": "0+"},
  {"name": "ExpirationTimestamp", "type": "int64", "versions": "0+"},
  {"name": "TokenId", "type": "string", "versions": "0+"}]},
{"apiKey": 11, "name": "UserScramCredentialRecord", "validVersions": "0",
 "flexibleVersions": "0+",
 "fields": [
  {"name": "Name", "type": "string", "versions": "0+"},
  {"name": "Mechanism", "type": "int8", "versions": "0+"},
  {"name": "Salt", "type": "bytes", "versions": "0+"},
  {"name": "StoredKey", "type": "bytes", "versions": "0+"},
  {"name": "ServerKey", "type": "bytes", "versions": "0+"},
  {"name": "Iterations", "type": "int32", "versions": "0+"}]},
{"apiKey": 12, "name": "FeatureLevelRecord", "validVersions": "0", "flexibleVersions": "0+",
 "fields": [
  {"name": "Name", "type": "string", "versions": "0+"},
  {"name": "FeatureLevel", "type": "int16", "versions": "0+"}]},
{"apiKey": 14, "name": "ClientQuotaRecord", "validVersions": "0", "flexibleVersions": "0+",
 "fields": [
  {"name": "Entity", "type": "[]EntityData", "versions": "0+", "fields": [
    {"name": "EntityType", "type": "string", "versions": "0+"},
    {"name": "EntityName", "type": "string", "versions": "0+", "nullableVersions": "0+"}]},
  {"name": "Key", "type": "string", "versions": "0+"},
  {"name": "Value", "type": "float64", "versions": "0+"},
  {"name": "Remove", "type": "bool", "versions": "0+"}]},
{"apiKey": 15, "name": "ProducerIdsRecord", "validVersions": "0", "flexibleVersions": "0+",
 "fields": [
  {"name": "BrokerId", "type": "int32", "versions": "0+"},
  {"name": "BrokerEpoch", "type": "int64", "versions": "0+", "default": "-1"},
  {"name": "NextProducerId", "type": "int64", "versions": "0+"}]},
{"apiKey": 17, "name": "BrokerRegistrationChangeRecord", "validVersions": "0-2",
 "flexibleVersions": "0+",
 "fields": [
  {"name": "BrokerId", "type": "int32", "versions": "0+"},
  {"name": "BrokerEpoch", "type": "int64", "versions": "0+"},
  {"name": "Fenced", "type": "int8", "versions": "0+", "taggedVersions": "0+", "tag": 0},
  {"name": "InControlledShutdown", "type": "int8", "versions": "1+", "taggedVersions": "1+",
   "tag": 1},
  {"name": "LogDirs", "type": "[]uuid", "versions": "2+", "taggedVersions": "2+", "tag": 2}]},
{"apiKey": 18, "name": "AccessControlEntryRecord", "validVersions": "0",
 "flexibleVersions": "0+",
 "fields": [
  {"name": "Id", "type": "uuid", "versions": "0+"},
  {"name": "ResourceType", "type": "int8", "versions": "0+"},
  {"name": "ResourceName", "type": "string", "versions": "0+"},
  {"name": "PatternType", "type": "int8", "versions": "0+"},
  {"name": "Principal", "type": "string", "versions": "0+"},
  {"name": "Host", "type": "string", "versions": "0+"},
  {"name": "Operation", "type": "int8", "versions": "0+"},
  {"name": "PermissionType", "type": "int8", "versions": "0+"}]},
{"apiKey": 19, "name": "RemoveAccessControlEntryRecord", "validVersions": "0",
 "flexibleVersions": "0+",
 "fields": [
  {"name": "Id", "type": "uuid", "versions": "0+"}]},
{"apiKey": 20, "name": "NoOpRecord", "validVersions": "0", "flexibleVersions": "0+",
 "fields": []},
{"apiKey": 21, "name": "ZkMigrationStateRecord", "validVersions": "0", "flexibleVersions": "0+",
 "fields": [
  {"name": "ZkMigrationState", "type": "int8", "versions": "0+"}]},
{"apiKey": 22, "name": "RemoveUserScramCredentialRecord", "validVersions": "0",
 "flexibleVersions": "0+",
 "fields": [
  {"name": "Name", "type": "string", "versions": "0+"},
  {"name": "Mechanism", "type": "int8", "versions": "0+"}]},
{"apiKey": 23, "name": "BeginTransactionRecord", "validVersions": "0", "flexibleVersions": "0+",
 "fields": [
  {"name": "Name", "type": "string", "default": "null", "versions": "0+",
   "nullableVersions": "0+", "taggedVersions": "0+", "tag": 0}]},
{"apiKey": 24, "name": "EndTransactionRecord", "validVersions": "0", "flexibleVersions": "0+",
 "fields": []},
{"apiKey": 25, "name": "AbortTransactionRecord", "validVersions": "0", "flexibleVersions": "0+",
 "fields": [
  {"name": "Reason", "type": "string", "default": "null", "versions": "0+",
   "nullableVersions": "0+", "taggedVersions": "0+", "tag": 0}]},
{"apiKey": 26, "name": "RemoveDelegationTokenRecord", "validVersions": "0",
 "flexibleVersions": "0+",
 "fields": [
  {"name": "TokenId", "type": "string", "versions": "0+"}]},
{"apiKey": 27, "name": "RegisterControllerRecord", "validVersions": "0",
 "flexibleVersions": "0+",
 "fields": [
  {"name": "ControllerId", "type": "int32", "versions": "0+"},
  {"name": "IncarnationId", "type": "uuid", "versions": "0+"},
  {"name": "ZkMigrationReady", "type": "bool", "versions": "0+"},
  {"name": "EndPoints", "type": "[]ControllerEndpoint", "versions": "0+", "fields": [
    {"name": "Name", "type": "string", "versions": "0+"},
    {"name": "Host", "type": "string", "versions": "0+"},
    {"name": "Port", "type": "uint16", "versions": "0+"},
    {"name": "SecurityProtocol", "type": "int16", "versions": "0+"}]},
  {"name": "Features", "type": "[]ControllerFeature", "versions": "0+", "fields": [
    {"name": "Name", "type": "string", "versions": "0+"},
    {"name": "MinSupportedVersion", "type": "int16", "versions": "0+"},
    {"name": "MaxSupportedVersion", "type": "int16", "versions": "0+"}]}]},
{"apiKey": 28, "name": "ClearElrRecord", "validVersions": "0", "flexibleVersions": "0+",
 "fields": [
  {"name": "TopicName", "type": "string", "versions": "0+"}]},
{"apiKey": 29, "name": "UnregisterControllerRecord", "validVersions": "0",
 "flexibleVersions": "0+",
 "fields": [
  {"name": "ControllerId", "type": "int32", "versions": "0+"}]}
]"""


def _enum_name(schema_name: str) -> str:
    """``MetadataRecordType``'s name: ``PartitionChangeRecord`` -> ``PARTITION_CHANGE_RECORD``."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", schema_name).upper()


def tables(schema_json: str) -> tuple[dict[int, Message], dict[int, str]]:
    """``{api key: Message}`` and ``{api key: ENUM_NAME}`` of a list of Kafka JSON schemas
    of type ``metadata`` (each with its ``apiKey``)."""
    messages: dict[int, Message] = {}
    names: dict[int, str] = {}
    for message in messages_from_json(schema_json).values():
        if message.api_key is None:
            raise ValueError(f"{message.name}: the table has no apiKey")
        messages[message.api_key] = message
        names[message.api_key] = _enum_name(message.name)
    return messages, names


METADATA_MESSAGES, METADATA_RECORD_TYPES = tables(SCHEMA_JSON)
"""``{api key: Message}`` and ``{api key: ENUM_NAME}`` of every record type with a table."""


def record_type_name(api_key: int) -> str:
    """``TOPIC_RECORD`` ...; ``UNKNOWN`` for an api key without a table."""
    return METADATA_RECORD_TYPES.get(api_key, "UNKNOWN")


class MetadataParseError(CorruptRecordError):
    """A metadata record value that does not decode; ``kafka_message`` is what Kafka says."""

    def __init__(self, message: str, position: int | None, kafka_message: str):
        super().__init__(message, position)
        self.kafka_message = kafka_message


@dataclass(frozen=True)
class MetadataRecord:
    """One decoded metadata record.

    ``type_name`` is the ``MetadataRecordType`` name (``UNKNOWN`` when no table covers
    ``api_key``: ``data`` is then None and ``raw`` holds the body's bytes).
    """

    api_key: int
    version: int
    type_name: str
    data: dict[str, Any] | None
    raw: bytes | None = None

    @property
    def is_unknown(self) -> bool:
        return self.data is None

    def json(self) -> dict[str, Any]:
        """kafka-dump-log's object: ``{"type": ..., "version": ..., "data": {...}}``.

        An unknown type gives ``{"type": "UNKNOWN", "apiKey": k, "version": v, "unknown": true,
        "raw": <base64 of the body>}``.
        """
        if self.data is None:
            return {
                "type": self.type_name,
                "apiKey": self.api_key,
                "version": self.version,
                "unknown": True,
                "raw": base64.b64encode(self.raw or b"").decode("ascii"),
            }
        return {"type": self.type_name, "version": self.version, "data": self.data}


def _frame_int(buf: memoryview, pos: int, entity: str) -> tuple[int, int]:
    try:
        value, end = read_uvarint(buf, pos)
    except FormatError as e:
        raise MetadataParseError(
            f"cannot read the {entity}: {e.message}", pos, f"Error while reading {entity}"
        ) from None
    if value > 0x7FFF:
        raise MetadataParseError(
            f"the {entity} {value} is too large (at most 32767)",
            pos,
            f"Value for {entity} was too large.",
        )
    return value, end


def decode_metadata_record(value: bytes | bytearray | memoryview | None) -> MetadataRecord:
    """Decode one ``__cluster_metadata`` record value (see the module docstring)."""
    return decode_api_message(value, METADATA_MESSAGES, METADATA_RECORD_TYPES)


def decode_api_message(
    value: bytes | bytearray | memoryview | None,
    messages: dict[int, Message],
    type_names: dict[int, str],
) -> MetadataRecord:
    """Decode a value framed by Kafka's ``AbstractApiMessageSerde`` with a table of messages
    by api key (``__cluster_metadata``'s, ``__remote_log_metadata``'s)."""
    if value is None:
        raise MetadataParseError("the record has a null value", 0, "null")
    mv = value if isinstance(value, memoryview) else memoryview(value)
    if mv.ndim != 1 or mv.itemsize != 1:
        mv = mv.cast("B")
    frame, pos = _frame_int(mv, 0, "frame version")
    if frame != FRAME_VERSION:
        if frame == 0:
            kafka = (
                "Could not deserialize metadata record with frame version 0. Note that upgrades "
                "from the preview release of KRaft in 2.8 to newer versions are not supported."
            )
        else:
            kafka = (
                f"Could not deserialize metadata record due to unknown frame version {frame}"
                f"(only frame version {FRAME_VERSION} is supported)"
            )
        raise MetadataParseError(
            f"unknown frame version {frame} (only frame version {FRAME_VERSION} exists)", 0, kafka
        )
    api_key, pos = _frame_int(mv, pos, "type")
    version, pos = _frame_int(mv, pos, "version")
    message = messages.get(api_key)
    if message is None:
        return MetadataRecord(api_key, version, "UNKNOWN", None, bytes(mv[pos:]))
    failed = f"Failed to deserialize record with type {api_key}"
    if not message.is_valid_version(version):
        raise MetadataParseError(
            f"unknown version {version} of {message.name} (known: {message.valid_versions})",
            pos,
            failed,
        )
    try:
        data, end = decode(message, mv, pos, version)
    except FormatError as e:
        raise MetadataParseError(
            f"{message.name} v{version}: {e.message}", e.position, failed
        ) from None
    if end != len(mv):
        n = len(mv) - end
        raise MetadataParseError(
            f"{message.name} v{version}: {n} byte(s) of garbage after the message",
            end,
            f"Found {n} byte(s) of garbage after {api_key}",
        )
    return MetadataRecord(api_key, version, type_names[api_key], data)


def kafka_error_message(e: FormatError) -> str:
    """The text Kafka's ``MetadataRecordSerde`` gives for a value that does not decode."""
    if isinstance(e, MetadataParseError):
        return e.kafka_message
    return e.message


def encode_metadata_record(
    api_key: int,
    data: dict[str, Any],
    version: int = 0,
    messages: dict[int, Message] = METADATA_MESSAGES,
) -> bytes:
    """A record value: frame version 1, api key, version, then the message (for tests and
    commands that write metadata records; ``messages`` is the table, the KRaft one unless
    given)."""
    message = messages.get(api_key)
    if message is None:
        raise ValueError(f"no schema for metadata record type {api_key}")
    return (
        encode_uvarint(FRAME_VERSION)
        + encode_uvarint(api_key)
        + encode_uvarint(version)
        + encode(message, data, version)
    )
