"""Walking a ``.log`` buffer: magic sniffing, dispatch and the segment scanner.

:class:`SegmentScanner` is the one source of truth for "how many bytes of this segment are
valid and why did it stop": verify reports it, recovery truncates at it, indexing walks it.
It follows the broker's file reader (docs/kafka-rules.md: Record formats, Loading and recovery)
and, with ``strict=True``
(the default), also treats what Kafka's recovery lets through but no broker writes as
corruption: a magic outside {0, 1, 2}, negative offset deltas or record counts, and offsets
that do not increase.
"""

from __future__ import annotations

import mmap
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import StrEnum

from klogtool.formats.batch import HEADER_SIZE_UP_TO_MAGIC, LOG_OVERHEAD, Batch
from klogtool.formats.crc import crc_prefetch
from klogtool.formats.errors import CorruptRecordError, CrcMismatchError, FormatError
from klogtool.formats.legacy import MIN_RECORD_SIZE, LegacyBatch
from klogtool.formats.v2 import MIN_LENGTH, RECORD_BATCH_OVERHEAD, DefaultBatch

# offset, size, (crc or partition leader epoch), magic
ENTRY_PREFIX = struct.Struct(">qi4xb")


class End(StrEnum):
    """How a walk over a segment ended (:attr:`ScanResult.end`); each equals its string, which
    is also the finding code of that ending (``torn-tail``, ``zero-fill``)."""

    CLEAN = "clean"  # the walk reached the end of the buffer exactly
    TORN_TAIL = "torn-tail"  # the last entry is incomplete (an interrupted write)
    ZERO_FILL = "zero-fill"  # only zero bytes remain (a preallocated segment)
    CORRUPT = "corrupt"  # an invalid entry: see ScanResult.error


CLEAN, TORN_TAIL, ZERO_FILL, CORRUPT = End.CLEAN, End.TORN_TAIL, End.ZERO_FILL, End.CORRUPT

_ZERO_CHUNK = bytes(1 << 16)


@dataclass(frozen=True)
class ScanResult:
    """How a walk over a segment ended.

    ``valid_bytes`` is where the broker's recovery would truncate: the start of the first
    entry that is invalid (bad CRC included), torn or zero. ``stopped_at`` is where the walk
    itself stopped (beyond ``valid_bytes`` when CRC mismatches were walked over).
    """

    size: int
    valid_bytes: int
    stopped_at: int
    end: End
    error: FormatError | None
    batches: int
    first_offset: int | None
    last_offset: int | None

    @property
    def invalid_bytes(self) -> int:
        return self.size - self.valid_bytes


def not_a_log(result: ScanResult) -> FormatError | None:
    """Why a whole ``.log`` is not a Kafka file, or None: no entry could be read from byte 0
    (an impossible header or structure; a CRC mismatch alone is corruption, not this). A
    torn tail, by contrast, is a valid prefix followed by an incomplete entry or zeros."""
    if result.batches == 0 and result.end == CORRUPT and result.stopped_at == 0:
        if result.error is not None and not isinstance(result.error, CrcMismatchError):
            return result.error
    return None


def sniff_magic(buf: bytes | memoryview, pos: int = 0) -> int | None:
    """The magic byte of the entry at ``pos`` (byte 16 in every format), or None if too short."""
    if len(buf) - pos < HEADER_SIZE_UP_TO_MAGIC:
        return None
    magic: int = struct.unpack_from(">b", buf, pos + 16)[0]
    return magic


def read_batch(buf: memoryview, pos: int = 0, base_position: int = 0) -> Batch:
    """Decode the entry starting at ``pos`` (which must be complete) by its magic."""
    n = len(buf)
    if n - pos < HEADER_SIZE_UP_TO_MAGIC:
        raise CorruptRecordError(
            "fewer than 17 bytes left for an entry header", base_position + pos, "truncated"
        )
    _offset, size, magic = ENTRY_PREFIX.unpack_from(buf, pos)
    end = pos + LOG_OVERHEAD + size
    if size < MIN_RECORD_SIZE or end > n:
        raise CorruptRecordError(f"invalid entry size {size}", base_position + pos, "bad-length")
    if magic >= 2:
        return DefaultBatch(buf[pos:end], base_position + pos)
    return LegacyBatch(buf[pos:end], base_position + pos)


_V2_LAST_OFFSET_DELTA = struct.Struct(">i")
_V2_LAST_OFFSET_DELTA_AT = 23  # base offset, length, leader epoch, magic, crc, attributes


def kafka_entry_heads(buf: memoryview, start: int) -> Iterator[tuple[int, int]]:
    """The (position, last offset) of each entry Kafka's ``FileLogInputStream`` reads from
    ``start``, which may be any position (DumpLogSegments reads from where an index points,
    a batch's start or not): it checks the length alone, and takes a magic under 2 for a v0/v1
    entry (last offset: the entry's offset), any other for a v2 batch (its header's base
    offset + last offset delta). Ends where that reader ends (17 bytes or fewer left, an entry
    longer than what is left) or throws (a length under 14, a v2 header past the end)."""
    end = len(buf)
    pos = start
    while pos < end - HEADER_SIZE_UP_TO_MAGIC:
        offset, size, magic = ENTRY_PREFIX.unpack_from(buf, pos)
        if size < MIN_RECORD_SIZE or pos > end - LOG_OVERHEAD - size:
            return
        if magic < 2:
            last = offset
        elif pos + RECORD_BATCH_OVERHEAD > end:
            return
        else:
            (delta,) = _V2_LAST_OFFSET_DELTA.unpack_from(buf, pos + _V2_LAST_OFFSET_DELTA_AT)
            last = offset + delta
        yield pos, last
        pos += LOG_OVERHEAD + size


def is_zero(buf: memoryview, start: int) -> bool:
    """True when every byte from ``start`` to the end is zero (checked in bounded chunks)."""
    n = len(buf)
    step = len(_ZERO_CHUNK)
    for pos in range(start, n, step):
        chunk = buf[pos : min(pos + step, n)]
        if chunk != _ZERO_CHUNK[: len(chunk)]:
            return False
    return True


class ReleaseBehind:
    """Call with the position (in the mapping) a walk over ``view`` has reached: every
    ``step`` bytes the mapped pages before it are dropped from the process (MADV_DONTNEED; they
    stay in the page cache, and touching them again re-reads them), so the RSS of a walk over a
    large mmapped segment stays flat instead of growing to the file's size. Only for a
    read-only mmap (its pages always read back the same)."""

    def __init__(self, view: memoryview, step: int = 16 << 20):
        obj = view.obj
        usable = view.readonly and hasattr(mmap, "MADV_DONTNEED")
        self.mm = obj if isinstance(obj, mmap.mmap) and usable else None
        self.step = step
        self.done = 0

    def __call__(self, position: int) -> None:
        if self.mm is None or position - self.done < self.step:
            return
        end = position - position % mmap.PAGESIZE
        try:
            self.mm.madvise(mmap.MADV_DONTNEED, 0, end)
        except (OSError, ValueError):
            self.mm = None  # not supported here: memory is still reclaimable page cache
        self.done = end


class SegmentScanner:
    """Iterate the batches of a ``.log`` buffer; :attr:`result` says how the walk ended.

    ``check_crc``: compute CRCs (a mismatch marks where recovery would truncate).
    ``stop_on_crc``: stop at the first CRC mismatch (recovery) or yield it and walk on (dump,
    verify), the framing being intact. ``strict``: see the module docstring.
    ``base_position``: file position of ``buf[0]``, added to every reported position.
    ``last_offset``: the last offset of the batch before ``buf[0]`` (a walk of a segment's
    part from a batch boundary: the next offset must be above it, as in a walk from the start).
    ``need``: called with file positions ``(start, end)`` before those bytes are read, for a
    buffer whose bytes arrive on demand (a segment in object storage).
    """

    def __init__(
        self,
        buf: bytes | memoryview,
        *,
        check_crc: bool = True,
        stop_on_crc: bool = True,
        strict: bool = True,
        base_position: int = 0,
        max_bytes: int | None = None,
        last_offset: int | None = None,
        need: Callable[[int, int], None] | None = None,
    ):
        self.buf = buf if isinstance(buf, memoryview) else memoryview(buf)
        self.last_offset_before = last_offset
        self.need = need
        self.check_crc = check_crc
        self.stop_on_crc = stop_on_crc
        self.strict = strict
        self.base_position = base_position
        self.max_bytes = max_bytes
        self.result: ScanResult | None = None
        self.crc_valid: bool = True  # validity of the batch most recently yielded

    def __iter__(self) -> Iterator[Batch]:
        buf = self.buf
        n = len(buf) if self.max_bytes is None else min(len(buf), self.max_bytes)
        base = self.base_position
        pos = 0
        batches = 0
        first_offset: int | None = None
        last_offset: int | None = self.last_offset_before
        valid_bytes: int | None = None
        first_error: FormatError | None = None
        end = CLEAN
        unpack_prefix = ENTRY_PREFIX.unpack_from
        # a large segment's CRCs are computed ahead, on another core; the pages walked past
        # leave the process (a walk over a mapped segment keeps a flat RSS)
        need = self.need
        prefetch = crc_prefetch(buf[:n]) if self.check_crc and need is None else None
        release = ReleaseBehind(buf)
        try:
            while True:
                remaining = n - pos
                if remaining == 0:
                    break
                if need is not None:  # the entry's prefix, or the tail that is shorter
                    need(base + pos, base + pos + min(remaining, HEADER_SIZE_UP_TO_MAGIC))
                if remaining < HEADER_SIZE_UP_TO_MAGIC:
                    end = ZERO_FILL if is_zero(buf[:n], pos) else TORN_TAIL
                    break
                offset, size, magic = unpack_prefix(buf, pos)
                if need is not None:  # the whole entry, or all that is left of the buffer
                    need(base + pos, base + min(n, pos + LOG_OVERHEAD + max(size, 0)))
                if size < MIN_RECORD_SIZE:
                    if need is not None:
                        need(base + pos, base + n)  # the zero check reads to the end
                    if is_zero(buf[:n], pos):
                        end = ZERO_FILL
                        break
                    end = CORRUPT
                    first_error = first_error or CorruptRecordError(
                        f"Found record size {size} smaller than minimum record overhead "
                        f"({MIN_RECORD_SIZE})",
                        base + pos,
                        "record-too-small",
                    )
                    break
                entry_end = pos + LOG_OVERHEAD + size
                if entry_end > n:
                    # An incomplete entry is only a torn write if its header looks like one: a
                    # magic of 0..2, an offset a broker could have assigned (>= 0), a size a
                    # batch of that magic can have.
                    if self.strict and magic not in (0, 1, 2):
                        end = CORRUPT
                        first_error = first_error or CorruptRecordError(
                            f"Invalid magic found in record: {magic}", base + pos, "bad-magic"
                        )
                    elif self.strict and (offset < 0 or (magic >= 2 and size < MIN_LENGTH)):
                        end = CORRUPT
                        first_error = first_error or CorruptRecordError(
                            f"an incomplete entry with an impossible header (offset {offset}, "
                            f"size {size}, magic {magic}): not a torn write",
                            base + pos,
                            "bad-entry-header",
                        )
                    else:
                        end = TORN_TAIL
                    break
                err: FormatError | None = None
                batch: Batch | None = None
                if self.strict and magic not in (0, 1, 2):
                    err = CorruptRecordError(
                        f"Invalid magic found in record: {magic}", base + pos, "bad-magic"
                    )
                elif magic >= 2 and size < MIN_LENGTH:
                    err = CorruptRecordError(
                        f"Record batch is corrupt (the size {size + LOG_OVERHEAD} is smaller "
                        f"than the minimum allowed overhead 61)",
                        base + pos,
                        "batch-too-small",
                    )
                else:
                    try:
                        if magic >= 2:
                            batch = DefaultBatch(buf[pos:entry_end], base + pos)
                        else:
                            batch = LegacyBatch(buf[pos:entry_end], base + pos)
                    except FormatError as e:
                        err = e
                if batch is not None and self.strict:
                    err = _strict_check(batch, last_offset)
                if err is not None or batch is None:
                    end = CORRUPT
                    first_error = first_error or err
                    break
                crc_ok = True
                if self.check_crc:
                    computed = prefetch.get(pos) if prefetch is not None else None
                    if computed is None:
                        computed = batch.compute_crc()
                    if computed != batch.crc:
                        crc_ok = False
                        if first_error is None:
                            first_error = CrcMismatchError(
                                f"Record is corrupt (stored crc = {batch.crc}, computed crc = "
                                f"{computed})",
                                base + pos,
                            )
                            valid_bytes = pos
                        if self.stop_on_crc:
                            end = CORRUPT
                            break
                self.crc_valid = crc_ok
                batches += 1
                if batches == 1 and (magic >= 2 or batch.compression == 0):
                    first_offset = offset  # a legacy wrapper's first offset needs decompression
                last_offset = batch.last_offset
                yield batch
                pos = entry_end
                release(base + pos)
        finally:
            if prefetch is not None:
                prefetch.close()
        self.result = ScanResult(
            size=n,
            valid_bytes=pos if valid_bytes is None else valid_bytes,
            stopped_at=pos,
            end=end,
            error=first_error,
            batches=batches,
            first_offset=first_offset,
            last_offset=last_offset,
        )

    def scan(self) -> ScanResult:
        """Walk to the end without keeping the batches."""
        for _ in self:
            pass
        return self.result  # type: ignore[return-value]  # set when iteration ends


def _strict_check(batch: Batch, prev_last: int | None) -> FormatError | None:
    if isinstance(batch, DefaultBatch):
        if batch.last_offset_delta < 0:
            return CorruptRecordError(
                f"negative last offset delta {batch.last_offset_delta}",
                batch.position,
                "bad-offset-delta",
            )
        if batch.records_count < 0:
            return CorruptRecordError(
                f"Found invalid record count {batch.records_count} in magic v2 batch",
                batch.position,
                "bad-record-count",
            )
    first = batch.header_offset
    if prev_last is not None and first <= prev_last:
        return CorruptRecordError(
            f"offset {first} does not increase (previous batch ended at {prev_last})",
            batch.position,
            "offset-not-increasing",
        )
    return None


def iter_batches(buf: bytes | memoryview, **kwargs: object) -> Iterator[Batch]:
    """Batches of a buffer, stopping silently where the scanner stops (see SegmentScanner)."""
    return iter(SegmentScanner(buf, **kwargs))  # type: ignore[arg-type]
