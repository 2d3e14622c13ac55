"""``verify`` as a library: every check of a file, partition dir or log dir, as findings.

Verify accepts what the broker accepts (docs/kafka-rules.md: Loading and recovery, Index rebuild):
indexes written by live
appends may differ from rebuilt ones and still be valid, so index entries are checked for
what matters to a broker — that a lookup through them can never skip a record — not for
equality with a rebuild. Each segment is read in one pass over its mmapped bytes, with its
index entries merged into the walk, so memory stays flat however large the segment.

Finding codes are stable (they are part of the JSON output); severities: ``error`` means the
data is damaged or a broker would lose or mis-serve records; ``warning`` means something a
broker repairs by itself on load (a zero-filled tail, a missing index, a leftover temp file).
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from klogtool.codes import Code
from klogtool.errors import InputError
from klogtool.formats import checkpoint, engine, index
from klogtool.formats.batch import CREATE_TIME, DEFAULT_MAX_BATCH_BYTES, Batch
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
from klogtool.log import layout, pool
from klogtool.log.files import classify_dir, detect_kind
from klogtool.log.findings import Finding, FindingCounts
from klogtool.log.record_filter import first_offset
from klogtool.log.segment import ReleaseBehind, mapped, read_small
from klogtool.log.txnreplay import TxnReplay, event_of

INT32_MAX = (1 << 31) - 1
ABORT = 0
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


@dataclass(frozen=True)
class _IndexKind:
    name: str  # finding-code prefix
    label: str  # for messages
    entry_size: int
    sanity_check: Callable[[bytes, int], None]
    zero_tail: Callable[[bytes], int]
    entries: Callable[..., Iterator[Any]]
    out_of_order: Callable[[Any, Any], bool]
    describe: Callable[[Any], str]
    sanity: Code
    not_trimmed: Code
    not_increasing: Code


_OFFSET_INDEX = _IndexKind(
    "index",
    "offset index",
    8,
    index.sanity_check_offset_index,
    index.offset_index_zero_tail,
    index.iter_offset_index,
    lambda a, b: b.offset <= a.offset or b.position < a.position,
    lambda e: f"(offset {e.offset}, position {e.position})",
    Code.INDEX_SANITY,
    Code.INDEX_NOT_TRIMMED,
    Code.INDEX_NOT_INCREASING,
)
_TIME_INDEX = _IndexKind(
    "timeindex",
    "time index",
    12,
    index.sanity_check_time_index,
    index.time_index_zero_tail,
    index.iter_time_index,
    lambda a, b: b.timestamp <= a.timestamp or b.offset < a.offset,
    lambda e: f"(timestamp {e.timestamp}, offset {e.offset})",
    Code.TIMEINDEX_SANITY,
    Code.TIMEINDEX_NOT_TRIMMED,
    Code.TIMEINDEX_NOT_INCREASING,
)


# A checkpoint entry beyond the partition's log end: (severity, code, message).
_CHECKPOINT_BEYOND_END = {
    "log-start-offset-checkpoint": (
        "error",
        Code.LOG_START_BEYOND_LOG_END,
        "log start offset {offset} is beyond the log end offset {leo}: the broker would "
        "delete every segment",
    ),
    "recovery-point-offset-checkpoint": (
        "warning",
        Code.RECOVERY_POINT_BEYOND_LOG_END,
        "recovery point {offset} is beyond the log end offset {leo} (flushed data is missing, "
        "or the checkpoint is stale)",
    ),
    "replication-offset-checkpoint": (
        "warning",
        Code.HIGH_WATERMARK_BEYOND_LOG_END,
        "high watermark {offset} is beyond the log end offset {leo}",
    ),
    "cleaner-offset-checkpoint": (
        "warning",
        Code.CLEANER_CHECKPOINT_BEYOND_LOG_END,
        "cleaner checkpoint {offset} is beyond the log end offset {leo}; the cleaner resets it",
    ),
}


class Verifier:
    """Run :meth:`verify` over PATH arguments; findings stream out, :attr:`stats` adds up."""

    def __init__(
        self,
        *,
        deep: bool = False,
        max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
        progress: Callable[[int], None] | None = None,
        jobs: int = 1,
    ):
        self.deep = deep
        self.max_batch_bytes = max_batch_bytes
        self.progress = progress or (lambda n: None)
        self.jobs = jobs  # processes verifying the partitions of a log dir
        self.stats = Stats()

    # -- entry points ------------------------------------------------------------------------
    def verify(self, paths: list[str]) -> Iterator[Finding]:
        for arg in paths:
            files_before = self.stats.files
            for f in self._path(Path(arg)):
                self.stats.count(f)
                yield f
            if self.stats.files == files_before:
                # never "OK" about nothing: an empty x-0 dir, or one whose subdirs hold nothing
                raise InputError(
                    "no Kafka files in it: nothing was checked",
                    path=arg,
                    code=Code.NO_KAFKA_FILES,
                )

    def _path(self, path: Path) -> Iterator[Finding]:
        if not path.exists():
            raise InputError("no such file or directory", path=str(path), code=Code.NOT_FOUND)
        if path.is_dir():
            below = [] if layout.holds_files(path) else layout.log_dirs_below(path)
            if below:
                # a directory of log dirs (named like a partition or not): verify each
                for d in below:
                    yield from self._path(d)
                return
            logdir = classify_dir(path)
            if logdir is None:
                yield from self.verify_partition(path)
            else:
                yield from self.verify_log_dir(logdir)
            return
        kind = detect_kind(path)
        if kind == layout.LOG:
            base = layout.offset_from_name(path)
            seg = layout.SegmentFiles(base or 0, log=path)
            for sibling in (layout.INDEX, layout.TIMEINDEX, layout.TXNINDEX):
                p = path.with_name(layout.segment_name(seg.base_offset, "." + sibling))
                if base is not None and p.is_file():
                    setattr(seg, sibling, p)
            summary = SegmentSummary(seg.base_offset)
            yield from self.verify_segment(
                seg, summary, TxnReplay(), active=True, missing_index_ok=True
            )
        elif kind in (layout.INDEX, layout.TIMEINDEX, layout.TXNINDEX):
            base = layout.offset_from_name(path) or 0
            log = path.with_name(layout.segment_name(base, ".log"))
            seg = layout.SegmentFiles(base, log=log if log.is_file() else None)
            setattr(seg, kind, path)
            if seg.log is None:
                yield from self._index_alone(path, kind, base)
                return
            yield from self.verify_segment(
                seg, SegmentSummary(base), TxnReplay(), active=True, missing_index_ok=True
            )
        elif kind == layout.KRAFT_SNAPSHOT:
            yield from self._kraft_snapshot(path)
        elif kind == layout.SNAPSHOT:
            yield from self._snapshot(path, None)
        else:
            self.stats.files += 1
            yield from self._text_file(path, kind)

    # -- segments ------------------------------------------------------------------------------
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
        """Walk one segment: batches, then its indexes merged into the same pass."""
        assert seg.log is not None  # callers pass segments that have a .log
        path = str(seg.log)
        st = self.stats
        st.files += 1
        st.segments += 1
        base = seg.base_offset
        if not missing_index_ok and seg.index is None:
            yield Finding(
                "warning",
                Code.INDEX_MISSING,
                path,
                None,
                base,
                "no .index file: the broker rebuilds it by recovering the segment",
            )
        if not missing_index_ok and seg.timeindex is None:
            yield Finding(
                "warning",
                Code.TIMEINDEX_MISSING,
                path,
                None,
                base,
                "no .timeindex file: the broker creates an empty one",
            )
        offset_entries, time_entries, idx_findings = self._load_indexes(seg, active)
        yield from idx_findings
        oi = 0  # next offset-index entry to match against a batch boundary
        ti = 0
        aborts: set[int] = set()
        expected_txn: list[tuple[int, int, int]] = []  # (producer id, first, last)
        running_max = -1
        latest_epoch = -1
        with mapped(seg.log) as buf:
            st.bytes += len(buf)
            scanner = SegmentScanner(buf, stop_on_crc=False)
            release = ReleaseBehind(buf)
            prev_batch_last = prev_last
            reported = 0  # bytes of this segment passed to the progress bar
            for batch in scanner:
                st.batches += 1
                pos = batch.position
                release(pos)
                if pos - reported >= _PROGRESS_STEP:  # a huge segment moves the bar too
                    self.progress(pos - reported)
                    reported = pos
                last = batch.last_offset
                # offset index entries pointing at or before this batch start
                while oi < len(offset_entries) and offset_entries[oi].position <= pos:
                    e = offset_entries[oi]
                    yield from self._check_offset_entry(seg, e, oi, pos, prev_batch_last)
                    oi += 1
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
                summary.last_offset = last
                prior_max = running_max
                if batch.max_timestamp > running_max:
                    running_max = batch.max_timestamp
                epoch = batch.partition_leader_epoch
                if batch.magic >= 2 and epoch >= 0 and epoch > latest_epoch:
                    latest_epoch = epoch
                    summary.epoch_starts.append((epoch, batch.base_offset))
                self._track_txn(batch, txns, aborts, expected_txn)
                # time index entries whose offset falls in this batch
                while ti < len(time_entries) and time_entries[ti].offset <= last:
                    yield from self._check_time_entry(
                        seg, time_entries[ti], ti, prior_max, running_max
                    )
                    ti += 1
                prev_batch_last = last
            result = scanner.result
        assert result is not None
        summary.max_timestamp = running_max
        self.progress(result.size - reported)
        yield from self._segment_end(seg, result, summary, active)
        for e in offset_entries[oi:]:  # entries past the start of the last batch
            if e.position >= result.stopped_at:
                yield Finding(
                    "error",
                    Code.INDEX_BEYOND_LOG,
                    str(seg.index),
                    oi * 8,
                    e.offset,
                    f"offset index entry (offset {e.offset}, position {e.position}) "
                    f"points past the end of the readable log",
                )
            else:
                yield Finding(
                    "error",
                    Code.INDEX_NOT_ON_BATCH,
                    str(seg.index),
                    oi * 8,
                    e.offset,
                    f"offset index entry (offset {e.offset}, position {e.position}) "
                    f"does not point at the start of a batch",
                )
            oi += 1
        for t in time_entries[ti:]:
            yield Finding(
                "error",
                Code.TIMEINDEX_BEYOND_LOG,
                str(seg.timeindex),
                ti * 12,
                t.offset,
                f"time index entry (timestamp {t.timestamp}, offset "
                f"{t.offset}) points past the last offset of the log",
            )
            ti += 1
        if time_entries and not active and running_max > time_entries[-1].timestamp:
            yield Finding(
                "warning",
                Code.TIMEINDEX_FINAL_ENTRY_MISSING,
                str(seg.timeindex),
                None,
                summary.last_offset,
                f"the time index's last timestamp {time_entries[-1].timestamp} is "
                f"below the segment's max timestamp {running_max}: time retention "
                f"would judge this segment by an older time",
            )
        if not time_entries and not active and running_max >= 0 and seg.timeindex is not None:
            yield Finding(
                "warning",
                Code.TIMEINDEX_FINAL_ENTRY_MISSING,
                str(seg.timeindex),
                None,
                summary.last_offset,
                f"the time index is empty but the segment's max timestamp is "
                f"{running_max}: time retention falls back to the file's mtime",
            )
        yield from self._check_txn_index(seg, aborts, expected_txn)

    def _load_indexes(
        self, seg: layout.SegmentFiles, active: bool
    ) -> tuple[list[index.OffsetIndexEntry], list[index.TimeIndexEntry], list[Finding]]:
        findings: list[Finding] = []
        offsets = self._load_index(seg.index, _OFFSET_INDEX, seg.base_offset, active, findings)
        times = self._load_index(seg.timeindex, _TIME_INDEX, seg.base_offset, active, findings)
        return offsets, times, findings

    def _load_index(
        self,
        path: Path | None,
        kind: _IndexKind,
        base: int,
        active: bool,
        findings: list[Finding],
    ) -> list[Any]:
        """The entries of an index that a lookup would use, with the broker's sanity check,
        untrimmed zero slots and entry order reported; entries after a disorder are dropped."""
        if path is None:
            return []
        self.stats.files += 1
        buf = read_small(path, 1 << 31)
        try:
            kind.sanity_check(buf, base)
        except FormatError as e:
            findings.append(
                Finding(
                    "error",
                    kind.sanity,
                    str(path),
                    e.position,
                    None,
                    f"broker sanity check fails: {e}",
                )
            )
        size = kind.entry_size
        zero_tail = kind.zero_tail(buf)
        real = len(buf) // size - zero_tail
        if zero_tail:
            findings.append(
                Finding(
                    "warning" if active else "error",
                    kind.not_trimmed,
                    str(path),
                    real * size,
                    None,
                    f"{zero_tail} zero-filled slots after {real} entries "
                    f"(a preallocated {kind.label} "
                    + (
                        "of the active segment: the broker resets it on load)"
                        if active
                        else "of an inactive segment: the broker reads every slot as an entry)"
                    ),
                )
            )
        entries = list(kind.entries(buf[: real * size], base, stop_at_zero_fill=False))
        for i in range(1, len(entries)):
            prev, entry = entries[i - 1], entries[i]
            if kind.out_of_order(prev, entry):
                findings.append(
                    Finding(
                        "error",
                        kind.not_increasing,
                        str(path),
                        i * size,
                        entry.offset,
                        f"{kind.label} entry {i} {kind.describe(entry)} does not follow "
                        f"{kind.describe(prev)}",
                    )
                )
                return entries[:i]
        return entries

    def _check_offset_entry(
        self,
        seg: layout.SegmentFiles,
        e: index.OffsetIndexEntry,
        i: int,
        batch_pos: int,
        prev_batch_last: int | None,
    ) -> Iterator[Finding]:
        path = str(seg.index)
        if e.position != batch_pos:
            yield Finding(
                "error",
                Code.INDEX_NOT_ON_BATCH,
                path,
                i * 8,
                e.offset,
                f"offset index entry (offset {e.offset}, position {e.position}) does "
                f"not point at the start of a batch",
            )
        elif prev_batch_last is not None and e.offset <= prev_batch_last and batch_pos > 0:
            yield Finding(
                "error",
                Code.INDEX_MIS_SEEKS,
                path,
                i * 8,
                e.offset,
                f"offset index entry (offset {e.offset}, position {e.position}): "
                f"offset {e.offset} lies in the batch before that position, so a "
                f"fetch of it would skip records",
            )

    def _check_time_entry(
        self,
        seg: layout.SegmentFiles,
        t: index.TimeIndexEntry,
        i: int,
        prior_max: int,
        running_max: int,
    ) -> Iterator[Finding]:
        """An entry (T, O) is usable when no batch before O's batch has a timestamp above T
        (else a time lookup would skip it) and T has been reached by O's batch."""
        path = str(seg.timeindex)
        if t.timestamp > running_max:
            yield Finding(
                "error",
                Code.TIMEINDEX_TIMESTAMP_TOO_LARGE,
                path,
                i * 12,
                t.offset,
                f"time index entry (timestamp {t.timestamp}, offset {t.offset}): no "
                f"batch up to that offset has a timestamp that large (max "
                f"{running_max})",
            )
        elif prior_max > t.timestamp:
            yield Finding(
                "error",
                Code.TIMEINDEX_MIS_SEEKS,
                path,
                i * 12,
                t.offset,
                f"time index entry (timestamp {t.timestamp}, offset {t.offset}): "
                f"earlier batches already reach timestamp {prior_max}, so a time "
                f"lookup through this entry would skip them",
            )

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
            fast = engine.check_v2(batch.data, self.max_batch_bytes, f"{path}:{batch.position}")
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
            for r in batch.records(self.max_batch_bytes):
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

    def _track_txn(
        self,
        batch: Batch,
        txns: TxnReplay,
        aborts: set[int],
        expected: list[tuple[int, int, int]],
    ) -> None:
        ev = event_of(batch, self.max_batch_bytes)
        if ev is None:
            return
        txn = txns.apply(ev)
        if ev.aborted:
            aborts.add(ev.offset)
        if txn is not None:
            expected.append((txn.producer_id, txn.first_offset, txn.last_offset))

    def _check_txn_index(
        self, seg: layout.SegmentFiles, aborts: set[int], expected: list[tuple[int, int, int]]
    ) -> Iterator[Finding]:
        entries: list[index.AbortedTxn] = []
        if seg.txnindex is not None:
            self.stats.files += 1
            path = str(seg.txnindex)
            buf = read_small(seg.txnindex, 1 << 31)
            try:
                index.sanity_check_txn_index(buf, seg.base_offset)
                entries = list(index.iter_txn_index(buf))
            except FormatError as e:
                yield Finding("error", Code.TXNINDEX_CORRUPT, path, e.position, None, str(e))
                return
            prev = None
            for i, t in enumerate(entries):
                if prev is not None and t.last_offset <= prev:
                    yield Finding(
                        "error",
                        Code.TXNINDEX_NOT_INCREASING,
                        path,
                        i * 34,
                        t.last_offset,
                        f"aborted transaction ending at "
                        f"{t.last_offset} follows one ending at {prev}",
                    )
                if t.first_offset > t.last_offset:
                    yield Finding(
                        "error",
                        Code.TXNINDEX_BAD_RANGE,
                        path,
                        i * 34,
                        t.first_offset,
                        f"aborted transaction range {t.first_offset}..{t.last_offset} is reversed",
                    )
                if t.last_offset not in aborts:
                    yield Finding(
                        "error",
                        Code.TXNINDEX_MARKER_NOT_FOUND,
                        path,
                        i * 34,
                        t.last_offset,
                        f"no ABORT marker at offset {t.last_offset} "
                        f"(producer {t.producer_id}) in the log",
                    )
                prev = t.last_offset
        listed = {(t.producer_id, t.last_offset) for t in entries}
        # Without an .index the broker recovers the segment, which rebuilds the .txnindex.
        rebuilt = seg.index is None
        for pid, first, last in expected:
            if (pid, last) not in listed:
                yield Finding(
                    "warning" if rebuilt else "error",
                    Code.TXNINDEX_MISSING_ABORT,
                    str(seg.txnindex or seg.log),
                    None,
                    last,
                    f"aborted transaction of producer {pid} ({first}..{last}) is not "
                    f"in the .txnindex: "
                    + (
                        "the broker rebuilds it, as this segment has no .index"
                        if rebuilt
                        else "consumers reading committed data would see its records"
                    ),
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

    def _index_alone(self, path: Path, kind: str, base: int) -> Iterator[Finding]:
        self.stats.files += 1
        buf = read_small(path, 1 << 31)
        check = {
            layout.INDEX: index.sanity_check_offset_index,
            layout.TIMEINDEX: index.sanity_check_time_index,
            layout.TXNINDEX: index.sanity_check_txn_index,
        }[kind]
        try:
            check(buf, base)
        except FormatError as e:
            yield Finding(
                "error",
                f"{kind}-sanity",
                str(path),
                e.position,
                None,
                f"broker sanity check fails: {e}",
            )
        yield Finding(
            "warning",
            Code.LOG_MISSING,
            str(path),
            None,
            base,
            "no sibling .log: entries were not checked against the log (the broker "
            "deletes index files that have no log)",
        )

    # -- partitions ------------------------------------------------------------------------------
    def verify_partition(
        self, path: Path
    ) -> Generator[Finding, None, tuple[int | None, int | None]]:
        """Findings of a partition dir; its generator returns (first base offset, log end)."""
        part = layout.scan_partition_dir(path)
        self.stats.partitions += 1
        summaries = yield from self._partition_segments(part)
        leo = _log_end(part, summaries)
        for p in part.leftovers:
            yield Finding(
                "warning",
                Code.LEFTOVER_FILE,
                str(p),
                None,
                None,
                "leftover temporary file from an interrupted clean, split or delete; "
                "the broker completes or removes it on load",
            )
        for p in part.snapshots:
            yield from self._snapshot(p, leo)
        for p in part.kraft_snapshots:
            yield from self._kraft_snapshot(p)
        if part.partition_metadata is not None:
            yield from self._text_file(part.partition_metadata, layout.PARTITION_METADATA)
        if part.leader_epoch_checkpoint is not None:
            yield from self._leader_epochs(part.leader_epoch_checkpoint, summaries, leo)
        return (summaries[0].base_offset if summaries else None), leo

    def _partition_segments(
        self, part: layout.PartitionDir
    ) -> Generator[Finding, None, list[SegmentSummary]]:
        summaries: list[SegmentSummary] = []
        txns = TxnReplay()
        prev_last: int | None = None
        segs = part.segments
        for i, seg in enumerate(segs):
            active = i == len(segs) - 1
            if seg.log is None:
                for p in (seg.index, seg.timeindex, seg.txnindex):
                    if p is not None:
                        yield Finding(
                            "warning",
                            Code.ORPHAN_INDEX,
                            str(p),
                            None,
                            seg.base_offset,
                            "index file without a .log; the broker deletes it",
                        )
                continue
            if prev_last is not None and seg.base_offset <= prev_last:
                yield Finding(
                    "error",
                    Code.SEGMENT_OVERLAP,
                    str(seg.log),
                    0,
                    seg.base_offset,
                    f"segment base offset {seg.base_offset} is not above the previous "
                    f"segment's last offset {prev_last}",
                )
            summary = SegmentSummary(seg.base_offset)
            yield from self.verify_segment(seg, summary, txns, active=active, prev_last=prev_last)
            summaries.append(summary)
            if summary.last_offset is not None:
                if (
                    prev_last is not None
                    and summary.first_offset is not None
                    and summary.first_offset <= prev_last
                ):
                    yield Finding(
                        "error",
                        Code.OFFSET_NOT_INCREASING,
                        str(seg.log),
                        0,
                        summary.first_offset,
                        f"first offset {summary.first_offset} is not above the "
                        f"previous segment's last offset {prev_last}",
                    )
                prev_last = summary.last_offset
        return summaries

    def _kraft_snapshot(self, path: Path) -> Iterator[Finding]:
        """A KRaft snapshot is a log of batches with no indexes and no base-offset rule."""
        yield from self.verify_segment(
            layout.SegmentFiles(0, log=path),
            SegmentSummary(0),
            TxnReplay(),
            active=True,
            missing_index_ok=True,
            check_base=False,
        )

    def _snapshot(self, path: Path, leo: int | None) -> Iterator[Finding]:
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

    def _leader_epochs(
        self, path: Path, summaries: list[SegmentSummary], leo: int | None
    ) -> Iterator[Finding]:
        self.stats.files += 1
        try:
            entries = checkpoint.parse_leader_epoch_checkpoint(read_small(path))
        except FormatError as e:
            yield Finding(
                "error", Code.LEADER_EPOCH_CHECKPOINT_CORRUPT, str(path), e.position, None, str(e)
            )
            return
        for problem in checkpoint.validate_leader_epochs(entries):
            yield Finding(
                "error", Code.LEADER_EPOCH_NOT_INCREASING, str(path), None, None, problem.message
            )
        observed: list[tuple[int, int]] = []
        for s in summaries:
            for epoch, start in s.epoch_starts:
                if not observed or epoch > observed[-1][0]:
                    observed.append((epoch, start))
        by_epoch = {e.epoch: e.start_offset for e in entries}
        for n, (epoch, start) in enumerate(observed):
            cp_start = by_epoch.get(epoch)
            if cp_start is None:
                yield Finding(
                    "warning",
                    Code.LEADER_EPOCH_MISSING,
                    str(path),
                    None,
                    start,
                    f"batches of leader epoch {epoch} start at offset {start} but the "
                    f"checkpoint has no entry for epoch {epoch} (a lagging checkpoint; "
                    f"recovery adds it)",
                )
            elif n > 0 and cp_start > start:
                # Data of the epoch before its checkpointed start contradicts the cache. An
                # entry below the first batch is normal: compaction removes batches, and
                # the first entry is moved up to the log start offset (docs/kafka-rules.md: Loading
                # and recovery).
                yield Finding(
                    "warning",
                    Code.LEADER_EPOCH_MISMATCH,
                    str(path),
                    None,
                    start,
                    f"checkpoint says epoch {epoch} starts at {cp_start}, the log's "
                    f"first batch of epoch {epoch} is at {start}",
                )
        if leo is not None:
            for ent in entries:
                if ent.start_offset > leo:
                    yield Finding(
                        "warning",
                        Code.LEADER_EPOCH_BEYOND_LOG_END,
                        str(path),
                        None,
                        ent.start_offset,
                        f"epoch {ent.epoch} starts at {ent.start_offset}, beyond the log "
                        f"end offset {leo}; the broker truncates the cache",
                    )

    # -- log dirs --------------------------------------------------------------------------------
    def verify_log_dir(self, logdir: layout.LogDir) -> Iterator[Finding]:
        ends: dict[tuple[str, int], tuple[int | None, int | None]] = {}
        if self.jobs > 1:
            work = partial(_partition_job, self.deep, self.max_batch_bytes)
            for item in pool.spooled(work, logdir.partitions, self.jobs, prefix="klogtool-verify-"):
                if isinstance(item, Finding):
                    yield item
                    continue
                path, bounds, stats, moved = item  # a worker's partition is done
                for k, v in vars(stats).items():
                    setattr(self.stats, k, getattr(self.stats, k) + v)
                self.progress(moved)
                parsed = layout.parse_partition_dir_name(path.name)
                if parsed is not None:
                    ends[parsed] = bounds
        else:
            for p in logdir.partitions:
                bounds = yield from self.verify_partition(p)
                parsed = layout.parse_partition_dir_name(p.name)
                if parsed is not None:
                    ends[parsed] = bounds
        yield from self.verify_log_dir_files(logdir, ends)

    def verify_log_dir_files(
        self, logdir: layout.LogDir, ends: dict[tuple[str, int], tuple[int | None, int | None]]
    ) -> Iterator[Finding]:
        """The log dir's own files, checked against ``ends``: (topic, partition) -> the
        (first base offset, log end offset) that :meth:`verify_partition` returned."""
        for f in logdir.files:
            kind = layout.file_kind(f)
            if kind == layout.OFFSET_CHECKPOINT:
                yield from self._offset_checkpoint(f, ends)
            elif kind in (layout.LOCK, layout.CLEAN_SHUTDOWN):
                continue
            elif kind == layout.LEFTOVER:
                yield Finding(
                    "warning", Code.LEFTOVER_FILE, str(f), None, None, "leftover temporary file"
                )
            elif kind == layout.KRAFT_SNAPSHOT:  # bootstrap.checkpoint: record batches
                yield from self._kraft_snapshot(f)
            else:
                self.stats.files += 1
                yield from self._text_file(f, kind)

    def _offset_checkpoint(
        self, path: Path, ends: dict[tuple[str, int], tuple[int | None, int | None]]
    ) -> Iterator[Finding]:
        self.stats.files += 1
        try:
            cp = checkpoint.parse_offset_checkpoint(read_small(path))
        except FormatError as e:
            yield Finding("error", Code.CHECKPOINT_CORRUPT, str(path), e.position, None, str(e))
            return
        name = path.name
        missing = [tp for tp in cp.entries if tp not in ends]
        if missing:
            shown = ", ".join(f"{t}-{p}" for t, p in sorted(missing)[:5])
            yield Finding(
                "warning",
                Code.CHECKPOINT_PARTITION_MISSING,
                str(path),
                None,
                None,
                f"{len(missing)} partitions named in {name} have no directory here "
                f"({shown}{', ...' if len(missing) > 5 else ''})",
            )
        bound = _CHECKPOINT_BEYOND_END.get(name)
        if bound is None:
            return
        severity, code, what = bound
        for (topic, part), offset in sorted(cp.entries.items()):
            _first, leo = ends.get((topic, part), (None, None))
            if leo is not None and offset > leo:
                yield Finding(
                    severity,
                    code,
                    str(path),
                    None,
                    offset,
                    f"{topic}-{part}: {what.format(offset=offset, leo=leo)}",
                )

    def _text_file(self, path: Path, kind: str) -> Iterator[Finding]:
        parsers: dict[str, Callable[[bytes], object]] = {
            layout.PARTITION_METADATA: checkpoint.parse_partition_metadata,
            layout.META_PROPERTIES: checkpoint.parse_meta_properties,
            layout.QUORUM_STATE: checkpoint.parse_quorum_state,
            layout.CLEAN_SHUTDOWN: checkpoint.parse_clean_shutdown,
            layout.OFFSET_CHECKPOINT: checkpoint.parse_offset_checkpoint,
            layout.LEADER_EPOCH_CHECKPOINT: checkpoint.parse_leader_epoch_checkpoint,
        }
        parser = parsers.get(kind)
        if parser is None:
            return
        try:
            parser(read_small(path))
        except FormatError as e:
            yield Finding("error", f"{kind}-corrupt", str(path), e.position, None, str(e))


def _partition_job(
    deep: bool, max_batch_bytes: int, path: Path
) -> Generator[Finding | tuple[Path, tuple[int | None, int | None], Stats, int], None, None]:
    """In a worker: one partition's findings, then ``(path, its bounds, the counts it added,
    the bytes it moved the progress by)`` (findings are counted where they are shown)."""
    moved = 0

    def progress(n: int) -> None:
        nonlocal moved
        moved += n

    verifier = Verifier(deep=deep, max_batch_bytes=max_batch_bytes, progress=progress)
    bounds = yield from verifier.verify_partition(path)
    yield path, bounds, verifier.stats, moved


def _batch_range(batch: Batch) -> str:
    """``batch 1084076..1084275`` (a compressed v0/v1 wrapper: ``wrapper ..1084275``, whose
    first offset needs decompression)."""
    if batch.magic < 2 and batch.compression:
        return f"wrapper ..{batch.last_offset}"
    return f"batch {batch.header_offset}..{batch.last_offset}"


def _log_end(part: layout.PartitionDir, summaries: list[SegmentSummary]) -> int | None:
    for s in reversed(summaries):
        if s.last_offset is not None:
            return s.last_offset + 1
    return summaries[-1].base_offset if summaries else None
