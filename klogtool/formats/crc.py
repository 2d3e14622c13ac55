"""The two CRCs Kafka uses: CRC-32 (v0/v1 messages) and CRC-32C (v2 batches, snapshots)."""

from __future__ import annotations

import zlib

from klogtool.formats import engine


def crc32(data: bytes | bytearray | memoryview) -> int:
    """CRC-32 (IEEE, as java.util.zip.CRC32), unsigned."""
    return zlib.crc32(data) & 0xFFFFFFFF


def crc32c(data: bytes | bytearray | memoryview) -> int:
    """CRC-32C (Castagnoli), unsigned."""
    return engine.crc32c(data)
