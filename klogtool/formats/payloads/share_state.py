"""``__share_group_state`` records: the share coordinator's (KIP-932; docs/kafka-rules.md:
Internal topics).

Schemas follow apache/kafka ``share-coordinator/src/main/resources/common/message/*.json`` as
released in Kafka 4.1 and 4.2, with the framing of :mod:`.coordinator` (the key's int16 is the
record type, Kafka's ``apiKey``):

====  ====================================  ==================================================
type  key (group, topic id, partition)      value (version 0, flexible)
====  ====================================  ==================================================
0     ShareSnapshotKey                      ShareSnapshotValue: a share-partition's whole state
1     ShareUpdateKey                        ShareUpdateValue: the batches changed since it
====  ====================================  ==================================================

4.2 added the tagged field ``DeliveryCompleteCount`` (KIP-1226, default -1) to both values.
The 4.0 preview wrote another layout (``SnapshotEpoch`` a uint16, no timestamps in the
snapshot); Kafka 4.1 does not read it and neither does this table: such a record raises a
:class:`~klogtool.formats.errors.FormatError` where its bytes do not fit. Other types decode
as ``"unknown"``.
"""

from __future__ import annotations

from enum import IntEnum

from klogtool.formats.payloads.coordinator import (
    Bytes,
    CoordinatorRecord,
    RecordSchema,
    decode_coordinator_record,
)
from klogtool.formats.payloads.schema import messages_from_json

__all__ = [
    "DELIVERY_STATES",
    "SHARE_GROUP_STATE_RECORDS",
    "ShareRecordType",
    "decode_share_group_state",
]

SCHEMA_JSON = """[
{"name": "ShareSnapshotKey", "validVersions": "0", "flexibleVersions": "none",
 "fields": [
  {"name": "GroupId", "type": "string", "versions": "0+"},
  {"name": "TopicId", "type": "uuid", "versions": "0+"},
  {"name": "Partition", "type": "int32", "versions": "0+"}]},
{"name": "ShareSnapshotValue", "validVersions": "0", "flexibleVersions": "0+",
 "fields": [
  {"name": "SnapshotEpoch", "type": "int32", "versions": "0+"},
  {"name": "StateEpoch", "type": "int32", "versions": "0+"},
  {"name": "LeaderEpoch", "type": "int32", "versions": "0+"},
  {"name": "StartOffset", "type": "int64", "versions": "0+"},
  {"name": "DeliveryCompleteCount", "type": "int32", "versions": "0+", "tag": 0,
   "taggedVersions": "0+", "default": "-1"},
  {"name": "CreateTimestamp", "type": "int64", "versions": "0+"},
  {"name": "WriteTimestamp", "type": "int64", "versions": "0+"},
  {"name": "StateBatches", "type": "[]StateBatch", "versions": "0+", "fields": [
    {"name": "FirstOffset", "type": "int64", "versions": "0+"},
    {"name": "LastOffset", "type": "int64", "versions": "0+"},
    {"name": "DeliveryState", "type": "int8", "versions": "0+"},
    {"name": "DeliveryCount", "type": "int16", "versions": "0+"}]}]},
{"name": "ShareUpdateKey", "validVersions": "0", "flexibleVersions": "none",
 "fields": [
  {"name": "GroupId", "type": "string", "versions": "0+"},
  {"name": "TopicId", "type": "uuid", "versions": "0+"},
  {"name": "Partition", "type": "int32", "versions": "0+"}]},
{"name": "ShareUpdateValue", "validVersions": "0", "flexibleVersions": "0+",
 "fields": [
  {"name": "SnapshotEpoch", "type": "int32", "versions": "0+"},
  {"name": "LeaderEpoch", "type": "int32", "versions": "0+"},
  {"name": "StartOffset", "type": "int64", "versions": "0+"},
  {"name": "DeliveryCompleteCount", "type": "int32", "versions": "0+", "tag": 0,
   "taggedVersions": "0+", "default": "-1"},
  {"name": "StateBatches", "type": "[]StateBatch", "versions": "0+", "fields": [
    {"name": "FirstOffset", "type": "int64", "versions": "0+"},
    {"name": "LastOffset", "type": "int64", "versions": "0+"},
    {"name": "DeliveryState", "type": "int8", "versions": "0+"},
    {"name": "DeliveryCount", "type": "int16", "versions": "0+"}]}]}
]"""
_MESSAGES = messages_from_json(SCHEMA_JSON)

# StateBatch.DeliveryState (Kafka's RecordState; only 0, 2 and 4 are persisted)
DELIVERY_STATES: dict[int, str] = {
    0: "Available",
    1: "Acquired",
    2: "Acknowledged",
    3: "Archiving",
    4: "Archived",
}


class ShareRecordType(IntEnum):
    """Kafka's share-coordinator ``CoordinatorRecordType`` (the key's int16)."""

    SHARE_SNAPSHOT = 0
    SHARE_UPDATE = 1


SHARE_GROUP_STATE_RECORDS: dict[int, RecordSchema] = {
    int(t): RecordSchema(int(t), _MESSAGES[f"{stem}Key"], _MESSAGES[f"{stem}Value"])
    for t, stem in (
        (ShareRecordType.SHARE_SNAPSHOT, "ShareSnapshot"),
        (ShareRecordType.SHARE_UPDATE, "ShareUpdate"),
    )
}


def decode_share_group_state(key: Bytes | None, value: Bytes | None) -> CoordinatorRecord:
    """Decode one ``__share_group_state`` record (see :class:`CoordinatorRecord`)."""
    return decode_coordinator_record(key, value, SHARE_GROUP_STATE_RECORDS)
