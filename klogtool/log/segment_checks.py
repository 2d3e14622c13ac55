"""verify, segment level: every batch (sizes, CRCs, offsets, timestamps, and with ``deep`` every
record), where the segment ends and why, and its index files (:mod:`klogtool.log.indexcheck`)
in the same walk."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from klogtool.codes import Code
from klogtool.formats import engine
from klogtool.formats.batch import CREATE_TIME, Batch
from klogtool.formats.errors import FormatError
from klogtool.formats.payloads.control import decode_control_record
from klogtool.formats.records import (
    CLEAN,
    CORRUPT,
    TORN_TAIL,
    ZERO_FILL,
    ScanResult,
    SegmentScanner,
    not_a_log,
)
from klogtool.formats.snapshot import parse_snapshot
from klogtool.formats.v2 import DefaultBatch
from klogtool.log import layout
from klogtool.log.context import ReadContext
from klogtool.log.findings import Finding, FindingCounts
from klogtool.log.indexcheck import SegmentIndexCheck, index_alone
from klogtool.log.record_filter import first_offset
from klogtool.log.segment import mapped, read_small
from klogtool.log.txnreplay import TxnReplay

if TYPE_CHECKING:
    from klogtool import events

ABORT = 0


INT32_MAX = (1 << 31) - 1


_PROGRESS_STEP = 8 << 20  # bytes between progress updates inside one segment


@dataclass
class Stats(FindingCounts):
    files: int = 0
    partitions: int = 0
    segments: int = 0
    batches: int = 0
    records: int = 0
    bytes: int = 0
    errors: int = 0
    warnings: int = 0

    def as_obj(self, *, deep: bool, ignored: Mapping[str, int] | None) -> events.VerifySummary:
        """verify's ``summary`` object: ``records`` only when ``deep`` (without it no record
        is decoded); ``ignored`` (severity -> findings left out by --ignore; None: no
        --ignore) taken off the errors and warnings and counted."""
        left_out = ignored or {}
        errors = self.errors - left_out.get("error", 0)
        warnings = self.warnings - left_out.get("warning", 0)
        obj: events.VerifySummary
        if deep:
            obj = {
                "type": "summary",
                "files": self.files,
                "partitions": self.partitions,
                "segments": self.segments,
                "batches": self.batches,
                "records": self.records,
                "bytes": self.bytes,
                "errors": errors,
                "warnings": warnings,
            }
        else:
            obj = {
                "type": "summary",
                "files": self.files,
                "partitions": self.partitions,
                "segments": self.segments,
                "batches": self.batches,
                "bytes": self.bytes,
                "errors": errors,
                "warnings": warnings,
            }
        if ignored is not None:
            obj["ignored"] = sum(ignored.values())
        return obj


@dataclass
class SegmentSummary:
    """What later checks (partition, log dir) need to know about one walked segment."""

    base_offset: int
    first_offset: int | None = None
    last_offset: int | None = None
    max_timestamp: int = -1
    valid: bool = True
    # (epoch, base offset) each time a batch carries a larger leader epoch, as the broker's
    # recovery assigns them into its leader epoch cache.
    epoch_starts: list[tuple[int, int]] = field(default_factory=list)


def _batch_range(batch: Batch) -> str:
    """``batch 1084076..1084275`` (a compressed v0/v1 wrapper: ``wrapper ..1084275``, whose
    first offset needs decompression)."""
    if batch.magic < 2 and batch.compression:
        return f"wrapper ..{batch.last_offset}"
    return f"batch {batch.header_offset}..{batch.last_offset}"


class SegmentChecks:
    """The checks of one segment and its index files (the base: the settings and the counts)."""

    def __init__(
        self,
        ctx: ReadContext,
        *,
        deep: bool = False,
        jobs: int = 1,
    ):
        self.deep = deep
        self.ctx = ctx
        self.limits = ctx.limits
        self.progress = ctx.progress.advance
        self.jobs = jobs  # processes verifying the partitions of a log dir
        self.stats = Stats()

    def verify_segment(
        self,
        seg: layout.SegmentFiles,
        summary: SegmentSummary,
        txns: TxnReplay,
        *,
        active: bool,
        prev_last: int | None = None,
        missing_index_ok: bool = False,
        check_base: bool = True,
    ) -> Iterator[Finding]:
        """Walk one segment: batches, with its index checks (log/indexcheck.py) merged into
        the same pass."""
        assert seg.log is not None  # callers pass segments that have a .log
        path = str(seg.log)
        st = self.stats
        st.files += 1
        st.segments += 1
        base = seg.base_offset
        indexes = SegmentIndexCheck(seg, txns, active=active, limits=self.limits)
        if not missing_index_ok:
            yield from indexes.missing()
        yield from indexes.load(prev_last)
        latest_epoch = -1
        with mapped(seg.log) as buf:
            st.bytes += len(buf)
            scanner = SegmentScanner(buf, stop_on_crc=False)
            reported = 0  # bytes of this segment passed to the progress bar
            for batch in scanner:
                st.batches += 1
                pos = batch.position
                if pos - reported >= _PROGRESS_STEP:  # a huge segment moves the bar too
                    self.progress(pos - reported)
                    reported = pos
                yield from indexes.before_batch(batch)
                if not scanner.crc_valid:
                    yield Finding(
                        "error",
                        Code.CRC_MISMATCH,
                        path,
                        pos,
                        batch.header_offset,
                        f"{_batch_range(batch)}: CRC mismatch (stored {batch.crc}, computed "
                        f"{batch.compute_crc()})",
                    )
                yield from self._check_batch(path, batch, base, check_base)
                if summary.first_offset is None:
                    summary.first_offset = first_offset(batch)
                summary.last_offset = batch.last_offset
                epoch = batch.partition_leader_epoch
                if batch.magic >= 2 and epoch >= 0 and epoch > latest_epoch:
                    latest_epoch = epoch
                    summary.epoch_starts.append((epoch, batch.base_offset))
                yield from indexes.after_batch(batch)
            result = scanner.result
        assert result is not None
        summary.max_timestamp = indexes.running_max
        self.progress(result.size - reported)
        yield from self._segment_end(seg, result, summary, active)
        yield from indexes.end(result.stopped_at)
        st.files += indexes.files

    def _check_batch(
        self, path: str, batch: Batch, base: int, check_base: bool
    ) -> Iterator[Finding]:
        pos = batch.position
        last = batch.last_offset
        if check_base and batch.magic >= 2 and batch.base_offset < base:
            yield Finding(
                "error",
                Code.OFFSET_BELOW_SEGMENT_BASE,
                path,
                pos,
                batch.base_offset,
                f"batch base offset {batch.base_offset} is below the segment's base offset {base}",
            )
        if check_base and last - base > INT32_MAX:
            yield Finding(
                "error",
                Code.OFFSET_OVERFLOW,
                path,
                pos,
                batch.header_offset,
                f"last offset {last} is more than 2^31-1 past the segment base {base}: "
                f"the broker must split this segment",
            )
        if isinstance(batch, DefaultBatch):
            if batch.records_count > batch.last_offset_delta + 1:
                yield Finding(
                    "error",
                    Code.RECORD_COUNT_MISMATCH,
                    path,
                    pos,
                    batch.header_offset,
                    f"{batch.records_count} records cannot fit in the offset range "
                    f"{batch.base_offset}..{last}",
                )
        if self.deep or batch.is_control:
            yield from self._check_records(path, batch)

    def _check_records(self, path: str, batch: Batch) -> Iterator[Finding]:
        fast = None
        if batch.magic >= 2 and not batch.is_control:
            fast = engine.check_v2(
                batch.data, self.limits.max_batch_bytes, f"{path}:{batch.position}"
            )
        if fast is None or not fast[1]:  # the python engine reads it and says what is wrong
            yield from self._walk_records(path, batch)
            return
        n, _, max_ts = fast
        if self.deep:
            self.stats.records += n
        yield from self._check_max_timestamp(path, batch, n, max_ts)

    def _walk_records(self, path: str, batch: Batch) -> Iterator[Finding]:
        st = self.stats
        pos = batch.position
        prev = None
        max_ts = -1
        n = 0
        try:
            for r in batch.records(self.limits.max_batch_bytes):
                n += 1
                if prev is not None and r.offset <= prev:
                    yield Finding(
                        "error",
                        Code.RECORD_OFFSET_NOT_INCREASING,
                        path,
                        pos,
                        r.offset,
                        f"record offset {r.offset} follows {prev} in the same batch",
                    )
                if batch.magic >= 2 and not batch.base_offset <= r.offset <= batch.last_offset:
                    yield Finding(
                        "error",
                        Code.RECORD_OFFSET_OUT_OF_BATCH,
                        path,
                        pos,
                        r.offset,
                        f"record offset {r.offset} is outside the batch's range "
                        f"{batch.base_offset}..{batch.last_offset}",
                    )
                if r.crc_valid is False and batch.compression:
                    yield Finding(
                        "error",
                        Code.INNER_CRC_MISMATCH,
                        path,
                        pos,
                        r.offset,
                        f"message at offset {r.offset} inside the wrapper has a bad CRC",
                    )
                if r.timestamp > max_ts:
                    max_ts = r.timestamp
                if batch.is_control:
                    try:
                        decode_control_record(r.key, r.value)
                    except FormatError as e:
                        yield Finding(
                            "error",
                            Code.BAD_CONTROL_RECORD,
                            path,
                            pos,
                            r.offset,
                            f"control record cannot be decoded: {e}",
                        )
                prev = r.offset
        except FormatError as e:
            yield Finding(
                "error",
                e.code,
                path,
                e.position if e.position is not None else pos,
                batch.header_offset,
                f"{_batch_range(batch)}: records cannot be decoded: {e}",
            )
            return
        if self.deep:  # without --deep only control records are read: not a record count
            st.records += n
        if batch.magic < 2 and batch.compression and prev != batch.last_offset:
            yield Finding(
                "error",
                Code.WRAPPER_OFFSET_MISMATCH,
                path,
                pos,
                batch.last_offset,
                f"wrapper offset {batch.last_offset} is not its last inner offset {prev}",
            )
        yield from self._check_max_timestamp(path, batch, n, max_ts)

    def _check_max_timestamp(
        self, path: str, batch: Batch, n: int, max_ts: int
    ) -> Iterator[Finding]:
        if n and batch.timestamp_type == CREATE_TIME and max_ts != batch.max_timestamp:
            yield Finding(
                "error",
                Code.MAX_TIMESTAMP_MISMATCH,
                path,
                batch.position,
                batch.header_offset,
                f"batch max timestamp {batch.max_timestamp} but its records' largest "
                f"timestamp is {max_ts}",
            )

    def _segment_end(
        self, seg: layout.SegmentFiles, result: ScanResult, summary: SegmentSummary, active: bool
    ) -> Iterator[Finding]:
        path = str(seg.log)
        if result.end == CLEAN:
            return
        summary.valid = False
        invalid = result.size - result.stopped_at
        if result.end == ZERO_FILL:
            # The broker trims a segment when it rolls: zeros in an inactive segment appeared
            # later, usually below the recovery point (so recovery never reads them), and
            # break fetches of that range.
            yield Finding(
                "warning" if active else "error",
                Code.ZERO_FILL,
                path,
                result.stopped_at,
                summary.last_offset,
                f"{invalid} zero bytes at the end ("
                + (
                    "a preallocated segment not trimmed by a clean shutdown; recovery "
                    "truncates them)"
                    if active
                    else "an inactive segment, which the broker trims when it rolls: the "
                    "file was damaged later, and recovery only reads segments past the "
                    "recovery point)"
                ),
            )
        elif result.end == TORN_TAIL:
            yield Finding(
                "error",
                Code.TORN_TAIL,
                path,
                result.stopped_at,
                summary.last_offset,
                f"the last {invalid} bytes are an incomplete batch after {result.batches} "
                f"complete ones (an interrupted write); recovery truncates them",
            )
        elif not_a_log(result) is not None:
            yield Finding(
                "error",
                Code.NOT_A_LOG,
                path,
                0,
                None,
                f"not a Kafka log segment: {result.error}",
            )
        elif result.end == CORRUPT:
            err = result.error
            code = err.code if err is not None else Code.CORRUPT
            yield Finding(
                "error",
                code,
                path,
                result.stopped_at,
                summary.last_offset,
                f"{err}; the {invalid} bytes from here to the end cannot be read "
                f"(recovery truncates the segment here and deletes later segments)",
            )

    def check_snapshot(self, path: Path, leo: int | None) -> Iterator[Finding]:
        """A producer snapshot: readable, its CRC, not past the log end offset ``leo``."""
        self.stats.files += 1
        try:
            snap = parse_snapshot(read_small(path), check_crc=False)
        except FormatError as e:
            yield Finding(
                "error",
                Code.SNAPSHOT_CORRUPT,
                str(path),
                e.position,
                None,
                f"producer snapshot cannot be read: {e} (the broker deletes it and "
                f"rebuilds producer state by scanning the log)",
            )
            return
        if not snap.crc_valid:
            yield Finding(
                "error",
                Code.SNAPSHOT_CRC_MISMATCH,
                str(path),
                2,
                None,
                f"Snapshot is corrupt (CRC is no longer valid). Stored crc: "
                f"{snap.crc}. Computed crc: {snap.computed_crc}",
            )
        offset = layout.offset_from_name(path)
        if leo is not None and offset is not None and offset > leo:
            yield Finding(
                "warning",
                Code.SNAPSHOT_BEYOND_LOG_END,
                str(path),
                None,
                offset,
                f"producer snapshot at offset {offset} is beyond the log end offset "
                f"{leo}; the broker deletes it",
            )

    def _index_alone(self, path: Path, kind: str, base: int) -> Iterator[Finding]:
        self.stats.files += 1
        yield from index_alone(path, kind, base)
