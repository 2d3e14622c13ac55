"""``verify`` as a library: every check of a file, partition dir or log dir, as findings.

Verify accepts what the broker accepts (docs/kafka-rules.md: Loading and recovery, Index
rebuild). Each segment is read in one pass over its mmapped bytes, with the checks of its index
files (log/check/indexcheck.py) merged into the walk, so memory stays flat however large the
segment.

Finding codes are stable (they are part of the JSON output); severities: ``error`` means the
data is damaged or a broker would lose or mis-serve records; ``warning`` means something a
broker repairs by itself on load (a zero-filled tail, a missing index, a leftover temp file).
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from klogtool.codes import Code
from klogtool.errors import InputError
from klogtool.formats import checkpoint, engine
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
from klogtool.log.check.indexcheck import SegmentIndexCheck, index_alone
from klogtool.log.files import classify_dir, detect_kind
from klogtool.log.findings import Finding, FindingCounts
from klogtool.log.read.record_filter import first_offset
from klogtool.log.segment import ReleaseBehind, mapped, read_small
from klogtool.log.txnreplay import TxnReplay

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
        """Walk one segment: batches, with its index checks (log/check/indexcheck.py) merged into
        the same pass."""
        assert seg.log is not None  # callers pass segments that have a .log
        path = str(seg.log)
        st = self.stats
        st.files += 1
        st.segments += 1
        base = seg.base_offset
        indexes = SegmentIndexCheck(seg, txns, active=active, max_batch_bytes=self.max_batch_bytes)
        if not missing_index_ok:
            yield from indexes.missing()
        yield from indexes.load(prev_last)
        latest_epoch = -1
        with mapped(seg.log) as buf:
            st.bytes += len(buf)
            scanner = SegmentScanner(buf, stop_on_crc=False)
            release = ReleaseBehind(buf)
            reported = 0  # bytes of this segment passed to the progress bar
            for batch in scanner:
                st.batches += 1
                pos = batch.position
                release(pos)
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
        yield from index_alone(path, kind, base)

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
        parsers: dict[str, tuple[Callable[[bytes], object], Code]] = {
            layout.PARTITION_METADATA: (
                checkpoint.parse_partition_metadata,
                Code.PARTITION_METADATA_CORRUPT,
            ),
            layout.META_PROPERTIES: (
                checkpoint.parse_meta_properties,
                Code.META_PROPERTIES_CORRUPT,
            ),
            layout.QUORUM_STATE: (checkpoint.parse_quorum_state, Code.QUORUM_STATE_CORRUPT),
            layout.CLEAN_SHUTDOWN: (checkpoint.parse_clean_shutdown, Code.CLEAN_SHUTDOWN_CORRUPT),
            layout.OFFSET_CHECKPOINT: (
                checkpoint.parse_offset_checkpoint,
                Code.OFFSET_CHECKPOINT_CORRUPT,
            ),
            layout.LEADER_EPOCH_CHECKPOINT: (
                checkpoint.parse_leader_epoch_checkpoint,
                Code.LEADER_EPOCH_CHECKPOINT_CORRUPT,
            ),
        }
        if kind not in parsers:
            return
        parser, code = parsers[kind]
        try:
            parser(read_small(path))
        except FormatError as e:
            yield Finding("error", code, str(path), e.position, None, str(e))


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
