"""``__consumer_offsets`` records (docs/kafka-rules.md: Internal topics).

Schemas follow apache/kafka ``group-coordinator/src/main/resources/common/message/*.json`` as
released in Kafka 4.1 and 4.2 (their ``apiKey`` is the record type); the key's int16 selects it:

=====  =========================================  ==============================================
type   key                                        value (versions)
=====  =========================================  ==============================================
0, 1   OffsetCommitKey (group, topic, partition)  OffsetCommitValue (0-4, flexible 4+)
2      GroupMetadataKey (group)                   GroupMetadataValue (0-4, flexible 4+)
3      ConsumerGroupMetadataKey                   ConsumerGroupMetadataValue (0, flexible)
4      ConsumerGroupPartitionMetadataKey          ConsumerGroupPartitionMetadataValue
5      ConsumerGroupMemberMetadataKey             ConsumerGroupMemberMetadataValue
6      ConsumerGroupTargetAssignmentMetadataKey   ConsumerGroupTargetAssignmentMetadataValue
7      ConsumerGroupTargetAssignmentMemberKey     ConsumerGroupTargetAssignmentMemberValue
8      ConsumerGroupCurrentMemberAssignmentKey    ConsumerGroupCurrentMemberAssignmentValue
10-15  ShareGroup* (KIP-932)                      member metadata, metadata, target assignment
                                                  metadata/member, current member assignment,
                                                  state partition metadata
16     ConsumerGroupRegularExpressionKey          ConsumerGroupRegularExpressionValue
17-23  StreamsGroup* (KIP-1071), no 18            metadata, member metadata, target assignment
                                                  metadata/member, current member assignment,
                                                  topology
=====  =========================================  ==============================================

Other types decode as ``"unknown"``, as Kafka 4.1+ skips them: 9 (ShareGroupPartitionMetadata
of the 4.0 share-group preview), 18 (StreamsGroupPartitionMetadata, never released), 24+.
:class:`GroupRecordType` names the known ones.

KIP-848, KIP-932 and KIP-1071 records are all flexible version 0; releases after 4.1 only add
tagged fields, which are listed (with the release) so they render by name; tags we do not know
are skipped, so a newer broker's records still decode. 4.0 wrote share-group preview layouts
that 4.1 changed incompatibly (see the tables): such a record raises a
:class:`~klogtool.formats.errors.FormatError` where its bytes do not fit.

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
from enum import IntEnum
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
    "GroupRecordType",
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
// topicId: tagged, Kafka 4.1.
{"name": "OffsetCommitValue", "validVersions": "0-4", "flexibleVersions": "4+",
 "fields": [
  {"name": "offset", "type": "int64", "versions": "0+"},
  {"name": "leaderEpoch", "type": "int32", "versions": "3+", "default": -1},
  {"name": "metadata", "type": "string", "versions": "0+"},
  {"name": "commitTimestamp", "type": "int64", "versions": "0+"},
  {"name": "expireTimestamp", "type": "int64", "versions": "1", "default": -1},
  {"name": "topicId", "type": "uuid", "versions": "4+", "tag": 0, "taggedVersions": "4+"}]},
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
// KIP-932 share-group records (types 10-15) as released in Kafka 4.1 and 4.2 (unchanged
// between them). Changed from the 4.0 preview: type 9 (ShareGroupPartitionMetadata) is gone,
// ShareGroupMetadataValue gained MetadataHash, ShareGroupStatePartitionMetadataValue gained
// InitializingTopics (first); a 4.0 record of types 11 and 15 no longer decodes.
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
// AssignmentTimestamp: KIP-1263 (4.3).
{"name": "ShareGroupTargetAssignmentMetadataValue", "validVersions": "0", "flexibleVersions": "0+",
 "fields": [
  {"name": "AssignmentEpoch", "type": "int32", "versions": "0+"},
  {"name": "AssignmentTimestamp", "type": "int64", "versions": "0+", "tag": 0,
   "taggedVersions": "0+", "default": 0}]},
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
  {"name": "AssignedPartitions", "type": "[]TopicPartitions", "versions": "0+"}],
 "commonStructs": [
  {"name": "TopicPartitions", "versions": "0+", "fields": [
    {"name": "TopicId", "type": "uuid", "versions": "0+"},
    {"name": "Partitions", "type": "[]int32", "versions": "0+"}]}]},
{"name": "ShareGroupStatePartitionMetadataKey", "validVersions": "0", "flexibleVersions": "none",
 "fields": [
  {"name": "GroupId", "type": "string", "versions": "0+"}]},
{"name": "ShareGroupStatePartitionMetadataValue", "validVersions": "0", "flexibleVersions": "0+",
 "fields": [
  {"name": "InitializingTopics", "type": "[]TopicPartitionsInfo", "versions": "0+"},
  {"name": "InitializedTopics", "type": "[]TopicPartitionsInfo", "versions": "0+"},
  {"name": "DeletingTopics", "type": "[]TopicInfo", "versions": "0+"}],
 "commonStructs": [
  {"name": "TopicPartitionsInfo", "versions": "0+", "fields": [
    {"name": "TopicId", "type": "uuid", "versions": "0+"},
    {"name": "TopicName", "type": "string", "versions": "0+"},
    {"name": "Partitions", "type": "[]int32", "versions": "0+"}]},
  {"name": "TopicInfo", "versions": "0+", "fields": [
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
  {"name": "Timestamp", "type": "int64", "versions": "0+"}]},
// KIP-1071 streams-group records (types 17, 19-23) as released in Kafka 4.1 and 4.2; 4.2 added
// tagged fields only (ValidatedTopologyEpoch, LastAssignmentConfigs, AssignmentEpochs), later
// ones are listed too (4.3: AssignmentTimestamp; trunk: the *DescriptionTopologyEpoch tags).
// Type 18 (StreamsGroupPartitionMetadata) existed only before 4.1 was released.
{"name": "StreamsGroupMetadataKey", "validVersions": "0", "flexibleVersions": "none",
 "fields": [
  {"name": "GroupId", "type": "string", "versions": "0+"}]},
{"name": "StreamsGroupMetadataValue", "validVersions": "0", "flexibleVersions": "0+",
 "fields": [
  {"name": "Epoch", "type": "int32", "versions": "0+"},
  {"name": "MetadataHash", "type": "int64", "versions": "0+"},
  {"name": "ValidatedTopologyEpoch", "type": "int32", "versions": "0+", "tag": 0,
   "taggedVersions": "0+", "default": -1},
  {"name": "LastAssignmentConfigs", "type": "[]LastAssignmentConfig", "nullableVersions": "0+",
   "tag": 1, "taggedVersions": "0+", "default": null},
  {"name": "StoredDescriptionTopologyEpoch", "type": "int32", "versions": "0+", "tag": 2,
   "taggedVersions": "0+", "default": -1},
  {"name": "FailedDescriptionTopologyEpoch", "type": "int32", "versions": "0+", "tag": 3,
   "taggedVersions": "0+", "default": -1}],
 "commonStructs": [
  {"name": "LastAssignmentConfig", "versions": "0+", "fields": [
    {"name": "Key", "type": "string", "versions": "0+"},
    {"name": "Value", "type": "string", "versions": "0+"}]}]},
{"name": "StreamsGroupMemberMetadataKey", "validVersions": "0", "flexibleVersions": "none",
 "fields": [
  {"name": "GroupId", "type": "string", "versions": "0+"},
  {"name": "MemberId", "type": "string", "versions": "0+"}]},
{"name": "StreamsGroupMemberMetadataValue", "validVersions": "0", "flexibleVersions": "0+",
 "fields": [
  {"name": "InstanceId", "type": "string", "versions": "0+", "nullableVersions": "0+"},
  {"name": "RackId", "type": "string", "versions": "0+", "nullableVersions": "0+"},
  {"name": "ClientId", "type": "string", "versions": "0+"},
  {"name": "ClientHost", "type": "string", "versions": "0+"},
  {"name": "RebalanceTimeoutMs", "type": "int32", "versions": "0+", "default": -1},
  {"name": "TopologyEpoch", "type": "int32", "versions": "0+"},
  {"name": "ProcessId", "type": "string", "versions": "0+"},
  {"name": "UserEndpoint", "type": "Endpoint", "versions": "0+", "nullableVersions": "0+",
   "default": "null"},
  {"name": "ClientTags", "type": "[]KeyValue", "versions": "0+"}],
 "commonStructs": [
  {"name": "Endpoint", "versions": "0+", "fields": [
    {"name": "Host", "type": "string", "versions": "0+"},
    {"name": "Port", "type": "uint16", "versions": "0+"}]},
  {"name": "KeyValue", "versions": "0+", "fields": [
    {"name": "Key", "type": "string", "versions": "0+"},
    {"name": "Value", "type": "string", "versions": "0+"}]}]},
{"name": "StreamsGroupTargetAssignmentMetadataKey", "validVersions": "0",
 "flexibleVersions": "none",
 "fields": [
  {"name": "GroupId", "type": "string", "versions": "0+"}]},
{"name": "StreamsGroupTargetAssignmentMetadataValue", "validVersions": "0",
 "flexibleVersions": "0+",
 "fields": [
  {"name": "AssignmentEpoch", "type": "int32", "versions": "0+"},
  {"name": "AssignmentTimestamp", "type": "int64", "versions": "0+", "tag": 0,
   "taggedVersions": "0+", "default": 0}]},
{"name": "StreamsGroupTargetAssignmentMemberKey", "validVersions": "0",
 "flexibleVersions": "none",
 "fields": [
  {"name": "GroupId", "type": "string", "versions": "0+"},
  {"name": "MemberId", "type": "string", "versions": "0+"}]},
{"name": "StreamsGroupTargetAssignmentMemberValue", "validVersions": "0",
 "flexibleVersions": "0+",
 "fields": [
  {"name": "ActiveTasks", "type": "[]TaskIds", "versions": "0+"},
  {"name": "StandbyTasks", "type": "[]TaskIds", "versions": "0+"},
  {"name": "WarmupTasks", "type": "[]TaskIds", "versions": "0+"}],
 "commonStructs": [
  {"name": "TaskIds", "versions": "0+", "fields": [
    {"name": "SubtopologyId", "type": "string", "versions": "0+"},
    {"name": "Partitions", "type": "[]int32", "versions": "0+"}]}]},
{"name": "StreamsGroupCurrentMemberAssignmentKey", "validVersions": "0",
 "flexibleVersions": "none",
 "fields": [
  {"name": "GroupId", "type": "string", "versions": "0+"},
  {"name": "MemberId", "type": "string", "versions": "0+"}]},
{"name": "StreamsGroupCurrentMemberAssignmentValue", "validVersions": "0",
 "flexibleVersions": "0+",
 "fields": [
  {"name": "MemberEpoch", "type": "int32", "versions": "0+"},
  {"name": "PreviousMemberEpoch", "type": "int32", "versions": "0+"},
  {"name": "State", "type": "int8", "versions": "0+"},
  {"name": "ActiveTasks", "type": "[]TaskIds", "versions": "0+"},
  {"name": "StandbyTasks", "type": "[]TaskIds", "versions": "0+"},
  {"name": "WarmupTasks", "type": "[]TaskIds", "versions": "0+"},
  {"name": "ActiveTasksPendingRevocation", "type": "[]TaskIds", "versions": "0+"},
  {"name": "StandbyTasksPendingRevocation", "type": "[]TaskIds", "versions": "0+"},
  {"name": "WarmupTasksPendingRevocation", "type": "[]TaskIds", "versions": "0+"}],
 "commonStructs": [
  {"name": "TaskIds", "versions": "0+", "fields": [
    {"name": "SubtopologyId", "type": "string", "versions": "0+"},
    {"name": "Partitions", "type": "[]int32", "versions": "0+"},
    {"name": "AssignmentEpochs", "type": "[]int32", "versions": "0+", "nullableVersions": "0+",
     "tag": 0, "taggedVersions": "0+", "default": null}]}]},
{"name": "StreamsGroupTopologyKey", "validVersions": "0", "flexibleVersions": "none",
 "fields": [
  {"name": "GroupId", "type": "string", "versions": "0+"}]},
{"name": "StreamsGroupTopologyValue", "validVersions": "0", "flexibleVersions": "0+",
 "fields": [
  {"name": "Epoch", "type": "int32", "versions": "0+"},
  {"name": "Subtopologies", "type": "[]Subtopology", "versions": "0+", "fields": [
    {"name": "SubtopologyId", "type": "string", "versions": "0+"},
    {"name": "SourceTopics", "type": "[]string", "versions": "0+"},
    {"name": "SourceTopicRegex", "type": "[]string", "versions": "0+"},
    {"name": "StateChangelogTopics", "type": "[]TopicInfo", "versions": "0+"},
    {"name": "RepartitionSinkTopics", "type": "[]string", "versions": "0+"},
    {"name": "RepartitionSourceTopics", "type": "[]TopicInfo", "versions": "0+"},
    {"name": "CopartitionGroups", "type": "[]CopartitionGroup", "versions": "0+", "fields": [
      {"name": "SourceTopics", "type": "[]int16", "versions": "0+"},
      {"name": "SourceTopicRegex", "type": "[]int16", "versions": "0+"},
      {"name": "RepartitionSourceTopics", "type": "[]int16", "versions": "0+"}]}]}],
 "commonStructs": [
  {"name": "TopicConfig", "versions": "0+", "fields": [
    {"name": "key", "type": "string", "versions": "0+"},
    {"name": "value", "type": "string", "versions": "0+"}]},
  {"name": "TopicInfo", "versions": "0+", "fields": [
    {"name": "Name", "type": "string", "versions": "0+"},
    {"name": "Partitions", "type": "int32", "versions": "0+"},
    {"name": "ReplicationFactor", "type": "int16", "versions": "0+"},
    {"name": "TopicConfigs", "type": "[]TopicConfig", "versions": "0+"}]}]}
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


class GroupRecordType(IntEnum):
    """Kafka's group-coordinator ``CoordinatorRecordType`` (the key's int16), as released in
    4.1/4.2 (the ``apiKey`` of the schema files); 9 and 18 are not record types there."""

    LEGACY_OFFSET_COMMIT = 0
    OFFSET_COMMIT = 1
    GROUP_METADATA = 2
    CONSUMER_GROUP_METADATA = 3
    CONSUMER_GROUP_PARTITION_METADATA = 4
    CONSUMER_GROUP_MEMBER_METADATA = 5
    CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA = 6
    CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER = 7
    CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT = 8
    SHARE_GROUP_MEMBER_METADATA = 10
    SHARE_GROUP_METADATA = 11
    SHARE_GROUP_TARGET_ASSIGNMENT_METADATA = 12
    SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER = 13
    SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT = 14
    SHARE_GROUP_STATE_PARTITION_METADATA = 15
    CONSUMER_GROUP_REGULAR_EXPRESSION = 16
    STREAMS_GROUP_METADATA = 17
    STREAMS_GROUP_MEMBER_METADATA = 19
    STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA = 20
    STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER = 21
    STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT = 22
    STREAMS_GROUP_TOPOLOGY = 23


def _schema_names(record_type: GroupRecordType) -> tuple[str, str]:
    """(key, value) schema names: Kafka's, but type 0 reads as OffsetCommit (same fields)."""
    if record_type <= GroupRecordType.OFFSET_COMMIT:
        return "OffsetCommitKey", "OffsetCommitValue"
    stem = "".join(word.capitalize() for word in record_type.name.split("_"))
    return f"{stem}Key", f"{stem}Value"


CONSUMER_OFFSETS_RECORDS: dict[int, RecordSchema] = {
    int(record_type): RecordSchema(
        int(record_type),
        _MESSAGES[key],
        _MESSAGES[value],
        _decode_consumer_members if value == "GroupMetadataValue" else None,
    )
    for record_type in GroupRecordType
    for key, value in (_schema_names(record_type),)
}


def decode_consumer_offsets(key: Bytes | None, value: Bytes | None) -> CoordinatorRecord:
    """Decode one ``__consumer_offsets`` record (see :class:`CoordinatorRecord`)."""
    return decode_coordinator_record(key, value, CONSUMER_OFFSETS_RECORDS)
