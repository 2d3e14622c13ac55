"""verify, log-directory level: its partitions (in a process pool with ``jobs``, output in
order) and its own files: offset checkpoints against the partitions' log ends, meta.properties
and the other text files."""

from __future__ import annotations

from collections.abc import Generator, Iterator
from functools import partial
from pathlib import Path

from klogtool.codes import Code
from klogtool.formats import checkpoint, index
from klogtool.formats.errors import FormatError
from klogtool.log import layout, pool
from klogtool.log.check.partition_checks import PartitionChecks
from klogtool.log.context import ReadContext, Tally
from klogtool.log.findings import Finding
from klogtool.log.segment import read_small
from klogtool.log.segment_checks import Stats

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


# a cached remote segment's three indexes, each with the broker's sanity check
_REMOTE_INDEXES = {
    "index": index.sanity_check_offset_index,
    "timeindex": index.sanity_check_time_index,
    "txnindex": index.sanity_check_txn_index,
}


def _partition_job(
    deep: bool, ctx: ReadContext, path: Path
) -> Generator[Finding | tuple[Path, tuple[int | None, int | None], Stats, int], None, None]:
    """In a worker: one partition's findings, then ``(path, its bounds, the counts it added,
    the bytes it moved the progress by)`` (findings are counted where they are shown)."""
    moved = Tally()
    verifier = LogDirChecks(ctx.reporting_to(moved), deep=deep)
    bounds = yield from verifier.verify_partition(path)
    yield path, bounds, verifier.stats, moved.walked


class LogDirChecks(PartitionChecks):
    """The checks of a log directory: its partitions (in a pool with ``jobs``) and its files."""

    def verify_log_dir(self, logdir: layout.LogDir) -> Iterator[Finding]:
        ends: dict[tuple[str, int], tuple[int | None, int | None]] = {}
        if self.jobs > 1:
            work = partial(_partition_job, self.deep, self.ctx.quiet())
            items = pool.spooled(
                self.ctx,
                work,
                logdir.partitions,
                self.jobs,
                prefix="klogtool-verify-",
                part=lambda p: f"partition {p}",
            )
            for item in items:
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
        if logdir.remote_index_cache is not None:
            yield from self._remote_index_cache(logdir.remote_index_cache)

    def _remote_index_cache(self, cache: Path) -> Iterator[Finding]:
        """Tiered storage's cached indexes of remote segments, held to what the broker's
        ``RemoteIndexCache`` does when it starts: leftovers and incomplete sets go, every
        index passes its sanity check (or the cache does not start)."""
        sets: dict[tuple[int, str], dict[str, Path]] = {}
        for f in sorted(cache.iterdir()):
            m = layout.REMOTE_INDEX_RE.match(f.name)
            if m is None:
                continue
            if m["temp"]:
                yield Finding(
                    "warning", Code.LEFTOVER_FILE, str(f), None, None, "leftover temporary file"
                )
                continue
            sets.setdefault((int(m["offset"]), m["segment_id"]), {})[m["kind"]] = f
        for (offset, segment_id), files in sets.items():
            missing = [k for k in _REMOTE_INDEXES if k not in files]
            if missing:
                yield Finding(
                    "warning",
                    Code.REMOTE_INDEX_INCOMPLETE,
                    str(next(iter(files.values()))),
                    None,
                    offset,
                    f"remote segment {segment_id}: no .{' or .'.join(missing)} beside it; the "
                    "broker deletes its cached indexes on start and fetches them again",
                )
                continue
            for kind, check in _REMOTE_INDEXES.items():
                self.stats.files += 1
                try:
                    check(read_small(files[kind], 1 << 31), offset)
                except FormatError as e:
                    yield Finding(
                        "error",
                        Code.REMOTE_INDEX_CORRUPT,
                        str(files[kind]),
                        e.position,
                        offset,
                        f"{e} (the broker's remote index cache does not start on it)",
                    )

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
                f"{len(missing)} partition{'s' if len(missing) != 1 else ''} named in {name} "
                f"{'have' if len(missing) != 1 else 'has'} no directory here "
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
