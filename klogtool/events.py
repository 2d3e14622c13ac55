"""Every JSON Lines object klogtool writes, as a TypedDict per (command, ``type``).

Part of the output contract (docs/output.md): field names, their order and their JSON types
are stable. ``python -m klogtool.events > docs/events.md`` writes the reference page from this
registry; a test keeps the page in step, and the test suite checks every object a command
emits against its TypedDict (``check``, run by :meth:`klogtool.output.Output.emit` when
``KLOGTOOL_STRICT_CODES=1``). A field that is not always present is ``NotRequired``.
"""

import sys
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, Literal, NotRequired, TypeAlias, TypedDict

from klogtool import codes


class TruncateRecoveryAction(TypedDict):
    """A file operation carried out (with --dry-run: ``plan_step``)."""

    type: Literal["action"]
    partition_dir: str
    op: str
    path: str
    message: str
    start: NotRequired[int]
    end: NotRequired[int]
    to: NotRequired[str]
    first_offset: NotRequired[int | None]
    last_offset: NotRequired[int | None]
    records: NotRequired[int]
    sha256: NotRequired[str]
    size: NotRequired[int]
    log_end_offset: NotRequired[int]
    entries: NotRequired[int]
    dropped: NotRequired[list[Any]]
    topic: NotRequired[str]
    partition: NotRequired[int]
    old: NotRequired[int]
    new: NotRequired[int]


class DumpSegmentsBatch(TypedDict):
    """A v2 batch or a v0/v1 entry, as dump-segments prints it."""

    type: Literal["batch"]
    position: int
    base_offset: int | None
    last_offset: int
    count: int | None
    magic: int
    compression: str
    crc: int
    crc_valid: bool
    size: int
    partition_leader_epoch: int
    timestamp_type: str
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    last_sequence: int
    is_transactional: bool
    is_control: bool
    delete_horizon_ms: int | None


class DumpSegmentsCheckpointEntry(TypedDict):
    """An offset checkpoint entry."""

    type: Literal["checkpoint_entry"]
    topic: str | None
    partition: int | None
    offset: int


class DiffDifference(TypedDict):
    """One difference between two replicas."""

    type: Literal["difference"]
    partition: str
    kind: str
    base_offset: int | None
    last_offset: int | None
    a: dict[str, Any] | None
    b: dict[str, Any] | None
    fields: list[Any]
    first_differing_offset: int | None
    records: list[Any] | None
    explained_by: str | None


class DescribeEpoch(TypedDict):
    """One leader epoch of a partition (describe --epochs): the leader-epoch-checkpoint's start
    for it beside its batches' (klogtool.log.epochs)."""

    type: Literal["epoch"]
    path: str
    topic: str | None
    partition: int | None
    epoch: int  # -1: batches of message format 0/1 (no epoch)
    checkpoint_start_offset: int | None  # null: no checkpoint entry for it
    start_offset: int | None  # its first batch's base offset; null: no batch of it left
    last_offset: int | None
    first_timestamp: int | None
    batches: int
    records: int
    bytes: int
    same_start: bool | None  # the two starts are equal; null: nothing to compare


class DescribeRemoteTier(TypedDict):
    """A tiered partition's remote tier beside its local log, from the host's
    __remote_log_metadata partitions (klogtool.log.remote_tier; docs/tiered-storage.md)."""

    type: Literal["remote_tier"]
    path: str
    topic: str
    partition: int
    topic_id: str
    metadata_partition: str  # the __remote_log_metadata-N that holds its events
    segments: int  # the remote log: finished uploads that hold their offsets
    bytes: int
    start_offset: int | None  # null: no remote segment is readable
    end_offset: int | None  # the last offset held remotely (inclusive)
    highest_uploaded_offset: int  # as the broker finds it with the local epochs; -1: none
    local_start_offset: int
    local_end_offset: int  # exclusive
    overlap: list[int] | None  # [first, last] offsets held both remotely and locally
    gap: list[int] | None  # [first, last] offsets between the tiers that neither holds
    remote_gaps: list[list[int]]  # offset ranges inside the remote log no segment holds
    uploads_unfinished: int  # COPY_SEGMENT_STARTED, never finished
    deletions_unfinished: int  # DELETE_SEGMENT_STARTED, never finished
    unreferenced: int  # finished uploads a later upload of the same offsets replaced
    deleted_segments: int
    deleted_bytes: int
    delete_state: str | None  # the partition's own deletion (DELETE_PARTITION_MARKED ...)
    dropped_events: list[str]  # metadata records the broker drops, each with where and why
    metadata_problems: list[str]  # records of its metadata partition that do not decode


class DescribeRemoteSegment(TypedDict):
    """One remote segment of a tiered partition (describe --remote-segments)."""

    type: Literal["remote_segment"]
    path: str
    topic: str
    partition: int
    segment_id: str
    start_offset: int
    end_offset: int
    size: int
    state: str  # COPY_SEGMENT_STARTED ... DELETE_SEGMENT_STARTED
    referenced: bool  # part of the remote log a consumer reads
    leader_epochs: list[list[int]]  # [epoch, first offset] pairs
    max_timestamp: int
    broker_id: int
    started: int  # event time of the upload's start (ms)
    updated: int  # event time of its latest event (ms)
    custom_metadata_bytes: int | None
    where: str  # the metadata record of its latest event: __remote_log_metadata-N@offset


class RestoreTierSegment(TypedDict):
    """A remote segment restore-tier writes (or would write, --dry-run) into the partition."""

    type: Literal["segment"]
    partition: str  # the partition dir written
    segment_id: str
    start_offset: int
    end_offset: int
    size: int
    source: str  # the remote segment's .log


class RestoreTierSummary(TypedDict):
    """What restore-tier wrote (or would write, --dry-run)."""

    type: Literal["summary"]
    dry_run: bool
    source: str
    partition: str
    topic: str
    topic_id: str
    segments: int
    bytes: int
    start_offset: int
    end_offset: int  # inclusive
    leader_epochs: list[list[int]]  # [epoch, start offset] of leader-epoch-checkpoint
    chosen_by: str  # the remote-log metadata, or the files themselves
    layout: str  # of the source: LocalTieredStorage or Aiven tiered storage
    notes: list[str]


class GroupsGroup(TypedDict):
    """A consumer group as __consumer_offsets leaves it (klogtool.log.read.groups)."""

    type: Literal["group"]
    group: str
    kind: str  # classic, or consumer (KIP-848)
    protocol_type: str | None
    protocol: str | None
    generation: int | None  # the classic generation, or the KIP-848 group epoch
    leader: str | None
    state_timestamp: int | None
    members: list[Any]
    offsets: int
    pending_offsets: int
    metadata_deleted: bool
    topology: list[Any]  # a streams group's subtopologies and their source topics
    share_partitions: list[Any]  # a share group's partitions: start offset, in-flight, archived


class GroupsOffset(TypedDict):
    """A group's committed offset of one topic partition, beside the data partition."""

    type: Literal["offset"]
    group: str
    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int
    expire_timestamp: int | None
    expired: bool
    pending: bool  # in a transaction whose marker is not in the log
    end_offset: int | None  # the high watermark (or the end at --at); null: data not given
    end_source: str | None
    lag: int | None
    committed_timestamp: int | None
    newest_timestamp: int | None
    time_lag_ms: int | None
    member_id: str | None
    client_id: str | None
    client_host: str | None


class GroupsSummary(TypedDict):
    """The last object: counts for the run."""

    type: Literal["summary"]
    groups: int
    offsets: int
    pending_offsets: int
    offsets_partitions: int
    records: int
    total_lag: int
    warnings: int
    coordinator: str  # whose rules the replay followed: new (Kafka 4.x) or classic
    coordinator_source: str  # why: the metadata log's versions, the records, --coordinator


class DumpSegmentsEpochEntry(TypedDict):
    """A leader-epoch-checkpoint entry."""

    type: Literal["epoch_entry"]
    epoch: int
    start_offset: int


class DumpSegmentsFile(TypedDict):
    """Opens each file dump-segments reads."""

    type: Literal["file"]
    path: str
    kind: str
    size: int
    base_offset: NotRequired[int]


class FindingObject(TypedDict):
    """A finding (klogtool.log.findings.Finding.as_obj): the fields every command's finding
    object has; a command registers its own type, this or an extension of it."""

    type: Literal["finding"]
    severity: str
    code: str
    path: str
    position: int | None
    offset: int | None
    message: str


class DumpSegmentsFindingDetails(TypedDict, total=False):
    """What a dump-segments finding adds when it knows it."""

    index_offset: int
    log_offset: int
    index_timestamp: int
    log_timestamp: int
    previous_timestamp: int
    invalid_bytes: int
    cause: str


class DumpSegmentsFinding(FindingObject, DumpSegmentsFindingDetails):
    """Something wrong or worth a warning at a place in a file (codes.md)."""


class RebuildIndexFinding(FindingObject):
    """Something wrong or worth a warning at a place in a file (codes.md)."""


class _TransactionsFindingPlace(FindingObject):
    topic: str | None
    partition: int | None


class TransactionsFindingDetails(TypedDict, total=False):
    """The transaction a transactions finding is about, as far as it is known."""

    producer_id: int
    producer_epoch: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


class TransactionsFinding(_TransactionsFindingPlace, TransactionsFindingDetails):
    """Something wrong or worth a warning at a place in a file (codes.md)."""


class TruncateRecoveryFinding(FindingObject):
    """Something wrong or worth a warning at a place in a file (codes.md)."""


class GroupsFinding(FindingObject):
    """A __consumer_offsets record that does not decode (left out of the replay)."""


class VerifyFinding(FindingObject):
    """Something wrong or worth a warning at a place in a file (codes.md)."""


class RebuildIndexIndexCheck(TypedDict):
    """One index file against the log and a rebuild (--check)."""

    type: Literal["index_check"]
    path: str
    kind: str
    entries: int | None
    rebuilt_entries: int | None
    first_bad_entry: int | None
    first_difference: dict[str, Any] | None
    status: str
    message: NotRequired[str]


class DumpSegmentsIndexEntry(TypedDict):
    """An .index entry."""

    type: Literal["index_entry"]
    offset: int
    position: int


class RebuildIndexIndexFile(TypedDict):
    """One index file written or left as it is."""

    type: Literal["index_file"]
    path: str
    kind: str
    entries: int
    previous_entries: int | None
    dry_run: bool
    status: str


class InterruptedOperation(TypedDict):
    """What klogtool.log.writing.interrupted_obj makes, for the commands that register it."""

    type: Literal["interrupted_operation"]
    path: str
    dry_run: bool
    message: str


class RebuildIndexInterruptedOperation(InterruptedOperation):
    """An interrupted swap or quarantine completed (or that would be) first."""


class TruncateRecoveryInterruptedOperation(InterruptedOperation):
    """An interrupted swap or quarantine completed (or that would be) first."""


class DumpSegmentsMetaProperties(TypedDict):
    """A meta.properties file (and every other property in it, as a string)."""

    type: Literal["meta_properties"]
    version: int
    cluster_id: str | None
    node_id: int | None
    broker_id: int | None
    directory_id: str | None


CompactPartition = TypedDict(
    "CompactPartition",
    {
        "type": Literal["partition"],
        "partition": str,
        "topic": str | None,
        "now": int,
        "log_start_offset": int,
        "log_end_offset": int,
        "high_watermark": int,
        "high_watermark_source": str,
        "last_stable_offset": int,
        "first_dirty_offset": int,
        "first_dirty_source": str,
        "first_uncleanable_offset": int,
        "uncleanable_reason": str,
        "dirty_ratio": float,
        "clean_bytes": int,
        "cleanable_bytes": int,
        "eligible": bool,
        "eligibility": str,
        "end_offset": int | None,
        "groups": list[Any],
        "pass": int,
        "keys_mapped": int,
        "map_capacity": int,
        "map_full": bool,
        "active_producers": int,
        "compacted": bool,
        "why_not": str | None,
        "notes": list[Any],
    },
)
CompactPartition.__doc__ = "The outcome for one partition."


class DescribePartition(TypedDict):
    """The outcome for one partition."""

    type: Literal["partition"]
    path: str
    topic: str | None
    partition: int | None
    size: int
    log_bytes: int
    segments: int
    log_start_offset: int
    log_end_offset: int
    newest_timestamp: int | None
    timestamp_source: str | None
    indexes: str
    log_end_clean: bool
    state: str | None  # delete, future or stray: a partition dir the broker marked so


class RetentionSweepPartition(TypedDict):
    """The outcome for one partition."""

    type: Literal["partition"]
    partition: str
    topic: str | None
    now: int
    log_end_offset: int
    high_watermark: int
    high_watermark_source: str
    log_start_offset: int
    new_log_start_offset: int
    roll: bool
    segments_deleted: int
    bytes_deleted: int
    snapshots_deleted: list[Any]
    orphan_indexes_deleted: list[Any]
    retention_ms: int
    retention_bytes: int
    cleanup_policy: str
    tiered: bool  # remote.storage.enable: the disk keeps local.retention.* and the unuploaded
    local_retention_ms: int  # -2: retention.ms
    local_retention_bytes: int  # -2: retention.bytes
    uploaded_up_to: int | None  # a tiered topic's highest offset in remote storage (-1: none)
    notes: list[Any]


class TransactionsPartition(TypedDict):
    """The outcome for one partition."""

    type: Literal["partition"]
    topic: str | None
    partition: int | None
    path: str
    log_start_offset: int | None
    log_end_offset: int | None
    last_stable_offset: int | None
    transactions: int
    committed: int
    aborted: int
    open: int
    hanging: int


class TruncateRecoveryPartition(TypedDict):
    """The outcome for one partition."""

    type: Literal["partition"]
    path: str
    status: str
    dry_run: bool
    reason: str | None
    message: str | None
    truncated_segment: int | None
    truncated_at: int | None
    segments_recovered: int
    segments_trusted: int
    segments_removed: int
    bytes_kept: int
    records_kept: int
    bytes_quarantined: int
    records_quarantined: int
    log_end_offset_before: int | None
    log_end_offset: int | None
    indexes_rebuilt: int
    checkpoints_updated: int
    quarantine: str | None


class DiffPartitionDiff(TypedDict):
    """The verdict on one partition of two replicas."""

    type: Literal["partition-diff"]
    partition: str
    a: str | None
    b: str | None
    replicas: dict[str, str]  # the command line's names of sides a and b
    verdict: str
    leader: str
    start_offsets: dict[str, Any]
    end_offsets: dict[str, Any]
    common_batches: int
    diverged_at: int | None
    epochs_at_divergence: dict[str, Any] | None
    truncation: dict[str, Any] | None
    truncation_misses_divergence: bool
    compacted: str | None
    lagging: str | None
    lag_offsets: int
    lag_records: int
    lag_bytes: int
    torn_tail: dict[str, Any]
    epochs: dict[str, Any]
    differences: int
    differences_shown: int
    notes: list[Any]
    lost: dict[str, Any] | None  # the follower's offsets the leader does not hold
    refetched: dict[str, Any] | None  # those it truncates that the leader holds the same
    ok: bool


class ExplainPartitionExplain(TypedDict):
    """What explain says of a partition."""

    type: Literal["partition_explain"]
    partition: str
    topic: str | None
    now: int
    cleanup_policy: str
    log_start_offset: int
    log_end_offset: int
    log_end_clean: bool
    high_watermark: int
    high_watermark_source: str
    segments: int
    bytes: int
    dirty_ratio: float | None
    first_dirty_offset: int | None
    first_uncleanable_offset: int | None
    uncleanable_reason: str | None
    compaction_eligible: bool | None
    compaction_eligibility: str | None
    compaction_why_not: str | None
    retention_ms: int
    retention_bytes: int
    retention_new_log_start_offset: int | None
    retention_segments_deleted: int | None
    retention_bytes_deleted: int | None
    index_problems: int
    snapshots: list[Any]
    latest_snapshot: int | None
    producer_state_scan_bytes: int
    snapshot_problems: list[Any]
    leftovers: list[Any]
    on_load: list[Any]
    orphan_indexes: list[Any]
    notes: list[Any]
    remote_tier: dict[str, Any] | None  # a tiered partition's (describe's remote_tier)
    config_sources: NotRequired[list[Any]]


class DumpSegmentsPartitionMetadata(TypedDict):
    """A partition.metadata file."""

    type: Literal["partition_metadata"]
    version: int
    topic_id: str


class TruncateRecoveryPlanStep(TypedDict):
    """A file operation that would be carried out (--dry-run)."""

    type: Literal["plan_step"]
    partition_dir: str
    op: str
    path: str
    start: NotRequired[int]
    end: NotRequired[int]
    message: str
    to: NotRequired[str]
    first_offset: NotRequired[int | None]
    last_offset: NotRequired[int | None]
    records: NotRequired[int]
    sha256: NotRequired[str]
    topic: NotRequired[str]
    partition: NotRequired[int]
    old: NotRequired[int]
    new: NotRequired[int]
    size: NotRequired[int]
    log_end_offset: NotRequired[int]
    entries: NotRequired[int]
    dropped: NotRequired[list[Any]]


class DumpSegmentsProducerEntry(TypedDict):
    """A producer snapshot entry."""

    type: Literal["producer_entry"]
    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int
    current_txn_first_offset: int
    first_sequence: int


class DumpSegmentsRecord(TypedDict):
    """One record."""

    type: Literal["record"]
    offset: int
    position: int
    timestamp: int
    key_size: int
    value_size: int
    sequence: int
    headers: list[Any]
    key: NotRequired[dict[str, Any] | str | None]
    value: NotRequired[dict[str, Any] | str | None]
    decode_error: NotRequired[str]
    crc: NotRequired[int]
    crc_valid: NotRequired[bool]
    control: NotRequired[dict[str, Any]]


class FindRecord(DumpSegmentsRecord):
    """One record: dump-segments' record object, with where it was found."""

    topic: str | None
    partition: int | None
    segment: str
    size: int  # bytes of key, value and headers (what --min-size, --largest go by)
    producer_id: int  # the batch's producer id, epoch and partition leader epoch (-1: none)
    producer_epoch: int
    partition_leader_epoch: int
    transaction: NotRequired[str]  # with --transaction: committed, aborted, open or none


class TruncateRecoveryRestore(TypedDict):
    """One quarantine put back."""

    type: Literal["restore"]
    path: str
    partition: str
    status: str
    dry_run: bool
    files_restored: int
    bytes_restored: int


class DumpSegmentsSanityCheck(TypedDict):
    """A passed broker sanity check of an index file."""

    type: Literal["sanity_check"]
    path: str
    passed: bool


class _CompactSegmentPlace(TypedDict):
    type: Literal["segment"]
    partition: str
    base_offset: int
    status: str
    why: str
    group: int | None
    largest_timestamp: int


class CompactSegmentCounts(TypedDict, total=False):
    """A cleaned segment's records, when the cleaning ran or was simulated."""

    records_in: int
    kept: int
    superseded: int
    tombstones_expired: int
    aborted: int
    keyless: int
    markers_removed: int
    empty_batches_kept: int
    tombstones_kept: int


class CompactSegment(_CompactSegmentPlace, CompactSegmentCounts):
    """The outcome for one segment."""

    delete_horizon_ms: int | None
    bytes_before: int
    bytes_after: int | None


class ConvertFormatSegment(TypedDict):
    """The outcome for one segment."""

    type: Literal["segment"]
    path: str
    base_offset: int
    size: int
    batches: int
    action: str
    last_offset: int | None  # null: no batch (an empty segment)
    last_offset_out: int | None
    losses: dict[str, Any]


class RetentionSweepSegment(TypedDict):
    """The outcome for one segment."""

    type: Literal["segment"]
    partition: str
    base_offset: int
    upper_bound: int
    largest_timestamp: int
    timestamp_source: str
    size: int
    action: str
    rule: str
    reason: str


class ExplainSegmentExplain(TypedDict):
    """What explain says of one segment."""

    type: Literal["segment_explain"]
    partition: str
    base_offset: int
    upper_bound: int
    size: int
    largest_timestamp: int
    timestamp_source: str
    active: bool
    compaction_status: str | None
    compaction_why: str | None
    compaction_group: int | None
    compaction: dict[str, Any] | None
    bytes_after_compaction: int | None
    retention_action: str | None
    retention_rule: str | None
    retention_reason: str | None
    index_health: str
    index_findings: list[Any]
    log_findings: list[Any]
    snapshot_at_end: bool


class ExportSplit(TypedDict):
    """One split of an export."""

    type: Literal["split"]
    index: int
    bytes: int
    ranges: int
    first: str
    last: str


class StatsStats(TypedDict):
    """The statistics of one partition (or of the total)."""

    type: Literal["stats"]
    scope: str
    path: str
    topic: str | None
    partition: int | None
    partitions: int
    segments: int
    volume: dict[str, Any]
    sizes: dict[str, Any]
    time: dict[str, Any]
    producers: dict[str, Any]
    keys: dict[str, Any]
    problems: list[Any]
    what_if: NotRequired[dict[str, Any] | None]  # the total's
    epochs: NotRequired[list[Any]]  # a whole partition's leader epochs (describe --epochs')
    remote_tier: NotRequired[dict[str, Any]]  # a tiered partition's (describe's remote_tier)


class CompactSummary(TypedDict):
    """The last object: counts for the run."""

    type: Literal["summary"]
    dry_run: bool
    partitions: int
    partitions_compacted: int
    segments_replaced: int
    bytes_before: int
    bytes_after: int


class _ConvertFormatCounts(TypedDict):
    type: Literal["summary"]
    dry_run: bool
    partitions: int
    segments: int
    segments_unchanged: int
    bytes_in: int


class ConvertFormatWritten(TypedDict, total=False):
    """What a conversion wrote: not with --dry-run (``destination`` not with --in-place)."""

    segments_written: int
    bytes_out: int
    batches_out: int
    indexes_rebuilt: int
    files_carried: int
    destination: str


class ConvertFormatSummary(_ConvertFormatCounts, ConvertFormatWritten):
    """The last object: counts for the run."""

    losses: dict[str, Any]


class DiffSummary(TypedDict):
    """The last object: counts for the run."""

    type: Literal["summary"]
    partitions: int
    identical: int
    prefix: int
    diverged: int
    equal_modulo_compaction: int
    different_start_offsets: int
    only_in_a: int
    only_in_b: int
    differences: int
    ok: bool
    # --export-lost: dest, format, records (lost, refetched), partitions
    lost_export: NotRequired[dict[str, Any]]


class DumpSegmentsSummary(TypedDict):
    """The last object: counts for the run."""

    type: Literal["summary"]
    files: int
    batches: int
    records: int
    bytes: int
    errors: int
    warnings: int


class ExportSummaryOptional(TypedDict, total=False):
    """The fields of export's summary that only some runs have (see ExportSummary)."""

    error_rows: int
    splits: int
    records_per_second: int
    input_mb_per_second: float


class ExportSummary(TypedDict):
    """The last object: counts for the run."""

    type: Literal["summary"]
    destination: str
    format: str
    rows: int | None
    files: int | None
    bytes: int | None
    error_rows: NotRequired[int]  # with --on-corrupt report
    segments: int
    input_bytes: int
    seconds: float
    splits: NotRequired[int]  # not when there is nothing to read
    records_per_second: NotRequired[int]
    input_mb_per_second: NotRequired[float]


class RebuildIndexSummary(TypedDict):
    """The last object: counts for the run."""

    type: Literal["summary"]
    partitions: int
    segments: int
    bytes: int
    files_written: int
    files_unchanged: int
    files_differing: int
    files_bad: int
    segments_skipped: int
    errors: int
    warnings: int
    operations: int
    check: bool
    dry_run: bool


class RetentionSweepSummary(TypedDict):
    """The last object: counts for the run."""

    type: Literal["summary"]
    dry_run: bool
    partitions: int
    segments_deleted: int
    bytes_deleted: int
    files_changed: int


class TransactionsSummary(TypedDict):
    """The last object: counts for the run."""

    type: Literal["summary"]
    partitions: int
    transactions: int
    committed: int
    aborted: int
    open: int
    hanging: int
    errors: int
    warnings: int


class TruncateRecoverySummary(TypedDict):
    """The last object: counts for the run."""

    type: Literal["summary"]
    partitions: NotRequired[int]
    recovered: NotRequired[int]
    clean: NotRequired[int]
    skipped: NotRequired[int]
    bytes_kept: NotRequired[int]
    records_kept: NotRequired[int]
    bytes_quarantined: NotRequired[int]
    records_quarantined: NotRequired[int]
    errors: NotRequired[int]
    warnings: NotRequired[int]
    operations: int
    dry_run: bool
    restored: NotRequired[int]


class VerifySummary(TypedDict):
    """The last object: counts for the run."""

    type: Literal["summary"]
    files: int
    partitions: int
    segments: int
    batches: int
    records: NotRequired[int]  # with --deep only: without it no record is decoded
    bytes: int
    errors: int
    warnings: int
    ignored: NotRequired[int]  # with --ignore: the findings left out


class DumpSegmentsTimeindexEntry(TypedDict):
    """A .timeindex entry."""

    type: Literal["timeindex_entry"]
    timestamp: int
    offset: int


class TransactionsTransaction(TypedDict):
    """One transaction of the report."""

    type: Literal["transaction"]
    topic: str | None
    partition: int | None
    path: str
    producer_id: int
    producer_epoch: int
    state: str
    first_offset: int
    last_offset: int
    marker_offset: int | None
    start_timestamp: int
    end_timestamp: int | None
    duration_ms: int
    batches: int
    records: int
    coordinator_epoch: int | None
    age_ms: NotRequired[int]
    hanging: NotRequired[bool]
    transactional_id: NotRequired[str]  # open, when the log dir's __transaction_state has it
    coordinator_state: NotRequired[str]  # its state there
    coordinator_epoch_source: NotRequired[str]
    abort_command: NotRequired[str]


class DumpSegmentsTxnEntry(TypedDict):
    """A .txnindex entry."""

    type: Literal["txn_entry"]
    version: int
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


class DumpSegmentsQuorumState(TypedDict):
    """A KRaft quorum-state file (and every other field of its JSON)."""

    type: Literal["quorum_state"]
    data_version: int
    leaderEpoch: int


class DumpSegmentsCleanShutdown(TypedDict):
    """A .kafka_cleanshutdown file (empty before KIP-966: nulls)."""

    type: Literal["clean_shutdown"]
    version: int | None
    broker_epoch: int | None


class TruncateRecoveryNote(TypedDict):
    """A note on the plan that follows (--dry-run after an interrupted operation)."""

    type: Literal["note"]
    path: str
    message: str


class ConvertFormatRefused(TypedDict):
    """The conversion was refused: what it would lose (then the command exits 4)."""

    type: Literal["refused"]
    reason: str
    losses: dict[str, Any]


# Every object any command writes: what Output.emit and the emit callbacks of the log layer
# take, so that mypy checks each producer against its TypedDict.
Event: TypeAlias = (
    TruncateRecoveryAction
    | DumpSegmentsBatch
    | DumpSegmentsCheckpointEntry
    | DiffDifference
    | DumpSegmentsEpochEntry
    | DescribeEpoch
    | DescribeRemoteTier
    | DescribeRemoteSegment
    | RestoreTierSegment
    | RestoreTierSummary
    | GroupsGroup
    | GroupsOffset
    | GroupsSummary
    | GroupsFinding
    | DumpSegmentsFile
    | DumpSegmentsFinding
    | RebuildIndexFinding
    | TransactionsFinding
    | TruncateRecoveryFinding
    | VerifyFinding
    | RebuildIndexIndexCheck
    | DumpSegmentsIndexEntry
    | RebuildIndexIndexFile
    | RebuildIndexInterruptedOperation
    | TruncateRecoveryInterruptedOperation
    | DumpSegmentsMetaProperties
    | DumpSegmentsQuorumState
    | DumpSegmentsCleanShutdown
    | TruncateRecoveryNote
    | ConvertFormatRefused
    | CompactPartition
    | DescribePartition
    | RetentionSweepPartition
    | TransactionsPartition
    | TruncateRecoveryPartition
    | DiffPartitionDiff
    | ExplainPartitionExplain
    | DumpSegmentsPartitionMetadata
    | TruncateRecoveryPlanStep
    | DumpSegmentsProducerEntry
    | DumpSegmentsRecord
    | FindRecord
    | TruncateRecoveryRestore
    | DumpSegmentsSanityCheck
    | CompactSegment
    | ConvertFormatSegment
    | RetentionSweepSegment
    | ExplainSegmentExplain
    | ExportSplit
    | StatsStats
    | CompactSummary
    | ConvertFormatSummary
    | DiffSummary
    | DumpSegmentsSummary
    | ExportSummary
    | RebuildIndexSummary
    | RetentionSweepSummary
    | TransactionsSummary
    | TruncateRecoverySummary
    | VerifySummary
    | DumpSegmentsTimeindexEntry
    | TransactionsTransaction
    | DumpSegmentsTxnEntry
)

# The log layer's emit callback: Output.emit, or whatever a caller collects the objects with.
Emit: TypeAlias = Callable[[Event], None]

_Open = typing.TypeVar("_Open", DumpSegmentsMetaProperties, DumpSegmentsQuorumState)


def open_object(declared: _Open, fields: Mapping[str, Any]) -> _Open:
    """An object that carries every field of its file, not only those its type declares
    (meta.properties, quorum-state): ``declared`` (mypy checks it) and the file's ``fields``,
    in the file's order where the file has them. A file's own "type" field cannot replace the
    object's. mypy cannot declare a TypedDict's extra fields yet (PEP 728), hence the cast."""
    out: dict[str, Any] = {k: v for k, v in declared.items() if k == "type" or k not in fields}
    for k, v in fields.items():
        if k != "type":
            out[k] = declared.get(k, v)
    return typing.cast(_Open, out)


# (command, type) -> its TypedDict
EVENT_TYPES: dict[tuple[str, str], type[Any]] = {
    ("truncate-recovery", "action"): TruncateRecoveryAction,
    ("dump-segments", "batch"): DumpSegmentsBatch,
    ("dump-segments", "checkpoint_entry"): DumpSegmentsCheckpointEntry,
    ("diff", "difference"): DiffDifference,
    ("dump-segments", "epoch_entry"): DumpSegmentsEpochEntry,
    ("describe", "epoch"): DescribeEpoch,
    ("describe", "remote_tier"): DescribeRemoteTier,
    ("describe", "remote_segment"): DescribeRemoteSegment,
    ("restore-tier", "segment"): RestoreTierSegment,
    ("restore-tier", "summary"): RestoreTierSummary,
    ("groups", "group"): GroupsGroup,
    ("groups", "offset"): GroupsOffset,
    ("groups", "summary"): GroupsSummary,
    ("groups", "finding"): GroupsFinding,
    ("dump-segments", "file"): DumpSegmentsFile,
    ("dump-segments", "finding"): DumpSegmentsFinding,
    ("rebuild-index", "finding"): RebuildIndexFinding,
    ("transactions", "finding"): TransactionsFinding,
    ("truncate-recovery", "finding"): TruncateRecoveryFinding,
    ("verify", "finding"): VerifyFinding,
    ("rebuild-index", "index_check"): RebuildIndexIndexCheck,
    ("dump-segments", "index_entry"): DumpSegmentsIndexEntry,
    ("rebuild-index", "index_file"): RebuildIndexIndexFile,
    ("rebuild-index", "interrupted_operation"): RebuildIndexInterruptedOperation,
    ("truncate-recovery", "interrupted_operation"): TruncateRecoveryInterruptedOperation,
    ("dump-segments", "meta_properties"): DumpSegmentsMetaProperties,
    ("dump-segments", "quorum_state"): DumpSegmentsQuorumState,
    ("dump-segments", "clean_shutdown"): DumpSegmentsCleanShutdown,
    ("truncate-recovery", "note"): TruncateRecoveryNote,
    ("convert-format", "refused"): ConvertFormatRefused,
    ("compact", "partition"): CompactPartition,
    ("describe", "partition"): DescribePartition,
    ("retention-sweep", "partition"): RetentionSweepPartition,
    ("transactions", "partition"): TransactionsPartition,
    ("truncate-recovery", "partition"): TruncateRecoveryPartition,
    ("diff", "partition-diff"): DiffPartitionDiff,
    ("explain", "partition_explain"): ExplainPartitionExplain,
    ("dump-segments", "partition_metadata"): DumpSegmentsPartitionMetadata,
    ("truncate-recovery", "plan_step"): TruncateRecoveryPlanStep,
    ("dump-segments", "producer_entry"): DumpSegmentsProducerEntry,
    ("dump-segments", "record"): DumpSegmentsRecord,
    ("find", "record"): FindRecord,
    ("truncate-recovery", "restore"): TruncateRecoveryRestore,
    ("dump-segments", "sanity_check"): DumpSegmentsSanityCheck,
    ("compact", "segment"): CompactSegment,
    ("convert-format", "segment"): ConvertFormatSegment,
    ("retention-sweep", "segment"): RetentionSweepSegment,
    ("explain", "segment_explain"): ExplainSegmentExplain,
    ("export", "split"): ExportSplit,
    ("stats", "stats"): StatsStats,
    ("compact", "summary"): CompactSummary,
    ("convert-format", "summary"): ConvertFormatSummary,
    ("diff", "summary"): DiffSummary,
    ("dump-segments", "summary"): DumpSegmentsSummary,
    ("export", "summary"): ExportSummary,
    ("rebuild-index", "summary"): RebuildIndexSummary,
    ("retention-sweep", "summary"): RetentionSweepSummary,
    ("transactions", "summary"): TransactionsSummary,
    ("truncate-recovery", "summary"): TruncateRecoverySummary,
    ("verify", "summary"): VerifySummary,
    ("dump-segments", "timeindex_entry"): DumpSegmentsTimeindexEntry,
    ("transactions", "transaction"): TransactionsTransaction,
    ("dump-segments", "txn_entry"): DumpSegmentsTxnEntry,
}


_FIELDS: dict[type[Any], dict[str, tuple[type, ...]]] = {}


def _fields(cls: type[Any]) -> dict[str, tuple[type, ...]]:
    """Each field's allowed Python types (bool counts as int, as in JSON's numbers)."""
    if cls not in _FIELDS:
        hints = typing.get_type_hints(cls, vars(sys.modules[__name__]))
        _FIELDS[cls] = {name: tuple(_types(hint)) for name, hint in hints.items()}
    return _FIELDS[cls]


def _types(hint: Any) -> list[type]:
    origin = typing.get_origin(hint)
    if origin is NotRequired:
        return _types(typing.get_args(hint)[0])
    if origin in (typing.Union, types.UnionType):
        return [t for arg in typing.get_args(hint) for t in _types(arg)]
    if origin is Literal:
        return [type(typing.get_args(hint)[0])]
    if hint is None or hint is type(None):
        return [type(None)]
    if hint is float:
        return [float, int]  # a JSON number: 0 is as good as 0.0
    return [origin or hint]


# Objects that carry a file's own fields besides the ones listed (any other is allowed).
OPEN = frozenset({DumpSegmentsMetaProperties, DumpSegmentsQuorumState})


def check(command: str, obj: Mapping[str, Any]) -> None:
    """Under ``KLOGTOOL_STRICT_CODES=1`` (the test suite): an object whose (command, type) is
    not registered, or whose fields do not match its TypedDict, is a bug: raise."""
    if not codes.STRICT:
        return
    cls = EVENT_TYPES.get((command, obj.get("type", "")))
    if cls is None:
        raise AssertionError(f"{command}: object type {obj.get('type')!r} is not registered")
    allowed = _fields(cls)
    missing = cls.__required_keys__ - obj.keys()
    if missing:
        raise AssertionError(f"{command} {obj['type']}: missing {sorted(missing)}")
    for name, value in obj.items():
        kinds = allowed.get(name)
        if kinds is None and cls in OPEN:
            continue
        if kinds is None or not isinstance(value, kinds):
            raise AssertionError(f"{command} {obj['type']}: field {name}={value!r} does not fit")


def reference() -> str:
    """The Markdown page ``docs/events.md``."""
    lines = [
        "# JSON Lines objects",
        "",
        "Generated from `klogtool/events.py` by `python -m klogtool.events > docs/events.md`;",
        "a test keeps this page in step, and the test suite checks every object the commands",
        "write against these types. Fields are listed as their type declares them (an object",
        "carries them in about that order; JSON readers should not depend on it); `?` marks a",
        "field that is not always present. See [output.md](output.md) for the conventions.",
    ]
    for (command, kind), cls in EVENT_TYPES.items():
        lines += ["", f"## `{command}`: `{kind}`", "", cls.__doc__ or "", ""]
        for name, allowed in _fields(cls).items():
            optional = "?" if name in cls.__optional_keys__ else ""
            shown = [t for t in allowed if not (t is int and float in allowed)]
            kinds = " or ".join(_json_name(t) for t in shown)
            lines.append(f"- `{name}`{optional}: {kinds}")
    return "\n".join(lines) + "\n"


def _json_name(t: type) -> str:
    return {
        int: "integer",
        str: "string",
        bool: "boolean",
        float: "number",
        list: "array",
        dict: "object",
        type(None): "null",
    }[t]


if __name__ == "__main__":
    sys.stdout.write(reference())
