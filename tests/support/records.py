"""One record normaliser for every comparison (klogtool's records, kafka-python's), and the
careful one-record v2 decoder as the reference of the fast loops."""

from __future__ import annotations

from typing import Any

from klogtool.formats import v2
from klogtool.formats.batch import LOG_APPEND_TIME


def _b(x: object) -> bytes | None:
    return None if x is None else bytes(x)  # type: ignore[call-overload]


def norm_record(r: object) -> tuple:
    """``(offset, timestamp, key, value, headers)`` with payloads as ``bytes``; works for
    klogtool records and kafka-python records alike (kafka-python's None timestamp of a v0
    record is klogtool's -1)."""
    ts = r.timestamp  # type: ignore[attr-defined]
    return (
        r.offset,  # type: ignore[attr-defined]
        -1 if ts is None else ts,
        _b(r.key),  # type: ignore[attr-defined]
        _b(r.value),  # type: ignore[attr-defined]
        tuple((k, _b(v)) for k, v in r.headers),  # type: ignore[attr-defined]
    )


def careful_records(batch: Any) -> list[tuple]:
    """Every record of a v2 ``batch`` through the careful one-record decoder alone, as
    ``norm_record(r) + (sequence, attributes)``: the reference the fast decode loop must match."""
    area = batch.records_area()
    buf = bytes(area)
    pos, out = 0, []
    for _ in range(batch.count):
        rec, pos = v2._decode_record(
            buf, area, pos, batch.base_offset, batch.base_timestamp, batch.base_sequence, None, 0
        )
        out.append(rec)
    assert pos == len(buf)
    if batch.timestamp_type == LOG_APPEND_TIME:
        out = [r._replace(timestamp=batch.max_timestamp) for r in out]
    return [full_record(r) for r in out]


def full_record(r: Any) -> tuple:
    return norm_record(r) + (r.sequence, r.attributes)


def kafka_python_batch(
    base_offset: int,
    leader_epoch: int,
    rows: list[tuple[int, bytes | None, bytes | None, list[tuple[str, bytes]]]],
    *,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    transactional: bool = False,
) -> bytes:
    """A v2 batch built by kafka-python's producer-side builder (an encoder independent of
    klogtool's) from ``(timestamp, key, value, headers)`` rows, then given its base offset and
    partition leader epoch as the broker does on append (neither is covered by the CRC)."""
    import struct

    from kafka.record.default_records import DefaultRecordBatchBuilder

    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=0,
        is_transactional=transactional,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        batch_size=1 << 30,
    )
    for delta, (ts, key, value, headers) in enumerate(rows):
        assert builder.append(delta, timestamp=ts, key=key, value=value, headers=headers)
    buf = bytearray(builder.build())
    struct.pack_into(">q", buf, 0, base_offset)
    struct.pack_into(">i", buf, 12, leader_epoch)
    return bytes(buf)
