"""Kafka's variable-length integers (protobuf zig-zag varint/varlong and unsigned varints).

Readers take ``(buf, pos)`` and return ``(value, pos)``. Over-long encodings (more than 5 bytes
for a varint, 10 for a varlong) are errors, as in Kafka's ByteUtils.
"""

from __future__ import annotations

from klogtool.formats.errors import CorruptRecordError, TruncatedError, UnencodableError


def _read_raw(buf: bytes | memoryview, pos: int, max_bytes: int) -> tuple[int, int]:
    value = 0
    shift = 0
    end = len(buf)
    start = pos
    while True:
        if pos >= end:
            raise TruncatedError("varint runs past the end of the data", start)
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7
        if pos - start >= max_bytes:
            raise CorruptRecordError("varint is longer than allowed", start, "bad-varint")


def read_uvarint(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    """Unsigned varint (up to 32 bits), as used by compact strings and tagged fields."""
    return _read_raw(buf, pos, 5)


def read_varint(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    """Signed zig-zag varint (int32)."""
    raw, pos = _read_raw(buf, pos, 5)
    raw &= 0xFFFFFFFF
    return (raw >> 1) ^ -(raw & 1), pos


def read_varlong(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    """Signed zig-zag varlong (int64)."""
    raw, pos = _read_raw(buf, pos, 10)
    raw &= 0xFFFFFFFFFFFFFFFF
    return (raw >> 1) ^ -(raw & 1), pos


def encode_uvarint(value: int) -> bytes:
    if value < 0:
        raise ValueError("unsigned varint must be >= 0")
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def encode_varint(value: int) -> bytes:
    if not -(1 << 31) <= value < (1 << 31):
        raise UnencodableError(f"varint out of int32 range: {value}")
    return encode_uvarint(((value << 1) ^ (value >> 31)) & 0xFFFFFFFF)


def encode_varlong(value: int) -> bytes:
    if not -(1 << 63) <= value < (1 << 63):
        raise UnencodableError(f"varlong out of int64 range: {value}")
    return encode_uvarint(((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF)


def size_of_varint(value: int) -> int:
    return len(encode_varint(value))


def size_of_varlong(value: int) -> int:
    return len(encode_varlong(value))
