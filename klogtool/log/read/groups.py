"""Consumer groups as a broker's disk left them: ``__consumer_offsets`` replayed, offline.

Where every group was when the disk was copied (or at a moment, ``at``), like
``kafka-consumer-groups.sh --describe``: the group coordinator's replay of its log, then each
committed offset set beside the data partition it belongs to, when that partition is in the
log dirs given (docs/groups.md).

The replay, in offset order per ``__consumer_offsets`` partition, by the rules of the
coordinator that wrote it (:data:`NEW` ``OffsetMetadataManager``, Kafka 4.x and the new
coordinator of 3.7-3.9; :data:`CLASSIC` the Scala ``GroupMetadataManager`` of 3.x):

* an offset commit (record types 0 and 1) sets the group's offset of a topic partition, a
  tombstone deletes it; a group metadata record (type 2) sets the classic group's protocol,
  generation, leader and members, a tombstone deletes the group; KIP-848 groups (types 3, 5
  and 8) give their epoch, members and assignments.
* records of a transactional batch wait for their producer's marker, one per group and
  partition (a later commit in the same transaction replaces it). COMMIT applies each unless
  the group's offset was committed later in the log (the coordinator keeps the commit with
  the higher log offset: record offsets for NEW, batch offsets for CLASSIC); ABORT drops them;
  those still waiting at the end are shown as ``pending``. A tombstone removes the partition's
  waiting commits of every open transaction of the group under NEW; under CLASSIC only a
  tombstone in the same transaction does, and a commit outliving a plain tombstone is applied
  at its COMMIT.
* an offset whose commit carries an expire timestamp (value version 1) at or before the
  moment of the replay is ``expired`` (the broker deletes it on its next expiration pass).

Lag per partition = the data partition's high watermark (``replication-offset-checkpoint``,
between its log start and end offsets as the broker keeps it) minus the committed offset, as
the tool computes it against ``ListOffsets(latest)``; with ``at``, the end is the first offset
written after that moment. The time lag is the largest timestamp of the records below the end
minus that of the record at the committed offset (the next one the group would read).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from klogtool.codes import Code
from klogtool.errors import InputError
from klogtool.formats.batch import Batch, Record
from klogtool.formats.errors import FormatError
from klogtool.formats.payloads.consumer_offsets import decode_consumer_offsets
from klogtool.formats.records import SegmentScanner
from klogtool.log import layout, storage
from klogtool.log.atomic import log_dir_of
from klogtool.log.context import ReadContext
from klogtool.log.files import partition_dirs_of
from klogtool.log.findings import Finding
from klogtool.log.metadata import ClusterConfigs, load_for, log_dirs_named
from klogtool.log.partition import TIMEINDEX, PartitionView, load_partition
from klogtool.log.read.dumper import DumpOptions
from klogtool.log.read.finder import Finder, FindOptions, Target, resolve_targets
from klogtool.log.read.share_groups import SHARE_GROUP_STATE, SharePartition, share_states
from klogtool.log.record_filter import MAX_OFFSET, RecordFilter
from klogtool.log.segment import mapped
from klogtool.log.txnreplay import end_marker

if TYPE_CHECKING:
    from klogtool import events

CONSUMER_OFFSETS = "__consumer_offsets"
_OFFSET_COMMIT = (0, 1)
_GROUP_METADATA = 2
_CONSUMER_GROUP_METADATA = 3
_CONSUMER_GROUP_MEMBER = 5
_CONSUMER_GROUP_ASSIGNMENT = 8
_KIP_848 = range(3, 9)  # consumer-protocol records: only the new coordinator writes them
_SHARE_MEMBER, _SHARE_GROUP_METADATA, _SHARE_ASSIGNMENT = 10, 11, 14  # KIP-932
_STREAMS_METADATA, _STREAMS_MEMBER, _STREAMS_ASSIGNMENT, _STREAMS_TOPOLOGY = 17, 19, 22, 23
_TASK_KINDS = ("activeTasks", "standbyTasks", "warmupTasks")  # a streams member's tasks

# The coordinator whose rules a replay follows (module docstring)
NEW = "new"
CLASSIC = "classic"
# metadata.version from which every broker runs the new coordinator (MetadataVersion
# IBP_4_0_IV0: Kafka 4.0 removed the classic one)
_MV_4_0 = 22


@dataclass
class Member:
    member_id: str
    client_id: str | None
    client_host: str | None
    group_instance_id: str | None = None
    assignment: list[tuple[str, int]] = field(default_factory=list)  # (topic or topic id, p)
    # a streams member's tasks: kind (active, standby, warmup) -> [(subtopology, partition)]
    tasks: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    process_id: str | None = None  # a streams member's


@dataclass
class Committed:
    """A group's committed offset for one topic partition, and where the data stood."""

    group: str
    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int
    expire_timestamp: int | None
    expired: bool = False
    pending: bool = False  # in a transaction whose marker is not in the log
    # where the commit is in __consumer_offsets: which of two commits is newer
    record_offset: int = -1
    batch_offset: int = -1
    # beside the data partition, when it is in the log dirs given
    end_offset: int | None = None
    end_source: str | None = None
    lag: int | None = None
    committed_timestamp: int | None = None  # of the record at the committed offset
    newest_timestamp: int | None = None  # the largest of the records below the end
    time_lag_ms: int | None = None


@dataclass
class Group:
    group: str
    kind: str = "classic"  # classic (types 0-2), or consumer (KIP-848)
    protocol_type: str | None = None
    protocol: str | None = None
    generation: int | None = None  # the classic generation, or the KIP-848 group epoch
    leader: str | None = None
    state_timestamp: int | None = None
    members: dict[str, Member] = field(default_factory=dict)
    offsets: dict[tuple[str, int], Committed] = field(default_factory=dict)
    pending: list[Committed] = field(default_factory=list)
    metadata_deleted: bool = False  # a tombstone removed its metadata
    # a streams group's topology: subtopology -> its source topics
    topology: dict[str, list[str]] = field(default_factory=dict)
    share_partitions: list[SharePartition] = field(default_factory=list)  # a share group's

    def owners(self, topic_ids: dict[str, str]) -> dict[tuple[str, int], Member]:
        """Topic partition -> the member assigned it (topic ids named by ``topic_ids``; a
        streams member's active tasks through its topology): one index a group, not a walk
        of every assignment for every offset."""
        out = {(topic_ids.get(t, t), p): m for m in self.members.values() for t, p in m.assignment}
        for m in self.members.values():
            for sub, p in m.tasks.get("active", ()):
                out.update(((topic, p), m) for topic in self.topology.get(sub, ()))
        return out


@dataclass(frozen=True)
class GroupOptions:
    ctx: ReadContext
    groups: tuple[str, ...] = ()  # regular expressions: a group is kept when any matches
    at: int | None = None  # replay the records written up to this moment (ms) only
    coordinator: str | None = None  # NEW or CLASSIC; None: as the disk says (coordinator_of)


@dataclass
class GroupsResult:
    groups: list[Group]
    findings: list[Finding]
    offsets_partitions: int  # __consumer_offsets partitions replayed
    records: int  # of them, applied
    topic_ids: dict[str, str]  # topic id -> name (partition.metadata, the metadata log)
    coordinator: str = CLASSIC  # whose rules the replay followed
    coordinator_source: str = ""  # why
    _owners: dict[str, dict[tuple[str, int], Member]] = field(default_factory=dict)

    def owner(self, g: Group, topic: str, partition: int) -> Member | None:
        if g.group not in self._owners:
            self._owners[g.group] = g.owners(self.topic_ids)
        return self._owners[g.group].get((topic, partition))

    def offset_obj(self, g: Group, c: Committed) -> events.GroupsOffset:
        owner = self.owner(g, c.topic, c.partition)
        return {
            "type": "offset",
            "group": c.group,
            "topic": c.topic,
            "partition": c.partition,
            "offset": c.offset,
            "leader_epoch": c.leader_epoch,
            "metadata": c.metadata,
            "commit_timestamp": c.commit_timestamp,
            "expire_timestamp": c.expire_timestamp,
            "expired": c.expired,
            "pending": c.pending,
            "end_offset": c.end_offset,
            "end_source": c.end_source,
            "lag": c.lag,
            "committed_timestamp": c.committed_timestamp,
            "newest_timestamp": c.newest_timestamp,
            "time_lag_ms": c.time_lag_ms,
            "member_id": None if owner is None else owner.member_id,
            "client_id": None if owner is None else owner.client_id,
            "client_host": None if owner is None else owner.client_host,
        }


def group_obj(g: Group, topic_ids: dict[str, str] | None = None) -> events.GroupsGroup:
    return {
        "type": "group",
        "group": g.group,
        "kind": g.kind,
        "protocol_type": g.protocol_type,
        "protocol": g.protocol,
        "generation": g.generation,
        "leader": g.leader,
        "state_timestamp": g.state_timestamp,
        "members": [
            {
                "member_id": m.member_id,
                "group_instance_id": m.group_instance_id,
                "client_id": m.client_id,
                "client_host": m.client_host,
                "assignment": [[t, p] for t, p in m.assignment],
                "tasks": {kind: [[s, p] for s, p in ts] for kind, ts in m.tasks.items()},
                "process_id": m.process_id,
            }
            for m in g.members.values()
        ],
        "offsets": len(g.offsets),
        "pending_offsets": len(g.pending),
        "metadata_deleted": g.metadata_deleted,
        "topology": [{"subtopology": s, "source_topics": ts} for s, ts in g.topology.items()],
        "share_partitions": [share_obj(sp, topic_ids or {}) for sp in g.share_partitions],
    }


def share_obj(sp: SharePartition, topic_ids: dict[str, str]) -> dict[str, Any]:
    """A share partition's state: where the group stands, its in-flight and archived
    batches (docs/groups.md: Share groups)."""
    return {
        "topic": topic_ids.get(sp.topic_id),
        "topic_id": sp.topic_id,
        "partition": sp.partition,
        "start_offset": sp.start_offset,
        "state_epoch": sp.state_epoch,
        "leader_epoch": sp.leader_epoch,
        "delivery_complete_count": sp.delivery_complete_count,
        "in_flight": [b.as_obj() for b in sp.batches],
        "archived": [b.as_obj() for b in sp.archived],
    }


def consumer_groups(paths: list[str], options: GroupOptions) -> GroupsResult:
    """Replay every ``__consumer_offsets`` partition PATHs hold (log dirs, partition dirs, or
    directories of log dirs) and set each committed offset beside its data partition, when
    that is among them. Raises InputError (exit 3) when PATHs hold no ``__consumer_offsets``."""
    offsets_dirs: list[tuple[Path, str]] = []
    share_dirs: list[tuple[Path, str]] = []
    data: dict[tuple[str, int], Path] = {}
    for arg in paths:
        for path, display in partition_dirs_of(storage.path_of(arg), arg):
            parsed = layout.parse_partition_dir_name(path.name)
            if parsed is None or layout.partition_dir_state(path.name) is not None:
                continue  # -delete, -future, -stray: not what the broker serves
            if parsed[0] == CONSUMER_OFFSETS:
                offsets_dirs.append((path, display))
            elif parsed[0] == SHARE_GROUP_STATE:
                share_dirs.append((path, display))
            else:
                data.setdefault(parsed, path)
    if not offsets_dirs and not share_dirs:
        raise InputError(
            f"no {CONSUMER_OFFSETS} (or {SHARE_GROUP_STATE}) partition in it: no group to show",
            path=" ".join(paths),
            code=Code.NO_KAFKA_FILES,
        )
    host = _host((offsets_dirs or share_dirs)[0][0], paths)
    rule, why = coordinator_of(host, options.coordinator)
    try:
        replay = _replayed(offsets_dirs, options, rule, known=why is not None)
    except _NewCoordinator:  # KIP-848 records: the new coordinator wrote this log
        rule, why = NEW, "the log holds KIP-848 records, which only the new coordinator writes"
        replay = _replayed(offsets_dirs, options, rule, known=True)
    shares = share_states(sorted(share_dirs, key=lambda x: x[0].name), options.ctx)
    for (name, _t, _p), sp in sorted(shares.partitions.items()):
        g = replay.group_named(name)
        g.kind = "share"
        g.share_partitions.append(sp)
    keep = [re.compile(g) for g in options.groups]
    groups = [
        g
        for name, g in sorted(replay.groups.items())
        if (g.offsets or g.members or g.pending or g.protocol_type or g.share_partitions)
        and (not keep or any(k.fullmatch(name) for k in keep))
    ]
    topic_ids = {**(host.topic_ids if host is not None else {}), **_topic_ids(data.values())}
    moment = options.at if options.at is not None else replay.last_time  # the copy's time
    ends: dict[Path, _End] = {}  # each data partition's end, read once for every group
    for g in groups:
        for c in g.offsets.values():
            c.expired = c.expire_timestamp is not None and 0 <= c.expire_timestamp <= moment
            part = data.get((c.topic, c.partition))
            if part is not None:
                if part not in ends:
                    ends[part] = _end(part, options)
                _lag(c, ends[part], options.ctx)
    return GroupsResult(
        groups,
        replay.findings + shares.findings,
        len(offsets_dirs),
        replay.applied,
        topic_ids,
        rule,
        why or "assumed: no metadata log says the broker's version (ZooKeeper, or 3.x)",
    )


def _host(offsets_dir: Path, paths: list[str]) -> ClusterConfigs | None:
    """The KRaft metadata of the broker whose log dir holds ``offsets_dir`` (its versions,
    its topics' ids), when it can be read."""
    try:
        return load_for(log_dir_of(offsets_dir), None, log_dirs_named(paths))
    except (InputError, OSError):
        return None  # the replay does without; its rule is then assumed


def coordinator_of(host: ClusterConfigs | None, given: str | None) -> tuple[str, str | None]:
    """Whose rules replay this broker's ``__consumer_offsets``, and why (None: assumed, the
    classic coordinator, until a KIP-848 record says otherwise)."""
    if given is not None:
        return given, "--coordinator"
    if host is not None:
        mv = host.features.get("metadata.version")
        if mv is not None and mv >= _MV_4_0:
            return NEW, f"metadata.version level {mv}: Kafka 4.x runs the new coordinator"
        gv = host.features.get("group.version")
        if gv is not None and gv >= 1:
            return NEW, f"group.version {gv}: the new coordinator is enabled"
        if mv is not None:
            return CLASSIC, f"metadata.version level {mv}: Kafka 3.x's classic coordinator"
    return CLASSIC, None


class _NewCoordinator(Exception):
    """A KIP-848 record in a log replayed by an assumed CLASSIC rule."""


def _replayed(
    offsets_dirs: list[tuple[Path, str]], options: GroupOptions, rule: str, *, known: bool
) -> _Replay:
    replay = _Replay(options, rule, known=known)
    for path, display in sorted(offsets_dirs, key=lambda x: x[0].name):
        replay.partition(path, display)
    return replay


_Key = tuple[str, str, int]  # group, topic, partition


class _Replay:
    """The coordinator's replay of its partitions' records, groups keyed by name."""

    def __init__(self, options: GroupOptions, rule: str, *, known: bool) -> None:
        self.options = options
        self.rule = rule
        self.known = known  # the rule is the broker's (not assumed)
        self.groups: dict[str, Group] = {}
        self.findings: list[Finding] = []
        self.applied = 0
        self.last_time = -1  # the newest record timestamp replayed
        self.waiting: dict[int, dict[_Key, Committed]] = {}  # producer -> its open commits

    def partition(self, path: Path, display: str) -> None:
        self.waiting = {}
        for seg_display, batch in self._batches(path, display):
            if batch.is_control:
                aborted = end_marker(batch, self.options.ctx.limits)
                if aborted is not None:
                    self._end_transaction(batch.producer_id, commit=not aborted)
                continue
            try:
                records = list(batch.records(self.options.ctx.limits.max_batch_bytes))
            except FormatError as e:
                self._finding(seg_display, e.position, batch.last_offset, str(e))
                continue
            producer = batch.producer_id if batch.is_transactional else None
            for rec in records:
                self._apply(rec, seg_display, batch, producer)
        for commits in self.waiting.values():  # no marker in the log: pending
            for c in commits.values():
                c.pending = True
                self._group(c.group).pending.append(c)

    def _batches(self, path: Path, display: str) -> Iterator[tuple[str, Batch]]:
        """The partition's batches in offset order, up to the first written after ``at``."""
        at = self.options.at if self.options.at is not None else MAX_OFFSET
        for seg in load_partition(path).segments:
            seg_display = storage.child(display, seg.log.name)
            with mapped(seg.log) as buf:
                for batch in SegmentScanner(buf, check_crc=False):
                    if batch.max_timestamp > at:
                        return
                    yield seg_display, batch

    def _finding(self, path: str, position: int | None, offset: int | None, why: str) -> None:
        self.findings.append(
            Finding(
                "warning",
                Code.BAD_COORDINATOR_RECORD,
                path,
                position,
                offset,
                f"a {CONSUMER_OFFSETS} record that does not decode is left out: {why}",
            )
        )

    def group_named(self, name: str) -> Group:
        return self._group(name)

    def _group(self, name: str) -> Group:
        g = self.groups.get(name)
        if g is None:
            g = self.groups[name] = Group(name)
        return g

    def _apply(self, rec: Record, path: str, batch: Batch, producer: int | None) -> None:
        try:
            cr = decode_consumer_offsets(rec.key, rec.value)
        except FormatError as e:
            self._finding(path, batch.position, rec.offset, str(e))
            return
        if cr.is_unknown or cr.key is None:
            return
        if cr.record_type in _KIP_848 and self.rule == CLASSIC and not self.known:
            raise _NewCoordinator
        self.applied += 1
        self.last_time = max(self.last_time, rec.timestamp)
        t, key, value = cr.record_type, cr.key, cr.value
        if t in _OFFSET_COMMIT:
            self._commit(key, value, cr.value_version, rec.offset, batch, producer)
        elif t == _GROUP_METADATA:
            self._classic_group(self._group(key["group"]), value)
        elif t == _CONSUMER_GROUP_METADATA:
            g = self._group(key["groupId"])
            g.kind, g.protocol_type = "consumer", "consumer"
            if value is None:
                g.metadata_deleted, g.generation, g.members = True, None, {}
            else:
                g.generation, g.metadata_deleted = value.get("epoch"), False
        elif t == _CONSUMER_GROUP_MEMBER:
            self._consumer_member(self._group(key["groupId"]), key["memberId"], value)
        elif t in (_CONSUMER_GROUP_ASSIGNMENT, _SHARE_ASSIGNMENT):
            g = self._group(key["groupId"])
            g.kind = "consumer" if t == _CONSUMER_GROUP_ASSIGNMENT else "share"
            m = g.members.get(key["memberId"])
            if m is None and value is None:
                return
            m = g.members.setdefault(key["memberId"], Member(key["memberId"], None, None))
            m.assignment = [
                (str(tp["topicId"]), p)
                for tp in (value or {}).get("assignedPartitions") or ()
                for p in tp.get("partitions") or ()
            ]
        else:
            self._share_or_streams(t, key, value)

    def _share_or_streams(self, t: int, key: dict[str, Any], value: dict[str, Any] | None) -> None:
        """The share-group (KIP-932) and streams-group (KIP-1071) records groups reads."""
        if t in (_SHARE_GROUP_METADATA, _STREAMS_METADATA):
            g = self._group(key["groupId"])
            g.kind = g.protocol_type = "share" if t == _SHARE_GROUP_METADATA else "streams"
            if value is None:
                g.metadata_deleted, g.generation, g.members = True, None, {}
            else:
                g.generation, g.metadata_deleted = value.get("epoch"), False
        elif t in (_SHARE_MEMBER, _STREAMS_MEMBER):
            g = self._group(key["groupId"])
            self._consumer_member(g, key["memberId"], value)
            g.kind = "share" if t == _SHARE_MEMBER else "streams"
            if value is not None:
                g.members[key["memberId"]].process_id = value.get("processId")
        elif t == _STREAMS_ASSIGNMENT:
            g = self._group(key["groupId"])
            g.kind = "streams"
            m = g.members.setdefault(key["memberId"], Member(key["memberId"], None, None))
            m.tasks = {
                kind.removesuffix("Tasks"): [
                    (str(task["subtopologyId"]), p)
                    for task in (value or {}).get(kind) or ()
                    for p in task.get("partitions") or ()
                ]
                for kind in _TASK_KINDS
            }
        elif t == _STREAMS_TOPOLOGY:
            g = self._group(key["groupId"])
            g.kind = "streams"
            g.topology = {
                str(sub["subtopologyId"]): [str(x) for x in sub.get("sourceTopics") or ()]
                + [str(r["name"]) for r in sub.get("repartitionSourceTopics") or ()]
                for sub in (value or {}).get("subtopologies") or ()
            }

    def _commit(
        self,
        key: dict[str, Any],
        value: dict[str, Any] | None,
        version: int | None,
        record_offset: int,
        batch: Batch,
        producer: int | None,
    ) -> None:
        k: _Key = (key["group"], key["topic"], key["partition"])
        g = self._group(k[0])
        if value is None:
            if producer is None or self.rule == NEW:  # (NEW: whatever batch it is in)
                g.offsets.pop(k[1:], None)
            for pid, commits in self.waiting.items():
                if self.rule == NEW or pid == producer:
                    commits.pop(k, None)
            return
        c = Committed(
            *k,
            value["offset"],
            value.get("leaderEpoch", -1),
            value.get("metadata", ""),
            value.get("commitTimestamp", -1),
            value.get("expireTimestamp") if version == 1 else None,
            record_offset=record_offset,
            batch_offset=batch.header_offset,
        )
        if producer is None:
            g.offsets[k[1:]] = c
        else:
            self.waiting.setdefault(producer, {})[k] = c  # a later one replaces it

    def _end_transaction(self, producer: int, *, commit: bool) -> None:
        commits = self.waiting.pop(producer, {})
        if not commit:
            return
        for (group, topic, partition), c in commits.items():
            offsets = self._group(group).offsets
            now = offsets.get((topic, partition))
            if now is None or self._older(now, c):  # the commit later in the log stands
                offsets[(topic, partition)] = c

    def _older(self, a: Committed, b: Committed) -> bool:
        if self.rule == NEW:
            return a.record_offset < b.record_offset
        return a.batch_offset < b.batch_offset

    @staticmethod
    def _classic_group(g: Group, value: dict[str, Any] | None) -> None:
        if value is None:
            g.protocol_type = g.protocol = g.leader = None
            g.generation = None
            g.members = {}
            g.metadata_deleted = True
            return
        g.kind, g.metadata_deleted = "classic", False
        g.protocol_type = value.get("protocolType")
        g.protocol = value.get("protocol")
        g.generation = value.get("generation")
        g.leader = value.get("leader")
        g.state_timestamp = value.get("currentStateTimestamp", -1)
        g.members = {}
        for m in value.get("members") or ():
            assignment = m.get("assignment")
            parts: list[tuple[str, int]] = []
            if isinstance(assignment, dict):
                for tp_ in assignment.get("assignedPartitions") or ():
                    parts += [(tp_["topic"], p) for p in tp_.get("partitions") or ()]
            g.members[m["memberId"]] = Member(
                m["memberId"],
                m.get("clientId"),
                m.get("clientHost"),
                m.get("groupInstanceId"),
                parts,
            )

    @staticmethod
    def _consumer_member(g: Group, member_id: str, value: dict[str, Any] | None) -> None:
        g.kind = "consumer"
        if value is None:
            g.members.pop(member_id, None)
            return
        m = g.members.setdefault(member_id, Member(member_id, None, None))
        m.client_id, m.client_host = value.get("clientId"), value.get("clientHost")
        m.group_instance_id = value.get("instanceId")


def _topic_ids(parts: Any) -> dict[str, str]:
    """Topic id -> name, from the data partitions' ``partition.metadata`` files (KIP-848
    assignments name topics by id)."""
    from klogtool.formats import checkpoint
    from klogtool.log.segment import read_small

    out: dict[str, str] = {}
    for p in parts:
        parsed = layout.parse_partition_dir_name(p.name)
        f = layout.scan_partition_dir(p).partition_metadata  # (the kind's name was looked up)
        if parsed is None or f is None:
            continue
        try:
            out[checkpoint.parse_partition_metadata(read_small(f)).topic_id] = parsed[0]
        except (OSError, FormatError):
            continue
    return out


@dataclass(frozen=True)
class _End:
    """Where a data partition ends for the lag: the offset, where it came from, the newest
    record's timestamp below it, and the partition to look records up in."""

    offset: int
    source: str
    newest_timestamp: int | None
    target: Target


def _end(part: Path, options: GroupOptions) -> _End:
    view = load_partition(part)
    (target,) = resolve_targets([str(part)])
    if options.at is None:
        offset, source = view.high_watermark()
    else:  # the log end at that moment: the first offset written after it
        after = _first(target, RecordFilter(from_time=options.at + 1), options.ctx)
        offset = view.log_end_offset if after is None else after[0]
        source = "records written up to --at"
    return _End(offset, source, _largest_timestamp(view, offset, options.ctx), target)


def _largest_timestamp(view: PartitionView, end: int, ctx: ReadContext) -> int | None:
    """The largest timestamp of the records below ``end``: timestamps may go back, so the
    last record's is not it. A whole segment's is its time index's last entry, as the broker
    takes it; the rest come from the batches (the records of the one ``end`` cuts)."""
    largest = -1
    for i, seg in enumerate(view.segments):
        if seg.base_offset >= end:
            break
        if view.upper_bound(i) <= end and seg.timestamp_source == TIMEINDEX:
            largest = max(largest, seg.largest_timestamp)
            continue
        with mapped(seg.log) as buf:
            for batch in SegmentScanner(buf, check_crc=False):
                if batch.base_offset >= end:
                    break
                if batch.last_offset < end:
                    largest = max(largest, batch.max_timestamp)
                    continue
                below = batch.records(ctx.limits.max_batch_bytes)
                largest = max([largest, *(r.timestamp for r in below if r.offset < end)])
    return largest if largest >= 0 else None


def _lag(c: Committed, end: _End, ctx: ReadContext) -> None:
    c.end_offset, c.end_source, c.newest_timestamp = end.offset, end.source, end.newest_timestamp
    c.lag = end.offset - c.offset
    at_committed = _first(end.target, RecordFilter(offsets=(c.offset, MAX_OFFSET)), ctx)
    if at_committed is not None and at_committed[0] < end.offset:
        c.committed_timestamp = at_committed[1]
    if c.lag <= 0:
        c.time_lag_ms = 0
    elif c.committed_timestamp is not None and c.newest_timestamp is not None:
        c.time_lag_ms = max(0, c.newest_timestamp - c.committed_timestamp)


def _first(target: Target, where: RecordFilter, ctx: ReadContext) -> tuple[int, int] | None:
    """(offset, timestamp) of the first record of ``target`` that ``where`` selects, found as
    find finds it (the indexes first)."""
    finder = Finder(
        FindOptions(where=where, limit=1, dump=DumpOptions(print_data=False, ctx=ctx.quiet()))
    )
    for obj in finder.run([target]):
        if obj["type"] == "record":
            return obj["offset"], obj["timestamp"]
    return None


def offsets_of(g: Group) -> list[Committed]:
    """A group's committed offsets by topic and partition, then its pending ones."""
    return sorted(g.offsets.values(), key=lambda c: (c.topic, c.partition)) + g.pending
