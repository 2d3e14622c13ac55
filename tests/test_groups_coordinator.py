"""``groups`` held to the group coordinator's rules (issue 38): KIP-848 consumer groups, the
transactional offset commits of both coordinators (the new one of Kafka 4.x,
``OffsetMetadataManager``, and the classic one of 3.x, the Scala ``GroupMetadataManager``), and
lag beside data partitions whose log starts above their high watermark or whose timestamps
go back.

The KIP-848 records are written here from Kafka's own JSON schemas
(``group-coordinator/src/main/resources/common/message/*.json``: keys non-flexible, values
flexible version 0), by hand, never by klogtool's encoder; offset commits with kafka-python's
types (tests/test_groups.py). What each group should hold comes from a plain model of the
coordinator's rules, worked out from the operations the test wrote.
"""

from __future__ import annotations

import base64
import random
import struct
import time
from pathlib import Path
from typing import Any

import pytest
from kafka.protocol.old.consumer_protocol import ConsumerProtocolMemberAssignment_v0
from support.cli import jsonl, run
from support.coordinator import (
    GROUP_KEY,
    NO_TAGS,
    T0,
    Log,
    commit_key,
    commit_value,
    compact_array,
    compact_string,
    data_partition,
    group_value,
    key,
)
from support.metadata import metadata_batch
from support.rewrite import write_checkpoints, write_partition

from klogtool.formats.batch import Record
from klogtool.formats.payloads.cluster_metadata import encode_metadata_record
from klogtool.formats.v2 import encode_batch

pytestmark = pytest.mark.usefixtures("no_fsync")


# -- KIP-848 records, from the JSON schemas --------------------------------------------------------
def group_metadata_848(group: str, epoch: int) -> tuple[bytes, bytes]:
    """ConsumerGroupMetadataKey (3) / Value v0: Epoch."""
    return key(3, group), struct.pack(">hi", 0, epoch) + NO_TAGS


def member_metadata(group: str, member: str, client: str, host: str) -> tuple[bytes, bytes]:
    """ConsumerGroupMemberMetadataKey (5) / Value v0: InstanceId, RackId, ClientId,
    ClientHost, SubscribedTopicNames, SubscribedTopicRegex, RebalanceTimeoutMs,
    ServerAssignor (ClassicMemberMetadata is a tagged field: absent)."""
    value = struct.pack(">h", 0) + compact_string(None) + compact_string(None)
    value += compact_string(client) + compact_string(host)
    value += compact_array([compact_string("t")]) + compact_string(None)
    value += struct.pack(">i", 300_000) + compact_string("uniform") + NO_TAGS
    return key(5, group, member), value


def current_assignment(
    group: str, member: str, epoch: int, parts: dict[bytes, list[int]]
) -> tuple[bytes, bytes]:
    """ConsumerGroupCurrentMemberAssignmentKey (8) / Value v0: MemberEpoch,
    PreviousMemberEpoch, State, AssignedPartitions [TopicId, Partitions],
    PartitionsPendingRevocation."""
    topics = [
        uuid + compact_array([struct.pack(">i", p) for p in ps]) + NO_TAGS
        for uuid, ps in parts.items()
    ]
    value = struct.pack(">hiib", 0, epoch, epoch - 1, 0) + compact_array(topics)
    return key(8, group, member), value + compact_array([]) + NO_TAGS


def uuid_text(raw: bytes) -> str:
    """Kafka's Uuid.toString: URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def partition_metadata(part: Path, raw_id: bytes) -> None:
    (part / "partition.metadata").write_text(f"version: 0\ntopic_id: {uuid_text(raw_id)}\n")


def metadata_log(logdir: Path, level: int) -> None:
    """A KRaft metadata log whose metadata.version is at ``level`` (22 and up: Kafka 4.x)."""
    d = logdir / "__cluster_metadata-0"
    d.mkdir(parents=True)
    record = encode_metadata_record(12, {"name": "metadata.version", "featureLevel": level})
    (d / "00000000000000000000.log").write_bytes(metadata_batch(0, [record]))


T_ID, U_ID = bytes(range(16)), bytes(range(16, 32))


def test_kip848_groups_show_members_and_assignments(tmp_path: Path) -> None:
    """A __consumer_offsets partition holding any KIP-848 record made groups (and stats
    --html of that log dir) exit 70: KeyError, field names read with the wrong casing. Members
    and assignments come out right, the topics named from their ids."""
    logdir = tmp_path / "logdir"
    log = Log()
    log.add([group_metadata_848("g", 5)])
    log.add(
        [member_metadata("g", "m1", "c1", "/10.0.0.1"), member_metadata("g", "m2", "c2", "/h2")]
    )
    log.add([current_assignment("g", "m1", 5, {T_ID: [0, 1]})])
    log.add([current_assignment("g", "m2", 5, {T_ID: [2], U_ID: [0]})])
    log.add(
        [
            (commit_key("g", "t", 1), commit_value(3, T0)),
            (commit_key("g", "u", 0), commit_value(1, T0)),
        ]
    )  # noqa: E501
    write_partition(logdir / "__consumer_offsets-0", [(0, log.batches)])
    data_partition(logdir, "t", 1, 10)
    data_partition(logdir, "u", 0, 4)
    partition_metadata(logdir / "t-1", T_ID)
    partition_metadata(logdir / "u-0", U_ID)
    code, out, err = run("groups", "--format", "jsonl", str(logdir))
    assert code == 0, err
    objs = jsonl(out)
    (g,) = [o for o in objs if o["type"] == "group"]
    assert (g["kind"], g["generation"]) == ("consumer", 5)
    members = {m["member_id"]: m for m in g["members"]}
    assert members["m1"]["client_id"] == "c1" and members["m1"]["client_host"] == "/10.0.0.1"
    t, u = uuid_text(T_ID), uuid_text(U_ID)
    assert members["m1"]["assignment"] == [[t, 0], [t, 1]]
    assert members["m2"]["assignment"] == [[t, 2], [u, 0]]
    owners = {(o["topic"], o["partition"]): o["member_id"] for o in objs if o["type"] == "offset"}
    assert owners == {("t", 1): "m1", ("u", 0): "m2"}
    code, _out, err = run("stats", "--html", str(tmp_path / "r.html"), str(logdir))
    assert code == 0 and "internal error" not in err, err


# -- transactions: a plain model of both coordinators ---------------------------------------------
NEW, CLASSIC = "new", "classic"
Key = tuple[str, str, int]


def model(ops: list[tuple[Any, ...]], rule: str) -> tuple[dict[Key, int], dict[Key, list[int]]]:
    """What the coordinator holds after ``ops`` (each its own batch, in log order): the
    committed offsets, and each key's commits still waiting for a marker."""
    committed: dict[Key, tuple[int, int]] = {}  # key -> (offset, log position)
    waiting: dict[int, dict[Key, tuple[int, int]]] = {}
    for at, op in enumerate(ops):
        if op[0] == "commit":
            _, k, offset, pid = op
            if pid is None:
                committed[k] = (offset, at)
            else:
                waiting.setdefault(pid, {})[k] = (offset, at)
        elif op[0] == "tombstone":
            _, k, pid = op
            if pid is None or rule == NEW:
                committed.pop(k, None)
            for p, commits in waiting.items():
                if rule == NEW or p == pid:
                    commits.pop(k, None)
        else:
            _, pid, commit = op
            for k, (offset, pos) in waiting.pop(pid, {}).items():
                if commit and (k not in committed or committed[k][1] < pos):
                    committed[k] = (offset, pos)
    pending: dict[Key, list[int]] = {}
    for commits in waiting.values():
        for k, (offset, _pos) in commits.items():
            pending.setdefault(k, []).append(offset)
    return {k: v[0] for k, v in committed.items()}, pending


def written(ops: list[tuple[Any, ...]], logdir: Path, level: int | None) -> None:
    log = Log()
    for step, op in enumerate(ops):
        if op[0] == "commit":
            _, k, offset, pid = op
            log.add([(commit_key(*k), commit_value(offset, T0))], pid=pid or -1, ts=step)
        elif op[0] == "tombstone":
            _, k, pid = op
            log.add([(commit_key(*k), None)], pid=pid or -1, ts=step)
        else:
            log.marker(op[1], op[2], ts=step)
    write_partition(logdir / "__consumer_offsets-0", [(0, log.batches)])
    if level is not None:
        metadata_log(logdir, level)


def replayed(logdir: Path, *args: str) -> tuple[dict[Key, int], dict[Key, list[int]], dict]:
    code, out, err = run("groups", "--format", "jsonl", *args, str(logdir))
    assert code in (0, 1), err
    objs = jsonl(out)
    committed: dict[Key, int] = {}
    pending: dict[Key, list[int]] = {}
    for o in objs:
        if o["type"] == "offset":
            k = (o["group"], o["topic"], o["partition"])
            if o["pending"]:
                pending.setdefault(k, []).append(o["offset"])
            else:
                committed[k] = o["offset"]
    (summary,) = [o for o in objs if o["type"] == "summary"]
    return committed, {k: sorted(v) for k, v in pending.items()}, summary


K = ("g", "t", 0)
CASES = {
    # a transactional commit, a newer plain commit, then the COMMIT: the newer one stands
    "newer plain commit": [("commit", K, 5, 9), ("commit", K, 7, None), ("marker", 9, True)],
    # two transactions whose markers arrive in the other order: the later commit stands
    "markers reversed": [
        ("commit", K, 5, 9),
        ("commit", K, 6, 10),
        ("marker", 10, True),
        ("marker", 9, True),
    ],
    # an open transaction commits the same partition twice: one pending commit, the later
    "twice in one transaction": [("commit", K, 5, 9), ("commit", K, 6, 9)],
    # a tombstone between a transactional commit and its COMMIT: the rules differ
    "tombstone before the marker": [
        ("commit", K, 4, None),
        ("commit", K, 5, 9),
        ("tombstone", K, None),
        ("marker", 9, True),
    ],
}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("rule", [NEW, CLASSIC])
def test_transactional_commits_follow_the_coordinators_rules(
    tmp_path: Path, case: str, rule: str
) -> None:
    ops = CASES[case]
    written(ops, tmp_path, None)
    committed, pending, summary = replayed(tmp_path, "--coordinator", rule)
    assert (committed, pending) == model(ops, rule)
    assert summary["coordinator"] == rule and summary["coordinator_source"] == "--coordinator"


def test_the_tombstone_rule_is_the_brokers_version(tmp_path: Path) -> None:
    """Kafka 4.x (metadata.version 4.0-IV0, level 22, and up) replays with the new
    coordinator's rule: a tombstone drops the open transactions' commits of its partition;
    3.x's classic coordinator applied such a commit at its COMMIT."""
    ops = CASES["tombstone before the marker"]
    for level, rule in ((25, NEW), (21, CLASSIC), (None, CLASSIC)):
        logdir = tmp_path / f"l{level}"
        written(ops, logdir, level)
        committed, pending, summary = replayed(logdir)
        assert (committed, pending) == model(ops, rule), level
        assert summary["coordinator"] == rule, summary
        assert ("metadata.version level" in summary["coordinator_source"]) == (level is not None)
    assert model(ops, NEW)[0] == {} and model(ops, CLASSIC)[0] == {K: 5}


def test_kip848_records_without_a_metadata_log_mean_the_new_coordinator(tmp_path: Path) -> None:
    ops = CASES["tombstone before the marker"]
    written(ops, tmp_path, None)
    log = Log()
    log.add([group_metadata_848("other", 1)])
    write_partition(tmp_path / "__consumer_offsets-1", [(0, log.batches)])
    committed, _pending, summary = replayed(tmp_path)
    assert summary["coordinator"] == NEW and "KIP-848" in summary["coordinator_source"]
    assert committed == model(ops, NEW)[0]


@pytest.mark.parametrize("rule", [NEW, CLASSIC])
def test_random_sequences_agree_with_the_model(tmp_path: Path, rule: str) -> None:
    """Commits, tombstones, transactions and markers in any order."""
    rng = random.Random(38)
    ops: list[tuple[Any, ...]] = []
    for _ in range(700):
        k = (f"g{rng.randrange(3)}", "t", rng.randrange(3))
        pid = rng.choice([None, None, 700, 701, 702])
        roll = rng.random()
        if roll < 0.55:
            ops.append(("commit", k, rng.randrange(1000), pid))
        elif roll < 0.7:
            ops.append(("tombstone", k, pid))
        else:
            ops.append(("marker", 700 + rng.randrange(3), rng.random() < 0.6))
    written(ops, tmp_path, None)
    committed, pending, _summary = replayed(tmp_path, "--coordinator", rule)
    want_committed, want_pending = model(ops, rule)
    assert committed == want_committed
    assert pending == {k: sorted(v) for k, v in want_pending.items()}


# -- lag ------------------------------------------------------------------------------------------
def test_lag_below_the_log_start_and_without_a_high_watermark(tmp_path: Path) -> None:
    """The broker raises a high watermark below the log start offset (or missing: 0) to the
    log start offset: lag is never negative for that reason, and a high watermark the log
    dir does not know is said in the text's NOTE column, not only the JSON."""
    logdir = tmp_path / "logdir"
    log = Log()
    log.add(
        [
            (commit_key("g", "t", 0), commit_value(25, T0)),
            (commit_key("g", "u", 0), commit_value(12, T0)),
        ]
    )  # noqa: E501
    write_partition(logdir / "__consumer_offsets-0", [(0, log.batches)])
    for topic in ("t", "u"):
        recs = [Record(o, T0 + o, b"k", b"v") for o in range(20, 30)]  # the log starts at 20
        write_partition(logdir / f"{topic}-0", [(20, [encode_batch(recs)])])
    write_checkpoints(logdir, replication_offset_checkpoint={("t", 0): 3})  # below 20; u: none
    code, out, err = run("groups", "--format", "jsonl", str(logdir))
    assert code == 0, err
    offsets = {o["topic"]: o for o in jsonl(out) if o["type"] == "offset"}
    assert (offsets["t"]["end_offset"], offsets["t"]["lag"]) == (20, -5)  # committed past it
    assert (offsets["u"]["end_offset"], offsets["u"]["lag"]) == (20, 8)
    assert "raised to the log start offset" in offsets["t"]["end_source"]
    assert offsets["u"]["end_source"].startswith("no replication-offset-checkpoint entry")
    code, out, _err = run("groups", str(logdir))
    (u_line,) = [line for line in out.splitlines() if line.startswith("u ")]
    assert "high watermark not known" in u_line


def test_time_lag_takes_the_largest_timestamp_up_to_the_end(tmp_path: Path) -> None:
    """Timestamps that go back: the time lag is measured to the largest timestamp below the
    end, not to the last record's."""
    logdir = tmp_path / "logdir"
    log = Log()
    log.add([(commit_key("g", "t", 0), commit_value(2, T0))])
    write_partition(logdir / "__consumer_offsets-0", [(0, log.batches)])
    stamps = [0, 1000, 2000, 9000, 3000, 4000]  # offset 3 is the newest; 5 the last
    recs = [Record(o, T0 + ts, b"k", b"v") for o, ts in enumerate(stamps)]
    write_partition(logdir / "t-0", [(0, [encode_batch(recs[:3]), encode_batch(recs[3:])])])
    write_checkpoints(logdir, replication_offset_checkpoint={("t", 0): 6})
    code, out, err = run("groups", "--format", "jsonl", str(logdir))
    assert code == 0, err
    (o,) = [o for o in jsonl(out) if o["type"] == "offset"]
    assert o["newest_timestamp"] == T0 + 9000
    assert o["time_lag_ms"] == 9000 - 2000


# -- a large group (issue 43) ---------------------------------------------------------------------
def test_a_large_assignment_is_indexed_once(tmp_path: Path) -> None:
    """Finding a committed offset's owner walked every member's whole assignment for every
    offset: one group assigning 150,000 partitions with 15,000 commits took ~35 s."""
    logdir = tmp_path / "logdir"
    log = Log()
    parts = [("t", list(range(150_000)))]
    assignment = ConsumerProtocolMemberAssignment_v0(0, parts, b"").encode()
    members = [("m", assignment)]
    value = group_value(1, [("m", [("t", [0])])])
    # the same group record, its member's assignment replaced by the large one
    small = ConsumerProtocolMemberAssignment_v0(0, [("t", [0])], b"").encode()
    value = value.replace(
        struct.pack(">i", len(small)) + small, struct.pack(">i", len(assignment)) + assignment
    )
    assert members and assignment in value
    log.add([(struct.pack(">h", 2) + GROUP_KEY.encode(("g",)), value)])
    commits = [(commit_key("g", "t", p), commit_value(p, T0)) for p in range(0, 150_000, 10)]
    for i in range(0, len(commits), 1000):
        log.add(commits[i : i + 1000])
    write_partition(logdir / "__consumer_offsets-0", [(0, log.batches)])
    started = time.monotonic()
    code, out, err = run("groups", "--format", "jsonl", str(logdir))
    took = time.monotonic() - started
    assert code == 0, err
    offsets = [o for o in jsonl(out) if o["type"] == "offset"]
    assert len(offsets) == 15_000 and all(o["member_id"] == "m" for o in offsets)
    assert took < 10, f"{took:.1f} s"
