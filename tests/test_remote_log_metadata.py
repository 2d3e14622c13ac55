"""``__remote_log_metadata`` (tiered storage): the records decoded against hand-written bytes of
Kafka's schemas, kafka-dump-log's texts, and the replay held to Kafka's
``RemoteLogMetadataCache`` rules, scenario by scenario."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.cli import jsonl, run
from support.tiered import (
    DELETE_FINISHED,
    DELETE_STARTED,
    FINISHED,
    MARKED,
    PARTITION_DELETE_FINISHED,
    STARTED,
    Tp,
    partition_delete_record,
    segment_record,
    snapshot_record,
    update_record,
    write_metadata_partition,
)

from klogtool.formats import FormatError
from klogtool.formats.payloads import decode_internal, kafka_dump_text
from klogtool.formats.payloads.remote_log_metadata import decode_remote_log_metadata
from klogtool.log import remote_tier

TP = Tp("orders", "-pLnbJXUTm6ZYLV4HP6YUg", 3)
S1, S2, S3 = "AAAAAAAAAAAAAAAAAAAAAQ", "AAAAAAAAAAAAAAAAAAAAAg", "AAAAAAAAAAAAAAAAAAAAAw"

uuids = st.binary(min_size=16, max_size=16).map(
    lambda b: base64.urlsafe_b64encode(b).decode().rstrip("=")
)
ints = st.integers(-(2**31), 2**31 - 1)
longs = st.integers(-(2**63), 2**63 - 1)


@settings(max_examples=200, deadline=None)
@given(
    name=st.text(max_size=20),
    topic_id=uuids,
    seg=uuids,
    partition=ints,
    offsets=st.tuples(longs, longs),
    broker=ints,
    times=st.tuples(longs, longs),
    epochs=st.lists(st.tuples(ints, longs), max_size=5),
    size=ints,
    custom=st.none() | st.binary(max_size=40),
    state=st.integers(-128, 127),
)
def test_a_segment_record_decodes_to_the_fields_kafka_wrote(
    name, topic_id, seg, partition, offsets, broker, times, epochs, size, custom, state
) -> None:
    tp = Tp(name, topic_id, partition)
    value = segment_record(
        tp, seg, offsets[0], offsets[1], epochs, size=size, broker=broker, max_ts=times[0],
        event_ts=times[1], custom=custom, state=state,
    )  # fmt: skip
    rec = decode_remote_log_metadata(value)
    assert rec.type_name == "REMOTE_LOG_SEGMENT_METADATA_RECORD" and rec.version == 0
    assert rec.data == {
        "remoteLogSegmentId": {
            "topicIdPartition": {"name": name, "id": topic_id, "partition": partition},
            "id": seg,
        },
        "startOffset": offsets[0],
        "endOffset": offsets[1],
        "brokerId": broker,
        "maxTimestampMs": times[0],
        "eventTimestampMs": times[1],
        "segmentLeaderEpochs": [{"leaderEpoch": e, "offset": o} for e, o in epochs],
        "segmentSizeInBytes": size,
        "customMetadata": None if custom is None else base64.b64encode(custom).decode(),
        "remoteLogSegmentState": state,
    }


def test_the_other_records_decode() -> None:
    upd = decode_remote_log_metadata(update_record(TP, S1, FINISHED, broker=7, custom=b"xyz"))
    assert upd.type_name == "REMOTE_LOG_SEGMENT_METADATA_UPDATE_RECORD"
    assert upd.data is not None and upd.data["remoteLogSegmentState"] == FINISHED
    assert upd.data["customMetadata"] == "eHl6" and upd.data["brokerId"] == 7
    dele = decode_remote_log_metadata(partition_delete_record(TP, MARKED))
    assert dele.json() == {
        "type": "REMOTE_PARTITION_DELETE_METADATA_RECORD",
        "version": 0,
        "data": {
            "topicIdPartition": {"name": "orders", "id": TP.id, "partition": 3},
            "brokerId": 1,
            "eventTimestampMs": 1_700_000_000_000,
            "remotePartitionDeleteState": 0,
        },
    }
    snap = decode_remote_log_metadata(snapshot_record(S2, 5, 9, [(1, 5)]))
    assert snap.type_name == "REMOTE_LOG_SEGMENT_METADATA_SNAPSHOT_RECORD"
    assert snap.data is not None and snap.data["segmentId"] == S2


def test_kafka_dump_log_texts() -> None:
    """What kafka-dump-log's --remote-log-metadata-decoder prints: the Java objects' toString
    (TopicIdPartition is id:name-partition; epochs a TreeMap; Optional custom metadata)."""
    seg = segment_record(TP, S1, 0, 99, [(2, 50), (0, 0)], size=4096, custom=b"abc")
    tip = f"{TP.id}:orders-3"
    assert kafka_dump_text("remote-log-metadata", None, seg, 5) == (
        None,
        f"RemoteLogSegmentMetadata{{remoteLogSegmentId=RemoteLogSegmentId{{topicIdPartition="
        f"{tip}, id={S1}}}, startOffset=0, endOffset=99, brokerId=1, "
        "maxTimestampMs=1700000000000, eventTimestampMs=1700000000000, "
        "segmentLeaderEpochs={0=0, 2=50}, segmentSizeInBytes=4096, "
        "customMetadata=Optional[CustomMetadata{3 bytes}], state=COPY_SEGMENT_STARTED}",
    )
    assert kafka_dump_text("remote-log-metadata", None, update_record(TP, S1, FINISHED), 6)[1] == (
        f"RemoteLogSegmentMetadataUpdate{{remoteLogSegmentId=RemoteLogSegmentId{{"
        f"topicIdPartition={tip}, id={S1}}}, customMetadata=Optional.empty, "
        "state=COPY_SEGMENT_FINISHED, eventTimestampMs=1700000000000, brokerId=1}"
    )
    assert kafka_dump_text("remote-log-metadata", None, partition_delete_record(TP, 1), 7)[1] == (
        f"RemotePartitionDeleteMetadata{{topicPartition={tip}, state=DELETE_PARTITION_STARTED, "
        "eventTimestampMs=1700000000000, brokerId=1}"
    )
    # what Kafka's constructors refuse, and bytes that do not decode
    for value, message in (
        (segment_record(TP, S1, -1, 5, [(0, 0)]), "Unexpected start offset = -1. StartOffset "
         "for a remote segment cannot be negative"),
        (segment_record(TP, S1, 9, 5, [(0, 0)]), "Unexpected end offset = 5. EndOffset for a "
         "remote segment cannot be less than startOffset = 9"),
        (segment_record(TP, S1, 0, 5, []), "segmentLeaderEpochs can not be null or empty"),
        (update_record(TP, S1, 9), "state can not be null"),
        (partition_delete_record(TP, 3), "state can not be null"),
        (segment_record(TP, S1, 0, 5, [(0, 0)])[:-3], "Failed to deserialize record with type 0"),
        (b"\x01\x07\x00", "org.apache.kafka.common.errors.UnsupportedVersionException: "
         "Unknown metadata id 7"),
    ):  # fmt: skip
        assert kafka_dump_text("remote-log-metadata", None, value, 12) == (
            None,
            f"Error at offset 12, skipping. {message}",
        )
    assert kafka_dump_text("remote-log-metadata", None, None, 3) == (None, None)


def test_decode_internal_refuses_what_kafka_refuses_and_keeps_a_key() -> None:
    with pytest.raises(FormatError, match="segmentLeaderEpochs can not be null or empty"):
        decode_internal("remote-log-metadata", None, segment_record(TP, S1, 0, 5, []))
    key, value = decode_internal("remote-log-metadata", b"k1", update_record(TP, S1, FINISHED))
    assert key == {"raw": "azE="} and value is not None
    assert decode_internal("remote-log-metadata", b"k1", None) == ({"raw": "azE="}, None)


def test_the_partition_of_a_user_partitions_events() -> None:
    """RemoteLogMetadataTopicPartitioner: murmur2 of Objects.hash(lsb, msb, partition). The
    hashes were printed by Java 17's Objects.hash; murmur2 is kafka-python's."""
    from kafka.partitioner.default import murmur2

    java_hashes = {
        ("AAAAAAAAAAAAAAAAAAAAAQ", 0): 30752,
        ("AAAAAAAAAAAAAAAAAAAAAQ", 2147483647): -2147452897,
        ("-pLnbJXUTm6ZYLV4HP6YUg", 3): 274101834,
        ("vDzTTxSXR6ydDIlnN4dr-g", 17): -1545262262,
        ("_____________________w", 3): 29794,
    }
    for (topic_id, partition), h in java_hashes.items():
        expected = (murmur2(h.to_bytes(4, "big", signed=True)) & 0x7FFFFFFF) % 50
        assert remote_tier.metadata_partition(topic_id, partition) == expected
        assert (
            remote_tier.metadata_partition(topic_id, partition, 7)
            == (murmur2(h.to_bytes(4, "big", signed=True)) & 0x7FFFFFFF) % 7
        )


def _replay(values: list[bytes | None]) -> remote_tier.RemoteTier:
    tier = remote_tier.RemoteTier()
    for i, v in enumerate(values):
        tier.apply(v, f"__remote_log_metadata-0@{i}", "__remote_log_metadata-0")
    return tier


def test_a_segments_whole_life() -> None:
    seg = segment_record(TP, S1, 0, 99, [(0, 0)], size=500)
    tier = _replay([seg])
    part = tier.find(TP.id, 3)
    assert part is not None and part.in_state("COPY_SEGMENT_STARTED")[0].segment_id == S1
    assert part.remote_log() == [] and part.offsets() is None  # not readable until finished
    tier = _replay([seg, update_record(TP, S1, FINISHED, event_ts=5)])
    part = tier.find(TP.id, 3)
    assert part is not None and [s.segment_id for s in part.remote_log()] == [S1]
    assert part.offsets() == (0, 99) and part.highest_offset_for_epoch(0) == 99
    assert part.remote_log()[0].updated == 5 and part.remote_log()[0].started == 1_700_000_000_000
    tier = _replay([seg, update_record(TP, S1, FINISHED), update_record(TP, S1, DELETE_STARTED)])
    part = tier.find(TP.id, 3)
    assert part is not None and part.remote_log() == [] and part.in_state("DELETE_SEGMENT_STARTED")
    tier = _replay(
        [
            seg,
            update_record(TP, S1, FINISHED),
            update_record(TP, S1, DELETE_STARTED),
            update_record(TP, S1, DELETE_FINISHED),
        ]
    )
    part = tier.find(TP.id, 3)
    assert part is not None and part.segments == {} and part.deleted_bytes == 500
    assert part.dropped == []


def test_events_the_broker_drops() -> None:
    tier = _replay(
        [
            update_record(TP, S2, FINISHED),  # never started here
            segment_record(TP, S1, 0, 9, [(0, 0)]),
            update_record(TP, S1, DELETE_FINISHED),  # STARTED -> DELETE_FINISHED: invalid
            update_record(TP, S1, STARTED),  # an update cannot start a segment
            segment_record(TP, S1, 0, 9, [(0, 0)], state=FINISHED),  # a start must be STARTED
        ]
    )
    part = tier.find(TP.id, 3)
    assert part is not None and len(part.dropped) == 4
    assert "whose upload never started" in part.dropped[0] and "@0" in part.dropped[0]
    assert "cannot go from COPY_SEGMENT_STARTED to DELETE_SEGMENT_FINISHED" in part.dropped[1]
    assert part.segments[S1].state == "COPY_SEGMENT_STARTED"


def test_a_new_leaders_upload_replaces_the_old_ones_offsets() -> None:
    """Epoch 0 uploaded 0-99 twice (S1, then S2 after a leader change re-uploaded it): the later
    finished upload holds the offsets, the earlier one is unreferenced. S3 continues."""
    tier = _replay(
        [
            segment_record(TP, S1, 0, 99, [(0, 0)]),
            update_record(TP, S1, FINISHED),
            segment_record(TP, S2, 0, 99, [(0, 0)]),
            update_record(TP, S2, FINISHED),
            segment_record(TP, S3, 100, 199, [(0, 100), (1, 150)]),
            update_record(TP, S3, FINISHED),
        ]
    )
    part = tier.find(TP.id, 3)
    assert part is not None
    assert [s.segment_id for s in part.remote_log()] == [S2, S3]
    assert [s.segment_id for s in part.unreferenced()] == [S1]
    assert part.offsets() == (0, 199) and part.gaps() == []
    assert part.highest_offset_for_epoch(0) == 149 and part.highest_offset_for_epoch(1) == 199


def test_gaps_and_the_highest_uploaded_offset() -> None:
    from klogtool.formats.checkpoint import EpochEntry

    tier = _replay(
        [
            segment_record(TP, S1, 0, 99, [(0, 0)]),
            update_record(TP, S1, FINISHED),
            segment_record(TP, S2, 200, 299, [(2, 200)]),
            update_record(TP, S2, FINISHED),
        ]
    )
    part = tier.find(TP.id, 3)
    assert part is not None and part.gaps() == [(100, 199)]
    # the newest local epoch with remote data bounds what counts as uploaded
    assert part.highest_uploaded_offset([EpochEntry(0, 0), EpochEntry(2, 200)], 400) == 299
    assert part.highest_uploaded_offset([EpochEntry(0, 0), EpochEntry(3, 250)], 400) == 99
    assert part.highest_uploaded_offset([EpochEntry(2, 200)], 250) == 249
    assert part.highest_uploaded_offset([EpochEntry(5, 0)], 400) == -1
    assert part.highest_uploaded_offset(None, 400) == -1


def test_a_finished_partition_deletion_forgets_the_partition() -> None:
    other = Tp("orders", "vDzTTxSXR6ydDIlnN4dr-g", 3)  # the topic created again
    tier = _replay(
        [
            segment_record(TP, S1, 0, 9, [(0, 0)]),
            partition_delete_record(TP, MARKED),
            segment_record(other, S2, 0, 9, [(0, 0)]),
        ]
    )
    marked = tier.find(TP.id, 3)
    assert marked is not None and marked.delete_state == "DELETE_PARTITION_MARKED"
    assert len(tier.by_name("orders", 3)) == 2
    tier = _replay(
        [
            segment_record(TP, S1, 0, 9, [(0, 0)]),
            partition_delete_record(TP, PARTITION_DELETE_FINISHED),
        ]
    )
    assert tier.find(TP.id, 3) is None


def test_replay_reads_metadata_partitions_and_names_records_that_do_not_decode(
    tmp_path: Path,
) -> None:
    part = write_metadata_partition(
        tmp_path,
        [
            segment_record(TP, S1, 0, 9, [(0, 0)]),
            b"\x01\x00\x00\x00",  # truncated
            None,  # a tombstone
            update_record(TP, S1, FINISHED),
            snapshot_record(S2, 0, 1, [(0, 0)]),
        ],
    )
    assert remote_tier.metadata_dirs([tmp_path]) == [part]
    tier = remote_tier.replay([part])
    assert [s.segment_id for s in tier.find(TP.id, 3).remote_log()] == [S1]  # type: ignore[union-attr]
    assert len(tier.problems) == 1 and tier.problems[0].startswith("__remote_log_metadata-0@1: ")
    assert tier.snapshots == 1


def test_dump_segments_decodes_the_topic_as_kafka_dump_log_does(tmp_path: Path) -> None:
    part = write_metadata_partition(
        tmp_path, [segment_record(TP, S1, 0, 9, [(0, 0)]), update_record(TP, S1, FINISHED)]
    )
    seg = str(part / "00000000000000000000.log")
    code, out, err = run("dump-segments", "--format", "jsonl", "--print-data", seg)
    assert code == 0, err
    values = [o["value"] for o in jsonl(out) if o["type"] == "record"]
    assert [v["type"] for v in values] == [
        "REMOTE_LOG_SEGMENT_METADATA_RECORD",
        "REMOTE_LOG_SEGMENT_METADATA_UPDATE_RECORD",
    ]
    code, out, err = run("dump-segments", "--remote-log-metadata-decoder", "--files", seg)
    assert code == 0, err
    lines = [line for line in out.splitlines() if "payload:" in line]
    assert len(lines) == 2 and " key:" not in lines[0]
    assert lines[1].endswith(
        "payload: RemoteLogSegmentMetadataUpdate{remoteLogSegmentId=RemoteLogSegmentId{"
        f"topicIdPartition={TP.id}:orders-3, id={S1}}}, customMetadata=Optional.empty, "
        "state=COPY_SEGMENT_FINISHED, eventTimestampMs=1700000000000, brokerId=1}"
    )


def test_find_and_export_decode_the_topic_by_themselves(tmp_path: Path) -> None:
    part = write_metadata_partition(
        tmp_path,
        [segment_record(TP, S1, 0, 9, [(0, 0)]), update_record(TP, S1, FINISHED), None],
    )
    code, out, err = run("find", "--format", "jsonl", str(part))
    assert code == 0, err
    values = [o["value"] for o in jsonl(out) if o["type"] == "record"]
    assert values[0]["data"]["startOffset"] == 0 and values[1]["data"]["remoteLogSegmentState"] == 1
    assert values[2] is None  # a tombstone
    pq = pytest.importorskip("pyarrow.parquet")
    dest = tmp_path / "out"
    args = ("export", "--jobs", "1", "--value-decoder", "internal", "--to", "parquet", str(dest))
    code, _, err = run(*args, str(part))
    assert code == 0, err
    (f,) = dest.rglob("*.parquet")
    rows = pq.read_table(f).to_pylist()
    decoded = [None if r["value_decoded"] is None else json.loads(r["value_decoded"]) for r in rows]
    assert [d and d["type"] for d in decoded] == [
        "REMOTE_LOG_SEGMENT_METADATA_RECORD",
        "REMOTE_LOG_SEGMENT_METADATA_UPDATE_RECORD",
        None,
    ]
