"""KRaft metadata records as a controller writes them (``__cluster_metadata-0``), for the
tests of the topic-config replay: TopicRecord, RemoveTopicRecord, ConfigRecord, in batches."""

from __future__ import annotations

from klogtool.formats.batch import Record
from klogtool.formats.payloads.cluster_metadata import encode_metadata_record
from klogtool.formats.v2 import encode_batch

TOPIC, BROKER = 2, 4  # ConfigRecord resource types
T0 = 1_700_000_000_000


def topic_record(name: str, topic_id: str) -> bytes:
    return encode_metadata_record(2, {"name": name, "topicId": topic_id})


def remove_topic_record(topic_id: str) -> bytes:
    return encode_metadata_record(9, {"topicId": topic_id})


def config_record(rtype: int, rname: str, key: str, value: str | None) -> bytes:
    return encode_metadata_record(
        4, {"resourceType": rtype, "resourceName": rname, "name": key, "value": value}
    )


def metadata_batch(base: int, values: list[bytes]) -> bytes:
    """The records ``values`` at offsets from ``base``, as one batch."""
    return encode_batch([Record(base + i, T0, None, v) for i, v in enumerate(values)])
