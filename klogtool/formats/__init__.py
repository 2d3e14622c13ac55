"""klogtool's format layer: Kafka's on-disk formats as bytes in, objects out.

It knows bytes, not files or terminals: nothing here prints, opens a command line or imports
anything of klogtool outside this package. The rest of klogtool (``klogtool.commands``, the CLI,
the Spark source) uses the names below; ``klogtool.log`` may also use the modules themselves.

- Records and batches: :class:`Record`, :class:`Batch`, :class:`SegmentScanner`
  (``records.py``: the walk over a ``.log`` buffer), ``encode_batch`` (``v2.py``).
- Codecs: the registry ``CODECS`` of :class:`Codec` (id, name, levels, compress and
  decompress), ``CODEC_NAMES``, ``CODEC_IDS``, :func:`available_codecs` (``codecs.py``).
- Payload decoders: ``BYTE_DECODERS``, ``INTERNAL_DECODERS`` (``payloads/``); Confluent's
  wire format: ``CONFLUENT_DECODER``, :class:`SchemaRegistry`, :func:`decode_confluent`
  (``payloads/confluent.py``).
- Errors: :class:`FormatError` and its subclasses (``errors.py``).
- Engines: ``engine`` (``engine.py``), the one seam to the native engine;
  :func:`engine_stats`, the batches it handed back to the python engine, per reason.

Names load lazily (PEP 562), so importing one costs only its module: start-up stays fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    # errors
    "FormatError": "errors",
    "CorruptRecordError": "errors",
    "CrcMismatchError": "errors",
    "TruncatedError": "errors",
    "UnsupportedError": "errors",
    "DecompressionError": "errors",
    "LimitExceededError": "errors",
    "CodecUnavailableError": "errors",
    # records and batches
    "Record": "batch",
    "Batch": "batch",
    "DEFAULT_MAX_BATCH_BYTES": "batch",
    "ReadLimits": "limits",
    "DEFAULT_LIMITS": "limits",
    "CREATE_TIME": "batch",
    "LOG_APPEND_TIME": "batch",
    "NO_TIMESTAMP": "batch",
    "TIMESTAMP_TYPE_NAMES": "batch",
    "SegmentScanner": "records",
    "ScanResult": "records",
    "read_batch": "records",
    "encode_batch": "v2",
    # codecs
    "CODECS": "codecs",
    "Codec": "codecs",
    "CODEC_NAMES": "codecs",
    "CODEC_IDS": "codecs",
    "available_codecs": "codecs",
    "ZSTD": "codecs",
    # payload decoders
    "BYTE_DECODERS": "payloads",
    "INTERNAL_DECODERS": "payloads",
    "UNIMPLEMENTED_DECODERS": "payloads",
    "CONFLUENT_DECODER": "payloads",
    "SchemaRegistry": "payloads",
    "decode_confluent": "payloads",
    # engines
    "engine_stats": "engine",
}
_MODULES = ("engine",)

__all__ = [
    "BYTE_DECODERS",
    "Batch",
    "CODECS",
    "CODEC_IDS",
    "CODEC_NAMES",
    "CONFLUENT_DECODER",
    "CREATE_TIME",
    "Codec",
    "CodecUnavailableError",
    "CorruptRecordError",
    "CrcMismatchError",
    "DEFAULT_LIMITS",
    "DEFAULT_MAX_BATCH_BYTES",
    "DecompressionError",
    "FormatError",
    "INTERNAL_DECODERS",
    "LOG_APPEND_TIME",
    "LimitExceededError",
    "NO_TIMESTAMP",
    "ReadLimits",
    "Record",
    "ScanResult",
    "SchemaRegistry",
    "SegmentScanner",
    "TIMESTAMP_TYPE_NAMES",
    "TruncatedError",
    "UNIMPLEMENTED_DECODERS",
    "UnsupportedError",
    "ZSTD",
    "available_codecs",
    "decode_confluent",
    "encode_batch",
    "engine",
    "engine_stats",
    "read_batch",
]  # the names above (tests/test_layers.py checks it)

if TYPE_CHECKING:
    from klogtool.formats import engine
    from klogtool.formats.batch import (
        CREATE_TIME,
        DEFAULT_MAX_BATCH_BYTES,
        LOG_APPEND_TIME,
        NO_TIMESTAMP,
        TIMESTAMP_TYPE_NAMES,
        Batch,
        Record,
    )
    from klogtool.formats.codecs import (
        CODEC_IDS,
        CODEC_NAMES,
        CODECS,
        ZSTD,
        Codec,
        available_codecs,
    )
    from klogtool.formats.engine import engine_stats
    from klogtool.formats.errors import (
        CodecUnavailableError,
        CorruptRecordError,
        CrcMismatchError,
        DecompressionError,
        FormatError,
        LimitExceededError,
        TruncatedError,
        UnsupportedError,
    )
    from klogtool.formats.limits import DEFAULT_LIMITS, ReadLimits
    from klogtool.formats.payloads import (
        BYTE_DECODERS,
        CONFLUENT_DECODER,
        INTERNAL_DECODERS,
        UNIMPLEMENTED_DECODERS,
        SchemaRegistry,
        decode_confluent,
    )
    from klogtool.formats.records import ScanResult, SegmentScanner, read_batch
    from klogtool.formats.v2 import encode_batch


def __getattr__(name: str) -> Any:
    if name in _MODULES:
        return importlib.import_module(f"{__name__}.{name}")
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
