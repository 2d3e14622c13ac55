"""Transaction forensics over partition directories (the ``transactions`` command's library).

A partition's transactions are rebuilt from the log alone, the way the broker's producer state
sees them (docs/kafka-rules.md: Record formats, Partition directory files, Loading and recovery): a
transactional data batch of a producer
with no open transaction starts one (first offset = the batch's base offset); the producer's
next COMMIT / ABORT control batch ends it (last offset = the marker's offset). Only batch
headers are read, plus the single record of each transactional control batch, so a scan runs
at the speed of reading the files.

For every partition this yields (as docs/output.md style dicts, see
:meth:`TransactionScanner.scan`):

* ``transaction`` objects: producer id/epoch, first/last offset, state ``committed`` /
  ``aborted`` / ``open``, timestamps and duration, data batches and records (the batches'
  declared record counts), and for open ones the age at ``now`` and whether it is *hanging*
  (open for longer than ``older_than``), with the ``kafka-transactions.sh … abort`` command
  that ends it;
* ``finding`` objects: ``hanging-transaction``, ``empty-transaction`` (a transaction whose data
  batches hold no records), ``marker-without-data`` (a COMMIT/ABORT with no data of that
  producer before it: the data is below the log start, was removed by the cleaner, or the
  producer never wrote to this partition), ``txnindex-missing-abort`` (an aborted transaction
  that is not in the ``.txnindex`` of the segment holding its ABORT marker, so consumers in
  read_committed would see its records), ``txnindex-mismatch`` (the entry's first offset or
  last stable offset differs from what the log says), ``txnindex-marker-not-found`` (an entry
  with no ABORT marker at its last offset), ``txnindex-corrupt``, ``bad-control-record``,
  ``log-unreadable`` (a torn or corrupt tail: what follows is not seen), ``not-a-log``;
* one ``partition`` object: log start/end offsets and the *last stable offset* the partition
  would have (the first offset of the earliest open transaction, else the log end offset,
  standing in for the high watermark, which is not on disk).

The coordinator epoch that ``kafka-transactions.sh abort`` needs must be at least the one the
partition's producer state holds for the producer. It is taken, in this order, from the last
COMMIT/ABORT marker of that producer in the partition (``marker``), from the newest producer
snapshot (``producer-snapshot``), or from the ``__transaction_state`` partitions in the same
log dir (``transaction-state``: the coordinator epoch is that partition's leader epoch; the
transactional id and the coordinator's state for the producer are reported too). Otherwise it
is ``unknown`` and the command carries a ``<coordinator-epoch>`` placeholder: ``kafka-
transactions.sh describe-producers --topic T --partition P`` shows it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from klogtool.codes import Code
from klogtool.errors import InputError
from klogtool.formats import index
from klogtool.formats.batch import CREATE_TIME
from klogtool.formats.errors import FormatError
from klogtool.formats.limits import ReadLimits
from klogtool.formats.payloads.control import ABORT, COMMIT, decode_control_record
from klogtool.formats.payloads.transaction_state import (
    decode_transaction_state,
    transaction_state_name,
)
from klogtool.formats.records import CLEAN, ZERO_FILL, SegmentScanner
from klogtool.formats.snapshot import ProducerEntry, parse_snapshot
from klogtool.log import layout, storage
from klogtool.log.context import ReadContext
from klogtool.log.files import partition_dirs_of
from klogtool.log.findings import Finding
from klogtool.log.segment import mapped, read_small, refuse_not_a_log
from klogtool.log.txnreplay import TxnReplay

if TYPE_CHECKING:
    from klogtool import events

# What TransactionScanner.scan yields: the objects of the transactions command.
TransactionsObject: TypeAlias = (
    "events.TransactionsTransaction | events.TransactionsPartition | events.TransactionsFinding"
    " | events.TransactionsSummary"
)

BOOTSTRAP_PLACEHOLDER = "<bootstrap-server>"
EPOCH_PLACEHOLDER = "<coordinator-epoch>"
TXN_STATE_TOPIC = "__transaction_state"


@dataclass
class _Open:
    """A transaction being rebuilt."""

    producer_id: int
    producer_epoch: int
    first_offset: int
    last_data_offset: int
    start_timestamp: int
    last_timestamp: int
    batches: int = 0
    records: int = 0


@dataclass(frozen=True)
class PartitionInput:
    """One partition to scan: its directory (or a lone segment file) and its segments."""

    path: Path
    display: str
    topic: str | None
    partition: int | None
    segments: tuple[layout.SegmentFiles, ...]
    snapshots: tuple[Path, ...] = ()
    log_dir: Path | None = None


@dataclass
class CoordinatorInfo:
    """What a log dir's ``__transaction_state`` partitions say about one producer id."""

    transactional_id: str
    state: str
    producer_epoch: int
    coordinator_epoch: int
    partition: int
    last_update_timestamp: int


@dataclass
class Summary:
    partitions: int = 0
    transactions: int = 0
    committed: int = 0
    aborted: int = 0
    open: int = 0
    hanging: int = 0
    errors: int = 0
    warnings: int = 0

    def as_obj(self) -> events.TransactionsSummary:
        """The ``summary`` object: counts for the run."""
        return {
            "type": "summary",
            "partitions": self.partitions,
            "transactions": self.transactions,
            "committed": self.committed,
            "aborted": self.aborted,
            "open": self.open,
            "hanging": self.hanging,
            "errors": self.errors,
            "warnings": self.warnings,
        }


def finding_obj(
    part: PartitionInput,
    f: Finding,
    *,
    producer_id: int | None = None,
    producer_epoch: int | None = None,
    first_offset: int | None = None,
    last_offset: int | None = None,
    last_stable_offset: int | None = None,
) -> events.TransactionsFinding:
    """The ``finding`` object: ``f`` in ``part``, with the transaction's fields it names (each
    left out when None)."""
    details: events.TransactionsFindingDetails = {}
    if producer_id is not None:
        details["producer_id"] = producer_id
    if producer_epoch is not None:
        details["producer_epoch"] = producer_epoch
    if first_offset is not None:
        details["first_offset"] = first_offset
    if last_offset is not None:
        details["last_offset"] = last_offset
    if last_stable_offset is not None:
        details["last_stable_offset"] = last_stable_offset
    return {**f.as_obj(), "topic": part.topic, "partition": part.partition, **details}


def _batch_start_ts(batch: Any) -> int:
    """When a data batch was written: its first record's CreateTime, or the broker's append
    time for LogAppendTime batches (whose base timestamp stays the client's)."""
    if (
        batch.timestamp_type == CREATE_TIME
        and batch.delete_horizon_ms is None
        and batch.base_timestamp >= 0
    ):
        return int(batch.base_timestamp)
    return int(batch.max_timestamp)


def abort_command(
    topic: str | None,
    partition: int | None,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int | None,
    bootstrap_server: str = BOOTSTRAP_PLACEHOLDER,
) -> str:
    """The ``kafka-transactions.sh`` line that aborts one hanging transaction."""
    epoch = EPOCH_PLACEHOLDER if coordinator_epoch is None else str(coordinator_epoch)
    return (
        f"kafka-transactions.sh --bootstrap-server {bootstrap_server} abort "
        f"--topic {topic if topic is not None else '<topic>'} "
        f"--partition {partition if partition is not None else '<partition>'} "
        f"--producer-id {producer_id} --producer-epoch {producer_epoch} "
        f"--coordinator-epoch {epoch}"
    )


def resolve_partitions(paths: list[str]) -> Iterator[PartitionInput]:
    """The partitions PATH arguments stand for: partition dirs, log dirs, or ``.log`` files."""
    for arg in paths:
        path = storage.path_of(arg)
        if not path.exists():
            raise InputError("no such file or directory", path=arg, code=Code.NOT_FOUND)
        if path.is_file():
            if layout.file_kind(path) != layout.LOG and not path.name.endswith(".log"):
                raise InputError(
                    "not a .log segment, partition directory or log directory",
                    path=arg,
                    code=Code.NOT_A_LOG,
                )
            parsed = layout.parse_partition_dir_name(path.resolve().parent.name)
            seg = layout.segment_files(path, layout.LOG)
            yield PartitionInput(
                path,
                arg,
                parsed[0] if parsed else None,
                parsed[1] if parsed else None,
                (seg,),
                log_dir=path.resolve().parent.parent if parsed else None,
            )
            continue
        for p, display in partition_dirs_of(path, arg):
            yield _partition(p, display)


def _partition(path: Path, display: str) -> PartitionInput:
    part = layout.scan_partition_dir(path)
    return PartitionInput(
        path,
        display,
        part.topic,
        part.partition,
        tuple(s for s in part.segments if s.log is not None),
        tuple(part.snapshots),
        path.resolve().parent,
    )


class TransactionScanner:
    """Scan partitions for transactions; :meth:`scan` yields the objects described above.

    ``now_ms``: the reference time for ages; ``older_than_ms``: how long an open transaction
    may stay open before it counts as hanging; ``use_coordinator``: read producer snapshots and
    the log dir's ``__transaction_state`` partitions for coordinator epochs.
    """

    def __init__(
        self,
        *,
        now_ms: int,
        older_than_ms: int,
        ctx: ReadContext,
        bootstrap_server: str = BOOTSTRAP_PLACEHOLDER,
        use_coordinator: bool = True,
    ):
        self.limits = ctx.limits
        self.now_ms = now_ms
        self.older_than_ms = older_than_ms
        self.bootstrap_server = bootstrap_server
        self.use_coordinator = use_coordinator
        self.summary = Summary()
        self._coordinators: dict[Path, dict[int, CoordinatorInfo]] = {}

    # -- entry point -------------------------------------------------------------------------
    def scan(self, paths: list[str]) -> Iterator[TransactionsObject]:
        for part in resolve_partitions(paths):
            for obj in self.partition_objects(part):
                if obj["type"] == "finding":
                    if obj["severity"] == "error":
                        self.summary.errors += 1
                    else:
                        self.summary.warnings += 1
                yield obj
        yield self.summary.as_obj()

    # -- one partition ---------------------------------------------------------------------
    def partition_objects(self, part: PartitionInput) -> Iterator[TransactionsObject]:
        """The objects of one partition: its transactions and findings, then the partition."""
        self.summary.partitions += 1
        replay = TxnReplay()  # which transactions are open, and the last stable offset
        open_txns: dict[int, _Open] = {}  # what is known of each (its producer's key in replay)
        last_marker_epoch: dict[int, int] = {}
        log_start: int | None = None
        log_end: int | None = None
        counts = {"transactions": 0, "committed": 0, "aborted": 0, "open": 0, "hanging": 0}

        def finding(
            severity: str,
            code: str,
            path: str,
            position: int | None,
            offset: int | None,
            message: str,
            **extra: int,
        ) -> events.TransactionsFinding:
            return finding_obj(
                part, Finding(severity, code, path, position, offset, message), **extra
            )

        for seg in part.segments:
            if seg.log is None:
                continue
            log_path = str(seg.log)
            aborts: list[tuple[int, int, int, int]] = []  # (pid, first, marker, lso)
            markers: set[int] = set()
            with mapped(seg.log) as buf:
                scanner = SegmentScanner(buf, check_crc=False)
                for batch in scanner:
                    if log_start is None:
                        log_start = batch.base_offset if batch.magic >= 2 else batch.last_offset
                    log_end = batch.last_offset + 1
                    if batch.magic < 2 or batch.producer_id < 0 or not batch.is_transactional:
                        continue
                    pid = batch.producer_id
                    if not batch.is_control:
                        if replay.begin(pid, batch.base_offset):
                            open_txns[pid] = _Open(
                                pid,
                                batch.producer_epoch,
                                batch.base_offset,
                                batch.last_offset,
                                _batch_start_ts(batch),
                                batch.max_timestamp,
                            )
                        txn = open_txns[pid]
                        txn.producer_epoch = max(txn.producer_epoch, batch.producer_epoch)
                        txn.last_data_offset = batch.last_offset
                        txn.last_timestamp = max(txn.last_timestamp, batch.max_timestamp)
                        txn.batches += 1
                        txn.records += batch.count
                        continue
                    try:
                        rec = next(iter(batch.records(self.limits.max_batch_bytes)))
                        ctl = decode_control_record(rec.key, rec.value)
                    except (FormatError, StopIteration) as e:
                        if batch.count == 0:
                            continue  # an empty control batch (as the cleaner leaves them)
                        yield finding(
                            "error",
                            Code.BAD_CONTROL_RECORD,
                            log_path,
                            batch.position,
                            batch.base_offset,
                            f"transactional control batch of producer {pid} does not decode: {e}",
                        )
                        continue
                    if ctl.type_id not in (ABORT, COMMIT):
                        continue
                    marker_offset = batch.base_offset
                    coordinator_epoch = int(ctl.fields.get("coordinatorEpoch", -1))
                    last_marker_epoch[pid] = coordinator_epoch
                    state = "aborted" if ctl.type_id == ABORT else "committed"
                    if replay.end(pid) is None:
                        yield finding(
                            "warning",
                            Code.MARKER_WITHOUT_DATA,
                            log_path,
                            batch.position,
                            marker_offset,
                            f"{ctl.type_name} marker of producer {pid} (epoch "
                            f"{batch.producer_epoch}) with no data of that producer before it "
                            "in this partition (below the log start, removed by the cleaner, "
                            "or an empty transaction)",
                            producer_id=pid,
                            producer_epoch=batch.producer_epoch,
                        )
                        continue
                    txn = open_txns.pop(pid)
                    if ctl.type_id == ABORT:
                        markers.add(marker_offset)
                        lso = replay.last_stable_offset(marker_offset + 1)
                        aborts.append((pid, txn.first_offset, marker_offset, lso))
                    counts["transactions"] += 1
                    counts[state] += 1
                    yield self._txn_obj(
                        part,
                        txn,
                        state,
                        marker_offset=marker_offset,
                        end_timestamp=batch.max_timestamp,
                        coordinator_epoch=coordinator_epoch,
                    )
                    if txn.records == 0:
                        yield finding(
                            "warning",
                            Code.EMPTY_TRANSACTION,
                            log_path,
                            batch.position,
                            txn.first_offset,
                            f"{state} transaction of producer {pid} ({txn.first_offset}.."
                            f"{marker_offset}) has data batches but no records",
                            producer_id=pid,
                        )
                result = scanner.result
            refuse_not_a_log(result, log_path)  # ends the run, as in every command
            if result is not None and result.end not in (CLEAN, ZERO_FILL):
                yield finding(
                    "warning",
                    Code.LOG_UNREADABLE,
                    log_path,
                    result.stopped_at,
                    result.last_offset,
                    f"the segment cannot be read past byte {result.stopped_at} "
                    f"({result.error or result.end}): transactions after it are not seen",
                )
            yield from self._check_txn_index(part, seg, aborts, markers, finding)

        # Transactions still open at the end of the log.
        yield from self._still_open(part, open_txns, last_marker_epoch, counts, finding)
        last_stable = replay.last_stable_offset(log_end)
        self.summary.transactions += counts["transactions"]
        for k in ("committed", "aborted", "open", "hanging"):
            setattr(self.summary, k, getattr(self.summary, k) + counts[k])
        yield {
            "type": "partition",
            "topic": part.topic,
            "partition": part.partition,
            "path": part.display,
            "log_start_offset": log_start,
            "log_end_offset": log_end,
            "last_stable_offset": last_stable,
            "transactions": counts["transactions"],
            "committed": counts["committed"],
            "aborted": counts["aborted"],
            "open": counts["open"],
            "hanging": counts["hanging"],
        }

    def _still_open(
        self,
        part: PartitionInput,
        open_txns: dict[int, _Open],
        last_marker_epoch: dict[int, int],
        counts: dict[str, int],
        finding: Callable[..., events.TransactionsFinding],
    ) -> Iterator[events.TransactionsTransaction | events.TransactionsFinding]:
        """The transactions open at the end of the log, and a finding for each that hangs
        (older than ``older_than_ms``), with the command that would abort it."""
        hanging: list[events.TransactionsTransaction] = []
        coordinator: dict[int, CoordinatorInfo] | None = None
        snapshot = self._snapshot_entries(part) if self.use_coordinator and open_txns else {}
        for txn in sorted(open_txns.values(), key=lambda t: t.first_offset):
            counts["transactions"] += 1
            counts["open"] += 1
            obj = self._txn_obj(part, txn, "open")
            age = self.now_ms - txn.start_timestamp
            obj["age_ms"] = age
            is_hanging = age > self.older_than_ms
            obj["hanging"] = is_hanging
            epoch, source = last_marker_epoch.get(txn.producer_id, -1), "marker"
            if epoch < 0:
                entry = snapshot.get(txn.producer_id)
                epoch, source = (
                    (entry.coordinator_epoch, "producer-snapshot") if entry else (-1, "")
                )
            info = None
            if self.use_coordinator and part.log_dir is not None:
                if coordinator is None:
                    coordinator = self._coordinator_info(part.log_dir)
                info = coordinator.get(txn.producer_id)
            if info is not None:
                obj["transactional_id"] = info.transactional_id
                obj["coordinator_state"] = info.state
                if epoch < 0:
                    epoch, source = info.coordinator_epoch, "transaction-state"
            if epoch < 0:
                epoch_value: int | None = None
                source = "unknown"
            else:
                epoch_value = epoch
            obj["coordinator_epoch"] = epoch_value
            obj["coordinator_epoch_source"] = source
            if is_hanging:
                counts["hanging"] += 1
                obj["abort_command"] = abort_command(
                    part.topic,
                    part.partition,
                    txn.producer_id,
                    txn.producer_epoch,
                    epoch_value,
                    self.bootstrap_server,
                )
                hanging.append(obj)
            yield obj
        for obj in hanging:
            age_ms = obj.get("age_ms", 0)
            state_note = (
                f"; the coordinator's state for it is {obj['coordinator_state']}"
                if "coordinator_state" in obj
                else ""
            )
            yield finding(
                "warning",
                Code.HANGING_TRANSACTION,
                part.display,
                None,
                obj["first_offset"],
                f"transaction of producer {obj['producer_id']} (epoch {obj['producer_epoch']}) "
                f"open since offset {obj['first_offset']} for {format_duration(age_ms)}"
                f": it holds the last stable offset at {obj['first_offset']}{state_note}",
                producer_id=obj["producer_id"],
                producer_epoch=obj["producer_epoch"],
            )

    def _txn_obj(
        self,
        part: PartitionInput,
        txn: _Open,
        state: str,
        *,
        marker_offset: int | None = None,
        end_timestamp: int | None = None,
        coordinator_epoch: int | None = None,
    ) -> events.TransactionsTransaction:
        """The ``transaction`` object: ended by its COMMIT/ABORT marker at ``marker_offset``
        (its last offset, whose timestamp ends it), else open (what is known so far; the
        caller adds how old it is, whether it hangs and what the coordinator says)."""
        last = txn.last_data_offset if marker_offset is None else marker_offset
        end = txn.last_timestamp if end_timestamp is None else end_timestamp
        return {
            "type": "transaction",
            "topic": part.topic,
            "partition": part.partition,
            "path": part.display,
            "producer_id": txn.producer_id,
            "producer_epoch": txn.producer_epoch,
            "state": state,
            "first_offset": txn.first_offset,
            "last_offset": last,
            "marker_offset": marker_offset,
            "start_timestamp": txn.start_timestamp,
            "end_timestamp": end_timestamp,
            "duration_ms": max(0, end - txn.start_timestamp),
            "batches": txn.batches,
            "records": txn.records,
            "coordinator_epoch": coordinator_epoch,
        }

    # -- .txnindex ---------------------------------------------------------------------------
    def _check_txn_index(
        self,
        part: PartitionInput,
        seg: layout.SegmentFiles,
        aborts: list[tuple[int, int, int, int]],
        markers: set[int],
        finding: Callable[..., events.TransactionsFinding],
    ) -> Iterator[events.TransactionsFinding]:
        entries: list[index.AbortedTxn] = []
        where = str(seg.txnindex or seg.log)
        if seg.txnindex is not None:
            try:
                entries = list(index.iter_txn_index(read_small(seg.txnindex, 1 << 31)))
            except FormatError as e:
                yield finding(
                    "error",
                    Code.TXNINDEX_CORRUPT,
                    where,
                    e.position,
                    None,
                    f"the transaction index cannot be read: {e}",
                )
                return
        by_last = {(t.producer_id, t.last_offset): (i, t) for i, t in enumerate(entries)}
        for pid, first, marker, lso in aborts:
            found = by_last.pop((pid, marker), None)
            if found is None:
                yield finding(
                    "error",
                    Code.TXNINDEX_MISSING_ABORT,
                    where,
                    None,
                    marker,
                    f"aborted transaction of producer {pid} ({first}..{marker}) is not in the "
                    ".txnindex: consumers reading committed data would see its records",
                    producer_id=pid,
                    first_offset=first,
                    last_offset=marker,
                    last_stable_offset=lso,
                )
                continue
            i, t = found
            if t.first_offset != first or t.last_stable_offset != lso:
                yield finding(
                    "warning",
                    Code.TXNINDEX_MISMATCH,
                    where,
                    i * index.TXN_INDEX_ENTRY_SIZE,
                    marker,
                    f"aborted transaction of producer {pid} ending at {marker}: the index says "
                    f"first offset {t.first_offset}, last stable offset {t.last_stable_offset}; "
                    f"the log says {first}, {lso}",
                    producer_id=pid,
                )
        for i, t in sorted(by_last.values()):
            if t.last_offset in markers:
                continue
            yield finding(
                "error",
                Code.TXNINDEX_MARKER_NOT_FOUND,
                where,
                i * index.TXN_INDEX_ENTRY_SIZE,
                t.last_offset,
                f"no ABORT marker of producer {t.producer_id} at offset {t.last_offset} in the "
                "segment this .txnindex belongs to",
                producer_id=t.producer_id,
            )

    # -- producer snapshots and the transaction coordinator --------------------------------
    def _snapshot_entries(self, part: PartitionInput) -> dict[int, ProducerEntry]:
        for snap in sorted(part.snapshots, key=lambda p: layout.offset_from_name(p) or 0)[::-1]:
            try:
                parsed = parse_snapshot(read_small(snap))
            except (FormatError, OSError):
                continue  # the broker too falls back to an older snapshot
            return {e.producer_id: e for e in parsed.entries}
        return {}

    def _coordinator_info(self, log_dir: Path) -> dict[int, CoordinatorInfo]:
        cached = self._coordinators.get(log_dir)
        if cached is not None:
            return cached
        found: dict[int, CoordinatorInfo] = {}
        self._coordinators[log_dir] = found
        try:
            children = sorted(log_dir.iterdir())
        except OSError:
            return found
        for child in children:
            parsed = layout.parse_partition_dir_name(child.name)
            if parsed is None or parsed[0] != TXN_STATE_TOPIC or not child.is_dir():
                continue
            part = layout.scan_partition_dir(child)
            epoch = _latest_leader_epoch(part)
            for seg in part.segments:
                if seg.log is None:
                    continue
                try:
                    for pid, info in _scan_txn_state(seg.log, parsed[1], self.limits):
                        info.coordinator_epoch = max(info.coordinator_epoch, epoch)
                        found[pid] = info
                except (FormatError, OSError):
                    continue  # best effort: the coordinator's view is an extra
        return found


def _latest_leader_epoch(part: layout.PartitionDir) -> int:
    if part.leader_epoch_checkpoint is None:
        return -1
    from klogtool.formats.checkpoint import parse_leader_epoch_checkpoint

    try:
        entries = parse_leader_epoch_checkpoint(read_small(part.leader_epoch_checkpoint))
    except (FormatError, OSError):
        return -1
    return max((e.epoch for e in entries), default=-1)


def _scan_txn_state(
    log: Path, partition: int, limits: ReadLimits
) -> Iterator[tuple[int, CoordinatorInfo]]:
    with mapped(log) as buf:
        for batch in SegmentScanner(buf, check_crc=False):
            if batch.is_control:
                continue
            for rec in batch.records(limits.max_batch_bytes):
                try:
                    record = decode_transaction_state(rec.key, rec.value)
                except FormatError:
                    continue
                value = record.value
                if value is None or record.key is None:
                    continue
                info = CoordinatorInfo(
                    str(record.key["transactionalId"]),
                    transaction_state_name(int(value["transactionStatus"])),
                    int(value["producerEpoch"]),
                    batch.partition_leader_epoch,
                    partition,
                    int(value["transactionLastUpdateTimestampMs"]),
                )
                # transactions v2 (KIP-890): a transaction that exhausted its producer's epoch
                # completes under a new producer id; its data and markers carry the previous
                # one, which the coordinator's record names
                for pid in (value["producerId"], value.get("previousProducerId", -1)):
                    if int(pid) >= 0:
                        yield int(pid), info


def format_duration(ms: int | None) -> str:
    """``850ms``, ``12.3s``, ``4m05s``, ``2h03m``, ``3d04h``."""
    if ms is None:
        return "-"
    neg = ms < 0
    ms = abs(ms)
    if ms < 1000:
        text = f"{ms}ms"
    elif ms < 60_000:
        text = f"{ms / 1000:.1f}s"
    elif ms < 3_600_000:
        text = f"{ms // 60_000}m{ms // 1000 % 60:02d}s"
    elif ms < 86_400_000:
        text = f"{ms // 3_600_000}h{ms // 60_000 % 60:02d}m"
    else:
        text = f"{ms // 86_400_000}d{ms // 3_600_000 % 24:02d}h"
    return "-" + text if neg else text


def parse_duration(text: str) -> int:
    """``900000``/``900000ms``, ``90s``, ``15m``, ``2h``, ``1d`` → milliseconds."""
    t = text.strip().lower()
    units = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
    for unit in ("ms", "s", "m", "h", "d"):
        if t.endswith(unit) and t[: -len(unit)].strip().replace(".", "", 1).isdigit():
            return int(float(t[: -len(unit)]) * units[unit])
    if t.isdigit():
        return int(t)
    raise ValueError(f"not a duration: {text!r} (e.g. 900000, 90s, 15m, 2h, 1d)")
