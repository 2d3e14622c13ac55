"""``groups`` on a Kafka 4.x disk: share groups (KIP-932, their delivery state replayed from
``__share_group_state``, their members from ``__consumer_offsets``) and streams groups
(KIP-1071: topology, members, tasks, and their committed offsets with lag like any group).

Every record is written here from Kafka 4.2's JSON schemas (keys: the record type, then
non-flexible fields; values: version 0, flexible), by hand, never by klogtool's encoder. The
share partitions' state is held to a plain model of the share coordinator's rules: a
snapshot replaces the state, an update adds its batches, each offset keeps the largest
(delivery count, state) any batch gave it, nothing below the start offset."""

from __future__ import annotations

import random
import struct
from pathlib import Path
from typing import Any

import pytest
from support.cli import jsonl, run
from support.coordinator import (
    NO_TAGS,
    T0,
    Log,
    commit_key,
    commit_value,
    compact_array,
    compact_string,
    data_partition,
    key,
)
from support.rewrite import write_checkpoints, write_partition
from test_groups_coordinator import partition_metadata, uuid_text

from klogtool.formats.batch import Record
from klogtool.formats.v2 import encode_batch

pytestmark = pytest.mark.usefixtures("no_fsync")

TOPIC_ID = bytes(range(40, 56))
STATES = {0: "Available", 1: "Acquired", 2: "Acknowledged", 3: "Archiving", 4: "Archived"}


# -- __share_group_state (ShareSnapshot 0, ShareUpdate 1) ----------------------------------------
def share_key(record_type: int, group: str, partition: int) -> bytes:
    """ShareSnapshotKey / ShareUpdateKey: GroupId, TopicId (uuid), Partition."""
    g = group.encode()
    return struct.pack(">hh", record_type, len(g)) + g + TOPIC_ID + struct.pack(">i", partition)


def state_batches(batches: list[tuple[int, int, int, int]]) -> bytes:
    return compact_array([struct.pack(">qqbh", *b) + NO_TAGS for b in batches])


def snapshot(group: str, partition: int, start: int, batches: list[tuple[int, int, int, int]],
             state_epoch: int = 0) -> tuple[bytes, bytes]:  # fmt: skip
    """ShareSnapshotValue v0: SnapshotEpoch, StateEpoch, LeaderEpoch, StartOffset,
    CreateTimestamp, WriteTimestamp, StateBatches [FirstOffset, LastOffset, DeliveryState,
    DeliveryCount] (DeliveryCompleteCount, tag 0, left out)."""
    value = struct.pack(">hiiiqqq", 0, 1, state_epoch, 3, start, T0, T0)
    return share_key(0, group, partition), value + state_batches(batches) + NO_TAGS


def update(group: str, partition: int, start: int, batches: list[tuple[int, int, int, int]]
           ) -> tuple[bytes, bytes]:  # fmt: skip
    """ShareUpdateValue v0: SnapshotEpoch, LeaderEpoch, StartOffset, StateBatches."""
    value = struct.pack(">hiiq", 0, 1, -1, start)
    return share_key(1, group, partition), value + state_batches(batches) + NO_TAGS


def share_model(ops: list[tuple[str, int, list[tuple[int, int, int, int]]]]) -> tuple[int, list]:
    """(start offset, [(first, last, state, count)]) after ``ops`` (snapshot/update, start,
    batches), offset by offset."""
    start = -1
    per: dict[int, tuple[int, int]] = {}  # offset -> (count, state)
    for kind, new_start, batches in ops:
        if kind == "snapshot":
            per = {}
            start = new_start
        elif new_start != -1:
            start = new_start
        for first, last, state, count in batches:
            for o in range(first, last + 1):
                per[o] = max(per.get(o, (-1, -1)), (count, state))
        per = {o: v for o, v in per.items() if start == -1 or o >= start}
    ranges: list[list[int]] = []
    for o in sorted(per):
        count, state = per[o]
        if ranges and ranges[-1][1] == o - 1 and (ranges[-1][3], ranges[-1][2]) == (count, state):
            ranges[-1][1] = o
        else:
            ranges.append([o, o, state, count])
    return start, [tuple(r) for r in ranges]


def share_log(logdir: Path, ops: list[tuple[str, int, list[tuple[int, int, int, int]]]]) -> None:
    recs = []
    for i, (kind, start, batches) in enumerate(ops):
        k, v = (snapshot if kind == "snapshot" else update)("sg", 0, start, batches)
        recs.append(Record(i, T0 + i, k, v))
    write_partition(logdir / "__share_group_state-0", [(0, [encode_batch(recs)])])


def share_partitions(logdir: Path) -> tuple[dict[str, Any], str, str]:
    code, out, err = run("groups", "--format", "jsonl", str(logdir))
    assert code == 0, err
    (g,) = [o for o in jsonl(out) if o["type"] == "group" and o["group"] == "sg"]
    code, text, err = run("groups", str(logdir))
    assert code == 0, err
    return g, text, err


def test_a_share_groups_delivery_state_and_its_poison_messages(tmp_path: Path) -> None:
    logdir = tmp_path / "logdir"
    ops = [
        ("snapshot", 10, [(10, 19, 0, 1), (20, 24, 2, 1)]),
        ("update", -1, [(12, 13, 4, 5), (15, 22, 0, 2)]),  # two archived after 5 deliveries
        ("update", 11, [(30, 31, 1, 1)]),  # the start moves to 11
    ]
    share_log(logdir, ops)
    # the group's metadata and members in __consumer_offsets (types 11, 10, 14)
    log = Log()
    log.add([(key(11, "sg"), struct.pack(">hiq", 0, 4, 0) + NO_TAGS)])
    member = struct.pack(">h", 0) + compact_string(None) + compact_string("share-client")
    member += compact_string("/10.1.1.1") + compact_array([compact_string("t")]) + NO_TAGS
    log.add([(key(10, "sg", "m1"), member)])
    assigned = TOPIC_ID + compact_array([struct.pack(">i", 0)]) + NO_TAGS
    log.add(
        [
            (
                key(14, "sg", "m1"),
                struct.pack(">hiib", 0, 4, 3, 0) + compact_array([assigned]) + NO_TAGS,
            )
        ]
    )  # noqa: E501
    write_partition(logdir / "__consumer_offsets-0", [(0, log.batches)])
    data_partition(logdir, "t", 0, 40)
    partition_metadata(logdir / "t-0", TOPIC_ID)
    g, text, _err = share_partitions(logdir)
    assert (g["kind"], g["generation"]) == ("share", 4)
    (m,) = g["members"]
    assert (m["member_id"], m["client_id"], m["assignment"]) == (
        "m1",
        "share-client",
        [[uuid_text(TOPIC_ID), 0]],
    )
    (sp,) = g["share_partitions"]
    start, ranges = share_model(ops)
    assert (sp["topic"], sp["partition"], sp["start_offset"]) == ("t", 0, start) == ("t", 0, 11)
    got = [
        (b["first_offset"], b["last_offset"], b["state"], b["delivery_count"])
        for b in sp["in_flight"]
    ]  # noqa: E501
    assert got == [(f, last, STATES[s], c) for f, last, s, c in ranges]
    assert [(b["first_offset"], b["last_offset"]) for b in sp["archived"]] == [(12, 13)]
    assert "t-0: offsets 12..13 archived after 5 deliveries" in text
    assert "Share group 'sg'" in text


def test_share_states_agree_with_the_model(tmp_path: Path) -> None:
    rng = random.Random(932)
    ops: list[tuple[str, int, list[tuple[int, int, int, int]]]] = []
    for i in range(300):
        batches = []
        for _ in range(rng.randrange(4)):
            first = rng.randrange(200)
            batches.append(
                (first, first + rng.randrange(12), rng.choice([0, 2, 4]), rng.randrange(1, 6))
            )  # noqa: E501
        if i == 0 or rng.random() < 0.05:
            ops.append(("snapshot", rng.randrange(100), batches))
        else:
            ops.append(("update", rng.choice([-1, -1, -1, rng.randrange(150)]), batches))
    share_log(tmp_path, ops)
    g, _text, _err = share_partitions(tmp_path)
    (sp,) = g["share_partitions"]
    start, ranges = share_model(ops)
    assert sp["start_offset"] == start
    got = [
        (b["first_offset"], b["last_offset"], b["state"], b["delivery_count"])
        for b in sp["in_flight"]
    ]  # noqa: E501
    assert got == [(f, last, STATES[s], c) for f, last, s, c in ranges]


def test_a_share_partition_tombstone_deletes_its_state(tmp_path: Path) -> None:
    k, v = snapshot("sg", 0, 5, [(5, 6, 0, 1)])
    recs = [Record(0, T0, k, v), Record(1, T0 + 1, k, None)]
    write_partition(tmp_path / "__share_group_state-0", [(0, [encode_batch(recs)])])
    write_partition(tmp_path / "__consumer_offsets-0", [(0, [])])
    code, out, err = run("groups", "--format", "jsonl", str(tmp_path))
    assert code == 1 and not [o for o in jsonl(out) if o["type"] == "group"], err


# -- streams groups (17, 19, 22, 23) ------------------------------------------------------------
def streams_records() -> list[tuple[bytes, bytes]]:
    metadata = struct.pack(">hiq", 0, 7, 0) + NO_TAGS
    topic_info = (
        compact_string("app-repartition") + struct.pack(">ih", 2, 3) + compact_array([]) + NO_TAGS
    )  # noqa: E501
    subtopologies = [
        compact_string("0") + compact_array([compact_string("orders")]) + compact_array([])
        + compact_array([]) + compact_array([compact_string("app-repartition")])
        + compact_array([]) + compact_array([]) + NO_TAGS,
        compact_string("1") + compact_array([]) + compact_array([])
        + compact_array([]) + compact_array([])
        + compact_array([topic_info]) + compact_array([]) + NO_TAGS,
    ]  # fmt: skip
    topology = struct.pack(">hi", 0, 7) + compact_array(subtopologies) + NO_TAGS
    member = struct.pack(">h", 0) + compact_string(None) + compact_string(None)
    member += compact_string("streams-client") + compact_string("/10.2.2.2")
    member += struct.pack(">ii", 300_000, 7) + compact_string("process-1")
    member += b"\xff" + compact_array([]) + NO_TAGS  # no UserEndpoint, no ClientTags

    def tasks(items: list[tuple[str, list[int]]]) -> bytes:
        return compact_array(
            [compact_string(s) + compact_array([struct.pack(">i", p) for p in ps]) + NO_TAGS
             for s, ps in items]
        )  # fmt: skip

    assignment = struct.pack(">hiib", 0, 7, 6, 0) + tasks([("0", [0, 1]), ("1", [0])])
    assignment += tasks([("0", [2])]) + tasks([]) + tasks([]) + tasks([]) + tasks([]) + NO_TAGS
    return [
        (key(17, "app"), metadata),
        (key(23, "app"), topology),
        (key(19, "app", "s1"), member),
        (key(22, "app", "s1"), assignment),
    ]


def test_a_streams_group_shows_topology_members_tasks_offsets_and_lag(tmp_path: Path) -> None:
    logdir = tmp_path / "logdir"
    log = Log()
    log.add(streams_records())
    log.add([(commit_key("app", "orders", 1), commit_value(4, T0)),
             (commit_key("app", "app-repartition", 0), commit_value(2, T0))])  # fmt: skip
    write_partition(logdir / "__consumer_offsets-0", [(0, log.batches)])
    data_partition(logdir, "orders", 1, 10)
    write_checkpoints(logdir, replication_offset_checkpoint={("orders", 1): 10})
    code, out, err = run("groups", "--format", "jsonl", str(logdir))
    assert code == 0, err
    objs = jsonl(out)
    (g,) = [o for o in objs if o["type"] == "group"]
    assert (g["kind"], g["generation"]) == ("streams", 7)
    assert g["topology"] == [
        {"subtopology": "0", "source_topics": ["orders"]},
        {"subtopology": "1", "source_topics": ["app-repartition"]},
    ]
    (m,) = g["members"]
    assert (m["client_id"], m["process_id"]) == ("streams-client", "process-1")
    assert m["tasks"] == {"active": [["0", 0], ["0", 1], ["1", 0]], "standby": [["0", 2]],
                          "warmup": []}  # fmt: skip
    offsets = {(o["topic"], o["partition"]): o for o in objs if o["type"] == "offset"}
    assert offsets["orders", 1]["lag"] == 6 and offsets["orders", 1]["member_id"] == "s1"
    assert offsets["app-repartition", 0]["member_id"] == "s1"  # task 1_0 reads it
    code, text, _err = run("groups", str(logdir))
    assert "Streams group 'app' (streams" in text
    assert "subtopology 0: source topics orders" in text


def test_export_decodes_internal_topics_as_dump_segments_does(tmp_path: Path) -> None:
    """--key/--value-decoder internal: key_decoded and value_decoded beside the bytes, the
    records of __share_group_state and __consumer_offsets as kafka-dump-log's JSON."""
    pytest.importorskip("pyarrow")
    import json

    share_log(tmp_path / "logdir", [("snapshot", 10, [(10, 19, 0, 1)]), ("update", 12, [])])
    log = Log()
    log.add(streams_records())
    write_partition(tmp_path / "logdir" / "__consumer_offsets-0", [(0, log.batches)])
    for part in ("__share_group_state-0", "__consumer_offsets-0"):
        path = tmp_path / "logdir" / part
        out = tmp_path / f"out-{part}"
        args = ("--key-decoder", "internal", "--value-decoder", "internal")
        code, _out, err = run("export", "--to", "jsonl", str(out), *args, str(path))
        assert code == 0, err
        rows = [json.loads(x) for f in sorted(out.rglob("*.json*")) for x in f.open()]
        code, dumped, err = run(
            "dump-segments", "--deep-iteration", "--print-data", "--format", "jsonl", str(path)
        )
        assert code == 0, err
        records = [o for o in jsonl(dumped) if o["type"] == "record"]
        assert [(json.loads(r["key_decoded"]), json.loads(r["value_decoded"])) for r in rows] == [
            (o["key"], o["value"]) for o in records
        ]
    assert rows and json.loads(rows[0]["key_decoded"])["type"] == "17"


def test_no_record_of_these_topics_ends_groups_with_an_internal_error(tmp_path: Path) -> None:
    """Every record of __consumer_offsets and __share_group_state, however malformed: a
    finding or an answer, never exit 70."""
    rng = random.Random(3870)
    good = streams_records() + [
        (key(11, "sg"), struct.pack(">hiq", 0, 4, 0) + NO_TAGS),
        current_assignment_like(),
        (commit_key("g", "t", 0), commit_value(3, T0)),
    ]
    shares = [snapshot("sg", 0, 5, [(5, 9, 4, 5)]), update("sg", 0, 6, [(7, 8, 2, 2)])]
    for trial in range(60):
        logdir = tmp_path / f"l{trial}"

        def mutated(pairs: list[tuple[bytes, bytes]]) -> list[Record]:
            out = []
            for i, (k, v) in enumerate(pairs):
                raw = bytearray(rng.choice([k, v]))
                for _ in range(rng.randrange(1, 4)):
                    raw[rng.randrange(len(raw))] = rng.randrange(256)
                cut = raw[: rng.randrange(1, len(raw) + 1)]
                k2, v2 = (bytes(cut), v) if rng.random() < 0.5 else (k, bytes(cut))
                out.append(Record(i, T0 + i, k2, v2 if rng.random() > 0.1 else None))
            return out

        write_partition(logdir / "__consumer_offsets-0", [(0, [encode_batch(mutated(good))])])
        write_partition(logdir / "__share_group_state-0", [(0, [encode_batch(mutated(shares))])])
        code, _out, err = run("groups", "--format", "jsonl", str(logdir))
        assert code in (0, 1), err
        assert "internal error" not in err


def current_assignment_like() -> tuple[bytes, bytes]:
    assigned = TOPIC_ID + compact_array([struct.pack(">i", 0)]) + NO_TAGS
    value = struct.pack(">hiib", 0, 4, 3, 0) + compact_array([assigned]) + NO_TAGS
    return key(14, "sg", "m1"), value
