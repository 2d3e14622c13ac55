"""``__consumer_offsets`` records (docs/kafka-rules.md: Internal topics).

Schemas follow apache/kafka ``group-coordinator/src/main/resources/common/message/*.json``; the
key's int16 selects the record type:

====  =========================================  ===============================================
type  key                                        value (versions)
====  =========================================  ===============================================
0, 1  OffsetCommitKey (group, topic, partition)  OffsetCommitValue (0-4, flexible 4+)
2     GroupMetadataKey (group)                   GroupMetadataValue (0-4, flexible 4+)
3     ConsumerGroupMetadataKey                   ConsumerGroupMetadataValue (0, flexible)
4     ConsumerGroupPartitionMetadataKey          ConsumerGroupPartitionMetadataValue
5     ConsumerGroupMemberMetadataKey             ConsumerGroupMemberMetadataValue
6     ConsumerGroupTargetAssignmentMetadataKey   ConsumerGroupTargetAssignmentMetadataValue
7     ConsumerGroupTargetAssignmentMemberKey     ConsumerGroupTargetAssignmentMemberValue
8     ConsumerGroupCurrentMemberAssignmentKey    ConsumerGroupCurrentMemberAssignmentValue
9-15  ShareGroup* (KIP-932)                      see the tables below (UNSURE: preview schemas)
16    ConsumerGroupRegularExpressionKey          ConsumerGroupRegularExpressionValue
====  =========================================  ===============================================

Other types (the KIP-1071 streams-group records 17+, anything newer) decode as ``"unknown"``.

KIP-848 and KIP-932 records are all flexible version 0. Tagged fields added by later releases
(e.g. ``MetadataHash`` on type 3) are listed so they render by name; tags we do not know are
skipped, so a newer broker's records still decode. The share-group records (9-15) were preview
schemas that changed incompatibly between releases; the tables follow the newest trunk files and
are marked UNSURE.

For a ``GroupMetadataValue`` whose ``protocolType`` is ``consumer``, each member's
``subscription`` and ``assignment`` bytes are replaced by their decoded
``ConsumerProtocolSubscription`` / ``ConsumerProtocolAssignment`` fields (the first int16 of the
bytes is their version; a newer version is read with the newest layout, as Kafka does); bytes
that do not decode are kept as base64, exactly like kafka-dump-log's ``--offsets-decoder``.
"""

from __future__ import annotations

import base64
import binascii
import struct
from typing import Any

from klogtool.formats.errors import CorruptRecordError, FormatError, TruncatedError
from klogtool.formats.payloads.coordinator import (
    Bytes,
    CoordinatorRecord,
    RecordSchema,
    decode_coordinator_record,
)
from klogtool.formats.payloads.schema import Message, decode, messages_from_json

__all__ = [
    "CONSUMER_OFFSETS_RECORDS",
    "CONSUMER_PROTOCOL_ASSIGNMENT",
    "CONSUMER_PROTOCOL_SUBSCRIPTION",
    "decode_consumer_offsets",
    "decode_consumer_protocol_assignment",
    "decode_consumer_protocol_subscription",
]

# ---------------------------------------------------------------------------------------------
# The schemas, in Kafka's own notation

SCHEMA_JSON = """[
// Classic consumer protocol: clients/src/main/resources/common/message/ConsumerProtocol*.json
{"name": "ConsumerProtocolSubscription", "validVersions": "0-3", "flexibleVersions": "none",
 "fields": [
  {"name": "Topics", "type": "[]string", "versions": "0+"},
  {"name": "UserData", "type": "bytes", "versions": "0+", "nullableVersions": "0+",
   "default": null},
  {"name": "OwnedPartitions", "type": "[]TopicPartition", "versions": "1+", "fields": [
    {"name": "Topic", "type": "string", "versions": "1+"},
    {"name": "Partitions", "type": "[]int32", "versions": "1+"}]},
  {"name": "GenerationId", "type": "int32", "versions": "2+", "default": -1},
  {"name": "RackId", "type": "string", "versions": "3+", "nullableVersions": "3+",
   "default": null}]},
{"name": "ConsumerProtocolAssignment", "validVersions": "0-3", "flexibleVersions": "none",
 "fields": [
  {"name": "AssignedPartitions", "type": "[]TopicPartition", "versions": "0+", "fields": [
    {"name": "Topic", "type": "string", "versions": "0+"},
    {"name": "Partitions", "type": "[]int32", "versions": "0+"}]},
  {"name": "UserData", "type": "bytes", "versions": "0+", "nullableVersions": "0+",
   "default": null}]},
// Classic group records (types 0-2): group-coordinator/src/main/resources/common/message/.
// klogtool reads every key body at version 0 (Kafka: at its record type); the fields match.
{"name": "OffsetCommitKey", "validVersions": "0", "flexibleVersions": "none",
 "fields": [
  {"name": "group", "type": "string", "versions": "0+"},
  {"name": "topic", "type": "string", "versions": "0+"},
  {"name": "partition", "type": "int32", "versions": "0+"}]},
{"name": "OffsetCommitValue", "validVersions": "0-4", "flexibleVersions": "4+",
 "fields": [
  {"name": "offset", "type": "int64", "versions": "0+"},
  {"name": "leaderEpoch", "type": "int32", "versions": "3+", "default": -1},
  {"name": "metadata", "type": "string", "versions": "0+"},
  {"name": "commitTimestamp", "type": "int64", "versions": "0+"},
  {"name": "expireTimestamp", "type": "int64", "versions": "1", "default": -1}]},
{"name": "GroupMetadataKey", "validVersions": "0", "flexibleVersions": "none",
 "fields": [
  {"name": "group", "type": "string", "versions": "0+"}]},
{"name": "GroupMetadataValue", "validVersions": "0-4", "flexibleVersions": "4+",
 "fields": [
  {"name": "protocolType", "type": "string", "versions": "0+"},
  {"name": "generation", "type": "int32", "versions": "0+"},
  {"name": "protocol", "type": "string", "versions": "0+", "nullableVersions": "0+"},
  {"name": "leader", "type": "string", "versions": "0+", "nullableVersions": "0+"},
  {"name": "currentStateTimestamp", "type": "int64", "versions": "2+", "default": -1},
  {"name": "members", "type": "[]MemberMetadata", "versions": "0+", "fields": [
    {"name": "memberId", "type": "string", "versions": "0+"},
    {"name": "groupInstanceId", "type": "string", "versions": "3+", "nullableVersions": "3+",
     "default": null},
    {"name": "clientId", "type": "string", "versions": "0+"},
    {"name": "clientHost", "type": "string", "versions": "0+"},
    {"name": "rebalanceTimeout", "type": "int32", "versions": "1+", "default": -1},
    {"name": "sessionTimeout", "type": "int32", "versions": "0+"},
    {"name": "subscription", "type": "bytes", "versions": "0+"},
    {"name": "assignment", "type": "bytes", "versions": "0+"}]}]},
// KIP-848 consumer-group records (types 3-8, 16), flexible version 0.
{"name": "ConsumerGroupMetadataKey", "validVersions": "0", "flexibleVersions": "none",
 "fields": [
  {"name": "GroupId", "type": "string", "versions": "0+"}]},
// Tagged fields of later releases: MetadataHash (KIP-1101, 4.1), CreationTimeMs (trunk).
{"name": "ConsumerGroupMetadataValue", "validVersions": "0", "flexibleVersions": "0+",
 "fields": [
  {"name": "Epoch", "type": "int32", "versions": "0+"},
  {"name": "MetadataHash", "type": "int64", "versions": "0+", "tag": 0, "taggedVersions": "0+",
   "default": 0},
  {"name": "CreationTimeMs", "type": "int64", "versions": "0+", "tag": 1, "taggedVersions": "0+",
   "default": -1}]},
{"name": "ConsumerGroupPartitionMetadataKey", "validVersions": "0", "flexibleVersions": "none",
 "fields": [
  {"name": "GroupId", "type": "string", "versions": "0+"}]},
// Written by 3.7-4.0 brokers; deprecated (no longer written) from 4.1.
{"name": "ConsumerGroupPartitionMetadataValue", "validVersions": "0", "flexibleVersions": "0+",
 "fields": [
  {"name": "Topics", "type": "[]TopicMetadata", "versions": "0+", "fields": [
    {"name": "TopicId", "type": "uuid", "versions": "0+"},
    {"name": "TopicName", "type": "string", "versions": "0+"},
    {"name": "NumPartitions", "type": "int32", "versions": "0+"},
    {"name": "PartitionMetadata", "type": "[]PartitionMetadata", "versions": "0+", "fields": [
      {"name": "Partition", "type": "int32", "versions": "0+"},
      {"name": "Racks", "type": "[]string", "versions": "0+"}]}]}]},
{"name": "ConsumerGroupMemberMetadataKey", "validVersions": "0", "flexibleVersions": "none",
 "fields": [
  {"name": "GroupId", "type": "string", "versions": "0+"},
  {"name": "MemberId", "type": "string", "versions": "0+"}]},
{"name": "ConsumerGroupMemberMetadataValue", "validVersions": "0", "flexibleVersions": "0+",
 "fields": [
  {"name": "InstanceId", "type": "string", "versions": "0+", "nullableVersions": "0+"},
  {"name": "RackId", "type": "string", "versions": "0+", "nullableVersions": "0+"},
  {"name": "ClientId", "type": "string", "versions": "0+"},
  {"name": "ClientHost", "type": "string", "versions": "0+"},
  {"name": "SubscribedTopicNames", "type": "[]string", "versions": "0+"},
  {"name": "SubscribedTopicRegex", "type": "string", "versions": "0+", "nullableVersions": "0+"},
  {"name": "RebalanceTimeoutMs", "type": "int32", "versions": "0+", "default": -1},
  {"name": "ServerAssignor", "type": "string", "versions": "0+", "nullableVersions": "0+"},
  {"name": "ClassicMemberMetadata", "type": "ClassicMemberMetadata", "versions": "0+",
   "nullableVersions": "0+", "tag": 0, "taggedVersions": "0+", "default": null, "fields": [
    {"name": "SessionTimeoutMs", "type": "int32", "versions": "0+"},
    {"name": "SupportedProtocols", "type": "[]ClassicProtocol", "versions": "0+", "fields": [
      {"name": "Name", "type": "string", "versions": "0+"},
      {"name": "Metadata", "type": "bytes", "versions": "0+"}]}]}]},
{"name": "ConsumerGroupTargetAssignmentMetadataKey", "validVersions": "0",
 "flexibleVersions": "none",
 "fields": [
  {"name": "GroupId", "type": "string", "versions": "0+"}]},
// AssignmentTimestamp: KIP-1263.
{"name": "ConsumerGroupTargetAssignmentMetadataValue", "validVersions": "0",
 "flexibleVersions": "0+",
 "fields": [
  {"name": "AssignmentEpoch", "type": "int32", "versions": "0+"},
  {"name": "AssignmentTimestamp", "type": "int64", "versions": "0+", "tag": 0,
   "taggedVersions": "0+", "default": 0}]},
{"name": "ConsumerGroupTargetAssignmentMemberKey", "validVersions": "0", "flexibleVersions": "none",
 "fields": [
  {"name": "GroupId", "type": "string", "versions": "0+"},
  {"name": "MemberId", "type": "string", "versions": "0+"}]},
{"name": "ConsumerGroupTargetAssignmentMemberValue", "validVersions": "0", "flexibleVersions": "0+",
 "fields": [
  {"name": "TopicPartitions", "type": "[]TopicPartition", "versions": "0+", "fields": [
    {"name": "TopicId", "type": "uuid", "versions": "0+"},
    {"name": "Partitions", "type": "[]int32", "versions": "0+"}]}]},
{"name": "ConsumerGroupCurrentMemberAssignmentKey", "validVersions": "0",
 "flexibleVersions": "none",
 "fields": [
  {"name": "GroupId", "type": "string", "versions": "0+"},
  {"name": "MemberId", "type": "string", "versions": "0+"}]},
// AssignmentEpochs: KIP-1251 (trunk), aligned with Partitions.
{"name": "ConsumerGroupCurrentMemberAssignmentValue", "validVersions": "0",
 "flexibleVersions": "0+",
 "fields": [
  {"name": "MemberEpoch", "type": "int32", "versions": "0+"},
  {"name": "PreviousMemberEpoch", "type": "int32", "versions": "0+"},
  {"name": "State", "type": "int8", "versions": "0+"},
  {"name": "AssignedPartitions", "type": "[]TopicPartitions", "versions": "0+", "fields": [
    {"name": "TopicId", "type": "uuid", "versions": "0+"},
    {"name": "Partitions", "type": "[]int32", "versions": "0+"},
    {"name": "AssignmentEpochs", "type": "[]int32", "versions": "0+", "nullableVersions": "0+",
     "tag": 0, "taggedVersions": "0+", "default": null}]},
  {"name": "PartitionsPendingRevocation", "type": "[]TopicPartitions", "versions": "0+",
   "fields": [
    {"name": "TopicId", "type": "uuid", "versions": "0+"},
    {"name": "Partitions", "type": "[]int32", "versions": "0+"},
    {"name": "AssignmentEpochs", "type": "[]int32", "versions": "0+", "nullableVersions": "0+",
     "tag": 0, "taggedVersions": "0+", "default": null}]}]},
// KIP-932 share-group records (types 9-15). UNSURE: preview schemas, taken from the newest
// apache/kafka trunk files; earlier previews differed (e.g. ShareGroupMetadataValue without
// MetadataHash, ShareGroupStatePartitionMetadataValue without InitializingTopics/CreateTimestamp).
{"name": "ShareGroupPartitionMetadataKey", "validVersions": "0", "flexibleVersions": "none",
 "fields": [
  {"name": "GroupId", "type": "string", "versions": "0+"}]},
{"name": "ShareGroupPartitionMetadataValue", "validVersions": "0", "flexibleVersions": "0+",
 "fields": [
  {"name": "Topics", "type": "[]TopicMetadata", "versions": "0+", "fields": [
    {"name": "TopicId", "type": "uuid", "versions": "0+"},
    {"name": "TopicName", "type": "string", "versions": "0+"},
    {"name": "NumPartitions", "type": "int32", "versions": "0+"},
    {"name": "PartitionMetadata", "type": "[]PartitionMetadata", "versions": "0+", "fields": [
      {"name": "Partition", "type": "int32", "versions": "0+"},
      {"name": "Racks", "type": "[]string", "versions": "0+"}]}]}]},
{"name": "ShareGroupMemberMetadataKey", "validVersions": "0", "flexibleVersions": "none",
 "fields": [
  {"name": "GroupId", "type": "string", "versions": "0+"},
  {"name": "MemberId", "type": "string", "versions": "0+"}]},
{"name": "ShareGroupMemberMetadataValue", "validVersions": "0", "flexibleVersions": "0+",
 "fields": [
  {"name": "RackId", "type": "string", "versions": "0+", "nullableVersions": "0+"},
  {"name": "ClientId", "type": "string", "versions": "0+"},
  {"name": "ClientHost", "type": "string", "versions": "0+"},
  {"name": "SubscribedTopicNames", "type": "[]string", "versions": "0+"}]},
{"name": "ShareGroupMetadataKey", "validVersions": "0", "flexibleVersions": "none",
 "fields": [
  {"name": "GroupId", "type": "string", "versions": "0+"}]},
{"name": "ShareGroupMetadataValue", "validVersions": "0", "flexibleVersions": "0+",
 "fields": [
  {"name": "Epoch", "type": "int32", "versions": "0+"},
  {"name": "MetadataHash", "type": "int64", "versions": "0+"}]},
{"name": "ShareGroupTargetAssignmentMetadataKey", "validVersions": "0", "flexibleVersions": "none",
 "fields": [
  {"name": "GroupId", "type": "string", "versions": "0+"}]},
{"name": "ShareGroupTargetAssignmentMetadataValue", "validVersions": "0", "flexibleVersions": "0+",
 "fields": [
  {"name": "AssignmentEpoch", "type": "int32", "versions": "0+"}]},
{"name": "ShareGroupTargetAssignmentMemberKey", "validVersions": "0", "flexibleVersions": "none",
 "fields": [
  {"name": "GroupId", "type": "string", "versions": "0+"},
  {"name": "MemberId", "type": "string", "versions": "0+"}]},
{"name": "ShareGroupTargetAssignmentMemberValue", "validVersions": "0", "flexibleVersions": "0+",
 "fields": [
  {"name": "TopicPartitions", "type": "[]TopicPartition", "versions": "0+", "fields": [
    {"name": "TopicId", "type": "uuid", "versions": "0+"},
    {"name": "Partitions", "type": "[]int32", "versions": "0+"}]}]},
{"name": "ShareGroupCurrentMemberAssignmentKey", "validVersions": "0", "flexibleVersions": "none",
 "fields": [
  {"name": "GroupId", "type": "string", "versions": "0+"},
  {"name": "MemberId", "type": "string", "versions": "0+"}]},
{"name": "ShareGroupCurrentMemberAssignmentValue", "validVersions": "0", "flexibleVersions": "0+",
 "fields": [
  {"name": "MemberEpoch", "type": "int32", "versions": "0+"},
  {"name": "PreviousMemberEpoch", "type": "int32", "versions": "0+"},
  {"name": "State", "type": "int8", "versions": "0+"},
  {"name": "AssignedPartitions", "type": "[]TopicPartitions", "versions": "0+", "fields": [
    {"name": "TopicId", "type": "uuid", "versions": "0+"},
    {"name": "Partitions", "type": "[]int32", "versions": "0+"}]}]},
{"name": "ShareGroupStatePartitionMetadataKey", "validVersions": "0", "flexibleVersions": "none",
 "fields": [
  {"name": "GroupId", "type": "string", "versions": "0+"}]},
{"name": "ShareGroupStatePartitionMetadataValue", "validVersions": "0", "flexibleVersions": "0+",
 "fields": [
  {"name": "InitializingTopics", "type": "[]TopicPartitionsInfo", "versions": "0+", "fields": [
    {"name": "TopicId", "type": "uuid", "versions": "0+"},
    {"name": "TopicName", "type": "string", "versions": "0+"},
    {"name": "Partitions", "type": "[]int32", "versions": "0+"},
    {"name": "CreateTimestamp", "type": "int64", "versions": "0+"}]},
  {"name": "InitializedTopics", "type": "[]TopicPartitionsInfo", "versions": "0+", "fields": [
    {"name": "TopicId", "type": "uuid", "versions": "0+"},
    {"name": "TopicName", "type": "string", "versions": "0+"},
    {"name": "Partitions", "type": "[]int32", "versions": "0+"},
    {"name": "CreateTimestamp", "type": "int64", "versions": "0+"}]},
  {"name": "DeletingTopics", "type": "[]TopicInfo", "versions": "0+", "fields": [
    {"name": "TopicId", "type": "uuid", "versions": "0+"},
    {"name": "TopicName", "type": "string", "versions": "0+"}]}]},
{"name": "ConsumerGroupRegularExpressionKey", "validVersions": "0", "flexibleVersions": "none",
 "fields": [
  {"name": "GroupId", "type": "string", "versions": "0+"},
  {"name": "RegularExpression", "type": "string", "versions": "0+"}]},
{"name": "ConsumerGroupRegularExpressionValue", "validVersions": "0", "flexibleVersions": "0+",
 "fields": [
  {"name": "Topics", "type": "[]string", "versions": "0+"},
  {"name": "Version", "type": "int64", "versions": "0+"},
  {"name": "Timestamp", "type": "int64", "versions": "0+"}]}
]"""
_MESSAGES = messages_from_json(SCHEMA_JSON)
CONSUMER_PROTOCOL_SUBSCRIPTION = _MESSAGES["ConsumerProtocolSubscription"]
CONSUMER_PROTOCOL_ASSIGNMENT = _MESSAGES["ConsumerProtocolAssignment"]
OFFSET_COMMIT_KEY = _MESSAGES["OffsetCommitKey"]
OFFSET_COMMIT_VALUE = _MESSAGES["OffsetCommitValue"]
GROUP_METADATA_KEY = _MESSAGES["GroupMetadataKey"]
GROUP_METADATA_VALUE = _MESSAGES["GroupMetadataValue"]

_I16 = struct.Struct(">h")


def _decode_versioned(message: Message, data: Bytes) -> tuple[int, dict[str, Any]]:
    mv = data if isinstance(data, memoryview) else memoryview(data)
    if len(mv) < 2:
        raise TruncatedError(f"{message.name}: could not read the version", 0)
    version = _I16.unpack_from(mv, 0)[0]
    if version < 0:
        raise CorruptRecordError(f"{message.name}: invalid version {version}", 0)
    fields, _ = decode(message, mv, 2, version)
    return version, fields


def decode_consumer_protocol_subscription(data: Bytes) -> tuple[int, dict[str, Any]]:
    """``(version, fields)`` of a classic consumer's subscription (JoinGroup metadata)."""
    return _decode_versioned(CONSUMER_PROTOCOL_SUBSCRIPTION, data)


def decode_consumer_protocol_assignment(data: Bytes) -> tuple[int, dict[str, Any]]:
    """``(version, fields)`` of a classic consumer's assignment (SyncGroup)."""
    return _decode_versioned(CONSUMER_PROTOCOL_ASSIGNMENT, data)


def _replace_embedded(member: dict[str, Any], name: str, message: Message) -> None:
    raw_text = member.get(name)
    if not isinstance(raw_text, str):
        return
    try:
        raw = base64.b64decode(raw_text)
        _, member[name] = _decode_versioned(message, raw)
    except (FormatError, binascii.Error, ValueError):
        pass  # keep the original bytes, as kafka-dump-log does


def _decode_consumer_members(value: dict[str, Any]) -> dict[str, Any]:
    if value.get("protocolType") != "consumer":
        return value
    for member in value.get("members") or ():
        _replace_embedded(member, "subscription", CONSUMER_PROTOCOL_SUBSCRIPTION)
        _replace_embedded(member, "assignment", CONSUMER_PROTOCOL_ASSIGNMENT)
    return value


# The record types: (key, value) of each, by the key's int16.
_TYPES = {
    0: ("OffsetCommitKey", "OffsetCommitValue"),
    1: ("OffsetCommitKey", "OffsetCommitValue"),
    2: ("GroupMetadataKey", "GroupMetadataValue"),
    3: ("ConsumerGroupMetadataKey", "ConsumerGroupMetadataValue"),
    4: ("ConsumerGroupPartitionMetadataKey", "ConsumerGroupPartitionMetadataValue"),
    5: ("ConsumerGroupMemberMetadataKey", "ConsumerGroupMemberMetadataValue"),
    6: ("ConsumerGroupTargetAssignmentMetadataKey", "ConsumerGroupTargetAssignmentMetadataValue"),
    7: ("ConsumerGroupTargetAssignmentMemberKey", "ConsumerGroupTargetAssignmentMemberValue"),
    8: ("ConsumerGroupCurrentMemberAssignmentKey", "ConsumerGroupCurrentMemberAssignmentValue"),
    9: ("ShareGroupPartitionMetadataKey", "ShareGroupPartitionMetadataValue"),
    10: ("ShareGroupMemberMetadataKey", "ShareGroupMemberMetadataValue"),
    11: ("ShareGroupMetadataKey", "ShareGroupMetadataValue"),
    12: ("ShareGroupTargetAssignmentMetadataKey", "ShareGroupTargetAssignmentMetadataValue"),
    13: ("ShareGroupTargetAssignmentMemberKey", "ShareGroupTargetAssignmentMemberValue"),
    14: ("ShareGroupCurrentMemberAssignmentKey", "ShareGroupCurrentMemberAssignmentValue"),
    15: ("ShareGroupStatePartitionMetadataKey", "ShareGroupStatePartitionMetadataValue"),
    16: ("ConsumerGroupRegularExpressionKey", "ConsumerGroupRegularExpressionValue"),
}

CONSUMER_OFFSETS_RECORDS: dict[int, RecordSchema] = {
    record_type: RecordSchema(
        record_type,
        _MESSAGES[key],
        _MESSAGES[value],
        _decode_consumer_members if value == "GroupMetadataValue" else None,
    )
    for record_type, (key, value) in _TYPES.items()
}


def decode_consumer_offsets(key: Bytes | None, value: Bytes | None) -> CoordinatorRecord:
    """Decode one ``__consumer_offsets`` record (see :class:`CoordinatorRecord`)."""
    return decode_coordinator_record(key, value, CONSUMER_OFFSETS_RECORDS)
