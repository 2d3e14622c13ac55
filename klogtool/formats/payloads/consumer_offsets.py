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
from klogtool.formats.payloads.schema import Field, Message, decode

__all__ = [
    "CONSUMER_OFFSETS_RECORDS",
    "CONSUMER_PROTOCOL_ASSIGNMENT",
    "CONSUMER_PROTOCOL_SUBSCRIPTION",
    "decode_consumer_offsets",
    "decode_consumer_protocol_assignment",
    "decode_consumer_protocol_subscription",
]

# ---------------------------------------------------------------------------------------------
# Classic consumer protocol (clients/src/main/resources/common/message/ConsumerProtocol*.json)

_TOPIC_PARTITION_V1 = (Field("Topic", "string", "1+"), Field("Partitions", "[]int32", "1+"))

CONSUMER_PROTOCOL_SUBSCRIPTION = Message(
    "ConsumerProtocolSubscription",
    (
        Field("Topics", "[]string"),
        Field("UserData", "bytes", nullable_versions="0+", default=None),
        Field("OwnedPartitions", "[]TopicPartition", "1+", fields=_TOPIC_PARTITION_V1),
        Field("GenerationId", "int32", "2+", default=-1),
        Field("RackId", "string", "3+", nullable_versions="3+", default=None),
    ),
    "0-3",
)

CONSUMER_PROTOCOL_ASSIGNMENT = Message(
    "ConsumerProtocolAssignment",
    (
        Field(
            "AssignedPartitions",
            "[]TopicPartition",
            fields=(Field("Topic", "string"), Field("Partitions", "[]int32")),
        ),
        Field("UserData", "bytes", nullable_versions="0+", default=None),
    ),
    "0-3",
)

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


# ---------------------------------------------------------------------------------------------
# Classic group records (types 0-2)


def _key(name: str, *field_names: str) -> Message:
    return Message(name, tuple(Field(n, "string") for n in field_names))


OFFSET_COMMIT_KEY = Message(
    "OffsetCommitKey",
    (Field("group", "string"), Field("topic", "string"), Field("partition", "int32")),
)

OFFSET_COMMIT_VALUE = Message(
    "OffsetCommitValue",
    (
        Field("offset", "int64"),
        Field("leaderEpoch", "int32", "3+", default=-1),
        Field("metadata", "string"),
        Field("commitTimestamp", "int64"),
        Field("expireTimestamp", "int64", "1", default=-1),
    ),
    "0-4",
    "4+",
)

GROUP_METADATA_KEY = _key("GroupMetadataKey", "group")

GROUP_METADATA_VALUE = Message(
    "GroupMetadataValue",
    (
        Field("protocolType", "string"),
        Field("generation", "int32"),
        Field("protocol", "string", nullable_versions="0+"),
        Field("leader", "string", nullable_versions="0+"),
        Field("currentStateTimestamp", "int64", "2+", default=-1),
        Field(
            "members",
            "[]MemberMetadata",
            fields=(
                Field("memberId", "string"),
                Field("groupInstanceId", "string", "3+", nullable_versions="3+", default=None),
                Field("clientId", "string"),
                Field("clientHost", "string"),
                Field("rebalanceTimeout", "int32", "1+"),
                Field("sessionTimeout", "int32"),
                Field("subscription", "bytes"),
                Field("assignment", "bytes"),
            ),
        ),
    ),
    "0-4",
    "4+",
)

# ---------------------------------------------------------------------------------------------
# KIP-848 consumer-group records (types 3-8, 16); all "validVersions": "0", flexible.


def _flex(name: str, *fields: Field) -> Message:
    return Message(name, fields, "0", "0+")


_TOPIC_PARTITIONS = (Field("TopicId", "uuid"), Field("Partitions", "[]int32"))

_PARTITION_METADATA = (Field("Partition", "int32"), Field("Racks", "[]string"))

_TOPIC_METADATA = (
    Field("TopicId", "uuid"),
    Field("TopicName", "string"),
    Field("NumPartitions", "int32"),
    Field("PartitionMetadata", "[]PartitionMetadata", fields=_PARTITION_METADATA),
)

CONSUMER_GROUP_METADATA_VALUE = _flex(
    "ConsumerGroupMetadataValue",
    Field("Epoch", "int32"),
    # Tagged fields of later releases (KIP-1101 in 4.1; CreationTimeMs on trunk).
    Field("MetadataHash", "int64", tag=0, tagged_versions="0+", default=0),
    Field("CreationTimeMs", "int64", tag=1, tagged_versions="0+", default=-1),
)

# Written by 3.7-4.0 brokers; deprecated (no longer written) from 4.1.
CONSUMER_GROUP_PARTITION_METADATA_VALUE = _flex(
    "ConsumerGroupPartitionMetadataValue",
    Field("Topics", "[]TopicMetadata", fields=_TOPIC_METADATA),
)

CONSUMER_GROUP_MEMBER_METADATA_VALUE = _flex(
    "ConsumerGroupMemberMetadataValue",
    Field("InstanceId", "string", nullable_versions="0+"),
    Field("RackId", "string", nullable_versions="0+"),
    Field("ClientId", "string"),
    Field("ClientHost", "string"),
    Field("SubscribedTopicNames", "[]string"),
    Field("SubscribedTopicRegex", "string", nullable_versions="0+"),
    Field("RebalanceTimeoutMs", "int32", default=-1),
    Field("ServerAssignor", "string", nullable_versions="0+"),
    Field(
        "ClassicMemberMetadata",
        "ClassicMemberMetadata",
        nullable_versions="0+",
        default=None,
        tag=0,
        tagged_versions="0+",
        fields=(
            Field("SessionTimeoutMs", "int32"),
            Field(
                "SupportedProtocols",
                "[]ClassicProtocol",
                fields=(Field("Name", "string"), Field("Metadata", "bytes")),
            ),
        ),
    ),
)

CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = _flex(
    "ConsumerGroupTargetAssignmentMetadataValue",
    Field("AssignmentEpoch", "int32"),
    Field("AssignmentTimestamp", "int64", tag=0, tagged_versions="0+", default=0),  # KIP-1263
)

CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = _flex(
    "ConsumerGroupTargetAssignmentMemberValue",
    Field("TopicPartitions", "[]TopicPartition", fields=_TOPIC_PARTITIONS),
)

_CURRENT_TOPIC_PARTITIONS = (
    Field("TopicId", "uuid"),
    Field("Partitions", "[]int32"),
    # KIP-1251 (trunk): aligned with Partitions.
    Field(
        "AssignmentEpochs",
        "[]int32",
        nullable_versions="0+",
        default=None,
        tag=0,
        tagged_versions="0+",
    ),
)

CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = _flex(
    "ConsumerGroupCurrentMemberAssignmentValue",
    Field("MemberEpoch", "int32"),
    Field("PreviousMemberEpoch", "int32"),
    Field("State", "int8"),
    Field("AssignedPartitions", "[]TopicPartitions", fields=_CURRENT_TOPIC_PARTITIONS),
    Field("PartitionsPendingRevocation", "[]TopicPartitions", fields=_CURRENT_TOPIC_PARTITIONS),
)

CONSUMER_GROUP_REGULAR_EXPRESSION_VALUE = _flex(
    "ConsumerGroupRegularExpressionValue",
    Field("Topics", "[]string"),
    Field("Version", "int64"),
    Field("Timestamp", "int64"),
)

# ---------------------------------------------------------------------------------------------
# KIP-932 share-group records (types 9-15). UNSURE: preview schemas, taken from the newest
# apache/kafka trunk files; earlier previews differed (e.g. ShareGroupMetadataValue without
# MetadataHash, ShareGroupStatePartitionMetadataValue without InitializingTopics/CreateTimestamp).

SHARE_GROUP_PARTITION_METADATA_VALUE = _flex(
    "ShareGroupPartitionMetadataValue",
    Field("Topics", "[]TopicMetadata", fields=_TOPIC_METADATA),
)

SHARE_GROUP_MEMBER_METADATA_VALUE = _flex(
    "ShareGroupMemberMetadataValue",
    Field("RackId", "string", nullable_versions="0+"),
    Field("ClientId", "string"),
    Field("ClientHost", "string"),
    Field("SubscribedTopicNames", "[]string"),
)

SHARE_GROUP_METADATA_VALUE = _flex(
    "ShareGroupMetadataValue",
    Field("Epoch", "int32"),
    Field("MetadataHash", "int64"),
)

SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = _flex(
    "ShareGroupTargetAssignmentMetadataValue",
    Field("AssignmentEpoch", "int32"),
)

SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = _flex(
    "ShareGroupTargetAssignmentMemberValue",
    Field("TopicPartitions", "[]TopicPartition", fields=_TOPIC_PARTITIONS),
)

SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = _flex(
    "ShareGroupCurrentMemberAssignmentValue",
    Field("MemberEpoch", "int32"),
    Field("PreviousMemberEpoch", "int32"),
    Field("State", "int8"),
    Field("AssignedPartitions", "[]TopicPartitions", fields=_TOPIC_PARTITIONS),
)

_TOPIC_PARTITIONS_INFO = (
    Field("TopicId", "uuid"),
    Field("TopicName", "string"),
    Field("Partitions", "[]int32"),
    Field("CreateTimestamp", "int64"),
)

SHARE_GROUP_STATE_PARTITION_METADATA_VALUE = _flex(
    "ShareGroupStatePartitionMetadataValue",
    Field("InitializingTopics", "[]TopicPartitionsInfo", fields=_TOPIC_PARTITIONS_INFO),
    Field("InitializedTopics", "[]TopicPartitionsInfo", fields=_TOPIC_PARTITIONS_INFO),
    Field(
        "DeletingTopics",
        "[]TopicInfo",
        fields=(Field("TopicId", "uuid"), Field("TopicName", "string")),
    ),
)

# ---------------------------------------------------------------------------------------------
# The table


def _group(name: str) -> Message:
    return _key(name, "GroupId")


def _member(name: str) -> Message:
    return _key(name, "GroupId", "MemberId")


CONSUMER_OFFSETS_RECORDS: dict[int, RecordSchema] = {
    s.record_type: s
    for s in (
        RecordSchema(0, OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE),
        RecordSchema(1, OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE),
        RecordSchema(2, GROUP_METADATA_KEY, GROUP_METADATA_VALUE, _decode_consumer_members),
        RecordSchema(3, _group("ConsumerGroupMetadataKey"), CONSUMER_GROUP_METADATA_VALUE),
        RecordSchema(
            4,
            _group("ConsumerGroupPartitionMetadataKey"),
            CONSUMER_GROUP_PARTITION_METADATA_VALUE,
        ),
        RecordSchema(
            5, _member("ConsumerGroupMemberMetadataKey"), CONSUMER_GROUP_MEMBER_METADATA_VALUE
        ),
        RecordSchema(
            6,
            _group("ConsumerGroupTargetAssignmentMetadataKey"),
            CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE,
        ),
        RecordSchema(
            7,
            _member("ConsumerGroupTargetAssignmentMemberKey"),
            CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE,
        ),
        RecordSchema(
            8,
            _member("ConsumerGroupCurrentMemberAssignmentKey"),
            CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE,
        ),
        RecordSchema(
            9, _group("ShareGroupPartitionMetadataKey"), SHARE_GROUP_PARTITION_METADATA_VALUE
        ),
        RecordSchema(10, _member("ShareGroupMemberMetadataKey"), SHARE_GROUP_MEMBER_METADATA_VALUE),
        RecordSchema(11, _group("ShareGroupMetadataKey"), SHARE_GROUP_METADATA_VALUE),
        RecordSchema(
            12,
            _group("ShareGroupTargetAssignmentMetadataKey"),
            SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE,
        ),
        RecordSchema(
            13,
            _member("ShareGroupTargetAssignmentMemberKey"),
            SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE,
        ),
        RecordSchema(
            14,
            _member("ShareGroupCurrentMemberAssignmentKey"),
            SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE,
        ),
        RecordSchema(
            15,
            _group("ShareGroupStatePartitionMetadataKey"),
            SHARE_GROUP_STATE_PARTITION_METADATA_VALUE,
        ),
        RecordSchema(
            16,
            _key("ConsumerGroupRegularExpressionKey", "GroupId", "RegularExpression"),
            CONSUMER_GROUP_REGULAR_EXPRESSION_VALUE,
        ),
    )
}


def decode_consumer_offsets(key: Bytes | None, value: Bytes | None) -> CoordinatorRecord:
    """Decode one ``__consumer_offsets`` record (see :class:`CoordinatorRecord`)."""
    return decode_coordinator_record(key, value, CONSUMER_OFFSETS_RECORDS)
