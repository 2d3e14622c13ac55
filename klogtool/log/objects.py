"""The JSON objects that several reading commands build alike (docs/output.md): a batch's, as
dump-segments and find print it and export writes its batch-level rows."""

from __future__ import annotations

from typing import TYPE_CHECKING

from klogtool.formats import codecs
from klogtool.formats.batch import TIMESTAMP_TYPE_NAMES, Batch
from klogtool.formats.errors import FormatError

if TYPE_CHECKING:
    from klogtool import events


def batch_object(b: Batch, crc_valid: bool) -> events.DumpSegmentsBatch:
    """The docs/output.md batch object (a legacy wrapper's base offset/count are decompressed),
    with ``crc_valid`` (whether its CRC checked out)."""
    is_v2 = b.magic >= 2
    try:
        base_offset: int | None = b.base_offset
        count: int | None = b.count
    except FormatError:
        base_offset = count = None
    return {
        "type": "batch",
        "position": b.position,
        "base_offset": base_offset,
        "last_offset": b.last_offset,
        "count": count,
        "magic": b.magic,
        "compression": codecs.CODEC_NAMES.get(b.compression, f"unknown({b.compression})"),
        "crc": b.crc,
        "crc_valid": crc_valid,
        "size": b.size,
        "partition_leader_epoch": b.partition_leader_epoch,
        "timestamp_type": TIMESTAMP_TYPE_NAMES[b.timestamp_type],
        "base_timestamp": b.base_timestamp,
        "max_timestamp": b.max_timestamp,
        "producer_id": b.producer_id,
        "producer_epoch": b.producer_epoch,
        "base_sequence": b.base_sequence,
        "last_sequence": b.last_sequence if is_v2 else -1,
        "is_transactional": b.is_transactional,
        "is_control": b.is_control,
        "delete_horizon_ms": b.delete_horizon_ms,
    }
