"""``__remote_log_metadata`` records written by hand from Kafka's JSON schemas
(``storage/src/main/resources/message/*.json``: version 0, flexible; framed by
``AbstractApiMessageSerde``: uvarint frame version 1, api key, version), not with klogtool's
schema engine, and a metadata partition of them in batches built by kafka-python."""

from __future__ import annotations

import base64
import struct
from dataclasses import dataclass
from pathlib import Path

from support.coordinator import NO_TAGS, compact_array, compact_string, uvarint
from support.records import kafka_python_batch
from support.rewrite import write_partition

T0 = 1_700_000_000_000
STARTED, FINISHED, DELETE_STARTED, DELETE_FINISHED = range(4)
MARKED, PARTITION_DELETE_STARTED, PARTITION_DELETE_FINISHED = range(3)


def _uuid(text: str) -> bytes:
    raw = base64.urlsafe_b64decode(text + "==")
    assert len(raw) == 16
    return raw


def _frame(api_key: int, body: bytes) -> bytes:
    return uvarint(1) + uvarint(api_key) + uvarint(0) + body


def _compact_bytes(b: bytes | None) -> bytes:
    return b"\x00" if b is None else uvarint(len(b) + 1) + b


@dataclass(frozen=True)
class Tp:
    """A user partition: topic name, topic id (Kafka's text form), partition."""

    name: str
    id: str
    partition: int

    def encoded(self) -> bytes:
        return (
            compact_string(self.name) + _uuid(self.id) + struct.pack(">i", self.partition) + NO_TAGS
        )


def _segment_id(tp: Tp, seg: str) -> bytes:
    return tp.encoded() + _uuid(seg) + NO_TAGS


def segment_record(
    tp: Tp,
    seg: str,
    start: int,
    end: int,
    epochs: list[tuple[int, int]],
    *,
    size: int = 1000,
    broker: int = 1,
    max_ts: int = T0,
    event_ts: int = T0,
    custom: bytes | None = None,
    state: int = STARTED,
) -> bytes:
    """RemoteLogSegmentMetadataRecord (api key 0)."""
    body = (
        _segment_id(tp, seg)
        + struct.pack(">qqiqq", start, end, broker, max_ts, event_ts)
        + compact_array([struct.pack(">iq", e, o) + NO_TAGS for e, o in epochs])
        + struct.pack(">i", size)
        + _compact_bytes(custom)
        + struct.pack(">b", state)
        + NO_TAGS
    )
    return _frame(0, body)


def update_record(
    tp: Tp,
    seg: str,
    state: int,
    *,
    broker: int = 1,
    event_ts: int = T0,
    custom: bytes | None = None,
) -> bytes:
    """RemoteLogSegmentMetadataUpdateRecord (api key 1)."""
    body = (
        _segment_id(tp, seg)
        + struct.pack(">iq", broker, event_ts)
        + _compact_bytes(custom)
        + struct.pack(">b", state)
        + NO_TAGS
    )
    return _frame(1, body)


def partition_delete_record(tp: Tp, state: int, *, broker: int = 1, event_ts: int = T0) -> bytes:
    """RemotePartitionDeleteMetadataRecord (api key 2)."""
    return _frame(2, tp.encoded() + struct.pack(">iqb", broker, event_ts, state) + NO_TAGS)


def snapshot_record(
    seg: str, start: int, end: int, epochs: list[tuple[int, int]], state: int = FINISHED
) -> bytes:
    """RemoteLogSegmentMetadataSnapshotRecord (api key 3)."""
    body = (
        _uuid(seg)
        + struct.pack(">qqiqq", start, end, 1, T0, T0)
        + compact_array([struct.pack(">iq", e, o) + NO_TAGS for e, o in epochs])
        + struct.pack(">i", 1000)
        + b"\x00"
        + struct.pack(">b", state)
        + NO_TAGS
    )
    return _frame(3, body)


def write_metadata_partition(
    log_dir: Path, values: list[bytes | None], partition: int = 0, *, per_batch: int = 3
) -> Path:
    """``log_dir/__remote_log_metadata-<partition>``: ``values`` (null keys) from offset 0."""
    batches = []
    for base in range(0, len(values), per_batch):
        rows: list[tuple[int, bytes | None, bytes | None, list[tuple[str, bytes]]]] = [
            (T0 + base + i, None, v, []) for i, v in enumerate(values[base : base + per_batch])
        ]
        batches.append(kafka_python_batch(base, 0, rows))
    part = log_dir / f"__remote_log_metadata-{partition}"
    write_partition(part, [(0, batches)])
    return part


TOPIC_ID = "-pLnbJXUTm6ZYLV4HP6YUg"
SEG_IDS = [f"AAAAAAAAAAAAAAAAAAAA{c}w" for c in "ABCDEFGHIJ"]


def local_partition(
    log_dir: Path,
    tp: Tp,
    start: int,
    end: int,
    *,
    epochs: tuple[tuple[int, int], ...] = ((0, 0),),
    per_segment: int = 50,
) -> Path:
    """A partition dir holding offsets ``start`` .. ``end - 1`` (one record a batch, value
    ``v<offset>``, time T0 + offset), with its partition.metadata and leader-epoch-checkpoint
    (``epochs``: (epoch, start offset); a batch carries the epoch its offset falls in)."""
    part = log_dir / f"{tp.name}-{tp.partition}"

    def epoch_of(o: int) -> int:
        return max((e for e, s in epochs if s <= o), default=0)

    segments = []
    for base in range(start, end, per_segment):
        batches = [
            kafka_python_batch(
                o, epoch_of(o), [(T0 + o, f"k{o % 7}".encode(), f"v{o}".encode(), [])]
            )
            for o in range(base, min(base + per_segment, end))
        ]
        segments.append((base, batches))
    write_partition(part, segments)
    (part / "partition.metadata").write_text(f"version: 0\ntopic_id: {tp.id}")
    lines = [f"{e} {s}" for e, s in epochs]
    (part / "leader-epoch-checkpoint").write_text(f"0\n{len(lines)}\n" + "\n".join(lines) + "\n")
    (log_dir / "log-start-offset-checkpoint").write_text(
        f"0\n1\n{tp.name} {tp.partition} {start}\n"
    )
    return part


def uploaded(tp: Tp, seg: str, start: int, end: int, epochs: list[tuple[int, int]]) -> list[bytes]:
    """The two records of a finished upload."""
    return [
        segment_record(tp, seg, start, end, epochs, size=100 * (end - start + 1)),
        update_record(tp, seg, FINISHED),
    ]


def kraft_metadata(log_dir: Path, tp: Tp, configs: dict[str, str]) -> None:
    """``log_dir/__cluster_metadata-0``: the topic and its configs, as a controller writes them."""
    from support.metadata import TOPIC, config_record, metadata_batch, topic_record

    values = [topic_record(tp.name, tp.id)]
    values += [config_record(TOPIC, tp.name, k, v) for k, v in configs.items()]
    write_partition(log_dir / "__cluster_metadata-0", [(0, [metadata_batch(0, values)])])


def high_watermark(log_dir: Path, tp: Tp, offset: int) -> None:
    (log_dir / "replication-offset-checkpoint").write_text(
        f"0\n1\n{tp.name} {tp.partition} {offset}\n"
    )


def empty_producer_snapshot() -> bytes:
    """A producer snapshot with no producers, as ProducerStateManager writes it: version 1,
    the CRC-32C of what follows, an empty producer array."""
    import crc32c

    body = struct.pack(">i", 0)
    return struct.pack(">hI", 1, crc32c.crc32c(body)) + body


def local_tiered_storage(
    root: Path,
    tp: Tp,
    segments: list[tuple[str, int, int, list[tuple[int, int]]]],
    epoch_of: dict[int, int] | None = None,
) -> Path:
    """``root/kafka-tiered-storage/<topic>-<partition>-<topic id>/`` as Kafka's
    LocalTieredStorage writes it: per (segment id, start, end, leader-epoch checkpoint
    entries) the segment's .log (one record a batch, value ``v<offset>``, time T0 + offset;
    a batch carries the epoch ``epoch_of`` gives its offset's range start, else 0), .index,
    .timeindex, .leader_epoch_checkpoint and .snapshot, named ``<20 digits>-<id>.<suffix>``."""
    import shutil
    import tempfile

    from support.rewrite import GEN

    part = root / "kafka-tiered-storage" / f"{tp.name}-{tp.partition}-{tp.id}"
    part.mkdir(parents=True, exist_ok=True)
    starts = sorted((epoch_of or {0: 0}).items(), key=lambda kv: kv[1])
    for seg_id, start, end, epochs in segments:
        rows = []
        for o in range(start, end + 1):
            epoch = max((e for e, s in starts if s <= o), default=0)
            rows.append(
                kafka_python_batch(o, epoch, [(T0 + o, f"k{o % 7}".encode(), f"v{o}".encode(), [])])
            )
        with tempfile.TemporaryDirectory() as tmp:
            GEN.write_segment_files(Path(tmp), start, b"".join(rows))
            for suffix in (".log", ".index", ".timeindex"):
                shutil.move(f"{tmp}/{start:020d}{suffix}", part / f"{start:020d}-{seg_id}{suffix}")
        lines = [f"{e} {s}" for e, s in epochs]
        (part / f"{start:020d}-{seg_id}.leader_epoch_checkpoint").write_text(
            f"0\n{len(lines)}\n" + "\n".join(lines) + "\n"
        )
        (part / f"{start:020d}-{seg_id}.snapshot").write_bytes(empty_producer_snapshot())
    return part
