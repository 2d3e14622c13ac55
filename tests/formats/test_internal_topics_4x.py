"""Kafka 4.1/4.2's internal-topic records (issue 38): ``__share_group_state`` (the share
coordinator's), ``__consumer_offsets``' share-group (10-15), regular-expression (16) and
streams-group (17, 19-23) records, ``__transaction_state`` (transactions version 2) and the
tagged ``topicId`` of ``OffsetCommitValue``.

Every record here is built by kafka-python's JSON-driven encoder (``kafka.protocol.api_data``)
from KAFKA_JSON: Kafka's own schema files as released in 4.2 (the ``apiKey`` is the record
type) plus the tagged fields later releases added, copied without their ``about`` texts. Never by
klogtool's encoder: klogtool decodes the bytes and each field is compared with what Kafka's JSON
converters print (camelCase names, uuids in Kafka's base64 text, tagged fields only when they
differ from their default). The 4.0 share-group preview's layouts, which 4.1 changed, are
written by hand from that release's files. Malformed records (truncated, mutated) decode or
raise a FormatError, nothing else.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import re
import struct
import sys
import types
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.paths import ROOT

from klogtool.formats.batch import Record
from klogtool.formats.errors import CorruptRecordError, FormatError
from klogtool.formats.payloads import (
    INTERNAL_DECODERS,
    UNIMPLEMENTED_DECODERS,
    auto_decoder_for_topic,
    decode_internal,
    kafka_dump_text,
)
from klogtool.formats.payloads.consumer_offsets import (
    CONSUMER_OFFSETS_RECORDS,
    GroupRecordType,
    decode_consumer_offsets,
)
from klogtool.formats.payloads.coordinator import CoordinatorRecord, RecordSchema
from klogtool.formats.payloads.schema import Message, load_json_schema
from klogtool.formats.payloads.share_state import (
    SHARE_GROUP_STATE_RECORDS,
    ShareRecordType,
    decode_share_group_state,
)
from klogtool.formats.payloads.transaction_state import (
    TRANSACTION_STATE_RECORDS,
    decode_transaction_state,
)
from klogtool.formats.v2 import encode_batch
from klogtool.formats.varint import encode_uvarint

KAFKA_JSON: dict[str, str] = {
    "ShareSnapshotKey": """{
  "apiKey": 0, "name": "ShareSnapshotKey", "validVersions": "0", "flexibleVersions": "none",
   "fields": [
    {"name": "GroupId", "type": "string", "versions": "0"},
    {"name": "TopicId", "type": "uuid", "versions": "0"},
    {"name": "Partition", "type": "int32", "versions": "0"}
  ]}""",
    "ShareSnapshotValue": """{
  "apiKey": 0, "name": "ShareSnapshotValue", "validVersions": "0", "flexibleVersions": "0+",
   "fields": [
    {"name": "SnapshotEpoch", "type": "int32", "versions": "0+"},
    {"name": "StateEpoch", "type": "int32", "versions": "0+"},
    {"name": "LeaderEpoch", "type": "int32", "versions": "0+"},
    {"name": "StartOffset", "type": "int64", "versions": "0+"},
    {"name": "DeliveryCompleteCount", "type": "int32", "versions": "0+", "taggedVersions": "0+",
     "tag": 0, "default": "-1"},
    {"name": "CreateTimestamp", "type": "int64", "versions": "0+"},
    {"name": "WriteTimestamp", "type": "int64", "versions": "0+"},
    {"name": "StateBatches", "type": "[]StateBatch", "versions": "0+", "fields": [
      {"name": "FirstOffset", "type": "int64", "versions": "0+"},
      {"name": "LastOffset", "type": "int64", "versions": "0+"},
      {"name": "DeliveryState", "type": "int8", "versions": "0+"},
      {"name": "DeliveryCount", "type": "int16", "versions": "0+"}]}
  ]}""",
    "ShareUpdateKey": """{
  "apiKey": 1, "name": "ShareUpdateKey", "validVersions": "0", "flexibleVersions": "none",
   "fields": [
    {"name": "GroupId", "type": "string", "versions": "0"},
    {"name": "TopicId", "type": "uuid", "versions": "0"},
    {"name": "Partition", "type": "int32", "versions": "0"}
  ]}""",
    "ShareUpdateValue": """{
  "apiKey": 1, "name": "ShareUpdateValue", "validVersions": "0", "flexibleVersions": "0+",
   "fields": [
    {"name": "SnapshotEpoch", "type": "int32", "versions": "0+"},
    {"name": "LeaderEpoch", "type": "int32", "versions": "0+"},
    {"name": "StartOffset", "type": "int64", "versions": "0+"},
    {"name": "DeliveryCompleteCount", "type": "int32", "versions": "0+", "taggedVersions": "0+",
     "tag": 0, "default": "-1"},
    {"name": "StateBatches", "type": "[]StateBatch", "versions": "0+", "fields": [
      {"name": "FirstOffset", "type": "int64", "versions": "0+"},
      {"name": "LastOffset", "type": "int64", "versions": "0+"},
      {"name": "DeliveryState", "type": "int8", "versions": "0+"},
      {"name": "DeliveryCount", "type": "int16", "versions": "0+"}]}
  ]}""",
    "ShareGroupMemberMetadataKey": """{
  "apiKey": 10, "name": "ShareGroupMemberMetadataKey", "validVersions": "0",
   "flexibleVersions": "none", "fields": [
    {"name": "GroupId", "type": "string", "versions": "0"},
    {"name": "MemberId", "type": "string", "versions": "0"}
  ]}""",
    "ShareGroupMemberMetadataValue": """{
  "apiKey": 10, "name": "ShareGroupMemberMetadataValue", "validVersions": "0",
   "flexibleVersions": "0+", "fields": [
    {"name": "RackId", "versions": "0+", "nullableVersions": "0+", "type": "string"},
    {"name": "ClientId", "versions": "0+", "type": "string"},
    {"name": "ClientHost", "versions": "0+", "type": "string"},
    {"name": "SubscribedTopicNames", "versions": "0+", "type": "[]string"}
  ]}""",
    "ShareGroupMetadataKey": """{
  "apiKey": 11, "name": "ShareGroupMetadataKey", "validVersions": "0", "flexibleVersions": "none",
   "fields": [
    {"name": "GroupId", "type": "string", "versions": "0"}
  ]}""",
    "ShareGroupMetadataValue": """{
  "apiKey": 11, "name": "ShareGroupMetadataValue", "validVersions": "0", "flexibleVersions": "0+",
   "fields": [
    {"name": "Epoch", "type": "int32", "versions": "0+"},
    {"name": "MetadataHash", "versions": "0+", "type": "int64"}
  ]}""",
    "ShareGroupTargetAssignmentMetadataKey": """{
  "apiKey": 12, "name": "ShareGroupTargetAssignmentMetadataKey", "validVersions": "0",
   "flexibleVersions": "none", "fields": [
    {"name": "GroupId", "type": "string", "versions": "0"}
  ]}""",
    "ShareGroupTargetAssignmentMetadataValue": """{
  "apiKey": 12, "name": "ShareGroupTargetAssignmentMetadataValue", "validVersions": "0",
   "flexibleVersions": "0+", "fields": [
    {"name": "AssignmentEpoch", "versions": "0+", "type": "int32"},
    {"name": "AssignmentTimestamp", "versions": "0+", "taggedVersions": "0+", "tag": 0,
     "type": "int64", "default": 0}
  ]}""",
    "ShareGroupTargetAssignmentMemberKey": """{
  "apiKey": 13, "name": "ShareGroupTargetAssignmentMemberKey", "validVersions": "0",
   "flexibleVersions": "none", "fields": [
    {"name": "GroupId", "type": "string", "versions": "0"},
    {"name": "MemberId", "type": "string", "versions": "0"}
  ]}""",
    "ShareGroupTargetAssignmentMemberValue": """{
  "apiKey": 13, "name": "ShareGroupTargetAssignmentMemberValue", "validVersions": "0",
   "flexibleVersions": "0+", "fields": [
    {"name": "TopicPartitions", "versions": "0+", "type": "[]TopicPartition", "fields": [
      {"name": "TopicId", "versions": "0+", "type": "uuid"},
      {"name": "Partitions", "versions": "0+", "type": "[]int32"}]}
  ]}""",
    "ShareGroupCurrentMemberAssignmentKey": """{
  "apiKey": 14, "name": "ShareGroupCurrentMemberAssignmentKey", "validVersions": "0",
   "flexibleVersions": "none", "fields": [
    {"name": "GroupId", "type": "string", "versions": "0"},
    {"name": "MemberId", "type": "string", "versions": "0"}
  ]}""",
    "ShareGroupCurrentMemberAssignmentValue": """{
  "apiKey": 14, "name": "ShareGroupCurrentMemberAssignmentValue", "validVersions": "0",
   "flexibleVersions": "0+", "fields": [
    {"name": "MemberEpoch", "versions": "0+", "type": "int32"},
    {"name": "PreviousMemberEpoch", "versions": "0+", "type": "int32"},
    {"name": "State", "versions": "0+", "type": "int8"},
    {"name": "AssignedPartitions", "versions": "0+", "type": "[]TopicPartitions"}
  ], "commonStructs": [
    {"name": "TopicPartitions", "versions": "0+", "fields": [
      {"name": "TopicId", "type": "uuid", "versions": "0+"},
      {"name": "Partitions", "type": "[]int32", "versions": "0+"}]}
  ]}""",
    "ShareGroupStatePartitionMetadataKey": """{
  "apiKey": 15, "name": "ShareGroupStatePartitionMetadataKey", "validVersions": "0",
   "flexibleVersions": "none", "fields": [
    {"name": "GroupId", "type": "string", "versions": "0"}
  ]}""",
    "ShareGroupStatePartitionMetadataValue": """{
  "apiKey": 15, "name": "ShareGroupStatePartitionMetadataValue", "validVersions": "0",
   "flexibleVersions": "0+", "fields": [
    {"name": "InitializingTopics", "versions": "0+", "type": "[]TopicPartitionsInfo"},
    {"name": "InitializedTopics", "versions": "0+", "type": "[]TopicPartitionsInfo"},
    {"name": "DeletingTopics", "versions": "0+", "type": "[]TopicInfo"}
  ], "commonStructs": [
    {"name": "TopicPartitionsInfo", "versions": "0+", "fields": [
      {"name": "TopicId", "type": "uuid", "versions": "0+"},
      {"name": "TopicName", "type": "string", "versions": "0+"},
      {"name": "Partitions", "type": "[]int32", "versions": "0+"}]},
    {"name": "TopicInfo", "versions": "0+", "fields": [
      {"name": "TopicId", "type": "uuid", "versions": "0+"},
      {"name": "TopicName", "type": "string", "versions": "0+"}]}
  ]}""",
    "ConsumerGroupRegularExpressionKey": """{
  "apiKey": 16, "name": "ConsumerGroupRegularExpressionKey", "validVersions": "0",
   "flexibleVersions": "none", "fields": [
    {"name": "GroupId", "type": "string", "versions": "0"},
    {"name": "RegularExpression", "type": "string", "versions": "0"}
  ]}""",
    "ConsumerGroupRegularExpressionValue": """{
  "apiKey": 16, "name": "ConsumerGroupRegularExpressionValue", "validVersions": "0",
   "flexibleVersions": "0+", "fields": [
    {"name": "Topics", "versions": "0+", "type": "[]string"},
    {"name": "Version", "versions": "0+", "type": "int64"},
    {"name": "Timestamp", "versions": "0+", "type": "int64"}
  ]}""",
    "StreamsGroupMetadataKey": """{
  "apiKey": 17, "name": "StreamsGroupMetadataKey", "validVersions": "0",
   "flexibleVersions": "none", "fields": [
    {"name": "GroupId", "type": "string", "versions": "0"}
  ]}""",
    "StreamsGroupMetadataValue": """{
  "apiKey": 17, "name": "StreamsGroupMetadataValue", "validVersions": "0",
   "flexibleVersions": "0+", "fields": [
    {"name": "Epoch", "versions": "0+", "type": "int32"},
    {"name": "MetadataHash", "versions": "0+", "type": "int64"},
    {"name": "ValidatedTopologyEpoch", "versions": "0+", "taggedVersions": "0+", "tag": 0,
     "default": -1, "type": "int32"},
    {"name": "LastAssignmentConfigs", "taggedVersions": "0+", "nullableVersions": "0+", "tag": 1,
     "default": null, "type": "[]LastAssignmentConfig"},
    {"name": "StoredDescriptionTopologyEpoch", "versions": "0+", "taggedVersions": "0+", "tag": 2,
     "default": -1, "type": "int32"},
    {"name": "FailedDescriptionTopologyEpoch", "versions": "0+", "taggedVersions": "0+", "tag": 3,
     "default": -1, "type": "int32"}
  ], "commonStructs": [
    {"name": "LastAssignmentConfig", "versions": "0+", "fields": [
      {"name": "Key", "type": "string", "versions": "0+"},
      {"name": "Value", "type": "string", "versions": "0+"}]}
  ]}""",
    "StreamsGroupMemberMetadataKey": """{
  "apiKey": 19, "name": "StreamsGroupMemberMetadataKey", "validVersions": "0",
   "flexibleVersions": "none", "fields": [
    {"name": "GroupId", "type": "string", "versions": "0"},
    {"name": "MemberId", "type": "string", "versions": "0"}
  ]}""",
    "StreamsGroupMemberMetadataValue": """{
  "apiKey": 19, "name": "StreamsGroupMemberMetadataValue", "validVersions": "0",
   "flexibleVersions": "0+", "fields": [
    {"name": "InstanceId", "versions": "0+", "nullableVersions": "0+", "type": "string"},
    {"name": "RackId", "versions": "0+", "nullableVersions": "0+", "type": "string"},
    {"name": "ClientId", "versions": "0+", "type": "string"},
    {"name": "ClientHost", "versions": "0+", "type": "string"},
    {"name": "RebalanceTimeoutMs", "type": "int32", "versions": "0+", "default": -1},
    {"name": "TopologyEpoch", "type": "int32", "versions": "0+"},
    {"name": "ProcessId", "type": "string", "versions": "0+"},
    {"name": "UserEndpoint", "type": "Endpoint", "versions": "0+", "nullableVersions": "0+",
     "default": "null"},
    {"name": "ClientTags", "type": "[]KeyValue", "versions": "0+"}
  ], "commonStructs": [
    {"name": "Endpoint", "versions": "0+", "fields": [
      {"name": "Host", "type": "string", "versions": "0+"},
      {"name": "Port", "type": "uint16", "versions": "0+"}]},
    {"name": "KeyValue", "versions": "0+", "fields": [
      {"name": "Key", "type": "string", "versions": "0+"},
      {"name": "Value", "type": "string", "versions": "0+"}]}
  ]}""",
    "StreamsGroupTargetAssignmentMetadataKey": """{
  "apiKey": 20, "name": "StreamsGroupTargetAssignmentMetadataKey", "validVersions": "0",
   "flexibleVersions": "none", "fields": [
    {"name": "GroupId", "type": "string", "versions": "0"}
  ]}""",
    "StreamsGroupTargetAssignmentMetadataValue": """{
  "apiKey": 20, "name": "StreamsGroupTargetAssignmentMetadataValue", "validVersions": "0",
   "flexibleVersions": "0+", "fields": [
    {"name": "AssignmentEpoch", "versions": "0+", "type": "int32"},
    {"name": "AssignmentTimestamp", "versions": "0+", "taggedVersions": "0+", "tag": 0,
     "type": "int64", "default": 0}
  ]}""",
    "StreamsGroupTargetAssignmentMemberKey": """{
  "apiKey": 21, "name": "StreamsGroupTargetAssignmentMemberKey", "validVersions": "0",
   "flexibleVersions": "none", "fields": [
    {"name": "GroupId", "type": "string", "versions": "0"},
    {"name": "MemberId", "type": "string", "versions": "0"}
  ]}""",
    "StreamsGroupTargetAssignmentMemberValue": """{
  "apiKey": 21, "name": "StreamsGroupTargetAssignmentMemberValue", "validVersions": "0",
   "flexibleVersions": "0+", "fields": [
    {"name": "ActiveTasks", "versions": "0+", "type": "[]TaskIds"},
    {"name": "StandbyTasks", "versions": "0+", "type": "[]TaskIds"},
    {"name": "WarmupTasks", "versions": "0+", "type": "[]TaskIds"}
  ], "commonStructs": [
    {"name": "TaskIds", "versions": "0+", "fields": [
      {"name": "SubtopologyId", "type": "string", "versions": "0+"},
      {"name": "Partitions", "type": "[]int32", "versions": "0+"}]}
  ]}""",
    "StreamsGroupCurrentMemberAssignmentKey": """{
  "apiKey": 22, "name": "StreamsGroupCurrentMemberAssignmentKey", "validVersions": "0",
   "flexibleVersions": "none", "fields": [
    {"name": "GroupId", "type": "string", "versions": "0"},
    {"name": "MemberId", "type": "string", "versions": "0"}
  ]}""",
    "StreamsGroupCurrentMemberAssignmentValue": """{
  "apiKey": 22, "name": "StreamsGroupCurrentMemberAssignmentValue", "validVersions": "0",
   "flexibleVersions": "0+", "fields": [
    {"name": "MemberEpoch", "versions": "0+", "type": "int32"},
    {"name": "PreviousMemberEpoch", "versions": "0+", "type": "int32"},
    {"name": "State", "versions": "0+", "type": "int8"},
    {"name": "ActiveTasks", "versions": "0+", "type": "[]TaskIds"},
    {"name": "StandbyTasks", "versions": "0+", "type": "[]TaskIds"},
    {"name": "WarmupTasks", "versions": "0+", "type": "[]TaskIds"},
    {"name": "ActiveTasksPendingRevocation", "versions": "0+", "type": "[]TaskIds"},
    {"name": "StandbyTasksPendingRevocation", "versions": "0+", "type": "[]TaskIds"},
    {"name": "WarmupTasksPendingRevocation", "versions": "0+", "type": "[]TaskIds"}
  ], "commonStructs": [
    {"name": "TaskIds", "versions": "0+", "fields": [
      {"name": "SubtopologyId", "type": "string", "versions": "0+"},
      {"name": "Partitions", "type": "[]int32", "versions": "0+"},
      {"name": "AssignmentEpochs", "versions": "0+", "nullableVersions": "0+",
       "taggedVersions": "0+", "tag": 0, "type": "[]int32", "default": null}]}
  ]}""",
    "StreamsGroupTopologyKey": """{
  "apiKey": 23, "name": "StreamsGroupTopologyKey", "validVersions": "0",
   "flexibleVersions": "none", "fields": [
    {"name": "GroupId", "type": "string", "versions": "0"}
  ]}""",
    "StreamsGroupTopologyValue": """{
  "apiKey": 23, "name": "StreamsGroupTopologyValue", "validVersions": "0",
   "flexibleVersions": "0+", "fields": [
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
        {"name": "RepartitionSourceTopics", "type": "[]int16", "versions": "0+"}]}]}
  ], "commonStructs": [
    {"name": "TopicConfig", "versions": "0+", "fields": [
      {"name": "key", "type": "string", "versions": "0+"},
      {"name": "value", "type": "string", "versions": "0+"}]},
    {"name": "TopicInfo", "versions": "0+", "fields": [
      {"name": "Name", "type": "string", "versions": "0+"},
      {"name": "Partitions", "type": "int32", "versions": "0+"},
      {"name": "ReplicationFactor", "type": "int16", "versions": "0+"},
      {"name": "TopicConfigs", "type": "[]TopicConfig", "versions": "0+"}]}
  ]}""",
    "TransactionLogKey": """{
  "apiKey": 0, "name": "TransactionLogKey", "validVersions": "0", "flexibleVersions": "none",
   "fields": [
    {"name": "TransactionalId", "type": "string", "versions": "0"}
  ]}""",
    "TransactionLogValue": """{
  "apiKey": 0, "name": "TransactionLogValue", "validVersions": "0-1", "flexibleVersions": "1+",
   "fields": [
    {"name": "ProducerId", "type": "int64", "versions": "0+"},
    {"name": "PreviousProducerId", "type": "int64", "taggedVersions": "1+", "tag": 0,
     "default": -1},
    {"name": "NextProducerId", "type": "int64", "taggedVersions": "1+", "tag": 1, "default": -1},
    {"name": "ProducerEpoch", "type": "int16", "versions": "0+"},
    {"name": "NextProducerEpoch", "type": "int16", "default": -1, "taggedVersions": "1+", "tag": 3},
    {"name": "TransactionTimeoutMs", "type": "int32", "versions": "0+"},
    {"name": "TransactionStatus", "type": "int8", "versions": "0+"},
    {"name": "TransactionPartitions", "type": "[]PartitionsSchema", "versions": "0+",
     "nullableVersions": "0+", "fields": [
      {"name": "Topic", "type": "string", "versions": "0+"},
      {"name": "PartitionIds", "type": "[]int32", "versions": "0+"}]},
    {"name": "TransactionLastUpdateTimestampMs", "type": "int64", "versions": "0+"},
    {"name": "TransactionStartTimestampMs", "type": "int64", "versions": "0+"},
    {"name": "ClientTransactionVersion", "type": "int16", "default": 0, "taggedVersions": "1+",
     "tag": 2}
  ]}""",
    "OffsetCommitValue": """{
  "apiKey": 1, "name": "OffsetCommitValue", "validVersions": "0-4", "flexibleVersions": "4+",
   "fields": [
    {"name": "offset", "type": "int64", "versions": "0+"},
    {"name": "leaderEpoch", "type": "int32", "versions": "3+", "default": -1},
    {"name": "metadata", "type": "string", "versions": "0+"},
    {"name": "commitTimestamp", "type": "int64", "versions": "0+"},
    {"name": "expireTimestamp", "type": "int64", "versions": "1", "default": -1},
    {"name": "topicId", "type": "uuid", "versions": "4+", "taggedVersions": "4+", "tag": 0}
  ]}""",
}

# Which decoder reads each schema's records: (topic decoder, its record table)
SHARE_STATE = ("share-group-state", decode_share_group_state)
OFFSETS = ("consumer-offsets", decode_consumer_offsets)
TXN = ("transaction-state", decode_transaction_state)
Decoder = tuple[str, Callable[[bytes | None, bytes | None], CoordinatorRecord]]
TABLES: dict[str, dict[int, RecordSchema]] = {
    "share-group-state": SHARE_GROUP_STATE_RECORDS,
    "consumer-offsets": CONSUMER_OFFSETS_RECORDS,
    "transaction-state": TRANSACTION_STATE_RECORDS,
}
TOPIC_OF = {
    **{n: SHARE_STATE for n in KAFKA_JSON if n.startswith(("ShareSnapshot", "ShareUpdate"))},
    **{n: TXN for n in KAFKA_JSON if n.startswith("TransactionLog")},
}


def topic_of(name: str) -> Decoder:
    return TOPIC_OF.get(name, OFFSETS)


def spec(name: str) -> dict[str, Any]:
    parsed: dict[str, Any] = json.loads(KAFKA_JSON[name])
    return parsed


# ---------------------------------------------------------------------------------------------
# kafka-python's encoder, fed Kafka's JSON


@pytest.fixture(scope="module")
def kp(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """kafka-python ApiData classes of KAFKA_JSON. kafka-python takes ``"type": "data"`` only
    and a ``versions`` on every field: a tagged-only field gets its taggedVersions, as Kafka's
    generator does."""
    api_data = pytest.importorskip("kafka.protocol.api_data")

    def versions_everywhere(fields: list[dict[str, Any]]) -> None:
        for f in fields:
            f.setdefault("versions", f.get("taggedVersions"))
            versions_everywhere(f.get("fields", []))

    root = tmp_path_factory.mktemp("kp4x")
    name = f"klogtool_kp4x_{uuid.uuid4().hex}"
    pkg = root / name
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for schema_name in KAFKA_JSON:
        data = spec(schema_name)
        data["type"] = "data"
        versions_everywhere(data["fields"])
        for common in data.get("commonStructs", []):
            versions_everywhere(common["fields"])
        (pkg / f"{schema_name}.json").write_text(json.dumps(data))
    sys.path.insert(0, str(root))
    try:
        module = __import__(name)
        return {
            n: types.new_class(n, (api_data.ApiData,), {"load_json": module}) for n in KAFKA_JSON
        }
    finally:
        sys.path.remove(str(root))


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _camel(name: str) -> str:
    return name[:1].lower() + name[1:]


def _uuid(text: str) -> uuid.UUID:
    """Kafka's uuid text (URL-safe base64 of the 16 bytes, unpadded)."""
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=="))


def _kwargs(
    cls: Any, fields: list[dict[str, Any]], common: dict[str, Any], data: dict[str, Any]
) -> dict[str, Any]:
    """kafka-python's constructor arguments for ``data`` (Kafka's JSON form); a field missing
    from ``data`` (a tagged field at its default) takes kafka-python's default."""
    out: dict[str, Any] = {}
    for f in fields:
        key = _camel(f["name"])
        if key not in data:
            continue
        value, kind = data[key], f["type"]
        base = kind.removeprefix("[]")
        if value is None:
            out[_snake(f["name"])] = None
        elif base == "uuid":
            out[_snake(f["name"])] = _uuid(value)
        elif base[:1].isupper():
            sub_cls = getattr(cls, base)
            sub_fields = f.get("fields") or common[base]

            def build(item: dict[str, Any], c: Any = sub_cls, sf: Any = sub_fields) -> Any:
                return c(**_kwargs(c, sf, common, item))

            out[_snake(f["name"])] = [build(v) for v in value] if kind[:2] == "[]" else build(value)
        else:
            out[_snake(f["name"])] = value
    return out


def _regex_value(data: dict[str, Any], version: int) -> bytes:
    """ConsumerGroupRegularExpressionValue by hand: kafka-python takes its field ``Version`` for
    the message's version. Topics (compact array of compact strings), Version, Timestamp, no
    tagged fields."""
    topics = [_cstr(t) for t in data["topics"]]
    return (
        struct.pack(">h", version)
        + _carray(topics)
        + struct.pack(">qq", data["version"], data["timestamp"])
        + b"\x00"
    )


def kafka_bytes(kp: dict[str, Any], name: str, data: dict[str, Any], version: int) -> bytes:
    """``name`` at ``version`` with its int16 version prefix, as kafka-python writes it."""
    if name == "ConsumerGroupRegularExpressionValue":
        return _regex_value(data, version)
    s = spec(name)
    common = {c["name"]: c["fields"] for c in s.get("commonStructs", [])}
    cls = kp[name]
    raw: bytes = cls(version=version, **_kwargs(cls, s["fields"], common, data)).encode()
    return raw


def kafka_key(kp: dict[str, Any], name: str, data: dict[str, Any]) -> bytes:
    """A coordinator key: the record type (the schema's apiKey), then the key at version 0."""
    return struct.pack(">h", spec(name)["apiKey"]) + kafka_bytes(kp, name, data, 0)[2:]


# ---------------------------------------------------------------------------------------------
# The records: (key schema, key JSON, value schema, value version, value JSON). Each JSON is
# what Kafka prints; together they set every field of every schema, tagged ones set and not.

T1 = "Uj5wn_FqTXirEASvVZRY1w"
T2 = "AAAAAAAAAAAAAAAAAAAAAQ"
GROUP = {"groupId": "g1"}
MEMBER = {"groupId": "g1", "memberId": "m-1"}
BATCHES = [
    {"firstOffset": 0, "lastOffset": 4, "deliveryState": 2, "deliveryCount": 1},
    {"firstOffset": 5, "lastOffset": 9, "deliveryState": 0, "deliveryCount": 3},
]
SNAPSHOT = {
    "snapshotEpoch": 7,
    "stateEpoch": 2,
    "leaderEpoch": 11,
    "startOffset": 100,
    "createTimestamp": 1_744_356_362_818,
    "writeTimestamp": 1_744_356_362_900,
    "stateBatches": BATCHES,
}
UPDATE = {"snapshotEpoch": 7, "leaderEpoch": 11, "startOffset": -1, "stateBatches": BATCHES[:1]}
TASKS = [
    {"subtopologyId": "0", "partitions": [0, 2]},
    {"subtopologyId": "1", "partitions": []},
]
TOPIC_INFO = {
    "name": "app-store-changelog",
    "partitions": 0,
    "replicationFactor": -1,
    "topicConfigs": [{"key": "cleanup.policy", "value": "compact"}],
}
TXN_V0 = {
    "producerId": 5,
    "producerEpoch": 1,
    "transactionTimeoutMs": 60000,
    "transactionStatus": 1,
    "transactionPartitions": [{"topic": "t", "partitionIds": [0, 1]}],
    "transactionLastUpdateTimestampMs": 10,
    "transactionStartTimestampMs": 9,
}
SHARE_KEY = {"groupId": "gs1", "topicId": T1, "partition": 3}

CASES: list[tuple[str, dict[str, Any], str, int, dict[str, Any]]] = [
    # __share_group_state
    ("ShareSnapshotKey", SHARE_KEY, "ShareSnapshotValue", 0, SNAPSHOT),
    (
        "ShareSnapshotKey",
        SHARE_KEY,
        "ShareSnapshotValue",
        0,
        {  # the tagged field at its place in the schema, as Kafka prints it
            "snapshotEpoch": 0,
            "stateEpoch": 0,
            "leaderEpoch": -1,
            "startOffset": -1,
            "deliveryCompleteCount": 4,
            "createTimestamp": 1,
            "writeTimestamp": 2,
            "stateBatches": [],
        },
    ),
    ("ShareUpdateKey", SHARE_KEY, "ShareUpdateValue", 0, UPDATE),
    (
        "ShareUpdateKey",
        SHARE_KEY,
        "ShareUpdateValue",
        0,
        {
            "snapshotEpoch": 7,
            "leaderEpoch": 11,
            "startOffset": 0,
            "deliveryCompleteCount": 0,
            "stateBatches": BATCHES,
        },
    ),
    # __consumer_offsets: share groups
    (
        "ShareGroupMemberMetadataKey",
        MEMBER,
        "ShareGroupMemberMetadataValue",
        0,
        {"rackId": None, "clientId": "c", "clientHost": "/10.0.0.1", "subscribedTopicNames": ["a"]},
    ),
    (
        "ShareGroupMemberMetadataKey",
        MEMBER,
        "ShareGroupMemberMetadataValue",
        0,
        {"rackId": "r1", "clientId": "", "clientHost": "h", "subscribedTopicNames": []},
    ),
    (
        "ShareGroupMetadataKey",
        GROUP,
        "ShareGroupMetadataValue",
        0,
        {"epoch": 3, "metadataHash": -9},
    ),
    (
        "ShareGroupTargetAssignmentMetadataKey",
        GROUP,
        "ShareGroupTargetAssignmentMetadataValue",
        0,
        {"assignmentEpoch": 3},
    ),
    (
        "ShareGroupTargetAssignmentMetadataKey",
        GROUP,
        "ShareGroupTargetAssignmentMetadataValue",
        0,
        {"assignmentEpoch": 3, "assignmentTimestamp": 1_760_000_000_000},
    ),
    (
        "ShareGroupTargetAssignmentMemberKey",
        MEMBER,
        "ShareGroupTargetAssignmentMemberValue",
        0,
        {
            "topicPartitions": [
                {"topicId": T1, "partitions": [0, 1]},
                {"topicId": T2, "partitions": []},
            ]
        },
    ),
    (
        "ShareGroupCurrentMemberAssignmentKey",
        MEMBER,
        "ShareGroupCurrentMemberAssignmentValue",
        0,
        {
            "memberEpoch": 4,
            "previousMemberEpoch": 3,
            "state": 0,
            "assignedPartitions": [{"topicId": T1, "partitions": [2]}],
        },
    ),
    (
        "ShareGroupStatePartitionMetadataKey",
        GROUP,
        "ShareGroupStatePartitionMetadataValue",
        0,
        {
            "initializingTopics": [{"topicId": T2, "topicName": "new", "partitions": [0]}],
            "initializedTopics": [{"topicId": T1, "topicName": "t", "partitions": [0, 1, 2]}],
            "deletingTopics": [{"topicId": T2, "topicName": "gone"}],
        },
    ),
    (
        "ConsumerGroupRegularExpressionKey",
        {"groupId": "g1", "regularExpression": "^orders-.*"},
        "ConsumerGroupRegularExpressionValue",
        0,
        {"topics": ["orders-eu", "orders-us"], "version": 12, "timestamp": 1_700_000_000_000},
    ),
    # __consumer_offsets: streams groups
    (
        "StreamsGroupMetadataKey",
        GROUP,
        "StreamsGroupMetadataValue",
        0,
        {"epoch": 5, "metadataHash": 123456789},
    ),
    (
        "StreamsGroupMetadataKey",
        GROUP,
        "StreamsGroupMetadataValue",
        0,
        {
            "epoch": 5,
            "metadataHash": 0,
            "validatedTopologyEpoch": 2,
            "lastAssignmentConfigs": [{"key": "num.standby.replicas", "value": "1"}],
            "storedDescriptionTopologyEpoch": 2,
            "failedDescriptionTopologyEpoch": 1,
        },
    ),
    (
        "StreamsGroupMemberMetadataKey",
        MEMBER,
        "StreamsGroupMemberMetadataValue",
        0,
        {
            "instanceId": "i-1",
            "rackId": None,
            "clientId": "app-1-StreamThread-1",
            "clientHost": "/10.0.0.2",
            "rebalanceTimeoutMs": 300000,
            "topologyEpoch": 2,
            "processId": "8c6b7c3e",
            "userEndpoint": {"host": "app-1", "port": 65535},
            "clientTags": [{"key": "zone", "value": "a"}],
        },
    ),
    (
        "StreamsGroupMemberMetadataKey",
        MEMBER,
        "StreamsGroupMemberMetadataValue",
        0,
        {
            "instanceId": None,
            "rackId": "r2",
            "clientId": "c",
            "clientHost": "h",
            "rebalanceTimeoutMs": -1,
            "topologyEpoch": 0,
            "processId": "",
            "userEndpoint": None,
            "clientTags": [],
        },
    ),
    (
        "StreamsGroupTargetAssignmentMetadataKey",
        GROUP,
        "StreamsGroupTargetAssignmentMetadataValue",
        0,
        {"assignmentEpoch": 6},
    ),
    (
        "StreamsGroupTargetAssignmentMetadataKey",
        GROUP,
        "StreamsGroupTargetAssignmentMetadataValue",
        0,
        {"assignmentEpoch": 6, "assignmentTimestamp": 42},
    ),
    (
        "StreamsGroupTargetAssignmentMemberKey",
        MEMBER,
        "StreamsGroupTargetAssignmentMemberValue",
        0,
        {"activeTasks": TASKS, "standbyTasks": TASKS[1:], "warmupTasks": []},
    ),
    (
        "StreamsGroupCurrentMemberAssignmentKey",
        MEMBER,
        "StreamsGroupCurrentMemberAssignmentValue",
        0,
        {
            "memberEpoch": 9,
            "previousMemberEpoch": 8,
            "state": 1,
            "activeTasks": [{**TASKS[0], "assignmentEpochs": [8, 9]}],
            "standbyTasks": TASKS[1:],
            "warmupTasks": [],
            "activeTasksPendingRevocation": TASKS[:1],
            "standbyTasksPendingRevocation": [],
            "warmupTasksPendingRevocation": [{"subtopologyId": "2", "partitions": [5]}],
        },
    ),
    (
        "StreamsGroupTopologyKey",
        GROUP,
        "StreamsGroupTopologyValue",
        0,
        {
            "epoch": 2,
            "subtopologies": [
                {
                    "subtopologyId": "0",
                    "sourceTopics": ["input"],
                    "sourceTopicRegex": ["in-.*"],
                    "stateChangelogTopics": [TOPIC_INFO],
                    "repartitionSinkTopics": ["app-repartition"],
                    "repartitionSourceTopics": [{**TOPIC_INFO, "topicConfigs": []}],
                    "copartitionGroups": [
                        {
                            "sourceTopics": [0],
                            "sourceTopicRegex": [0],
                            "repartitionSourceTopics": [-1],
                        }
                    ],
                }
            ],
        },
    ),
    # __transaction_state: every version of TransactionLogValue
    ("TransactionLogKey", {"transactionalId": "tx-1"}, "TransactionLogValue", 0, TXN_V0),
    (
        "TransactionLogKey",
        {"transactionalId": "tx-1"},
        "TransactionLogValue",
        0,
        {**TXN_V0, "transactionPartitions": None},
    ),
    ("TransactionLogKey", {"transactionalId": "tx-1"}, "TransactionLogValue", 1, TXN_V0),
    (
        "TransactionLogKey",
        {"transactionalId": "tx-2"},
        "TransactionLogValue",
        1,
        {
            "producerId": 6,
            "previousProducerId": 5,
            "nextProducerId": 7,
            "producerEpoch": 0,
            "nextProducerEpoch": 1,
            "transactionTimeoutMs": 60000,
            "transactionStatus": 2,
            "transactionPartitions": [],
            "transactionLastUpdateTimestampMs": 10,
            "transactionStartTimestampMs": 9,
            "clientTransactionVersion": 2,
        },
    ),
]
# OffsetCommitValue, every version (its key is the classic one, written by hand)
OFFSET_COMMITS: list[tuple[int, dict[str, Any]]] = [
    (0, {"offset": 5, "metadata": "m", "commitTimestamp": 10}),
    (1, {"offset": 5, "metadata": "", "commitTimestamp": 10, "expireTimestamp": 20}),
    (2, {"offset": 5, "metadata": "m", "commitTimestamp": 10}),
    (3, {"offset": 5, "leaderEpoch": 4, "metadata": "m", "commitTimestamp": 10}),
    (4, {"offset": 5, "leaderEpoch": -1, "metadata": "m", "commitTimestamp": 10}),
    (4, {"offset": 5, "leaderEpoch": 4, "metadata": "m", "commitTimestamp": 10, "topicId": T1}),
]


def _case_id(case: tuple[str, dict[str, Any], str, int, dict[str, Any]]) -> str:
    return f"{case[2]}-v{case[3]}"


@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_records_decode_as_kafka_writes_them(
    kp: dict[str, Any], case: tuple[str, dict[str, Any], str, int, dict[str, Any]]
) -> None:
    key_name, key_json, value_name, version, value_json = case
    decoder_name, decode = topic_of(value_name)
    key = kafka_key(kp, key_name, key_json)
    value = kafka_bytes(kp, value_name, value_json, version)
    record_type = spec(key_name)["apiKey"]
    rec = decode(key, value)
    assert (rec.kind, rec.record_type, rec.key_name, rec.value_name) == (
        "record",
        record_type,
        key_name,
        value_name,
    )
    assert rec.key == key_json
    assert rec.value_version == version
    assert rec.value == value_json
    assert list(rec.value) == list(value_json)  # Kafka's field order
    assert decode_internal(decoder_name, key, value) == (
        {"type": str(record_type), "data": key_json},
        {"version": str(version), "data": value_json},
    )
    tombstone = decode(key, None)
    assert (tombstone.kind, tombstone.key, tombstone.value) == ("tombstone", key_json, None)


def test_offset_commit_values_every_version(kp: dict[str, Any]) -> None:
    key = struct.pack(">hh", 1, 1) + b"g" + struct.pack(">h", 1) + b"t" + struct.pack(">i", 0)
    for version, value_json in OFFSET_COMMITS:
        rec = decode_consumer_offsets(
            key, kafka_bytes(kp, "OffsetCommitValue", value_json, version)
        )
        assert (rec.value_version, rec.value) == (version, value_json)


# ---------------------------------------------------------------------------------------------
# The tables and the record types


def _check_schemas() -> Any:
    """bench/check_schemas.py (a script) as a module: its field-by-field comparison."""
    spec_ = importlib.util.spec_from_file_location(
        "klogtool_bench_check_schemas", ROOT / "bench" / "check_schemas.py"
    )
    assert spec_ is not None and spec_.loader is not None
    module = importlib.util.module_from_spec(spec_)
    spec_.loader.exec_module(module)
    return module


def _table_message(name: str) -> Message:
    decoder_name, _ = topic_of(name)
    schema = TABLES[decoder_name][spec(name)["apiKey"]]
    return schema.key if name.endswith("Key") else schema.value


def test_tables_are_kafkas_json_field_by_field() -> None:
    compare = _check_schemas().compare
    for name in KAFKA_JSON:
        theirs = load_json_schema(KAFKA_JSON[name])
        mine = _table_message(name)
        key = name.endswith("Key")
        assert mine.name == name
        assert list(compare(mine.fields, theirs.fields, name, key=key)) == []
        assert mine.flexible_versions == theirs.flexible_versions
        if not key:  # klogtool reads every key at version 0
            assert mine.valid_versions == theirs.valid_versions


def test_record_types_are_the_schemas_api_keys() -> None:
    group_types = {spec(n)["apiKey"] for n in KAFKA_JSON if topic_of(n) == OFFSETS}
    assert group_types <= set(GroupRecordType)
    assert {int(t) for t in ShareRecordType} == {0, 1}
    for name in KAFKA_JSON:
        decoder_name, _ = topic_of(name)
        schema = TABLES[decoder_name][spec(name)["apiKey"]]
        assert name in (schema.key.name, schema.value.name)
    # Kafka 4.1+ has no record type 9 (the 4.0 preview's ShareGroupPartitionMetadata) nor 18
    for gone in (9, 18, 24):
        assert decode_consumer_offsets(struct.pack(">hh", gone, 1) + b"g", b"\x00\x00").is_unknown
    assert decode_share_group_state(struct.pack(">h", 2), None).is_unknown


def test_share_group_state_decoder_is_registered() -> None:
    assert "share-group-state" in INTERNAL_DECODERS
    assert "share-group-state" not in UNIMPLEMENTED_DECODERS
    for name in ("__share_group_state", "__share_group_state-0", "__share_group_state-49"):
        assert auto_decoder_for_topic(name) == "share-group-state"


def test_kafka_dump_text_share_group_state(kp: dict[str, Any]) -> None:
    """DumpLogSegments' --share-group-state-decoder (Kafka 4.1+: CoordinatorRecordMessageParser),
    as its own test (DumpLogSegmentsTest.testShareGroupStateMessageParser) expects it."""
    key = kafka_key(kp, "ShareSnapshotKey", {"groupId": "gs1", "topicId": T1, "partition": 0})
    snapshot = {
        "snapshotEpoch": 0,
        "stateEpoch": 0,
        "leaderEpoch": 0,
        "startOffset": 0,
        "createTimestamp": 1744356362818,
        "writeTimestamp": 1744356362818,
        "stateBatches": [
            {"firstOffset": 0, "lastOffset": 4, "deliveryState": 2, "deliveryCount": 1}
        ],
    }
    value = kafka_bytes(kp, "ShareSnapshotValue", snapshot, 0)
    key_text = (
        '{"type":"0","data":{"groupId":"gs1","topicId":"Uj5wn_FqTXirEASvVZRY1w","partition":0}}'
    )
    assert kafka_dump_text("share-group-state", key, value, 0) == (
        key_text,
        '{"version":"0","data":{"snapshotEpoch":0,"stateEpoch":0,"leaderEpoch":0,"startOffset":0,'
        '"createTimestamp":1744356362818,"writeTimestamp":1744356362818,"stateBatches":[{'
        '"firstOffset":0,"lastOffset":4,"deliveryState":2,"deliveryCount":1}]}}',
    )
    assert kafka_dump_text("share-group-state", key, None, 0) == (key_text, "<DELETE>")
    unknown = struct.pack(">h", 32767)
    assert kafka_dump_text("share-group-state", unknown, b"", 0) == (
        "Unknown record type 32767 at offset 0, skipping.",
        None,
    )
    # a ShareSnapshotValue under a ShareUpdateKey: its bytes do not fit (Kafka: "non-nullable
    # field stateBatches was serialized as null")
    update_key = kafka_key(kp, "ShareUpdateKey", {"groupId": "g", "topicId": T1, "partition": 0})
    empty = kafka_bytes(kp, "ShareSnapshotValue", {**snapshot, "stateBatches": []}, 0)
    text, payload = kafka_dump_text("share-group-state", update_key, empty, 7)
    assert text is not None and text.startswith("Error at offset 7, skipping. value: ")
    assert "serialized as null" in text and payload is None
    with pytest.raises(CorruptRecordError, match="missing key"):
        kafka_dump_text("share-group-state", None, value, 0)


# ---------------------------------------------------------------------------------------------
# The 4.0 preview's layouts (hand-written from Kafka 4.0's schema files)


def _cstr(text: str) -> bytes:
    raw = text.encode()
    return encode_uvarint(len(raw) + 1) + raw


def _carray(items: list[bytes]) -> bytes:
    return encode_uvarint(len(items) + 1) + b"".join(items)


PREVIEW_4_0: list[tuple[str, bytes, bytes]] = [
    # ShareSnapshotValue v0 of 4.0: SnapshotEpoch uint16, StateEpoch, LeaderEpoch, StartOffset,
    # StateBatches (no timestamps)
    (
        "share-group-state",
        struct.pack(">hh", 0, 1) + b"g" + bytes(16) + struct.pack(">i", 0),
        struct.pack(">hHiiq", 0, 1, 2, 3, 4) + _carray([]) + b"\x00",
    ),
    # ShareGroupMetadataValue of 4.0: Epoch only (4.1 added MetadataHash)
    ("consumer-offsets", struct.pack(">hh", 11, 1) + b"g", struct.pack(">hi", 0, 5) + b"\x00"),
    # ShareGroupStatePartitionMetadataValue of 4.0: InitializedTopics, DeletingTopics
    (
        "consumer-offsets",
        struct.pack(">hh", 15, 1) + b"g",
        struct.pack(">h", 0)
        + _carray([bytes(16) + _cstr("t") + _carray([struct.pack(">i", 0)]) + b"\x00"])
        + _carray([])
        + b"\x00",
    ),
]


@pytest.mark.parametrize("decoder_name, key, value", PREVIEW_4_0)
def test_preview_layouts_of_4_0_are_format_errors(
    decoder_name: str, key: bytes, value: bytes
) -> None:
    with pytest.raises(FormatError):
        decode_internal(decoder_name, key, value)
    text, payload = kafka_dump_text(decoder_name, key, value, 3)
    assert text is not None and text.startswith("Error at offset 3, skipping. value: ")
    assert payload is None


def test_type_9_of_the_4_0_preview_is_unknown() -> None:
    # ShareGroupPartitionMetadataKey (9) and a value of its 4.0 layout: Kafka 4.1+ skips it
    key = struct.pack(">hh", 9, 1) + b"g"
    value = struct.pack(">h", 0) + _carray([]) + b"\x00"
    assert decode_internal("consumer-offsets", key, value) == ({"type": "9", "unknown": True}, None)
    assert kafka_dump_text("consumer-offsets", key, value, 8) == (
        "Unknown record type 9 at offset 8, skipping.",
        None,
    )


# ---------------------------------------------------------------------------------------------
# Malformed records: a FormatError, never another exception


def _decodes_or_format_error(decoder_name: str, key: bytes | None, value: bytes | None) -> None:
    for call in (decode_internal, lambda n, k, v: kafka_dump_text(n, k, v, 0)):
        try:
            call(decoder_name, key, value)
        except FormatError:
            pass


HYP = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(scope="module")
def encoded(kp: dict[str, Any]) -> list[tuple[str, bytes, bytes]]:
    return [
        (topic_of(v)[0], kafka_key(kp, k, kj), kafka_bytes(kp, v, vj, ver))
        for k, kj, v, ver, vj in CASES
    ]


@HYP
@given(data=st.data())
def test_truncated_and_mutated_records(
    encoded: list[tuple[str, bytes, bytes]], data: st.DataObject
) -> None:
    decoder_name, key, value = data.draw(st.sampled_from(encoded))
    part = data.draw(st.sampled_from(["key", "value"]))
    raw = bytearray(key if part == "key" else value)
    how = data.draw(st.sampled_from(["truncate", "mutate", "insert"]))
    pos = data.draw(st.integers(0, max(0, len(raw) - 1)))
    if how == "truncate":
        del raw[pos:]
    elif how == "mutate":
        for _ in range(data.draw(st.integers(1, 4))):
            i = data.draw(st.integers(0, max(0, len(raw) - 1)))
            if raw:
                raw[i] = data.draw(st.integers(0, 255))
    else:
        raw[pos:pos] = data.draw(st.binary(min_size=1, max_size=8))
    mutated = bytes(raw)
    if part == "key":
        _decodes_or_format_error(decoder_name, mutated, value)
    else:
        _decodes_or_format_error(decoder_name, key, mutated)


@HYP
@given(
    decoder_name=st.sampled_from(["share-group-state", "consumer-offsets", "transaction-state"]),
    record_type=st.integers(-1, 25),
    key_tail=st.binary(max_size=40),
    value=st.one_of(st.none(), st.binary(max_size=80)),
)
def test_garbage_of_every_record_type(
    decoder_name: str, record_type: int, key_tail: bytes, value: bytes | None
) -> None:
    key = struct.pack(">h", record_type) + key_tail
    _decodes_or_format_error(decoder_name, key, value)
    if value is not None and len(value) >= 2:
        # and with a known version, so the bytes reach the value's fields
        _decodes_or_format_error(decoder_name, key, b"\x00\x00" + value[2:])


# ---------------------------------------------------------------------------------------------
# dump-segments end to end: a __share_group_state partition directory


def test_dump_segments_decodes_share_group_state(kp: dict[str, Any], tmp_path: Path) -> None:
    from support.cli import jsonl, run

    d = tmp_path / "__share_group_state-7"
    d.mkdir()
    key = kafka_key(kp, "ShareSnapshotKey", SHARE_KEY)
    update_key = kafka_key(kp, "ShareUpdateKey", SHARE_KEY)
    snapshot = kafka_bytes(kp, "ShareSnapshotValue", SNAPSHOT, 0)
    records = [
        (key, snapshot),
        (update_key, kafka_bytes(kp, "ShareUpdateValue", UPDATE, 0)),
        (key, None),
        (key, snapshot[:-9]),  # truncated
        (struct.pack(">h", 5) + b"x", b"\x00\x00"),
    ]
    batch = encode_batch([Record(i, 1000, k, v) for i, (k, v) in enumerate(records)])
    (d / "00000000000000000000.log").write_bytes(batch)

    code, out, err = run("dump-segments", "--print-data", "--format", "kafka", d.name, cwd=tmp_path)
    assert code == 0, err
    lines = [line for line in out.splitlines() if line.startswith("|")]
    key_text = '{"type":"0","data":{"groupId":"gs1","topicId":"' + T1 + '","partition":3}}'
    assert lines[0].endswith(f" key: {key_text} payload: " + _kafka_json(SNAPSHOT, 0))
    assert lines[1].endswith(" payload: " + _kafka_json(UPDATE, 0))
    assert '"type":"1"' in lines[1]
    assert lines[2].endswith(f" key: {key_text} payload: <DELETE>")
    assert " key: Error at offset 3, skipping. value: " in lines[3] and "payload" not in lines[3]
    assert lines[4].endswith(" key: Unknown record type 5 at offset 4, skipping.")

    code, out, err = run("dump-segments", "--print-data", "--format", "jsonl", d.name, cwd=tmp_path)
    assert code == 0, err
    objs = [o for o in jsonl(out) if o["type"] == "record"]
    assert objs[0]["key"] == {"type": "0", "data": SHARE_KEY}
    assert objs[0]["value"] == {"version": "0", "data": SNAPSHOT}
    assert objs[2]["value"] is None and "decode_error" not in objs[2]
    assert objs[3]["value"] is None and objs[3]["decode_error"].startswith("share-group-state: ")
    assert objs[4]["key"] == {"type": "5", "unknown": True}


def _kafka_json(data: dict[str, Any], version: int) -> str:
    return json.dumps({"version": str(version), "data": data}, separators=(",", ":"))
