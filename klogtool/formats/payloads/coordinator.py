"""Records of Kafka's coordinator topics (``__consumer_offsets``, ``__transaction_state``).

Framing (``CoordinatorRecordSerde``): key = ``record_type:int16`` + key message (non-flexible),
value = ``version:int16`` + value message at that version, a null value is a tombstone. The
key's int16 is the "key version" of older brokers and the record type of newer ones; either way
it selects the pair of schemas. A type without schemas is *unknown*: not an error (Kafka skips
it), the result says so and keeps the number.

Errors raise :mod:`klogtool.formats.errors` exceptions whose message starts with ``key:`` or
``value:`` and whose ``position`` is relative to that buffer. A value version outside the
schema's ``validVersions`` is an :class:`~klogtool.formats.errors.UnsupportedError`. Bytes after
the message are ignored, as Kafka ignores them.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from klogtool.formats.errors import (
    CorruptRecordError,
    FormatError,
    TruncatedError,
    UnsupportedError,
)
from klogtool.formats.payloads.schema import Message, decode

__all__ = ["CoordinatorRecord", "RecordSchema", "decode_coordinator_record"]

_I16 = struct.Struct(">h")

Bytes = bytes | bytearray | memoryview


@dataclass(frozen=True)
class RecordSchema:
    """The key and value schemas of one record type (``post`` rewrites a decoded value)."""

    record_type: int
    key: Message
    value: Message
    post: Callable[[dict[str, Any]], dict[str, Any]] | None = None


@dataclass(frozen=True)
class CoordinatorRecord:
    """A decoded coordinator record.

    ``kind`` is ``"record"``, ``"tombstone"`` (null value: the key's entry is deleted) or
    ``"unknown"`` (no schema for ``record_type``; ``key``/``value`` are None). ``key`` and
    ``value`` are the messages' fields in Kafka's JSON form; ``key_name``/``value_name`` the
    schema names (e.g. ``OffsetCommitKey``).
    """

    kind: str
    record_type: int
    key_name: str | None = None
    key: dict[str, Any] | None = None
    value_version: int | None = None
    value_name: str | None = None
    value: dict[str, Any] | None = None

    @property
    def is_unknown(self) -> bool:
        return self.kind == "unknown"

    @property
    def is_tombstone(self) -> bool:
        return self.kind == "tombstone"

    def key_json(self) -> dict[str, Any]:
        """Kafka's key JSON: ``{"type": "<record type>", "data": {...}}`` (type as a string)."""
        if self.key is None:
            return {"type": str(self.record_type), "unknown": True}
        return {"type": str(self.record_type), "data": self.key}

    def value_json(self) -> dict[str, Any] | None:
        """Kafka's value JSON: ``{"version": "<v>", "data": {...}}``; None for a tombstone."""
        if self.value is None:
            return None
        return {"version": str(self.value_version), "data": self.value}


def _view(data: Bytes) -> memoryview:
    mv = data if isinstance(data, memoryview) else memoryview(data)
    if mv.ndim != 1 or mv.itemsize != 1:
        mv = mv.cast("B")
    return mv


def _relabel(e: FormatError, part: str) -> FormatError:
    e.message = f"{part}: {e.message}"
    e.args = (e.message,)
    return e


def decode_coordinator_record(
    key: Bytes | None,
    value: Bytes | None,
    schemas: Mapping[int, RecordSchema],
) -> CoordinatorRecord:
    """Decode one coordinator record with the given table of record types."""
    if key is None:
        raise CorruptRecordError("key: coordinator records must have a key", 0)
    kv = _view(key)
    if len(kv) < 2:
        raise TruncatedError("key: could not read the record type (fewer than 2 bytes)", 0)
    record_type = _I16.unpack_from(kv, 0)[0]
    schema = schemas.get(record_type)
    if schema is None:
        return CoordinatorRecord("unknown", record_type)
    try:
        key_data, _ = decode(schema.key, kv, 2, 0)
    except FormatError as e:
        raise _relabel(e, "key") from None
    if value is None:
        return CoordinatorRecord("tombstone", record_type, schema.key.name, key_data)
    vv = _view(value)
    if len(vv) < 2:
        raise TruncatedError("value: could not read the version (fewer than 2 bytes)", 0)
    version = _I16.unpack_from(vv, 0)[0]
    if not schema.value.is_valid_version(version):
        raise UnsupportedError(
            f"value: unknown {schema.value.name} version {version} "
            f"(known: {schema.value.valid_versions})",
            0,
        )
    try:
        value_data, _ = decode(schema.value, vv, 2, version)
    except FormatError as e:
        raise _relabel(e, "value") from None
    if schema.post is not None:
        value_data = schema.post(value_data)
    return CoordinatorRecord(
        "record", record_type, schema.key.name, key_data, version, schema.value.name, value_data
    )
