"""retention-sweep (docs/kafka-rules.md: Retention) with a fixed --now: time, size, log start
offset, all
segments past retention, the high watermark, empty partitions, compacted topics."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from support.cli import run
from support.rewrite import (
    T0,
    assert_verifies,
    kp_records,
    tree,
    write_checkpoints,
    write_partition,
)

from klogtool.formats.batch import Record
from klogtool.formats.checkpoint import (
    EpochEntry,
    encode_leader_epoch_checkpoint,
    parse_leader_epoch_checkpoint,
    parse_offset_checkpoint,
)
from klogtool.formats.legacy import encode_message
from klogtool.formats.snapshot import encode_snapshot
from klogtool.formats.v2 import encode_batch
from klogtool.log.partition import load_partition
from klogtool.log.rewrite.retention import DELETE, KEEP, plan_retention
from klogtool.log.topicconfig import TopicConfig

pytestmark = pytest.mark.usefixtures("no_fsync")

HOUR = 3_600_000
BASES = (0, 10, 20, 30)  # four segments of ten records; the last is the active one


def build(tmp: Path, *, hw: int | None = 40, name: str = "r-0") -> Path:
    """Segment i holds offsets 10i..10i+9 with timestamps T0 + i hours (+ offset ms)."""
    logdir = tmp / "logdir"
    part = logdir / name
    segs = []
    for i, base in enumerate(BASES):
        recs = [Record(o, T0 + i * HOUR + o, b"k%d" % o, b"v" * 50) for o in range(base, base + 10)]
        segs.append(
            (
                base,
                [
                    encode_batch(recs[:5], partition_leader_epoch=i),
                    encode_batch(recs[5:], partition_leader_epoch=i),
                ],
            )
        )
    write_partition(part, segs)
    for base in (10, 20, 40):
        (part / f"{base:020d}.snapshot").write_bytes(encode_snapshot([]))
    (part / "leader-epoch-checkpoint").write_bytes(
        encode_leader_epoch_checkpoint([EpochEntry(i, b) for i, b in enumerate(BASES)])
    )
    topic = name.rsplit("-", 1)[0]
    if hw is not None:
        write_checkpoints(logdir, replication_offset_checkpoint={(topic, 0): hw})
    (logdir / "meta.properties").write_text("version=0\nbroker.id=0\n")
    return part


def sweep(part: Path, *args: str) -> tuple[int, list[dict], str]:
    code, out, err = run(
        "retention-sweep",
        "--assume-defaults",
        str(part),
        "--format",
        "jsonl",
        *args,
        cwd=part.parent,
    )
    return code, [json.loads(line) for line in out.splitlines()], err


def bases(part: Path) -> list[int]:
    return sorted(int(p.name.split(".")[0]) for p in part.glob("*.log"))


def decisions(objs: list[dict]) -> list[tuple[int, str, str]]:
    return [(o["base_offset"], o["action"], o["rule"]) for o in objs if o["type"] == "segment"]


def log_start_checkpoint(part: Path) -> dict:
    path = part.parent / "log-start-offset-checkpoint"
    return dict(parse_offset_checkpoint(path.read_bytes()).entries) if path.exists() else {}


def test_time_retention(tmp_path: Path) -> None:
    part = build(tmp_path)
    size0 = (part / "00000000000000000000.log").stat().st_size
    # segment 0's largest timestamp is T0 + 9, segment 1's T0 + 1 h + 19: with retention 2 h
    # at T0 + 3 h + 10 s both are past retention, segment 2 (T0 + 2 h + 29) is not
    now = T0 + 3 * HOUR + 10_000
    code, objs, err = sweep(part, "--now", str(now), "--retention-ms", str(2 * HOUR))
    assert code == 0, err
    assert decisions(objs) == [
        (0, DELETE, "retention.ms"),
        (10, DELETE, "retention.ms"),
        (20, KEEP, "not-breached"),
        (30, KEEP, "after-kept-segment"),
    ]
    seg = [o for o in objs if o["type"] == "segment"]
    assert seg[0]["largest_timestamp"] == T0 + 9 and seg[0]["timestamp_source"] == "timeindex"
    assert seg[0]["size"] == size0
    assert bases(part) == [20, 30]
    assert not list(part.glob("*.deleted"))
    # the snapshot at a deleted base offset (10) went with its segment; the others stay
    assert sorted(p.name for p in part.glob("*.snapshot")) == [
        "00000000000000000020.snapshot",
        "00000000000000000040.snapshot",
    ]
    # the log start offset is the first base offset: no checkpoint entry needed
    assert log_start_checkpoint(part) == {}
    epochs = parse_leader_epoch_checkpoint((part / "leader-epoch-checkpoint").read_bytes())
    assert epochs == [EpochEntry(2, 20), EpochEntry(3, 30)]
    assert_verifies(part.parent)
    assert [r[0] for r in kp_records(part)] == list(range(20, 40))


def test_size_retention(tmp_path: Path) -> None:
    part = build(tmp_path)
    size = (part / "00000000000000000000.log").stat().st_size
    # 4 equal segments; retention.bytes of 2.5 segments: delete while the rest stays >= it
    code, objs, err = sweep(part, "--now", str(T0), "--retention-bytes", str(int(size * 2.5)))
    assert code == 0, err
    assert decisions(objs)[:2] == [(0, DELETE, "retention.bytes"), (10, KEEP, "not-breached")]
    assert bases(part) == [10, 20, 30]
    # the topic's own config beats the option
    part2 = build(tmp_path / "b")
    code, objs, err = sweep(
        part2,
        "--now",
        str(T0),
        "--retention-bytes",
        str(int(size * 2.5)),
        "--config",
        f"r=retention.bytes={size}",
    )
    assert code == 0, err
    assert bases(part2) == [30]


def test_log_start_offset(tmp_path: Path) -> None:
    part = build(tmp_path)
    code, objs, err = sweep(part, "--now", str(T0), "--log-start-offset", "25")
    assert code == 0, err
    assert decisions(objs)[:3] == [
        (0, DELETE, "log-start-offset"),
        (10, DELETE, "log-start-offset"),
        (20, KEEP, "not-breached"),
    ]
    assert bases(part) == [20, 30]
    # 25 is above the first base offset: the broker checkpoints it
    assert log_start_checkpoint(part) == {("r", 0): 25}
    epochs = parse_leader_epoch_checkpoint((part / "leader-epoch-checkpoint").read_bytes())
    assert epochs == [EpochEntry(2, 25), EpochEntry(3, 30)]
    assert_verifies(part.parent)
    # from the checkpoint on the next run: nothing more to delete
    code, objs, _ = sweep(part, "--now", str(T0))
    assert [o for o in objs if o["type"] == "partition"][0]["log_start_offset"] == 25
    assert bases(part) == [20, 30]
    # beyond the high watermark: refused
    code, _objs, err = sweep(part, "--now", str(T0), "--log-start-offset", "41")
    assert code == 3 and "beyond the high watermark" in err


def test_everything_past_retention_rolls_a_new_active_segment(tmp_path: Path) -> None:
    part = build(tmp_path)
    code, objs, err = sweep(part, "--now", str(T0 + 30 * 24 * HOUR))  # default 7 days
    assert code == 0, err
    assert [d[1] for d in decisions(objs)] == [DELETE] * 4  # the active segment too
    (p,) = [o for o in objs if o["type"] == "partition"]
    assert p["roll"] and p["new_log_start_offset"] == 40
    assert bases(part) == [40]
    assert (part / "00000000000000000040.log").stat().st_size == 0
    assert (part / "00000000000000000040.index").exists()
    assert (part / "00000000000000000040.timeindex").exists()
    assert sorted(p.name for p in part.glob("*.snapshot")) == ["00000000000000000040.snapshot"]
    epochs = parse_leader_epoch_checkpoint((part / "leader-epoch-checkpoint").read_bytes())
    assert epochs == [EpochEntry(3, 40)]
    assert_verifies(part.parent)
    # again: the empty active segment is never deleted
    code, objs, err = sweep(part, "--now", str(T0 + 60 * 24 * HOUR))
    assert code == 0, err
    assert decisions(objs) == [(40, KEEP, "active-empty")]
    assert bases(part) == [40]


def test_high_watermark_bounds_deletion(tmp_path: Path) -> None:
    part = build(tmp_path, hw=25)
    code, objs, err = sweep(part, "--now", str(T0 + 30 * 24 * HOUR))
    assert code == 0, err
    assert decisions(objs) == [
        (0, DELETE, "retention.ms"),
        (10, DELETE, "retention.ms"),  # its upper bound 20 is below the high watermark
        (20, KEEP, "high-watermark"),
        (30, KEEP, "after-kept-segment"),
    ]
    assert bases(part) == [20, 30]
    # no checkpointed high watermark: the broker starts from the log start: deletes nothing
    part2 = build(tmp_path / "b", hw=None)
    code, objs, err = sweep(part2, "--now", str(T0 + 30 * 24 * HOUR))
    assert code == 0, err
    assert {d[2] for d in decisions(objs)} == {"high-watermark", "after-kept-segment"}
    assert bases(part2) == list(BASES)
    code, objs, err = sweep(part2, "--now", str(T0 + 30 * 24 * HOUR), "--high-watermark", "log-end")
    assert code == 0, err
    assert bases(part2) == [40]


def test_empty_partitions(tmp_path: Path) -> None:
    logdir = tmp_path / "logdir"
    (logdir / "nothing-0").mkdir(parents=True)
    write_partition(logdir / "empty-0", [(7, [])])
    write_checkpoints(logdir, replication_offset_checkpoint={("empty", 0): 7})
    (logdir / "meta.properties").write_text("version=0\nbroker.id=0\n")
    before = tree(logdir)
    code, out, err = run(
        "retention-sweep",
        "--assume-defaults",
        str(logdir),
        "--now",
        str(T0 + 365 * 24 * HOUR),
        "--format",
        "jsonl",
    )
    assert code == 0, err
    objs = [json.loads(line) for line in out.splitlines()]
    assert decisions(objs) == [(7, KEEP, "active-empty")]
    assert tree(logdir) == before


def test_compacted_topic_only_follows_the_log_start_offset(tmp_path: Path) -> None:
    part = build(tmp_path, name="__consumer_offsets-0")
    code, objs, err = sweep(part, "--now", str(T0 + 30 * 24 * HOUR))
    assert code == 0, err
    assert [d[1] for d in decisions(objs)] == [KEEP] * 4
    assert any("only the log start offset rule" in n for o in objs for n in o.get("notes", []))
    code, objs, err = sweep(part, "--now", str(T0), "--log-start-offset", "10")
    assert code == 0, err
    assert bases(part) == [10, 20, 30]


def test_keep_deleted_and_dry_run(tmp_path: Path) -> None:
    part = build(tmp_path)
    before = tree(part.parent)
    now = T0 + 3 * HOUR + 10_000
    code, _objs, err = sweep(part, "--now", str(now), "--retention-ms", str(2 * HOUR), "--dry-run")
    assert code == 0, err
    assert tree(part.parent) == before
    code, _objs, err = sweep(
        part, "--now", str(now), "--retention-ms", str(2 * HOUR), "--keep-deleted"
    )
    assert code == 0, err
    assert sorted(p.name for p in part.glob("*.deleted")) == [
        "00000000000000000000.index.deleted",
        "00000000000000000000.log.deleted",
        "00000000000000000000.timeindex.deleted",
        "00000000000000000010.index.deleted",
        "00000000000000000010.log.deleted",
        "00000000000000000010.snapshot.deleted",
        "00000000000000000010.timeindex.deleted",
    ]
    # the next writing run completes the deletion first, as the broker's loader does
    code, _objs, err = sweep(part, "--now", str(now), "--retention-ms", str(2 * HOUR))
    # the warning is wrapped at the console width: where depends on the tmp_path length
    assert code == 0 and "deleted leftover" in " ".join(err.split())
    assert not list(part.glob("*.deleted"))


def test_text_table_lists_every_segment(tmp_path: Path) -> None:
    part = build(tmp_path)
    code, out, err = run(
        "retention-sweep",
        "--assume-defaults",
        str(part),
        "--now",
        "2023-11-15T01:13:30Z",
        "--retention-ms",
        str(2 * HOUR),
        "--dry-run",
        cwd=tmp_path,
    )
    assert code == 0, err
    assert "1700000000009" in out and "(2023-11-14T22:13:20Z)" in out  # segment 0's
    assert "retention.ms" in out and "would delete 2 segments" in out


def test_mtime_is_the_fallback_for_v0_segments(tmp_path: Path) -> None:
    logdir = tmp_path / "logdir"
    part = logdir / "old-0"
    write_partition(
        part,
        [
            (0, [encode_message(o, b"k", b"v", magic=0) for o in range(3)]),
            (3, [encode_message(o, b"k", b"v", magic=0) for o in range(3, 6)]),
        ],
    )
    write_checkpoints(logdir, replication_offset_checkpoint={("old", 0): 6})
    os.utime(part / "00000000000000000000.log", (T0 / 1000, T0 / 1000))
    os.utime(part / "00000000000000000003.log", ((T0 + 5 * HOUR) / 1000,) * 2)
    plan = plan_retention(load_partition(part), TopicConfig(retention_ms=HOUR), now=T0 + 2 * HOUR)
    assert [(d.action, d.timestamp_source, d.largest_timestamp) for d in plan.decisions] == [
        (DELETE, "mtime", T0),
        (KEEP, "mtime", T0 + 5 * HOUR),
    ]


def test_symlinked_partition_out_of_the_log_dir_is_skipped(tmp_path: Path) -> None:
    outside = build(tmp_path / "outside")
    logdir = tmp_path / "logdir"
    logdir.mkdir()
    (logdir / "meta.properties").write_text("version=0\nbroker.id=0\n")
    os.symlink(outside, logdir / "r-0")
    before = tree(outside)
    code, _out, err = run(
        "retention-sweep",
        "--assume-defaults",
        str(logdir),
        "--now",
        str(T0 + 30 * 24 * HOUR),
        cwd=tmp_path,
    )
    assert code == 1
    assert "symlink" in err
    assert tree(outside) == before


@pytest.mark.parametrize("missing", [".timeindex", ".index"])
def test_a_missing_index_is_judged_by_the_batches_like_the_broker(
    tmp_path: Path, missing: str
) -> None:
    # issue 10: with its .timeindex (or .index) missing the broker recovers the segment and
    # rebuilds the time index from the batches, so retention sees the records' largest
    # timestamp; the .log's mtime (a fresh copy: now) kept 2023 data as minutes old
    import shutil

    from support.paths import LOGS

    part = tmp_path / "data" / "v2-none-0"
    shutil.copytree(LOGS / "logdir" / "v2-none-0", part)
    for f in part.glob("*" + missing):
        f.unlink()
    view = load_partition(part)
    first = view.segments[0]
    assert first.timestamp_source == "records"
    assert 1_699_000_000_000 < first.largest_timestamp < 1_800_000_000_000
    code, out, err = run(
        "retention-sweep",
        "--assume-defaults",
        str(part),
        "--retention-ms",
        "86400000",
        "--high-watermark",
        "log-end",
        "--dry-run",
        "--format",
        "jsonl",
        cwd=tmp_path,
    )
    assert code == 0, err
    segs = [o for o in map(json.loads, out.splitlines()) if o.get("base_offset") == 0]
    assert segs and segs[0]["action"] == DELETE and segs[0]["timestamp_source"] == "records"


def test_one_segment_to_delete_is_singular(tmp_path: Path) -> None:
    part = build(tmp_path)
    code, out, err = run(
        "retention-sweep", "--assume-defaults", str(part), "--now", "2023-11-15T01:13:30Z",
        "--retention-ms", str(5 * HOUR // 2), "--dry-run", cwd=tmp_path,
    )  # fmt: skip
    assert code == 0, err
    assert "would delete 1 segment, " in out and "1 segments" not in out
