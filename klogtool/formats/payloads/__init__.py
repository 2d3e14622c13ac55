"""Payload decoders: what record keys and values mean (docs/output.md).

Modules
-------
``schema``
    The engine for Kafka's generated-message encoding: :class:`~.schema.Message` /
    :class:`~.schema.Field` tables (data, mirroring Kafka's JSON schema files),
    :func:`~.schema.decode`, :func:`~.schema.encode`, :func:`~.schema.load_json_schema`.
``control``
    Control records: :func:`~.control.decode_control_record` ``(key, value) -> ControlRecord``,
    :func:`~.control.encode_end_txn_marker`, :func:`~.control.encode_control_record` and the
    KRaft control-record encoders.
``consumer_offsets`` / ``transaction_state`` / ``share_state`` (framing shared in
``coordinator``)
    :func:`~.consumer_offsets.decode_consumer_offsets`,
    :func:`~.transaction_state.decode_transaction_state` and
    :func:`~.share_state.decode_share_group_state` ``(key, value) -> CoordinatorRecord``
    (``kind`` ``"record"`` / ``"tombstone"`` / ``"unknown"``, ``key``/``value`` dicts,
    ``key_json()`` / ``value_json()`` in kafka-dump-log's shape).

Decoder registry (this module)
------------------------------
Names accepted by ``--key-decoder`` / ``--value-decoder`` / ``--decoder``:

* Byte decoders (:data:`BYTE_DECODERS`), one payload at a time:
  ``utf8`` (text; invalid UTF-8 bytes escaped as ``\\xNN``), ``base64`` (standard, padded),
  ``hex`` (lowercase), ``json`` (the parsed JSON value; bytes that are not UTF-8 JSON — or use
  NaN/Infinity — fall back to the ``utf8`` text, so a string result may be either a JSON string
  or the fallback),
  ``none`` (the payload is omitted: :func:`get_byte_decoder` returns None).
* Internal-topic decoders (:data:`INTERNAL_DECODERS`), key and value together:
  ``consumer-offsets``, ``transaction-state``, ``share-group-state`` (``__share_group_state``,
  KIP-932) — :func:`decode_internal` returns
  ``(key_obj, value_obj)`` shaped like kafka-dump-log's JSON (section 9.3) as Python objects:
  ``{"type": "<record type>", "data": {...}}`` and ``{"version": "<v>", "data": {...}}`` (type
  and version are strings, as Kafka prints them), ``value_obj`` None for a tombstone; an unknown
  record type gives ``({"type": "<t>", "unknown": True}, None)``. ``cluster-metadata`` (KRaft,
  :mod:`.cluster_metadata`) gives ``(None, {"type": "<ENUM_NAME>", "version": <int>, "data":
  {...}})`` (metadata records have no key; an api key without a table gives ``{"type":
  "UNKNOWN", "apiKey": k, ..., "unknown": True}``). ``remote-log-metadata``
  (``__remote_log_metadata``, tiered storage: :mod:`.remote_log_metadata`) gives the same
  value shape (``None`` for a tombstone) and a key only when the record has one (``{"raw":
  <base64>}``); a record Kafka's constructors refuse raises. A decoder listed in
  :data:`UNIMPLEMENTED_DECODERS` (none at the moment) raises
  :class:`~klogtool.formats.errors.UnsupportedError` with code ``decoder-not-implemented``.
* Confluent's wire format (:mod:`.confluent`): ``confluent`` (:data:`CONFLUENT_DECODER`),
  not a byte decoder because it needs the schemas: :func:`decode_confluent` ``(payload,
  registry)`` gives ``{"schema_id", "subject", "version", "type", "value"}`` (Avro, JSON
  Schema and Protobuf payloads as JSON), or the schema id, ``error`` and ``raw`` (base64);
  :class:`SchemaRegistry` is the id → schema map, :meth:`SchemaRegistry.replay` rebuilds it
  from a ``_schemas`` partition's records.
* :func:`auto_decoder_for_topic` picks the internal decoder for ``__consumer_offsets``,
  ``__transaction_state``, ``__share_group_state``, ``__cluster_metadata`` and
  ``__remote_log_metadata`` (topic names or
  ``<topic>-<n>`` partition directory names), else None.
* :func:`kafka_dump_text` renders the exact `` key: …`` / `` payload: …`` texts of
  kafka-dump-log.sh (``--offsets-decoder``, ``--transaction-log-decoder``,
  ``--share-group-state-decoder``, ``--cluster-metadata-decoder``,
  ``--remote-log-metadata-decoder``, default ``StringDecoder``
  for ``utf8``).

Data errors raise only :mod:`klogtool.formats.errors` exceptions (with the byte position in the
key or value, whichever the message names); an unknown decoder name is a ``ValueError``.
"""

from __future__ import annotations

import binascii
import importlib
import json
import math
import re
from collections.abc import Callable
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from klogtool.formats.errors import CorruptRecordError, FormatError, UnsupportedError
from klogtool.formats.payloads.confluent import (
    CONFLUENT_DECODER,
    Schema,
    SchemaRegistry,
    decode_confluent,
)
from klogtool.formats.payloads.control import ControlRecord, decode_control_record

if TYPE_CHECKING:
    from klogtool.formats.payloads.cluster_metadata import MetadataRecord, decode_metadata_record
    from klogtool.formats.payloads.consumer_offsets import decode_consumer_offsets
    from klogtool.formats.payloads.coordinator import CoordinatorRecord
    from klogtool.formats.payloads.share_state import decode_share_group_state
    from klogtool.formats.payloads.transaction_state import decode_transaction_state

# The internal topics' schemas load when first used: most runs (verify, a plain dump) only
# meet control records, and loading every schema costs about 20 ms of start-up.
_LAZY = {
    "MetadataRecord": "cluster_metadata",
    "decode_metadata_record": "cluster_metadata",
    "decode_consumer_offsets": "consumer_offsets",
    "CoordinatorRecord": "coordinator",
    "decode_transaction_state": "transaction_state",
    "decode_share_group_state": "share_state",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


__all__ = [
    "BYTE_DECODERS",
    "CONFLUENT_DECODER",
    "DECODERS",
    "INTERNAL_DECODERS",
    "UNIMPLEMENTED_DECODERS",
    "ControlRecord",
    "CoordinatorRecord",
    "MetadataRecord",
    "Schema",
    "SchemaRegistry",
    "auto_decoder_for_topic",
    "decode_bytes",
    "decode_confluent",
    "decode_consumer_offsets",
    "decode_control_record",
    "decode_internal",
    "decode_metadata_record",
    "decode_share_group_state",
    "decode_transaction_state",
    "get_byte_decoder",
    "is_internal_decoder",
    "kafka_dump_text",
]

Payload = bytes | bytearray | memoryview
ByteDecoder = Callable[[Payload], Any]

BYTE_DECODERS: tuple[str, ...] = ("utf8", "base64", "hex", "json", "none")
INTERNAL_DECODERS: tuple[str, ...] = (
    "consumer-offsets",
    "transaction-state",
    "cluster-metadata",
    "share-group-state",
    "remote-log-metadata",
)
UNIMPLEMENTED_DECODERS: frozenset[str] = frozenset()
DECODERS: tuple[str, ...] = BYTE_DECODERS + INTERNAL_DECODERS

_TOPIC_DECODERS = {
    "__consumer_offsets": "consumer-offsets",
    "__transaction_state": "transaction-state",
    "__cluster_metadata": "cluster-metadata",
    "__share_group_state": "share-group-state",
    "__remote_log_metadata": "remote-log-metadata",
}
# The coordinator topics' decoders: (module, function) of each, imported when first used
_COORDINATOR_DECODERS = {
    "consumer-offsets": ("consumer_offsets", "decode_consumer_offsets"),
    "transaction-state": ("transaction_state", "decode_transaction_state"),
    "share-group-state": ("share_state", "decode_share_group_state"),
}
_PARTITION_DIR = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)$")


def _utf8(data: Payload) -> str:
    return bytes(data).decode("utf-8", "backslashreplace")


def _base64(data: Payload) -> str:
    return binascii.b2a_base64(data, newline=False).decode("ascii")


def _hex(data: Payload) -> str:
    return bytes(data).hex()


_NOT_JSON = object()


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _parse_json(raw: bytes) -> Any:
    try:
        return json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return _NOT_JSON


def _json(data: Payload) -> Any:
    parsed = _parse_json(bytes(data))
    return _utf8(data) if parsed is _NOT_JSON else parsed


_BYTE_DECODERS: dict[str, ByteDecoder | None] = {
    "utf8": _utf8,
    "base64": _base64,
    "hex": _hex,
    "json": _json,
    "none": None,
}


def is_internal_decoder(name: str) -> bool:
    return name in INTERNAL_DECODERS


def get_byte_decoder(name: str) -> ByteDecoder | None:
    """The function for a byte decoder name; None for ``none`` (omit the payload)."""
    try:
        return _BYTE_DECODERS[name]
    except KeyError:
        raise ValueError(
            f"unknown byte decoder {name!r} (choose from {', '.join(BYTE_DECODERS)})"
        ) from None


def decode_bytes(name: str, data: Payload | None) -> Any:
    """Decode one payload with a byte decoder; None stays None (and ``none`` gives None)."""
    decoder = get_byte_decoder(name)
    if data is None or decoder is None:
        return None
    return decoder(data)


def auto_decoder_for_topic(topic: str) -> str | None:
    """The internal decoder for a topic (or ``<topic>-<partition>`` directory) name, else None."""
    found = _TOPIC_DECODERS.get(topic)
    if found is None:
        m = _PARTITION_DIR.match(topic)
        if m is not None:
            found = _TOPIC_DECODERS.get(m.group("topic"))
    return found


def _check_internal(name: str) -> None:
    if name not in INTERNAL_DECODERS:
        raise ValueError(
            f"unknown internal decoder {name!r} (choose from {', '.join(INTERNAL_DECODERS)})"
        )
    if name in UNIMPLEMENTED_DECODERS:
        raise UnsupportedError(
            f"the {name} decoder is not yet supported", None, "decoder-not-implemented"
        )


def _decode_coordinator(name: str, key: Payload | None, value: Payload | None) -> CoordinatorRecord:
    _check_internal(name)
    module, function = _COORDINATOR_DECODERS[name]
    decoder = getattr(importlib.import_module(f"{__name__}.{module}"), function)
    record: CoordinatorRecord = decoder(key, value)
    return record


def decode_internal(
    name: str, key: Payload | None, value: Payload | None
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """Decode a record of an internal topic into kafka-dump-log's JSON shape (see above)."""
    if name == "cluster-metadata":
        from klogtool.formats.payloads.cluster_metadata import decode_metadata_record

        _check_internal(name)
        return None, decode_metadata_record(value).json()
    if name == "remote-log-metadata":
        # unkeyed; a key (KIP-1266's compaction key) is shown as its bytes
        key_obj = None if key is None else {"raw": _base64(key)}
        return key_obj, None if value is None else _remote_log_metadata(value).json()
    record = _decode_coordinator(name, key, value)
    return record.key_json(), record.value_json()


def _remote_log_metadata(value: Payload) -> MetadataRecord:
    """A ``__remote_log_metadata`` value decoded and held to the checks Kafka makes."""
    from klogtool.formats.payloads.cluster_metadata import MetadataParseError
    from klogtool.formats.payloads.remote_log_metadata import (
        check_values,
        decode_remote_log_metadata,
    )

    record = decode_remote_log_metadata(value)
    refused = check_values(record)
    if refused is not None:
        raise MetadataParseError(f"{record.type_name}: {refused}", None, refused)
    return record


def _remote_log_metadata_text(value: Payload | None, offset: int) -> str | None:
    from klogtool.formats.payloads.cluster_metadata import kafka_error_message
    from klogtool.formats.payloads.remote_log_metadata import kafka_text

    if value is None:
        return None
    try:
        record = _remote_log_metadata(value)
    except FormatError as e:
        return f"Error at offset {offset}, skipping. {kafka_error_message(e)}"
    if record.is_unknown:
        return (
            f"Error at offset {offset}, skipping. org.apache.kafka.common.errors."
            f"UnsupportedVersionException: Unknown metadata id {record.api_key}"
        )
    return kafka_text(record)


def _compact_json(obj: Any) -> str:
    # Jackson's compact output: no spaces, non-ASCII characters written as they are.
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def _java_double(d: float) -> str:
    """Java's ``Double.toString`` (what Jackson prints for a ``DoubleNode``): plain notation
    for 1e-3 <= |d| < 1e7, else ``1.0E7`` style, with the shortest round-tripping digits."""
    if math.isnan(d):
        return "NaN"
    if math.isinf(d):
        return "Infinity" if d > 0 else "-Infinity"
    if d == 0:
        return "-0.0" if math.copysign(1.0, d) < 0 else "0.0"
    text = repr(d)
    if 1e-3 <= abs(d) < 1e7:
        return text  # Python's repr is positional with a ".0" here too
    sign, digit_tuple, exp = Decimal(text).normalize().as_tuple()
    digits = "".join(map(str, digit_tuple))
    exponent = int(exp) + len(digits) - 1
    return f"{'-' if sign else ''}{digits[0]}.{digits[1:] or '0'}E{exponent}"


def _kafka_json(obj: Any) -> str:
    """Compact JSON like Jackson's ``JsonNode.toString()``, doubles in Java's notation."""
    if isinstance(obj, float):
        return _java_double(obj)
    if isinstance(obj, dict):
        return (
            "{"
            + ",".join(f"{_compact_json(str(k))}:{_kafka_json(v)}" for k, v in obj.items())
            + "}"
        )
    if isinstance(obj, list):
        return "[" + ",".join(_kafka_json(v) for v in obj) + "]"
    return _compact_json(obj)


def _kafka_bytes_text(name: str, data: Payload | None) -> str | None:
    if data is None:
        return None
    if name == "utf8":
        # Kafka's StringDecoder: new String(bytes, UTF_8), malformed input becomes U+FFFD.
        return bytes(data).decode("utf-8", "replace")
    if name == "json":
        parsed = _parse_json(bytes(data))
        if parsed is not _NOT_JSON:
            return _compact_json(parsed)
        return _utf8(data)
    text = decode_bytes(name, data)
    assert isinstance(text, str)
    return text


def kafka_dump_text(
    decoder_name: str, key: Payload | None, value: Payload | None, offset: int
) -> tuple[str | None, str | None]:
    """The texts kafka-dump-log prints after `` key: `` and `` payload: `` (None: not printed).

    * byte decoders: the decoded key/value text (``utf8`` behaves like Kafka's default
      ``StringDecoder``: malformed UTF-8 becomes U+FFFD); ``none`` prints neither; a null key or
      value is not printed.
    * ``consumer-offsets`` (``--offsets-decoder``) and ``share-group-state``
      (``--share-group-state-decoder``, Kafka 4.1+): compact JSON key/value, ``<DELETE>`` for a
      tombstone, ``Unknown record type {t} at offset {o}, skipping.`` (no payload) for an
      unknown type, ``Error at offset {o}, skipping. {message}`` (no payload) for bytes that do
      not decode. A record without a key raises
      :class:`~klogtool.formats.errors.CorruptRecordError` (kafka-dump-log aborts).
    * ``transaction-state`` (``--transaction-log-decoder``): see
      :func:`~.transaction_state.format_transaction_text`; malformed records raise (Kafka
      aborts).
    * ``cluster-metadata`` (``--cluster-metadata-decoder``): no key; the payload is
      ``{"type":"<ENUM_NAME>","version":<v>,"data":{...}}`` (doubles in Java's notation), or
      ``Error at {o}, skipping. {message}`` for a value that does not decode or whose api key
      has no table (Kafka's ``Unknown metadata id`` error).
    * ``remote-log-metadata`` (``--remote-log-metadata-decoder``): no key; the payload is the
      ``toString`` of Kafka's object (``RemoteLogSegmentMetadata{...}``), or ``Error at offset
      {o}, skipping. {message}``; a null value prints no payload.
    """
    if decoder_name in BYTE_DECODERS:
        if decoder_name == "none":
            return None, None
        return _kafka_bytes_text(decoder_name, key), _kafka_bytes_text(decoder_name, value)
    from klogtool.formats.payloads.cluster_metadata import (
        decode_metadata_record,
        kafka_error_message,
    )
    from klogtool.formats.payloads.transaction_state import format_transaction_text

    _check_internal(decoder_name)
    if decoder_name == "remote-log-metadata":
        return None, _remote_log_metadata_text(value, offset)
    if decoder_name == "cluster-metadata":
        try:
            meta = decode_metadata_record(value)
        except FormatError as e:
            return None, f"Error at {offset}, skipping. {kafka_error_message(e)}"
        if meta.is_unknown:
            return None, (
                f"Error at {offset}, skipping. org.apache.kafka.common.errors."
                f"UnsupportedVersionException: Unknown metadata id {meta.api_key}"
            )
        return None, _kafka_json(meta.json())
    if key is None:
        raise CorruptRecordError(
            f"Failed to decode message at offset {offset} using the specified decoder "
            "(message had a missing key)",
            None,
        )
    if decoder_name == "transaction-state":
        return format_transaction_text(_decode_coordinator(decoder_name, key, value))
    try:
        record = _decode_coordinator(decoder_name, key, value)
    except FormatError as e:
        return f"Error at offset {offset}, skipping. {e.message}", None
    if record.is_unknown:
        return f"Unknown record type {record.record_type} at offset {offset}, skipping.", None
    value_json = record.value_json()
    payload = "<DELETE>" if value_json is None else _compact_json(value_json)
    return _compact_json(record.key_json()), payload
