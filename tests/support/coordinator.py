"""__consumer_offsets records as a broker writes them, for the groups tests: offset commits
and classic group metadata with kafka-python's protocol types (an encoder independent of
klogtool's schema tables), in batches (:class:`Log`), and data partitions beside them."""

from __future__ import annotations

import struct
from pathlib import Path

from kafka.protocol.old.consumer_protocol import (
    ConsumerProtocolMemberAssignment_v0,
    ConsumerProtocolMemberMetadata_v0,
)
from kafka.protocol.old.types import Array, Bytes, Int16, Int32, Int64, Schema, String

from klogtool.formats.batch import Record
from klogtool.formats.payloads.control import ABORT, COMMIT, encode_end_txn_marker
from klogtool.formats.v2 import encode_batch
from support.rewrite import write_partition

T0 = 1_700_000_000_000
KEY = Schema(("group", String("utf-8")), ("topic", String("utf-8")), ("partition", Int32))
VALUE_V1 = Schema(
    ("offset", Int64),
    ("metadata", String("utf-8")),
    ("commit_timestamp", Int64),
    ("expire_timestamp", Int64),
)
VALUE_V3 = Schema(
    ("offset", Int64),
    ("leader_epoch", Int32),
    ("metadata", String("utf-8")),
    ("commit_timestamp", Int64),
)
GROUP_KEY = Schema(
    ("group", String("utf-8")),
)
MEMBER_V3 = Schema(
    ("member_id", String("utf-8")),
    ("group_instance_id", String("utf-8")),
    ("client_id", String("utf-8")),
    ("client_host", String("utf-8")),
    ("rebalance_timeout", Int32),
    ("session_timeout", Int32),
    ("subscription", Bytes),
    ("assignment", Bytes),
)
GROUP_V3 = Schema(
    ("protocol_type", String("utf-8")),
    ("generation", Int32),
    ("protocol", String("utf-8")),
    ("leader", String("utf-8")),
    ("current_state_timestamp", Int64),
    ("members", Array(MEMBER_V3)),
)


def commit_key(group: str, topic: str, partition: int) -> bytes:
    return Int16.encode(1) + KEY.encode((group, topic, partition))


def commit_value(offset: int, ts: int, expire: int | None = None) -> bytes:
    if expire is not None:
        return Int16.encode(1) + VALUE_V1.encode((offset, "", ts, expire))
    return Int16.encode(3) + VALUE_V3.encode((offset, 0, f"m{offset}", ts))


def group_value(generation: int, members: list[tuple[str, list[tuple[str, list[int]]]]]) -> bytes:
    encoded = [
        (
            member,
            None,
            f"client-{member}",
            f"/10.0.0.{i}",
            300000,
            45000,
            ConsumerProtocolMemberMetadata_v0(0, sorted({t for t, _ in parts}), b"").encode(),
            ConsumerProtocolMemberAssignment_v0(0, parts, b"").encode(),
        )
        for i, (member, parts) in enumerate(members)
    ]
    return Int16.encode(3) + GROUP_V3.encode(
        ("consumer", generation, "range", members[0][0] if members else None, T0, encoded)
    )


class Log:
    """A __consumer_offsets partition being written, one batch per call, timestamps T0 + n."""

    def __init__(self) -> None:
        self.batches: list[bytes] = []
        self.offset = 0

    def add(self, kvs: list[tuple[bytes, bytes | None]], pid: int = -1, ts: int = 0) -> None:
        recs = [Record(self.offset + i, T0 + ts, k, v) for i, (k, v) in enumerate(kvs)]
        self.batches.append(
            encode_batch(recs, is_transactional=pid >= 0, producer_id=pid, producer_epoch=0)
        )
        self.offset += len(kvs)

    def marker(self, pid: int, commit: bool, ts: int = 0) -> None:
        k, v = encode_end_txn_marker(COMMIT if commit else ABORT, 0)
        self.batches.append(
            encode_batch(
                [Record(self.offset, T0 + ts, k, v)],
                is_transactional=True,
                is_control=True,
                producer_id=pid,
                producer_epoch=0,
            )
        )
        self.offset += 1


def data_partition(logdir: Path, topic: str, partition: int, n: int) -> None:
    """``n`` records, offset o at time T0 + 1000 * o."""
    recs = [Record(o, T0 + 1000 * o, b"k", b"v") for o in range(n)]
    write_partition(logdir / f"{topic}-{partition}", [(0, [encode_batch(recs)])])


# -- flexible coordinator records, by hand from Kafka's JSON schemas (KIP-848 and later: keys
# non-flexible, the record type first; values flexible, compact strings and arrays, tags)
def uvarint(n: int) -> bytes:
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    return bytes(out + bytes([n]))


def compact_string(s: str | None) -> bytes:
    if s is None:
        return b"\x00"
    raw = s.encode()
    return uvarint(len(raw) + 1) + raw


def compact_array(items: list[bytes]) -> bytes:
    return uvarint(len(items) + 1) + b"".join(items)


NO_TAGS = b"\x00"


def key(record_type: int, *strings: str) -> bytes:
    """A coordinator key: the record type, then the key's non-flexible strings."""
    out = struct.pack(">h", record_type)
    for s in strings:
        out += struct.pack(">h", len(s.encode())) + s.encode()
    return out
