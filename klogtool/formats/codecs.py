"""Kafka's compression framings: bytes in, bytes out (docs/kafka-rules.md: Compression framings).

* gzip: RFC 1952 streams as ``java.util.zip.GZIPOutputStream`` writes them; concatenated members
  are read like ``GZIPInputStream`` does.
* snappy: xerial snappy-java stream framing (16-byte header, then ``[int32 BE length][raw
  block]`` chunks of at most 32 KiB input); raw snappy is accepted on read, as in snappy-java.
* lz4: Kafka's partial LZ4 frame format, written by hand around ``lz4.block`` (independent
  64 KiB blocks, no checksums, and the KAFKA-3160 header-checksum bug for magic 0).
* zstd: standard frames, only in v2 batches.

Every decompressor is bounded by ``limit`` (maximum decompressed bytes) and never allocates much
more than that, so a decompression bomb fails fast with :class:`LimitExceededError`. Codec
libraries are imported lazily, so a missing package only disables its codec
(:class:`CodecUnavailableError`). Errors carry ``position=None``; callers re-anchor them.

gzip is inflated by python-isal (the ``fast`` extra) when it is installed: the same zlib API and
the same checks, about twice as fast. ``KLOGTOOL_GZIP=zlib`` in the environment forces the
standard library's zlib. Compression always uses zlib, so written bytes do not depend on it.
"""

from __future__ import annotations

import functools
import os
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from klogtool.formats.errors import (
    CodecUnavailableError,
    DecompressionError,
    FormatError,
    LimitExceededError,
    UnsupportedError,
)

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4


@dataclass(frozen=True)
class Codec:
    """One of Kafka's compression types: its id in batch attributes, its name, the Python
    module it needs, its ``--compression-level`` range (None: it takes no level) and Kafka's
    default level, and its framing's compress/decompress (called with a memoryview)."""

    id: int
    name: str
    module: str | None  # None: only the standard library
    levels: tuple[int, int] | None
    default_level: int | None
    v2_only: bool
    compress: Callable[[memoryview, int, int | None], bytes]  # (data, magic, level)
    decompress: Callable[[memoryview, int, int], bytes]  # (data, magic, limit)


def _no_compress(view: memoryview, _magic: int, _level: int | None) -> bytes:
    return bytes(view)


def _no_decompress(view: memoryview, _magic: int, limit: int) -> bytes:
    if view.nbytes > limit:
        raise LimitExceededError(f"data of {view.nbytes} bytes exceeds the limit of {limit}")
    return bytes(view)


# The registry: every codec klogtool reads and writes, in id order.
CODECS: dict[int, Codec] = {
    c.id: c
    for c in (
        Codec(NONE, "none", None, None, None, False, _no_compress, _no_decompress),
        Codec(
            GZIP,
            "gzip",
            "zlib",
            (-1, 9),
            -1,
            False,
            lambda v, _m, level: _gzip_compress(v, level),
            lambda v, _m, limit: _gzip_decompress(v, limit),
        ),
        Codec(
            SNAPPY,
            "snappy",
            "snappy",
            None,
            None,
            False,
            lambda v, _m, _level: _snappy_compress(v),
            lambda v, _m, limit: _snappy_decompress(v, limit),
        ),
        Codec(
            LZ4,
            "lz4",
            "lz4.block",
            (1, 17),
            9,
            False,
            lambda v, magic, level: _lz4_compress(v, magic, level),
            lambda v, magic, limit: _lz4_decompress(v, magic, limit),
        ),
        Codec(
            ZSTD,
            "zstd",
            "zstandard",
            (-7, 22),
            3,
            True,
            lambda v, _m, level: _zstd_compress(v, level),
            lambda v, _m, limit: _zstd_decompress(v, limit),
        ),
    )
}
CODEC_NAMES: dict[int, str] = {c.id: c.name for c in CODECS.values()}
CODEC_IDS: dict[str, int] = {c.name: c.id for c in CODECS.values()}


def codec(codec_id: int) -> Codec:
    """The codec of a compression type id; ids 5-7 (and anything else) are unknown."""
    try:
        return CODECS[codec_id]
    except (KeyError, TypeError):
        raise UnsupportedError(f"Unknown compression type id {codec_id}") from None


def codec_name(codec_id: int) -> str:
    """The lowercase name of a compression type id (UnsupportedError when unknown)."""
    return codec(codec_id).name


def available_codecs() -> list[str]:
    """Names of the codecs whose Python library can be imported, in id order."""
    import importlib

    names = []
    for c in CODECS.values():
        if c.module is not None:
            try:
                importlib.import_module(c.module)
            except ImportError:
                continue
        names.append(c.name)
    return names


def _usable(codec_id: int, magic: int) -> Codec:
    c = codec(codec_id)
    _check_magic(magic)
    if c.v2_only and magic < 2:
        raise UnsupportedError(f"{c.name} is only valid in v2 batches")
    return c


def decompress(codec: int, data: bytes | memoryview, *, magic: int, limit: int) -> bytes:
    """Decompress one Kafka compressed payload written for message format ``magic``.

    Raises :class:`LimitExceededError` if the output would exceed ``limit`` bytes, and another
    :class:`FormatError` subclass for anything Kafka's own reader would reject.
    """
    c = _usable(codec, magic)
    try:
        return c.decompress(_view(data), magic, max(limit, 0))
    except FormatError:
        raise
    except MemoryError as e:  # pragma: no cover - only if even `limit` bytes cannot be had
        raise LimitExceededError(f"{c.name}: out of memory while decompressing") from e
    except Exception as e:  # a codec library failing in a way we did not anticipate
        raise DecompressionError(f"{c.name} decompression failed: {_describe(e)}") from e


def compress(
    codec: int, data: bytes | memoryview, *, magic: int, level: int | None = None
) -> bytes:
    """Compress ``data`` the way Kafka's producer/cleaner would for message format ``magic``.

    ``level`` ``None`` means the codec's Kafka default (:attr:`Codec.default_level`: gzip -1 =
    zlib 6, lz4 9 = the fast compressor, zstd 3).
    """
    c = _usable(codec, magic)
    try:
        return c.compress(_view(data), magic, level)
    except FormatError:
        raise
    except Exception as e:
        raise DecompressionError(f"{c.name} compression failed: {_describe(e)}") from e


# ----------------------------------------------------------------------------------------------
# helpers


def _check_magic(magic: int) -> None:
    if magic not in (0, 1, 2):
        raise UnsupportedError(f"Unknown message format magic {magic}")


def _view(data: bytes | memoryview) -> memoryview:
    view = memoryview(data)
    if view.ndim != 1 or view.format != "B":
        view = view.cast("B")
    return view


def _describe(e: BaseException) -> str:
    text = str(e)
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def _truncated(what: str) -> DecompressionError:
    return DecompressionError(f"{what}: stream ended prematurely")


def _too_big(what: str, limit: int) -> LimitExceededError:
    return LimitExceededError(f"{what}: decompressed data exceeds the limit of {limit} bytes")


def _join(parts: list[Any]) -> bytes:
    if len(parts) == 1 and type(parts[0]) is bytes:
        only: bytes = parts[0]
        return only
    return b"".join(parts)


def _unavailable(codec: str, package: str, e: ImportError) -> CodecUnavailableError:
    return CodecUnavailableError(f"{codec} support needs the '{package}' package: {e}")


def _snappy_module() -> Any:
    try:
        import snappy
    except ImportError as e:
        raise _unavailable("snappy", "python-snappy", e) from e
    return snappy


def _lz4_block_module() -> Any:
    try:
        import lz4.block as lz4_block
    except ImportError as e:
        raise _unavailable("lz4", "lz4", e) from e
    return lz4_block


def _zstd_module() -> Any:
    try:
        import zstandard
    except ImportError as e:
        raise _unavailable("zstd", "zstandard", e) from e
    return zstandard


# ----------------------------------------------------------------------------------------------
# gzip

_GZIP_MAGIC = b"\x1f\x8b\x08"


@functools.cache
def gzip_inflater() -> Any:
    """The zlib-compatible module that inflates gzip: ``isal.isal_zlib`` if importable and not
    turned off by ``KLOGTOOL_GZIP=zlib``, else ``zlib``."""
    if os.environ.get("KLOGTOOL_GZIP", "").lower() != "zlib":
        try:
            from isal import isal_zlib

            return isal_zlib
        except ImportError:
            pass
    import zlib

    return zlib


def _gzip_decompress(view: memoryview, limit: int) -> bytes:
    zlib = gzip_inflater()
    if not view:
        raise _truncated("gzip")
    parts: list[bytes] = []
    total = 0
    source: memoryview | bytes = view
    while True:
        inflater = zlib.decompressobj(31)  # gzip wrapper only, like GZIPInputStream
        try:
            out = inflater.decompress(source, limit - total + 1)
        except zlib.error as e:
            raise DecompressionError(f"gzip: {e}") from None
        total += len(out)
        if total > limit:
            raise _too_big("gzip", limit)
        parts.append(out)
        if not inflater.eof:
            # all input was offered and the output bound was not reached: the member is cut short
            raise _truncated("gzip")
        source = inflater.unused_data
        # GZIPInputStream reads another member when more bytes follow; bytes that do not start
        # a gzip header are ignored (its readHeader IOException ends the stream quietly).
        if len(source) < 10 or source[:3] != _GZIP_MAGIC:
            break
    return _join(parts)


def _gzip_compress(view: memoryview, level: int | None) -> bytes:
    import zlib

    if level is None:
        level = -1
    if not -1 <= level <= 9:
        raise UnsupportedError(f"gzip level must be between -1 and 9, got {level}")
    deflater = zlib.compressobj(level, zlib.DEFLATED, 31)
    return deflater.compress(view) + deflater.flush()


# ----------------------------------------------------------------------------------------------
# snappy (xerial snappy-java framing)

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_MAGIC_HEAD = struct.unpack(">i", _XERIAL_MAGIC[:4])[0]  # a chunk "length" = new header
_XERIAL_BLOCK = 32 * 1024
_XERIAL_MAX_CHUNK = 512 * 1024 * 1024
_BE_INT = struct.Struct(">i")


def _snappy_declared_length(block: memoryview) -> int:
    """The uncompressed length a raw snappy block announces (its leading varint32)."""
    value = 0
    for i in range(min(len(block), 5)):
        b = block[i]
        value |= (b & 0x7F) << (7 * i)
        if b < 0x80:
            if value > 0xFFFFFFFF:
                break
            return value
    raise DecompressionError("snappy: invalid uncompressed length in block header")


def _snappy_block(snappy: Any, block: memoryview, budget: int, limit: int) -> bytes:
    declared = _snappy_declared_length(block)
    if declared > budget:
        raise _too_big("snappy", limit)
    try:
        out = snappy.uncompress(block)
    except Exception as e:
        raise DecompressionError(f"snappy: corrupt block ({_describe(e)})") from None
    if not isinstance(out, bytes):  # pragma: no cover - defensive against odd library versions
        out = bytes(out)
    if len(out) != declared:  # pragma: no cover - the library already checks this
        raise DecompressionError("snappy: block decompressed to an unexpected size")
    return out


def _snappy_decompress(view: memoryview, limit: int) -> bytes:
    snappy = _snappy_module()
    n = len(view)
    if n == 0:
        raise DecompressionError("snappy: cannot decompress an empty stream")
    if n < 16 or view[:8] != _XERIAL_MAGIC:
        # snappy-java reads the whole payload as one raw snappy block
        return _snappy_block(snappy, view, limit, limit)
    # snappy-java does not check the version fields of the first header
    parts: list[bytes] = []
    total = 0
    pos = 16
    while n - pos >= 4:  # fewer than 4 trailing bytes end the stream quietly (snappy-java)
        (size,) = _BE_INT.unpack_from(view, pos)
        pos += 4
        if size == _XERIAL_MAGIC_HEAD:  # a concatenated stream: another header follows
            if n - pos < 12:
                raise DecompressionError("snappy: insufficient header size in a concatenated block")
            if view[pos - 4 : pos + 4] != _XERIAL_MAGIC:
                break  # not a valid header: snappy-java stops reading here
            (version,) = _BE_INT.unpack_from(view, pos + 4)
            if version < 1:
                raise UnsupportedError(f"snappy: incompatible xerial stream version {version}")
            pos += 12
            continue
        if size < 0:
            raise DecompressionError(f"snappy: negative chunk size {size}")
        if size > _XERIAL_MAX_CHUNK:
            raise DecompressionError(f"snappy: chunk size {size} exceeds the 512 MiB maximum")
        if n - pos < size:
            raise _truncated("snappy")
        out = _snappy_block(snappy, view[pos : pos + size], limit - total, limit)
        pos += size
        total += len(out)
        parts.append(out)
    return _join(parts) if parts else b""


def _snappy_compress(view: memoryview) -> bytes:
    snappy = _snappy_module()
    out = bytearray(_XERIAL_HEADER)
    for start in range(0, len(view), _XERIAL_BLOCK):
        block = snappy.compress(view[start : start + _XERIAL_BLOCK])
        out += _BE_INT.pack(len(block))
        out += block
    return bytes(out)


# ----------------------------------------------------------------------------------------------
# xxHash32 (only needed for LZ4 header bytes and the rare block checksum)

_P1 = 0x9E3779B1
_P2 = 0x85EBCA77
_P3 = 0xC2B2AE3D
_P4 = 0x27D4EB2F
_P5 = 0x165667B1
_M32 = 0xFFFFFFFF
_LE_U32 = struct.Struct("<I")
_XXH_SLAB = 4096  # stripes unpacked at a time


def xxh32(data: bytes | memoryview, seed: int = 0) -> int:
    """XXH32 of ``data`` (pure Python; fine for headers, slow-ish for big blocks)."""
    view = _view(data)
    n = len(view)
    pos = 0
    if n >= 16:
        v1 = (seed + _P1 + _P2) & _M32
        v2 = (seed + _P2) & _M32
        v3 = seed & _M32
        v4 = (seed - _P1) & _M32
        stripes = n // 16
        while pos < stripes * 16:
            count = min(_XXH_SLAB, stripes - pos // 16)
            lanes = struct.unpack_from(f"<{count * 4}I", view, pos)
            for j in range(0, count * 4, 4):
                v1 = (v1 + lanes[j] * _P2) & _M32
                v1 = (((v1 << 13) | (v1 >> 19)) * _P1) & _M32
                v2 = (v2 + lanes[j + 1] * _P2) & _M32
                v2 = (((v2 << 13) | (v2 >> 19)) * _P1) & _M32
                v3 = (v3 + lanes[j + 2] * _P2) & _M32
                v3 = (((v3 << 13) | (v3 >> 19)) * _P1) & _M32
                v4 = (v4 + lanes[j + 3] * _P2) & _M32
                v4 = (((v4 << 13) | (v4 >> 19)) * _P1) & _M32
            pos += count * 16
        h = (
            ((v1 << 1) | (v1 >> 31))
            + ((v2 << 7) | (v2 >> 25))
            + ((v3 << 12) | (v3 >> 20))
            + ((v4 << 18) | (v4 >> 14))
        ) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while n - pos >= 4:
        h = (h + _LE_U32.unpack_from(view, pos)[0] * _P3) & _M32
        h = (((h << 17) | (h >> 15)) * _P4) & _M32
        pos += 4
    while pos < n:
        h = (h + view[pos] * _P5) & _M32
        h = (((h << 11) | (h >> 21)) * _P1) & _M32
        pos += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    h ^= h >> 16
    return h


# ----------------------------------------------------------------------------------------------
# lz4 (Kafka's Lz4BlockOutputStream / Lz4BlockInputStream)

_LZ4_MAGIC = b"\x04\x22\x4d\x18"
_LZ4_FLG = 0x60  # version 01, independent blocks, no checksums, no content size
_LZ4_BD = 0x40  # 64 KiB maximum block size
_LZ4_BLOCK = 64 * 1024
_LZ4_UNCOMPRESSED = 0x80000000
_LZ4_END_MARK = b"\x00\x00\x00\x00"
_LZ4_DEFAULT_LEVEL = 9  # Kafka: level 9 selects the fast compressor, anything else LZ4 HC


def _lz4_header(magic: int) -> bytes:
    descriptor = bytes((_LZ4_FLG, _LZ4_BD))
    # KAFKA-3160: magic 0 writers hashed the magic bytes too; kept for compatibility
    hashed = _LZ4_MAGIC + descriptor if magic == 0 else descriptor
    return _LZ4_MAGIC + descriptor + bytes(((xxh32(hashed) >> 8) & 0xFF,))


_LZ4_HC_CACHE: dict[bytes, int] = {}


def _lz4_hc(descriptor: memoryview) -> int:
    """The header checksum byte of a frame descriptor (FLG, BD and any content size)."""
    if len(descriptor) != 2:
        return (xxh32(descriptor) >> 8) & 0xFF
    key = descriptor.tobytes()
    hc = _LZ4_HC_CACHE.get(key)
    if hc is None:
        hc = _LZ4_HC_CACHE[key] = (xxh32(key) >> 8) & 0xFF
    return hc


_LZ4_HEADER_V0 = _lz4_header(0)  # 04 22 4D 18 60 40 1A
_LZ4_HEADER_V1 = _lz4_header(1)  # 04 22 4D 18 60 40 82


def _lz4_compress(view: memoryview, magic: int, level: int | None) -> bytes:
    block_mod = _lz4_block_module()
    if level is None:
        level = _LZ4_DEFAULT_LEVEL
    if not 1 <= level <= 17:
        raise UnsupportedError(f"lz4 level must be between 1 and 17, got {level}")
    if level == _LZ4_DEFAULT_LEVEL:
        kwargs: dict[str, Any] = {"mode": "default"}
    else:
        kwargs = {"mode": "high_compression", "compression": level}
    lz4_compress = block_mod.compress
    out = bytearray(_LZ4_HEADER_V0 if magic == 0 else _LZ4_HEADER_V1)
    for start in range(0, len(view), _LZ4_BLOCK):
        chunk = view[start : start + _LZ4_BLOCK]
        packed = lz4_compress(chunk, store_size=False, **kwargs)
        if len(packed) >= len(chunk):  # would not shrink: store it uncompressed
            out += _LE_U32.pack(_LZ4_UNCOMPRESSED | len(chunk))
            out += chunk
        else:
            out += _LE_U32.pack(len(packed))
            out += packed
    out += _LZ4_END_MARK
    return bytes(out)


def _lz4_frame_header(view: memoryview, magic: int) -> tuple[int, int, bool, bool]:
    """The frame descriptor: (position of the first block, largest block, block checksums,
    content checksum)."""
    n = len(view)
    if n < 6:
        raise _truncated("lz4")
    if view[:4] != _LZ4_MAGIC:
        raise DecompressionError("lz4: stream unsupported (invalid magic bytes)")
    flg = view[4]
    if flg & 0x03:
        raise DecompressionError("lz4: FLG reserved bits must be 0")
    if flg >> 6 != 1:
        raise DecompressionError(f"lz4: unsupported frame version {flg >> 6}")
    if not flg & 0x20:
        raise UnsupportedError("lz4: dependent (linked) block streams are not supported")
    bd = view[5]
    if bd & 0x8F:
        raise DecompressionError("lz4: BD reserved bits must be 0")
    size_code = (bd >> 4) & 0x07
    if size_code < 4:
        raise DecompressionError(f"lz4: block size code {size_code} is not between 4 and 7")
    max_block = 1 << (8 + 2 * size_code)  # 64 KiB, 256 KiB, 1 MiB, 4 MiB
    pos = 6
    if flg & 0x08:  # content size: present but not used
        pos += 8
    if n < pos + 1:
        raise _truncated("lz4")
    if magic != 0 and view[pos] != _lz4_hc(view[4:pos]):
        raise DecompressionError("lz4: stream frame descriptor corrupted (header checksum)")
    return pos + 1, max_block, bool(flg & 0x10), bool(flg & 0x04)


def _lz4_decompress(view: memoryview, magic: int, limit: int) -> bytes:
    block_mod = _lz4_block_module()
    n = len(view)
    pos, max_block, block_checksum, content_checksum = _lz4_frame_header(view, magic)
    lz4_decompress = block_mod.decompress
    parts: list[Any] = []
    total = 0
    while True:
        if n - pos < 4:
            raise _truncated("lz4")
        word = _LE_U32.unpack_from(view, pos)[0]
        pos += 4
        size = word & 0x7FFFFFFF
        if size == 0:  # end mark; anything after the first frame is ignored, as in Kafka
            if content_checksum and n - pos < 4:
                raise _truncated("lz4")  # read but not verified by Kafka
            break
        if size > max_block:
            raise DecompressionError(f"lz4: block size {size} exceeded max: {max_block}")
        if n - pos < size:
            raise _truncated("lz4")
        block = view[pos : pos + size]
        pos += size
        if block_checksum:
            if n - pos < 4:
                raise _truncated("lz4")
            if xxh32(block) != _LE_U32.unpack_from(view, pos)[0]:
                raise DecompressionError("lz4: block checksum mismatch")
            pos += 4
        budget = limit - total
        if word & _LZ4_UNCOMPRESSED:
            if size > budget:
                raise _too_big("lz4", limit)
            out: Any = block
        else:
            out = _lz4_block(lz4_decompress, block, max_block, budget, limit)
        parts.append(out)
        total += len(out)
    if not parts:
        return b""
    return _join(parts)


def _lz4_block(
    lz4_decompress: Any, block: memoryview, max_block: int, budget: int, limit: int
) -> bytes:
    """One compressed block, within the ``budget`` left of ``limit``."""
    cap = min(max_block, budget)
    try:
        out: bytes | None = lz4_decompress(block, uncompressed_size=cap) if cap > 0 else None
    except Exception:
        out = None
    if out is None:
        # failed within the budget: find out whether the block is corrupt or just too big
        # (this allocates at most one maximum-size block, 4 MiB at worst)
        try:
            out = lz4_decompress(block, uncompressed_size=max_block)
        except Exception as e:
            raise DecompressionError(f"lz4: corrupt block ({_describe(e)})") from None
        assert out is not None
        if len(out) > budget:
            raise _too_big("lz4", limit)
    return out


# ----------------------------------------------------------------------------------------------
# zstd

_ZSTD_MAGIC = 0xFD2FB528
_ZSTD_SKIPPABLE_MASK = 0xFFFFFFF0
_ZSTD_SKIPPABLE_MAGIC = 0x184D2A50
# Kafka reads with zstd-jni's streaming decoder and default parameters, whose window limit is
# 2^27 (not checked against a broker); larger windows fail there with "window too large".
_ZSTD_MAX_WINDOW = 1 << 27
_ZSTD_READ_CHUNK = 1 << 20
_ZSTD_BLOCK_MAX = 128 * 1024
_ZSTD_FCS_BYTES = (0, 2, 4, 8)
_ZSTD_DICT_BYTES = (0, 1, 2, 4)

_local = threading.local()


def _zstd_frames(view: memoryview) -> list[tuple[int, int, int, int]]:
    """Walk the frame structure: ``(start, end, content size or -1, output bound)`` per frame.

    Only headers and block headers are read; this finds truncation (which the zstandard
    streaming reader reports as a quiet end of data), lets each frame be decoded separately, and
    gives an upper bound of each frame's output (raw and RLE blocks regenerate exactly their
    size, a compressed block at most the block maximum, min(window, 128 KiB)).
    """
    n = len(view)
    frames: list[tuple[int, int, int, int]] = []
    pos = 0
    while pos < n:
        if n - pos < 4:
            raise _truncated("zstd")
        magic = _LE_U32.unpack_from(view, pos)[0]
        if magic & _ZSTD_SKIPPABLE_MASK == _ZSTD_SKIPPABLE_MAGIC:
            if n - pos < 8:
                raise _truncated("zstd")
            skip = _LE_U32.unpack_from(view, pos + 4)[0]
            pos += 8
            if n - pos < skip:
                raise _truncated("zstd")
            pos += skip
            continue
        if magic != _ZSTD_MAGIC:
            raise DecompressionError("zstd: unknown frame descriptor")
        start = pos
        pos += 4
        if pos >= n:
            raise _truncated("zstd")
        fhd = view[pos]
        pos += 1
        if fhd & 0x08:
            raise DecompressionError("zstd: reserved bit set in the frame header")
        single_segment = bool(fhd & 0x20)
        window = 0
        if not single_segment:
            if pos >= n:
                raise _truncated("zstd")
            wd = view[pos]
            pos += 1
            base = 1 << (10 + (wd >> 3))
            window = base + (base >> 3) * (wd & 0x07)
        pos += _ZSTD_DICT_BYTES[fhd & 0x03]
        fcs_size = _ZSTD_FCS_BYTES[fhd >> 6] or (1 if single_segment else 0)
        if n - pos < fcs_size:
            raise _truncated("zstd")
        if fcs_size:
            content_size = int.from_bytes(view[pos : pos + fcs_size], "little")
            if fcs_size == 2:
                content_size += 256
        else:
            content_size = -1
        pos += fcs_size
        if single_segment:
            window = content_size
        if window > _ZSTD_MAX_WINDOW:
            raise UnsupportedError(f"zstd: window size {window} exceeds the decoder limit")
        block_max = min(window, _ZSTD_BLOCK_MAX) if window >= 1024 else _ZSTD_BLOCK_MAX
        bound = 0
        while True:
            if n - pos < 3:
                raise _truncated("zstd")
            header = view[pos] | (view[pos + 1] << 8) | (view[pos + 2] << 16)
            pos += 3
            block_type = (header >> 1) & 0x03
            if block_type == 3:
                raise DecompressionError("zstd: reserved block type")
            size = header >> 3
            bound += block_max if block_type == 2 else size
            if block_type == 1:  # RLE: one stored byte
                size = 1
            if n - pos < size:
                raise _truncated("zstd")
            pos += size
            if header & 1:
                break
        if fhd & 0x04:  # content checksum (verified by the library)
            if n - pos < 4:
                raise _truncated("zstd")
            pos += 4
        frames.append((start, pos, content_size, bound))
    return frames


def _zstd_decompressor(zstd: Any) -> Any:
    dctx = getattr(_local, "zstd_dctx", None)
    if dctx is None:
        dctx = zstd.ZstdDecompressor()
        _local.zstd_dctx = dctx
    return dctx


def _zstd_decompress(view: memoryview, limit: int) -> bytes:
    zstd = _zstd_module()
    if not view:
        raise _truncated("zstd")
    frames = _zstd_frames(view)
    dctx = _zstd_decompressor(zstd)
    parts: list[bytes] = []
    total = 0
    try:
        for start, end, content_size, bound in frames:
            frame = view[start:end]
            budget = limit - total
            if content_size >= 0:
                # a frame must decode to exactly its declared size, so this bounds the output
                if content_size > budget:
                    raise _too_big("zstd", limit)
                out = dctx.decompress(frame)
                if len(out) != content_size:  # pragma: no cover - libzstd checks this
                    raise DecompressionError("zstd: frame content size mismatch")
                parts.append(out)
                total += len(out)
                continue
            if bound <= budget:
                # the output cannot exceed the budget: decode in one go
                out = dctx.decompressobj().decompress(frame)
                total += len(out)
                if total > limit:  # pragma: no cover - the bound makes this impossible
                    raise _too_big("zstd", limit)
                parts.append(out)
                continue
            # no usable bound: stream, never holding more than the budget
            chunk = min(max(4 * len(frame), 64 * 1024), _ZSTD_READ_CHUNK)
            with dctx.stream_reader(frame, read_across_frames=False) as reader:
                while True:
                    out = reader.read(min(budget + 1, chunk))
                    if not out:
                        break
                    total += len(out)
                    if total > limit:
                        raise _too_big("zstd", limit)
                    parts.append(out)
                    budget = limit - total
                    chunk = min(chunk * 2, _ZSTD_READ_CHUNK * 16)
    except zstd.ZstdError as e:
        _local.zstd_dctx = None  # do not reuse a context left mid-frame
        raise DecompressionError(f"zstd: {e}") from None
    except FormatError:
        _local.zstd_dctx = None
        raise
    if not parts:
        return b""
    return _join(parts)


def _zstd_compress(view: memoryview, level: int | None) -> bytes:
    zstd = _zstd_module()
    if level is None:
        level = 3
    if not -131072 <= level <= 22:
        raise UnsupportedError(f"zstd level must be between -131072 and 22, got {level}")
    cache: dict[int, Any] | None = getattr(_local, "zstd_cctx", None)
    if cache is None:
        cache = {}
        _local.zstd_cctx = cache
    cctx = cache.get(level)
    if cctx is None:
        cctx = cache[level] = zstd.ZstdCompressor(level=level)
    out: bytes = cctx.compress(view)
    return out
