"""compact (docs/kafka-rules.md: Compaction) against a reference model written here: the last value
per key
over the dirty range, tombstones kept until their delete horizon, aborted transactional data
dropped, on generated partitions with many keys, tombstones, committed and aborted
transactions (some across segments), several segments and an active segment."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from support.cli import run
from support.paths import LOGDIR
from support.rewrite import (
    T0,
    Generated,
    assert_verifies,
    copy_logdir,
    generate,
    kl_batches,
    kl_records,
    kp_records,
    materialise,
    records,
    tree,
    write_checkpoints,
    write_partition,
)

from klogtool.formats import codecs, engine
from klogtool.formats.batch import Record
from klogtool.formats.legacy import encode_message, encode_wrapper
from klogtool.formats.v2 import encode_batch
from klogtool.log.context import ReadContext
from klogtool.log.partition import load_partition
from klogtool.log.rewrite import native_clean
from klogtool.log.rewrite.cleaner import plan_compaction
from klogtool.log.topicconfig import TopicConfig

pytestmark = pytest.mark.usefixtures("no_fsync")

DAY = 86_400_000
RETENTION = DAY  # delete.retention.ms default


def data(part: Path) -> list[tuple]:
    """(offset, key, value) of every data record, read by kafka-python."""
    return [(o, k, v) for o, _ts, k, v, _h in kp_records(part)]


def model_first_pass(g: Generated) -> list[tuple]:
    """One cleaning round over everything below the active segment."""
    active = g.active_base
    last: dict[bytes, int] = {}
    for r in g.records:
        if r.offset < active and r.kind != "aborted" and r.key is not None:
            last[r.key] = r.offset
    out = []
    for r in g.records:
        if r.offset >= active:
            out.append((r.offset, r.key, r.value))  # the active segment is never cleaned
        elif r.kind != "aborted" and r.key is not None and last[r.key] == r.offset:
            out.append((r.offset, r.key, r.value))  # tombstones too: no delete horizon yet
    return out


CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


@pytest.mark.parametrize("codec", CODECS)
def test_compaction_matches_the_reference_model(tmp_path: Path, codec: str) -> None:
    g = generate(seed=CODECS.index(codec) + 7, codec=codecs.CODEC_IDS[codec])
    assert sum(1 for r in g.records if r.kind == "aborted") > 5
    assert any(first < base for base, txns in g.txn_index.items() for _, _, first, _, _ in txns)
    logdir = tmp_path / "logdir"
    part = materialise(g, logdir)
    before = data(part)
    now1 = T0 + 3_600_000  # producers are still active (producer.id.expiration.ms 1 day)
    code, out, err = run(
        "compact", "--assume-defaults", str(part), "--now", str(now1), "--format", "jsonl"
    )
    assert code == 0, err
    after = data(part)
    assert after == model_first_pass(g)
    assert len(after) < len(before)
    assert kl_records(part) == kp_records(part)
    assert_verifies(logdir)
    objs = [json.loads(line) for line in out.splitlines()]
    summary = objs[-1]
    assert summary["type"] == "summary" and summary["partitions_compacted"] == 1
    # the cleaner checkpoint is the active segment's base offset
    assert (logdir / "cleaner-offset-checkpoint").read_text().splitlines()[2:] == [
        f"gen 0 {g.active_base}"
    ]
    # compression, producer ids and base sequences kept; tombstones got a delete horizon
    for b in kl_batches(part):
        if b.is_control or b.count == 0:
            assert b.compression == 0
            continue
        assert b.compression == codecs.CODEC_IDS[codec]
        has_tombstone = any(r.value is None for r in b.records())
        if b.base_offset < g.active_base and has_tombstone:
            assert b.delete_horizon_ms == now1 + RETENTION
            assert b.attributes & 0x40
    # the last batch of each active producer survives, even emptied
    last_of = {}
    for _base, batches in g.segments:
        for raw in batches:
            (src,) = kl_batches_from(raw)
            if src.producer_id >= 0 and not src.is_control:
                last_of[src.producer_id] = (src.base_offset, src.last_offset, src.base_sequence)
    present = {
        (b.base_offset, b.last_offset, b.base_sequence)
        for b in kl_batches(part)
        if b.producer_id >= 0 and not b.is_control
    }
    assert set(last_of.values()) <= present

    # -- a second round, past the delete horizon, after the active segment rolled -------------
    new_base = g.offset
    more = [
        Record(o, T0 + 10 * o, b"key-%d" % (o % 40), b"late-%d" % o)
        for o in range(g.offset, g.offset + 5)
    ]
    write_partition(part, [(new_base, [encode_batch(more, compression=codecs.CODEC_IDS[codec])])])
    write_checkpoints(logdir, replication_offset_checkpoint={("gen", 0): new_base + 5})
    now2 = now1 + RETENTION + 1
    code, _out, err = run("compact", "--assume-defaults", str(part), "--now", str(now2))
    assert code == 0, err
    dirty_last: dict[bytes, int] = {}
    for r in g.records:
        if r.offset >= g.active_base and r.kind != "aborted" and r.key is not None:
            dirty_last[r.key] = r.offset
    want = []
    for o, k, v in after:
        rec = next(r for r in g.records if r.offset == o)
        if rec.kind == "aborted" or k is None:
            continue
        if o < dirty_last.get(k, -1):
            continue
        if v is None and o < g.active_base:
            continue  # its horizon (now1 + delete.retention.ms) has passed
        want.append((o, k, v))
    want += [(r.offset, r.key, r.value) for r in more]
    assert data(part) == want
    assert_verifies(logdir)


def kl_batches_from(raw: bytes) -> list:
    from klogtool.formats.records import SegmentScanner

    return list(SegmentScanner(raw))


def test_dry_run_reports_why_and_changes_nothing(tmp_path: Path) -> None:
    g = generate(seed=3, codec=codecs.GZIP)
    logdir = tmp_path / "logdir"
    part = materialise(g, logdir)
    before = tree(logdir)
    now = T0 + 3_600_000
    code, out, err = run(
        "compact",
        "--assume-defaults",
        str(part),
        "--now",
        str(now),
        "--dry-run",
        "--format",
        "jsonl",
    )
    assert code == 0, err
    assert tree(logdir) == before
    objs = [json.loads(line) for line in out.splitlines()]
    segs = [o for o in objs if o["type"] == "segment"]
    (partition,) = [o for o in objs if o["type"] == "partition"]
    assert [s["status"] for s in segs] == ["dirty"] * 4 + ["active"]
    assert partition["first_dirty_offset"] == 0
    assert partition["first_uncleanable_offset"] == g.active_base
    assert partition["uncleanable_reason"].startswith("active segment")
    assert partition["dirty_ratio"] > 0.5 and partition["eligible"]
    # the dry run's counts are what a real run does
    code, out2, err = run(
        "compact", "--assume-defaults", str(part), "--now", str(now), "--format", "jsonl"
    )
    assert code == 0, err
    real = [json.loads(line) for line in out2.splitlines() if '"segment"' in line]
    assert real == segs
    for s in segs[:4]:
        assert (
            s["kept"] + s["superseded"] + s["tombstones_expired"] + s["aborted"] + s["keyless"]
            == s["records_in"]
        )
        assert s["bytes_after"] <= s["bytes_before"]
    assert sum(s["aborted"] for s in segs[:4]) == sum(
        1 for r in g.records if r.kind == "aborted" and r.offset < g.active_base
    )
    # nothing left to clean: the dry run says why
    code, out3, _ = run("compact", "--assume-defaults", str(part), "--now", str(now), "--dry-run")
    assert code == 0
    assert "nothing to clean" in out3 and f"active segment at {g.active_base}" in out3


def test_why_not_compacting_high_watermark_open_transaction_and_lag(tmp_path: Path) -> None:
    g = generate(seed=5, codec=codecs.NONE)
    logdir = tmp_path / "logdir"
    part = materialise(g, logdir)
    view = load_partition(part)
    now = T0 + 3_600_000
    cfg = TopicConfig(cleanup_policy=("compact",))
    # no high watermark checkpointed: the broker starts from the log start offset and cleans nothing
    (logdir / "replication-offset-checkpoint").unlink()
    plan = plan_compaction(load_partition(part), cfg, now=now, ctx=ReadContext.of())
    assert plan.nothing_to_clean and "high watermark 0" in (plan.why_not or "")
    assert any("--high-watermark log-end" in n for n in plan.notes)
    plan = plan_compaction(
        load_partition(part), cfg, now=now, high_watermark="log-end", ctx=ReadContext.of()
    )
    assert not plan.nothing_to_clean
    # min.compaction.lag.ms: segments younger than the lag are not cleaned
    second = g.segments[2][0]
    seg_ts = T0 + 10 * (second - 1)  # the largest timestamp of segment 1
    lag_cfg = TopicConfig(cleanup_policy=("compact",), min_compaction_lag_ms=now - seg_ts + 1)
    plan = plan_compaction(view, lag_cfg, now=now, high_watermark="log-end", ctx=ReadContext.of())
    assert plan.first_uncleanable_offset == g.segments[1][0]
    assert plan.uncleanable_reason.startswith("min.compaction.lag.ms")
    assert [s.status for s in plan.segments][:2] == ["dirty", "uncleanable"]
    # the high watermark inside a segment rounds the bound down to that segment's base
    plan = plan_compaction(
        view, cfg, now=now, high_watermark=g.segments[2][0] + 1, ctx=ReadContext.of()
    )
    assert plan.first_uncleanable_offset == g.segments[2][0]
    assert plan.groups and plan.groups[-1][-1] == g.segments[1][0]


def test_open_transaction_bounds_the_dirty_range(tmp_path: Path) -> None:
    recs = [Record(o, T0 + o, b"k%d" % (o % 3), b"v%d" % o) for o in range(12)]
    segs = [
        (0, [encode_batch(recs[0:4])]),
        (
            4,
            [
                encode_batch(
                    recs[4:6],
                    producer_id=9,
                    producer_epoch=0,
                    base_sequence=0,
                    is_transactional=True,
                ),
                encode_batch(recs[6:8]),
            ],
        ),
        (8, [encode_batch(recs[8:10])]),
        (10, [encode_batch(recs[10:12])]),
    ]
    logdir = tmp_path / "logdir"
    part = logdir / "t-0"
    write_partition(part, segs)
    write_checkpoints(logdir, replication_offset_checkpoint={("t", 0): 12})
    plan = plan_compaction(
        load_partition(part),
        TopicConfig(cleanup_policy=("compact",)),
        now=T0 + 1000,
        ctx=ReadContext.of(),
    )
    assert plan.last_stable_offset == 4
    assert "open transaction of producer 9" in plan.uncleanable_reason
    assert plan.first_uncleanable_offset == 4
    assert plan.groups == [[0]]


def test_empty_batch_of_active_producer_and_last_batch_of_round_are_kept(tmp_path: Path) -> None:
    k = b"same"
    segs = [
        (
            0,
            [
                encode_batch(
                    [Record(0, T0, k, b"a"), Record(1, T0 + 1, k, b"b")],
                    producer_id=7,
                    producer_epoch=2,
                    base_sequence=0,
                ),
                encode_batch([Record(2, T0 + 2, k, b"c")]),
            ],
        ),
        (
            3,
            [
                encode_batch([Record(3, T0 + 3, k, b"d")]),
                encode_batch([Record(4, T0 + 4, None, b"x")]),
            ],
        ),
        (5, [encode_batch([Record(5, T0 + 5, b"other", b"e")])]),
    ]
    logdir = tmp_path / "logdir"
    part = logdir / "e-0"
    write_partition(part, segs)
    write_checkpoints(logdir, replication_offset_checkpoint={("e", 0): 6})
    code, _o, err = run("compact", "--assume-defaults", str(part), "--now", str(T0 + 1000))
    assert code == 0, err
    got = [
        (
            b.base_offset,
            b.last_offset,
            b.count,
            b.producer_id,
            b.base_sequence,
            b.producer_epoch,
            b.max_timestamp,
        )
        for b in kl_batches(part)
    ]
    assert got == [
        (0, 1, 0, 7, 0, 2, T0 + 1),  # the producer's last batch: an empty 61-byte header
        (3, 3, 1, -1, -1, -1, T0 + 3),  # the latest value of the key
        (4, 4, 0, -1, -1, -1, T0 + 4),  # keyless record gone, batch kept: last of the round
        (5, 5, 1, -1, -1, -1, T0 + 5),  # the active segment
    ]
    empty = next(kl_batches(part))
    assert empty.size == 61 and empty.base_timestamp == -1
    assert_verifies(logdir)
    # an expired producer's batch is not kept
    part2 = tmp_path / "logdir2" / "e-0"
    write_partition(part2, segs)
    write_checkpoints(tmp_path / "logdir2", replication_offset_checkpoint={("e", 0): 6})
    code, _o, err = run("compact", "--assume-defaults", str(part2), "--now", str(T0 + 2 * DAY))
    assert code == 0, err
    assert [b.base_offset for b in kl_batches(part2)] == [3, 4, 5]


def test_grouping_follows_segment_bytes(tmp_path: Path) -> None:
    g = generate(seed=11, codec=codecs.NONE)
    logdir = tmp_path / "logdir"
    part = materialise(g, logdir)
    view = load_partition(part)
    sizes = [s.size for s in view.segments]
    one = plan_compaction(view, TopicConfig(), now=T0, ctx=ReadContext.of())
    assert one.groups == [[b for b, _ in g.segments[:-1]]]
    cfg = TopicConfig(segment_bytes=sizes[0] + sizes[1])
    split = plan_compaction(view, cfg, now=T0, ctx=ReadContext.of())
    assert split.groups[0] == [g.segments[0][0], g.segments[1][0]]
    assert all(len(grp) >= 1 for grp in split.groups) and len(split.groups) >= 2
    code, _o, err = run(
        "compact",
        "--assume-defaults",
        str(part),
        "--now",
        str(T0 + 3_600_000),
        "--segment-bytes",
        str(sizes[0] + sizes[1]),
    )
    assert code == 0, err
    assert sorted(int(p.stem) for p in part.glob("*.log")) == [grp[0] for grp in split.groups] + [
        g.active_base
    ]
    assert data(part) == model_first_pass(g)
    assert_verifies(logdir)


def test_legacy_formats_and_the_legacy_delete_horizon(tmp_path: Path) -> None:
    """v0/v1 have no delete horizon: a tombstone is kept while its segment's mtime is newer
    than the last clean segment's mtime - delete.retention.ms."""
    tombstones = (2, 11, 12)
    recs = [
        Record(
            o,
            T0 + o,
            b"k%d" % (o % 4) if o < 12 else b"n%d" % o,
            None if o in tombstones else b"v%d" % o,
        )
        for o in range(16)
    ]
    segs = [
        (
            0,
            [
                encode_wrapper(recs[0:4], magic=1, compression=codecs.GZIP),
                encode_message(4, recs[4].key, recs[4].value, magic=1, timestamp=T0 + 4),
            ],
        ),
        (5, [encode_wrapper(recs[5:9], magic=1, compression=codecs.LZ4)]),
        (9, [encode_message(o, recs[o].key, recs[o].value, magic=0) for o in range(9, 12)]),
        (12, [encode_wrapper(recs[12:16], magic=1, compression=codecs.SNAPPY)]),
    ]
    logdir = tmp_path / "logdir"
    part = logdir / "legacy-0"
    write_partition(part, segs)
    write_checkpoints(logdir, replication_offset_checkpoint={("legacy", 0): 16})
    for i, (base, _) in enumerate(segs):
        t = (T0 + 1000 * i) / 1000
        os.utime(part / f"{base:020d}.log", (t, t))
    code, _o, err = run(
        "compact", "--assume-defaults", str(part), "--now", str(T0), "--delete-retention-ms", "0"
    )
    assert code == 0, err
    last = {r.key: r.offset for r in recs[:12]}
    want = [(r.offset, r.key, r.value) for r in recs[:12] if last[r.key] == r.offset]
    want += [(r.offset, r.key, r.value) for r in recs[12:]]
    assert (11, b"k3", None) in want
    assert data(part) == want  # first round: no clean section, so tombstones are kept
    assert kl_records(part) == kp_records(part)
    # the LZ4 wrapper 5..8 keeps only offset 8: rebuilt as an LZ4 wrapper at offset 8
    rebuilt = [b for b in kl_batches(part) if b.compression == codecs.LZ4]
    assert [(b.magic, b.last_offset, b.count) for b in rebuilt] == [(1, 8, 1)]
    assert_verifies(logdir)
    # the cleaned segment kept the last source segment's mtime
    assert (part / "00000000000000000000.log").stat().st_mtime_ns // 10**6 == T0 + 2000
    # roll (a new empty active segment) and clean again: the clean section's tombstone is past
    # the legacy horizon, the old active segment's (newer mtime) is not
    write_partition(part, [(16, [])])
    code, _o, err = run(
        "compact",
        "--assume-defaults",
        str(part),
        "--now",
        str(T0),
        "--delete-retention-ms",
        "0",
        "--high-watermark",
        "log-end",
    )
    assert code == 0, err
    assert [o for o, _k, v in data(part) if v is None] == [12]
    assert_verifies(logdir)


@pytest.mark.parametrize("name", ["v2-gzip-0", "v2-zstd-0", "__consumer_offsets-0", "txn-0"])
def test_fixture_partitions_compact_and_verify(tmp_path: Path, name: str) -> None:
    logdir = copy_logdir(tmp_path, name)
    part = logdir / name
    # force everything but the active segment to be cleanable
    code, _o, err = run("compact", "--assume-defaults", str(part), "--now", str(T0 + 100_000))
    assert code == 0, err
    assert_verifies(logdir)
    assert kl_records(part) == kp_records(part)
    # records of the active segment are untouched
    active = sorted(part.glob("*.log"))[-1]
    assert active.read_bytes() == (LOGDIR / name / active.name).read_bytes()


def test_log_dir_compacts_only_compacted_topics(tmp_path: Path) -> None:
    logdir = copy_logdir(tmp_path, "v2-none-0", "__consumer_offsets-0")
    code, out, err = run(
        "compact", "--assume-defaults", str(logdir), "--now", str(T0 + 100_000), "--format", "jsonl"
    )
    assert code == 0, err
    parts = [
        json.loads(line)["partition"]
        for line in out.splitlines()
        if '"partition"' in line and '"type":"partition"' in line
    ]
    assert [Path(p).name for p in parts] == ["__consumer_offsets-0"]
    code, out, err = run(
        "compact",
        "--assume-defaults",
        str(logdir),
        "--now",
        str(T0 + 100_000),
        "--format",
        "jsonl",
        "--config",
        "v2-none=cleanup.policy=compact,delete",
    )
    parts = [
        json.loads(line)["partition"] for line in out.splitlines() if '"type":"partition"' in line
    ]
    assert sorted(Path(p).name for p in parts) == ["__consumer_offsets-0", "v2-none-0"]


def test_undecodable_records_are_one_line_and_nothing_is_swapped(tmp_path: Path) -> None:
    import struct

    from klogtool.formats.crc import crc32c

    bad = bytearray(encode_batch([Record(o, T0 + o, b"k", b"v") for o in range(3)]))
    struct.pack_into(">i", bad, 57, 4)  # one record too many, CRC recomputed: only decoding
    struct.pack_into(">I", bad, 17, crc32c(bytes(bad[21:])))  # the records finds it
    logdir = tmp_path / "logdir"
    part = logdir / "b-0"
    recs = [Record(o, T0 + o, b"k", b"v%d" % o) for o in range(3, 8)]
    write_partition(
        part, [(0, [bytes(bad)]), (3, [encode_batch(recs[:2])]), (5, [encode_batch(recs[2:])])]
    )
    write_checkpoints(
        logdir,
        replication_offset_checkpoint={("b", 0): 8},
        cleaner_offset_checkpoint={("b", 0): 3},  # segment 0 is the clean section
    )
    before = tree(logdir)
    code, _out, err = run("compact", "--assume-defaults", str(part), "--now", str(T0))
    assert code == 3, err
    assert err.startswith("klogtool: error: ") and "00000000000000000000.log" in err
    assert "Traceback" not in err
    assert tree(logdir) == before


# -- a full offset map: the broker stops there, and compact cleans on in further passes ---------
def _eight_keys(tmp_path: Path) -> Path:
    """Offsets 0-27 in batches of 4 (segments 0, 12 and the active 24), keys k0..k7 in turn."""
    part = tmp_path / "logdir" / "m-0"
    key = lambda o: b"k%d" % (o % 8)  # noqa: E731
    segs = [
        (base, [encode_batch(records(range(b, b + 4), key=key)) for b in range(base, base + 12, 4)])
        for base in (0, 12)
    ]
    segs.append((24, [encode_batch(records(range(24, 28), key=key))]))
    write_partition(part, segs)
    write_checkpoints(tmp_path / "logdir", replication_offset_checkpoint={("m", 0): 28})
    return part


def test_offset_map_capacity_is_the_brokers() -> None:
    from klogtool.log.rewrite.cleaner import _Cleaner

    def capacity(size: int) -> int:
        return _Cleaner(
            [], TopicConfig(dedupe_buffer_size=size), 0, {}, ReadContext.of()
        ).map_capacity

    # "offset map can fit only 5033164" is what a broker with the default buffer logs
    assert capacity(128 << 20) == 5_033_164
    assert capacity(144) == 5  # 6 slots of 24 bytes, 90% of them
    assert capacity(4 << 30) == capacity((1 << 31) - 1)  # the buffer is an int in the broker


def test_full_offset_map_stops_where_the_broker_stops(tmp_path: Path) -> None:
    part = _eight_keys(tmp_path)
    plan = plan_compaction(
        load_partition(part), TopicConfig(dedupe_buffer_size=144), now=T0, ctx=ReadContext.of()
    )
    # k0..k4 (offsets 0-4) fill the map; the keyed record at 5 finds it full: the pass cleans
    # up to offset 4 and checkpoints 5, the broker's SkimpyOffsetMap.latestOffset + 1
    assert (plan.map_size, plan.map_full, plan.end_offset, plan.groups) == (5, True, 5, [[0]])
    assert any("offset map is full" in n for n in plan.notes)
    assert plan.segments[1].why.startswith("in the dirty range, left to the next pass")
    whole = plan_compaction(load_partition(part), TopicConfig(), now=T0, ctx=ReadContext.of())
    assert (whole.map_size, whole.map_full, whole.end_offset) == (8, False, 24)


def test_compact_runs_passes_until_the_dirty_range_is_clean(tmp_path: Path) -> None:
    part = _eight_keys(tmp_path)
    args = ("compact", "--assume-defaults", str(part), "--now", str(T0), "--format", "jsonl")
    code, out, err = run(*args, "--dedupe-buffer-size", "144")
    assert code == 0, err
    passes = [o for o in map(json.loads, out.splitlines()) if o["type"] == "partition"]
    assert [(p["pass"], p["end_offset"], p["map_full"]) for p in passes] == [
        (1, 5, True),
        (2, 10, True),
        (3, 15, True),
        (4, 20, True),
        (5, 24, False),
    ]
    # the latest record of each key below the active segment, and the active segment
    want = [(o, b"k%d" % (o % 8), b"v%d" % o) for o in range(16, 28)]
    assert data(part) == want
    assert_verifies(part.parent)
    # one pass with room for every key ends in the same place
    other = _eight_keys(tmp_path / "one")
    assert run("compact", "--assume-defaults", str(other), "--now", str(T0))[0] == 0
    assert data(other) == want


def test_dedupe_buffer_too_small_for_one_key(tmp_path: Path) -> None:
    part = _eight_keys(tmp_path)
    code, _o, err = run(
        "compact", "--assume-defaults", str(part), "--dedupe-buffer-size", "24", "--now", str(T0)
    )
    assert code == 3 and "holds no key" in err and len(err.strip().splitlines()) == 1


def test_passes_stop_when_no_checkpoint_can_record_progress(tmp_path: Path) -> None:
    part = _eight_keys(tmp_path)
    odd = part.rename(part.parent / "not_a_partition_name")  # no topic-partition to checkpoint
    args = ("--dedupe-buffer-size", "144", "--high-watermark", "log-end", "--now", str(T0))
    code, out, err = run("compact", "--assume-defaults", str(odd), *args, "--format", "jsonl")
    assert code == 1 and "rerun with a larger --dedupe-buffer-size" in err
    passes = [o for o in map(json.loads, out.splitlines()) if o["type"] == "partition"]
    assert [p["pass"] for p in passes] == [1]
    assert_verifies(odd)


@pytest.mark.skipif(not engine.native_available(), reason="the native engine is not built")
@pytest.mark.parametrize("codec", ["none", "zstd"])
def test_both_engines_compact_to_the_same_bytes(
    tmp_path: Path, codec: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The native offset map, retention decision and re-encoder against the Python cleaner:
    the same files, byte for byte, and the same report, over two rounds (the second past the
    delete horizon, so tombstones expire)."""
    g = generate(seed=41, codec=codecs.CODEC_IDS[codec])
    native_calls: Counter = Counter()

    def counting(module: Any, name: str) -> Any:
        real = getattr(module, name)

        def counted(*args: Any) -> Any:
            result = real(*args)
            native_calls[name] += result is not None
            return result

        return counted

    for module, fn in ((native_clean, "map_batch"), (native_clean, "retain_batch")):
        monkeypatch.setattr(module, fn, counting(module, fn))
    monkeypatch.setattr(engine, "reencode_v2", counting(engine, "reencode_v2"))
    results = []
    for name in engine.ENGINES:
        logdir = tmp_path / name / "logdir"
        part = materialise(g, logdir)
        reports = []
        with engine.using(name):
            for now in (T0 + 3_600_000, T0 + 3_600_000 + RETENTION + 1):
                code, out, err = run(
                    "compact",
                    "--assume-defaults",
                    str(part),
                    "--now",
                    str(now),
                    "--format",
                    "jsonl",
                )
                assert code == 0, err
                out = out.replace(str(tmp_path / name), "ROOT")
                reports.append([o for o in map(json.loads, out.splitlines()) if "seconds" not in o])
        files = {p.name: p.read_bytes() for p in sorted(part.iterdir()) if p.is_file()}
        results.append((files, reports))
    assert results[0] == results[1]
    assert all(native_calls[fn] > 0 for fn in ("map_batch", "retain_batch", "reencode_v2"))
