"""The writing commands' pipeline: resolve PATHs to partitions (:func:`select_partitions`),
take the broker's lock of each log dir involved or refuse, exit 4 (:func:`writing_session`),
finish or roll back an interrupted swap the way the broker's loader would (docs/kafka-rules.md:
Loading and recovery), so that a re-run after a crash starts from a state the broker itself
would accept; then plan and execute (or only report, with --dry-run) partition by partition
(:func:`each_partition`). What the user should hear beside the results comes back as
:class:`Notice` objects; the commands render them (``commands/_writing.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeVar

from klogtool.codes import Code
from klogtool.errors import InputError, KlogtoolError
from klogtool.formats.batch import Batch
from klogtool.formats.errors import FormatError, LimitExceededError, UnencodableError
from klogtool.formats.records import CLEAN, ZERO_FILL, SegmentScanner
from klogtool.log import layout, targets
from klogtool.log.atomic import CLEANED, FileOps, complete_interrupted, log_dir_lock, log_dir_of
from klogtool.log.findings import Finding

if TYPE_CHECKING:
    from klogtool import events

T = TypeVar("T")


@dataclass(frozen=True)
class Notice:
    """A line for the user beside the results (stderr): a warning, or an info line shown with
    -v. A ``skipped`` partition makes the command exit 1."""

    message: str
    level: Literal["warn", "info"] = "warn"
    skipped: bool = False


class SkipPartition(Exception):
    """Raised by a partition step (its ``__cause__`` says why): the partition is skipped with
    a notice, or, when it is the only partition, the cause ends the command."""

    def __init__(self, path: Path, cause: KlogtoolError | FormatError):
        super().__init__(f"{path}: skipped: {cause}")
        self.cause = cause


METADATA_TOPIC = "__cluster_metadata"


def left_alone(path: Path) -> str | None:
    """Why a writing command leaves this partition dir alone unless it is named: a dir the
    broker marked -delete, -future or -stray, or the KRaft metadata log (the broker applies no
    topic's retention, compaction or format to it: its controller trims it below snapshots)."""
    state = layout.partition_dir_state(path.name)
    if state is not None:
        return layout.DIR_STATES[state]
    parsed = layout.parse_partition_dir_name(path.name)
    if parsed is not None and parsed[0] == METADATA_TOPIC:
        return "the KRaft metadata log: no topic's retention, compaction or conversion applies"
    return None


def select_partitions(
    paths: Iterable[str], include: Callable[[Path, bool], Notice | None] | None = None
) -> tuple[list[Path], list[Notice]]:
    """The partition directories of PATH arguments (:func:`klogtool.log.targets.resolve`:
    partition dirs and log dirs), in order. A directory being deleted or moved is left out;
    so is one ``include(path, named)`` gives a notice for (``named``: the PATH was the
    partition directory itself, not a log dir holding it)."""
    resolved = targets.resolve(paths, files=())
    notices = [Notice(f"{f.path}: skipped: {f.message}", skipped=True) for f in resolved.findings]
    parts: list[Path] = []
    for t in resolved.partitions:
        alone = left_alone(t.path)
        if alone is not None and not t.named:  # never rewritten by accident: named, it is
            notices.append(Notice(f"{t.path}: skipped ({alone}); name it to include it"))
            continue
        left_out = include(t.path, t.named) if include is not None else None
        if left_out is not None:
            notices.append(left_out)
            continue
        parts.append(t.path)
    return parts, notices


def completed_notices(session: Session, dry_run: bool) -> list[Notice]:
    """What the session finished (or would) before anything else: one warning each."""
    verb = "would complete" if dry_run else "completed"
    return [Notice(f"{d}: {BUSY}") for d in session.busy] + [
        Notice(f"{p}: {verb} an interrupted operation first: {what}")
        for p, done in session.completed.items()
        for what in done
    ]


def each_partition(
    parts: list[Path], step: Callable[[Path], Iterable[T | Notice]]
) -> Iterator[T | Notice]:
    """``step`` over the partitions in order, a :class:`SkipPartition` becoming a notice."""
    for p in parts:
        try:
            yield from step(p)
        except SkipPartition as e:
            if len(parts) == 1:
                raise e.cause from None
            yield Notice(str(e), skipped=True)


def run_partitions(
    parts: list[Path],
    step: Callable[..., Iterable[T | Notice]],
    *,
    force: bool,
    dry_run: bool,
) -> Iterator[T | Notice]:
    """The whole pipeline after :func:`select_partitions`: lock, finish interrupted
    operations, then ``step(partition, ops=...)`` for each partition (a generator: consume it
    to the end, the lock is held meanwhile)."""
    with writing_session(parts, force=force, dry_run=dry_run) as session:
        yield from completed_notices(session, dry_run)
        yield from each_partition(parts, lambda p: step(p, ops=session.ops))


@dataclass
class Session:
    """A writing session: what it finished before the work (interrupted operations, per
    partition or log dir) and the log dirs a broker holds (dry runs only). The writing
    commands report both as notices (:func:`completed_notices`); truncate-recovery and
    rebuild-index, whose output is a report of the files, as objects and findings
    (:meth:`interrupted`, :meth:`busy_findings`), each right before the work on that path."""

    ops: FileOps
    completed: dict[Path, list[str]] = field(default_factory=dict)  # partition -> actions
    busy: list[Path] = field(default_factory=list)  # log dirs a broker holds (dry runs only)

    def interrupted(self, path: Path, display: str) -> list[events.InterruptedOperation]:
        """The ``interrupted_operation`` objects of what was finished at ``path``."""
        return [interrupted_obj(display, m, self.ops.dry_run) for m in self.completed.get(path, [])]

    def busy_findings(self) -> list[Finding]:
        return [
            Finding("warning", Code.BROKER_RUNNING, str(d), None, None, BUSY) for d in self.busy
        ]


BUSY = (
    "a running broker (or another klogtool) holds its .lock: this dry run reads files that "
    "may change under it, and the real run will be refused until the broker is stopped"
)


@contextmanager
def writing_session(
    partitions: list[Path],
    *,
    force: bool,
    dry_run: bool,
    read_only: list[Path] | None = None,
    ops: FileOps | None = None,
    log_dirs: list[Path] | None = None,
) -> Iterator[Session]:
    """Lock the log dirs of ``partitions`` and complete their interrupted swaps (through
    ``ops``, else new ones). The log dirs of ``read_only`` paths (inputs that are only read but
    must not change meanwhile) are locked shared: no broker or klogtool writer can hold them
    while this runs. ``log_dirs`` are locked as given (the log dir a new partition is written
    into). On an exception, half-written files are removed."""
    ops = ops or FileOps(dry_run=dry_run)
    busy: list[Path] = []
    with ExitStack() as stack:
        seen: set[Path] = set()
        dirs = [(log_dir_of(p), False) for p in partitions]
        dirs += [(d, False) for d in log_dirs or []]
        dirs += [(log_dir_of(p), True) for p in read_only or []]
        for log_dir, only_read in dirs:
            if log_dir in seen:
                continue
            seen.add(log_dir)
            if stack.enter_context(
                log_dir_lock(log_dir, force=force, dry_run=dry_run, shared=only_read)
            ):
                busy.append(log_dir)
        session = Session(ops, busy=busy)
        for log_dir in sorted(seen):
            # a checkpoint rewrite cut short leaves <checkpoint>.cleaned beside it (ours)
            stale = [
                log_dir / (name + CLEANED)
                for name in layout.OFFSET_CHECKPOINTS
                if (log_dir / (name + CLEANED)).is_file()
            ]
            for f in stale:
                if partitions:
                    ops.unlink(f)
                    session.completed.setdefault(log_dir, []).append(f"deleted unfinished {f.name}")
        for p in partitions:
            done = complete_interrupted(ops, p)
            if done:
                session.completed.setdefault(p, []).extend(done)
        try:
            yield session
        except BaseException:
            ops.discard_partial()  # a failed run (a full disk) leaves no half-written .cleaned
            raise


def interrupted_obj(display: str, message: str, dry_run: bool) -> events.InterruptedOperation:
    """The ``interrupted_operation`` object of rebuild-index and truncate-recovery."""
    return {
        "type": "interrupted_operation",
        "path": display,
        "dry_run": dry_run,
        "message": ("would complete: " if dry_run else "completed: ") + message,
    }


INT32_MAX = (1 << 31) - 1


def unreadable(e: FormatError, path: Path) -> InputError:
    """A segment a rewriting command cannot read (or a batch it cannot write): one line, and
    what to do about it."""
    if isinstance(e, LimitExceededError):
        # a sound batch, only larger than the memory bound: repairing would cut good data
        todo = "raise --max-batch-bytes if this batch is expected to be that large"
    elif isinstance(e, UnencodableError):
        todo = "nothing was changed; the segment is readable as it is"
    else:
        todo = "repair the segment first (klogtool truncate-recovery)"
    return InputError(
        f"{e}; {todo}",
        path=str(path),
        position=e.position,
        code=e.code,
    )


def require_readable_end(scanner: SegmentScanner, path: Path) -> None:
    """Refuse a segment whose walk ended on damage (a zero-filled tail is fine)."""
    result = scanner.result
    if result is not None and result.end not in (CLEAN, ZERO_FILL):
        err = result.error
        raise InputError(
            f"{err or result.end}; repair the segment first (truncate-recovery)",
            path=str(path),
            position=result.stopped_at,
            code=err.code if err is not None else result.end,
        )


def check_batch_offsets(batch: Batch, segment_base: int, floor: int, path: Path) -> None:
    """Refuse (exit 3) a batch a rewrite cannot carry over: its first offset is below
    ``floor`` (the segment's base offset, or the offset past the previous segment's last, so
    offsets increase across segments too) or its last offset is more than 2^31-1 past the
    segment's base (no index entry can hold it). The v2 base offset is not under the CRC, so
    a corrupt one passes every other check."""
    first = batch.header_offset
    if first < floor:
        where = (
            f"the segment's base offset {segment_base}"
            if floor == segment_base
            else f"{floor}, where the previous segment ended"
        )
        raise InputError(
            f"batch offset {first} is below {where}: offsets must increase; "
            "repair the partition first (klogtool truncate-recovery)",
            path=str(path),
            position=batch.position,
            code=Code.OFFSET_BELOW_SEGMENT_BASE
            if floor == segment_base
            else Code.OFFSET_NOT_INCREASING,
        )
    if batch.last_offset - segment_base > INT32_MAX:
        raise InputError(
            f"last offset {batch.last_offset} is more than 2^31-1 past the segment's base offset "
            f"{segment_base}; repair the partition first (klogtool truncate-recovery)",
            path=str(path),
            position=batch.position,
            code=Code.OFFSET_OVERFLOW,
        )
