"""``klogtool groups`` (klogtool/log/read/groups.py): __consumer_offsets replayed offline.

The records are built with kafka-python's protocol types (an encoder independent of
klogtool's schema tables), and what each group should hold is worked out from the list of
operations the test wrote, by a plain model of the coordinator's rules, not by decoding.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kafka.protocol.old.types import Int16
from support.cli import jsonl, run
from support.coordinator import (
    GROUP_KEY,
    T0,
    Log,
    commit_key,
    commit_value,
    data_partition,
    group_value,
)
from support.paths import CORPUS, needs_corpus
from support.rewrite import write_checkpoints, write_partition


def scenario(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    """A log dir whose __consumer_offsets holds every case, and what the model expects."""
    logdir = tmp_path / "logdir"
    log = Log()
    # g1: a classic group, two members, offsets overwritten and one deleted
    log.add([(Int16.encode(2) + GROUP_KEY.encode(("g1",)),
              group_value(7, [("m1", [("t", [0])]), ("m2", [("t", [1])])]))], ts=1)  # fmt: skip
    log.add([(commit_key("g1", "t", 0), commit_value(10, T0)),
             (commit_key("g1", "t", 1), commit_value(4, T0)),
             (commit_key("g1", "t", 2), commit_value(3, T0))], ts=2)  # fmt: skip
    log.add([(commit_key("g1", "t", 0), commit_value(30, T0 + 5))], ts=3)
    log.add([(commit_key("g1", "t", 2), None)], ts=4)  # deleted
    # g2: a transactional commit, then COMMIT; g3: one, then ABORT; g4: one without a marker
    log.add([(commit_key("g2", "t", 0), commit_value(20, T0))], pid=500, ts=5)
    log.add([(commit_key("g3", "t", 0), commit_value(21, T0))], pid=501, ts=5)
    log.marker(500, commit=True, ts=6)
    log.marker(501, commit=False, ts=6)
    log.add([(commit_key("g4", "t", 1), commit_value(22, T0))], pid=502, ts=7)
    # g5: an offset of the v1 value whose expire timestamp has passed; g6: gone (tombstones)
    log.add([(commit_key("g5", "t", 1), commit_value(2, T0, expire=T0 + 1))], ts=8)
    log.add([(Int16.encode(2) + GROUP_KEY.encode(("g6",)), group_value(1, []))], ts=9)
    log.add([(Int16.encode(2) + GROUP_KEY.encode(("g6",)), None)], ts=10)
    write_partition(logdir / "__consumer_offsets-0", [(0, log.batches)])
    data_partition(logdir, "t", 0, 40)
    data_partition(logdir, "t", 1, 12)
    write_checkpoints(logdir, replication_offset_checkpoint={("t", 0): 35, ("t", 1): 12})
    want = {  # (group, topic, partition): (offset, high watermark, pending, expired)
        ("g1", "t", 0): (30, 35, False, False),
        ("g1", "t", 1): (4, 12, False, False),
        ("g2", "t", 0): (20, 35, False, False),
        ("g4", "t", 1): (22, None, True, False),
        ("g5", "t", 1): (2, 12, False, True),
    }
    return logdir, want


def test_the_replay_follows_the_coordinators_rules(tmp_path: Path) -> None:
    logdir, want = scenario(tmp_path)
    code, out, err = run("groups", "--format", "jsonl", str(logdir))
    assert code == 0, err
    objs = jsonl(out)
    offsets = {(o["group"], o["topic"], o["partition"]): o for o in objs if o["type"] == "offset"}
    got = {
        k: (o["offset"], o["end_offset"] if not o["pending"] else None, o["pending"], o["expired"])
        for k, o in offsets.items()
    }
    assert got == want
    for o in offsets.values():
        if o["pending"]:
            continue
        assert o["lag"] == o["end_offset"] - o["offset"]
        # the data: offset o at T0 + 1000 o; the newest below the high watermark at hw - 1
        assert o["committed_timestamp"] == T0 + 1000 * o["offset"]
        assert o["time_lag_ms"] == 1000 * (o["end_offset"] - 1 - o["offset"])
        assert o["end_source"] == "replication-offset-checkpoint"
    groups = {o["group"]: o for o in objs if o["type"] == "group"}
    assert sorted(groups) == ["g1", "g2", "g4", "g5"]  # g3 aborted, g6 deleted
    g1 = groups["g1"]
    assert (g1["generation"], g1["protocol"], g1["leader"]) == (7, "range", "m1")
    assert [(m["member_id"], m["client_host"], m["assignment"]) for m in g1["members"]] == [
        ("m1", "/10.0.0.0", [["t", 0]]),
        ("m2", "/10.0.0.1", [["t", 1]]),
    ]
    assert offsets["g1", "t", 1]["client_id"] == "client-m2"  # the member it is assigned to
    (summary,) = [o for o in objs if o["type"] == "summary"]
    assert summary["pending_offsets"] == 1 and summary["offsets"] == 4
    assert summary["total_lag"] == sum(o["lag"] for o in offsets.values() if not o["pending"])


def test_text_group_filter_and_at(tmp_path: Path) -> None:
    logdir, _ = scenario(tmp_path)
    code, out, _ = run("groups", "--group", "g1", str(logdir))
    assert code == 0
    assert "Consumer group 'g1' (classic, protocol type consumer, assignor range" in out
    assert "generation 7, 2 members" in out
    line = next(ln for ln in out.splitlines() if ln.startswith("t ") and " 30 " in ln)
    assert line.split()[:6] == ["t", "0", "30", "35", "5", "4.0s"]
    assert "g2" not in out
    # --at: only what was written up to T0 + 2 (g1's first commits), lag at that moment: the
    # data written up to then (records with timestamps <= T0 + 2: offsets 0..0)
    code, out, _ = run("groups", "--at", str(T0 + 2), "--format", "jsonl", str(logdir))
    offsets = {(o["group"], o["partition"]): o for o in jsonl(out) if o["type"] == "offset"}
    assert {k: o["offset"] for k, o in offsets.items()} == {
        ("g1", 0): 10,
        ("g1", 1): 4,
        ("g1", 2): 3,
    }
    assert offsets["g1", 0]["end_offset"] == 1 and offsets["g1", 0]["lag"] == -9
    # up to T0 + 7: g4's transactional commit is written, its marker never is: pending
    code, out, _ = run("groups", "--at", str(T0 + 7), "--format", "jsonl", str(logdir))
    pending = [(o["group"], o["offset"]) for o in jsonl(out) if o.get("pending")]
    assert pending == [("g4", 22)]
    code, _, err = run("groups", "--group", "nope", str(logdir))
    assert code == 1
    code, _, err = run("groups", "--group", "(", str(logdir))
    assert code == 2 and "not a regular expression" in err


def test_no_consumer_offsets_is_an_input_error(tmp_path: Path) -> None:
    data_partition(tmp_path / "logdir", "t", 0, 3)
    code, _, err = run("groups", str(tmp_path / "logdir"))
    assert code == 3 and "no __consumer_offsets (or __share_group_state) partition" in err


def test_a_record_that_does_not_decode_is_a_warning(tmp_path: Path) -> None:
    log = Log()
    log.add([(commit_key("g", "t", 0), commit_value(5, T0))])
    log.add([(commit_key("g", "t", 0), b"\x00\x03\x00")])  # a truncated value
    logdir = tmp_path / "logdir"
    write_partition(logdir / "__consumer_offsets-3", [(0, log.batches)])
    code, out, err = run("groups", str(logdir))
    assert code == 0
    assert "bad-coordinator-record" in err and "__consumer_offsets-3" in err
    assert " 5 " in out


@needs_corpus
@pytest.mark.parametrize(
    "logdir,group,topic,offset",
    [
        ("iechenyb__data/kafka-logs", None, "test-0921", 100),
        ("xpxwo100__bullShit/tmp/kafka-logs", "GroupA", "foo", 204),
    ],
)
def test_real_broker_groups(logdir: str, group: str | None, topic: str, offset: int) -> None:
    """Groups of real brokers' __consumer_offsets (magic 1 and 2), checked against the last
    commit dump-segments decodes for that key."""
    code, out, err = run("groups", "--format", "jsonl", str(CORPUS / logdir))
    assert code == 0, err
    offsets = [o for o in jsonl(out) if o["type"] == "offset" and o["topic"] == topic]
    assert [o["offset"] for o in offsets] == [offset]
    if group is not None:
        assert offsets[0]["group"] == group and offsets[0]["lag"] == 0
