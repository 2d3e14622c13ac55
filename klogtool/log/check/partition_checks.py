"""verify, partition level: the segments in order (offsets increase across them, transactions
carry over), producer snapshots, the leader-epoch checkpoint against the log."""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator
from pathlib import Path

from klogtool.codes import Code
from klogtool.formats import checkpoint
from klogtool.formats.errors import FormatError
from klogtool.log import layout
from klogtool.log.findings import Finding
from klogtool.log.segment import read_small
from klogtool.log.segment_checks import SegmentChecks, SegmentSummary
from klogtool.log.txnreplay import TxnReplay


def _log_end(part: layout.PartitionDir, summaries: list[SegmentSummary]) -> int | None:
    for s in reversed(summaries):
        if s.last_offset is not None:
            return s.last_offset + 1
    return summaries[-1].base_offset if summaries else None


class PartitionChecks(SegmentChecks):
    """The checks of a partition directory: its segments in order, snapshots, leader epochs."""

    def verify_partition(
        self, path: Path
    ) -> Generator[Finding, None, tuple[int | None, int | None]]:
        """Findings of a partition dir; its generator returns (first base offset, log end)."""
        part = layout.scan_partition_dir(path)
        self.stats.partitions += 1
        state = layout.partition_dir_state(path.name)
        if state is not None:  # checked like any partition, and said what it is
            yield Finding(
                "warning",
                Code.NOT_LIVE_PARTITION,
                str(path),
                None,
                None,
                f"not a live partition: {layout.DIR_STATES[state]}",
            )
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
            yield from self.check_snapshot(p, leo)
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
