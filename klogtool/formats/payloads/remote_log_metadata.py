"""``__remote_log_metadata`` records: tiered storage's segment catalogue (KIP-405;
docs/tiered-storage.md).

The broker's ``TopicBasedRemoteLogMetadataManager`` writes one record per event of a remote
segment's life, framed by ``AbstractApiMessageSerde`` exactly as KRaft metadata records are
(:func:`~.cluster_metadata.decode_api_message`): ``frameVersion:uvarint (1) apiKey:uvarint
version:uvarint`` and the message. The key is null (KIP-1266 proposes a key to compact the
topic by; a key is kept as bytes, the value decodes alike, a null value is a tombstone).

======  ==========================================  ===========================================
apiKey  message                                     event
======  ==========================================  ===========================================
0       RemoteLogSegmentMetadataRecord              an upload starts (COPY_SEGMENT_STARTED)
1       RemoteLogSegmentMetadataUpdateRecord        a segment's state changes
2       RemotePartitionDeleteMetadataRecord         a partition's remote data is being deleted
3       RemoteLogSegmentMetadataSnapshotRecord      a segment in a metadata snapshot file
======  ==========================================  ===========================================

Schemas: apache/kafka ``storage/src/main/resources/message/*.json`` (version 0, flexible), here
without the ``about`` texts. Decoded values are the messages in Kafka's JSON form, as
``--cluster-metadata-decoder`` prints them; :func:`kafka_text` gives what kafka-dump-log's
``--remote-log-metadata-decoder`` prints (the Java objects' ``toString``), and
:func:`check_values` the checks Kafka's constructors make while deserialising.
"""

from __future__ import annotations

import base64
from enum import IntEnum
from typing import Any

from klogtool.formats.payloads.cluster_metadata import (
    MetadataRecord,
    decode_api_message,
    encode_metadata_record,
    tables,
)

__all__ = [
    "PARTITION_DELETE_STATES",
    "REMOTE_LOG_METADATA_MESSAGES",
    "REMOTE_LOG_METADATA_TYPES",
    "SEGMENT_STATES",
    "RemoteLogMetadataType",
    "check_values",
    "decode_remote_log_metadata",
    "encode_remote_log_metadata",
    "kafka_text",
    "leader_epochs",
]

_TOPIC_ID_PARTITION = """{"name": "TopicIdPartition", "type": "TopicIdPartitionEntry",
   "versions": "0+", "fields": [
    {"name": "Name", "type": "string", "versions": "0+"},
    {"name": "Id", "type": "uuid", "versions": "0+"},
    {"name": "Partition", "type": "int32", "versions": "0+"}]}"""
_SEGMENT_ID = f"""{{"name": "RemoteLogSegmentId", "type": "RemoteLogSegmentIdEntry",
  "versions": "0+", "fields": [
   {_TOPIC_ID_PARTITION},
   {{"name": "Id", "type": "uuid", "versions": "0+"}}]}}"""
_EPOCHS = """{"name": "SegmentLeaderEpochs", "type": "[]SegmentLeaderEpochEntry",
  "versions": "0+", "fields": [
   {"name": "LeaderEpoch", "type": "int32", "versions": "0+"},
   {"name": "Offset", "type": "int64", "versions": "0+"}]}"""
_CUSTOM = """{"name": "CustomMetadata", "type": "bytes", "default": "null", "versions": "0+",
  "nullableVersions": "0+"}"""

SCHEMA_JSON = f"""[
{{"apiKey": 0, "name": "RemoteLogSegmentMetadataRecord", "validVersions": "0",
 "flexibleVersions": "0+", "fields": [
  {_SEGMENT_ID},
  {{"name": "StartOffset", "type": "int64", "versions": "0+"}},
  {{"name": "EndOffset", "type": "int64", "versions": "0+"}},
  {{"name": "BrokerId", "type": "int32", "versions": "0+"}},
  {{"name": "MaxTimestampMs", "type": "int64", "versions": "0+"}},
  {{"name": "EventTimestampMs", "type": "int64", "versions": "0+"}},
  {_EPOCHS},
  {{"name": "SegmentSizeInBytes", "type": "int32", "versions": "0+"}},
  {_CUSTOM},
  {{"name": "RemoteLogSegmentState", "type": "int8", "versions": "0+"}}]}},
{{"apiKey": 1, "name": "RemoteLogSegmentMetadataUpdateRecord", "validVersions": "0",
 "flexibleVersions": "0+", "fields": [
  {_SEGMENT_ID},
  {{"name": "BrokerId", "type": "int32", "versions": "0+"}},
  {{"name": "EventTimestampMs", "type": "int64", "versions": "0+"}},
  {_CUSTOM},
  {{"name": "RemoteLogSegmentState", "type": "int8", "versions": "0+"}}]}},
{{"apiKey": 2, "name": "RemotePartitionDeleteMetadataRecord", "validVersions": "0",
 "flexibleVersions": "0+", "fields": [
  {_TOPIC_ID_PARTITION},
  {{"name": "BrokerId", "type": "int32", "versions": "0+"}},
  {{"name": "EventTimestampMs", "type": "int64", "versions": "0+"}},
  {{"name": "RemotePartitionDeleteState", "type": "int8", "versions": "0+"}}]}},
{{"apiKey": 3, "name": "RemoteLogSegmentMetadataSnapshotRecord", "validVersions": "0",
 "flexibleVersions": "0+", "fields": [
  {{"name": "SegmentId", "type": "uuid", "versions": "0+"}},
  {{"name": "StartOffset", "type": "int64", "versions": "0+"}},
  {{"name": "EndOffset", "type": "int64", "versions": "0+"}},
  {{"name": "BrokerId", "type": "int32", "versions": "0+"}},
  {{"name": "MaxTimestampMs", "type": "int64", "versions": "0+"}},
  {{"name": "EventTimestampMs", "type": "int64", "versions": "0+"}},
  {_EPOCHS},
  {{"name": "SegmentSizeInBytes", "type": "int32", "versions": "0+"}},
  {_CUSTOM},
  {{"name": "RemoteLogSegmentState", "type": "int8", "versions": "0+"}}]}}
]"""

REMOTE_LOG_METADATA_MESSAGES, REMOTE_LOG_METADATA_TYPES = tables(SCHEMA_JSON)


class RemoteLogMetadataType(IntEnum):
    """The api keys of ``__remote_log_metadata`` records."""

    SEGMENT = 0
    SEGMENT_UPDATE = 1
    PARTITION_DELETE = 2
    SEGMENT_SNAPSHOT = 3


# RemoteLogSegmentState and RemotePartitionDeleteState (their ids are the int8 fields)
SEGMENT_STATES: dict[int, str] = {
    0: "COPY_SEGMENT_STARTED",
    1: "COPY_SEGMENT_FINISHED",
    2: "DELETE_SEGMENT_STARTED",
    3: "DELETE_SEGMENT_FINISHED",
}
PARTITION_DELETE_STATES: dict[int, str] = {
    0: "DELETE_PARTITION_MARKED",
    1: "DELETE_PARTITION_STARTED",
    2: "DELETE_PARTITION_FINISHED",
}


def decode_remote_log_metadata(value: bytes | bytearray | memoryview | None) -> MetadataRecord:
    """Decode one ``__remote_log_metadata`` record value: ``type_name`` is
    ``REMOTE_LOG_SEGMENT_METADATA_RECORD`` ... (``UNKNOWN`` for an api key without a schema);
    bytes that do not decode raise :class:`~.cluster_metadata.MetadataParseError`."""
    return decode_api_message(value, REMOTE_LOG_METADATA_MESSAGES, REMOTE_LOG_METADATA_TYPES)


def encode_remote_log_metadata(api_key: int, data: dict[str, Any], version: int = 0) -> bytes:
    """A record value (for tests and for writers of the topic)."""
    return encode_metadata_record(api_key, data, version, REMOTE_LOG_METADATA_MESSAGES)


def check_values(record: MetadataRecord) -> str | None:
    """What Kafka's ``RemoteLogMetadataSerde`` refuses in a record that decodes (the checks of
    its objects' constructors), in Kafka's words; None when it is accepted."""
    data = record.data
    if data is None:
        return None
    if record.api_key == RemoteLogMetadataType.PARTITION_DELETE:
        if data["remotePartitionDeleteState"] not in PARTITION_DELETE_STATES:
            return "state can not be null"
        return None
    if data["remoteLogSegmentState"] not in SEGMENT_STATES:
        return "state can not be null"
    if record.api_key == RemoteLogMetadataType.SEGMENT_UPDATE:
        return None
    start, end = data["startOffset"], data["endOffset"]
    if record.api_key == RemoteLogMetadataType.SEGMENT:  # (a snapshot's offsets go unchecked)
        if start < 0:
            return (
                f"Unexpected start offset = {start}. "
                "StartOffset for a remote segment cannot be negative"
            )
        if end < start:
            return (
                f"Unexpected end offset = {end}. "
                f"EndOffset for a remote segment cannot be less than startOffset = {start}"
            )
    if not data["segmentLeaderEpochs"]:
        return "segmentLeaderEpochs can not be null or empty"
    return None


def leader_epochs(data: dict[str, Any]) -> dict[int, int]:
    """A segment's ``{leader epoch: start offset}``, in epoch order; of two entries for one
    epoch the later holds (Kafka builds a HashMap, then a TreeMap)."""
    epochs = {e["leaderEpoch"]: e["offset"] for e in data["segmentLeaderEpochs"]}
    return dict(sorted(epochs.items()))


def _topic_id_partition(tip: dict[str, Any]) -> str:
    return f"{tip['id']}:{tip['name']}-{tip['partition']}"  # TopicIdPartition.toString


def _custom(data: dict[str, Any]) -> str:
    raw = data.get("customMetadata")
    if raw is None:
        return "Optional.empty"
    return f"Optional[CustomMetadata{{{len(base64.b64decode(raw))} bytes}}]"


def _segment_id(seg: dict[str, Any]) -> str:
    tip = _topic_id_partition(seg["topicIdPartition"])
    return f"RemoteLogSegmentId{{topicIdPartition={tip}, id={seg['id']}}}"


def _epochs(data: dict[str, Any]) -> str:
    return "{" + ", ".join(f"{k}={v}" for k, v in leader_epochs(data).items()) + "}"


def kafka_text(record: MetadataRecord) -> str:
    """What kafka-dump-log's ``--remote-log-metadata-decoder`` prints after ``payload:`` for a
    record that decodes and passes :func:`check_values`: the ``toString`` of Kafka's objects."""
    d = record.data
    if d is None:
        raise ValueError("an unknown record type has no text")
    key = record.api_key
    if key == RemoteLogMetadataType.SEGMENT:
        return (
            f"RemoteLogSegmentMetadata{{remoteLogSegmentId={_segment_id(d['remoteLogSegmentId'])}"
            f", startOffset={d['startOffset']}, endOffset={d['endOffset']}"
            f", brokerId={d['brokerId']}, maxTimestampMs={d['maxTimestampMs']}"
            f", eventTimestampMs={d['eventTimestampMs']}, segmentLeaderEpochs={_epochs(d)}"
            f", segmentSizeInBytes={d['segmentSizeInBytes']}, customMetadata={_custom(d)}"
            f", state={SEGMENT_STATES[d['remoteLogSegmentState']]}}}"
        )
    if key == RemoteLogMetadataType.SEGMENT_UPDATE:
        return (
            "RemoteLogSegmentMetadataUpdate{"
            f"remoteLogSegmentId={_segment_id(d['remoteLogSegmentId'])}"
            f", customMetadata={_custom(d)}"
            f", state={SEGMENT_STATES[d['remoteLogSegmentState']]}"
            f", eventTimestampMs={d['eventTimestampMs']}, brokerId={d['brokerId']}}}"
        )
    if key == RemoteLogMetadataType.PARTITION_DELETE:
        return (
            "RemotePartitionDeleteMetadata{"
            f"topicPartition={_topic_id_partition(d['topicIdPartition'])}"
            f", state={PARTITION_DELETE_STATES[d['remotePartitionDeleteState']]}"
            f", eventTimestampMs={d['eventTimestampMs']}, brokerId={d['brokerId']}}}"
        )
    return (
        f"RemoteLogSegmentMetadataSnapshot{{segmentId={d['segmentId']}"
        f", startOffset={d['startOffset']}, endOffset={d['endOffset']}"
        f", maxTimestampMs={d['maxTimestampMs']}, segmentLeaderEpochs={_epochs(d)}"
        f", segmentSizeInBytes={d['segmentSizeInBytes']}, customMetadata={_custom(d)}"
        f", state={SEGMENT_STATES[d['remoteLogSegmentState']]}}}"
    )
